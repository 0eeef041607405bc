//! What a shareable plan's statements cost, and the decisions taken from it: whether a request
//! waits for a shared statement, and in which form a request runs alone.
//!
//! Every figure is a moving average of times taken under whatever load there is, so that the
//! two sides of each comparison see the same load and the decision holds on any hardware.
//!
//! A read runs alone in one of two forms with the same answer: its own statement, or its
//! plan's multiplexed statement with one row. Postgres may plan the first again for every
//! request (its *custom* plans, chosen when a value such as `status = 'published'` makes them
//! look cheaper than one plan for all values), while it plans the second once, since its values
//! come from arrays it cannot see into. Which one costs less depends on the query and the data,
//! so a plan times both and runs the cheaper one, timing the other now and then.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Requests declined sharing in a row, after which [`PROBE_WINDOW`] of them share anyway.
const PROBE_PERIOD: u64 = 1024;

/// Requests of a plan that share, once per [`PROBE_PERIOD`], although sharing did not pay when
/// last measured: its cost may have changed (the data, the load, the plan Postgres chose).
const PROBE_WINDOW: u64 = 64;

/// One in this many requests of a sharing plan runs alone to time it (see [`Cost::decide`]).
const MEASURE_EVERY: u64 = 32;

/// A plan shares only while a shared row costs at most this fraction of a statement alone:
/// a fifth saved at least, so that measuring noise does not make it flap.
const PAYS_NUMERATOR: u64 = 4;
const PAYS_DENOMINATOR: u64 = 5;

/// A read runs alone in its one-row multiplexed form only while that costs at most this
/// fraction of its own statement: a tenth saved at least. Where both cost about the same (no
/// planning to save), the plain statement, which Postgres may plan best for each value, stays.
const SINGLE_NUMERATOR: u64 = 9;
const SINGLE_DENOMINATOR: u64 = 10;

/// One in this many requests run alone takes the form not preferred, to keep its time current.
const RETIME_EVERY: u64 = 16;

/// What a plan's statements cost, alone and per row shared: moving averages in nanoseconds
/// (0: not measured yet), taken under whatever load there is, so that both see the same.
#[derive(Debug, Default)]
pub(super) struct Cost {
    /// The plan's own statement run alone, from the request's connection to its answer.
    alone: AtomicU64,
    /// The plan's multiplexed statement run alone for one request (reads only), timed alike.
    single: AtomicU64,
    /// A shared statement's time divided by its rows, over statements of two rows or more (a
    /// one-row statement measures nothing of sharing).
    shared_row: AtomicU64,
    /// Requests that would have queued but ran alone since sharing did not pay.
    declined: AtomicU64,
    /// Requests that would have queued while sharing paid.
    shares: AtomicU64,
    /// Reads run alone once both forms were timed (see [`Cost::alone_form`]).
    alone_runs: AtomicU64,
}

impl Cost {
    /// Folds a timing into a moving average (races between concurrent updates lose a sample,
    /// which an average can afford). A timing counts for at most twice the average: a stall of
    /// the machine (another process, a page fault) says nothing of the statement, and would
    /// otherwise move the average for many samples, enough to flip a close comparison. A cost
    /// that truly grew still takes over within a few dozen samples.
    fn fold(average: &AtomicU64, took: Duration) {
        let sample = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
        let old = average.load(Ordering::Relaxed);
        let sample = if old == 0 {
            sample
        } else {
            sample.min(old.saturating_mul(2))
        };
        Self::fold_value(average, sample);
    }

    /// Folds a value into a moving average as it is.
    fn fold_value(average: &AtomicU64, sample: u64) {
        let old = average.load(Ordering::Relaxed);
        let new = if old == 0 {
            sample
        } else {
            old.saturating_mul(7).saturating_add(sample) / 8
        };
        average.store(new, Ordering::Relaxed);
    }

    /// Times the plan's own statement run alone.
    pub(super) fn alone(&self, took: Duration) {
        Self::fold(&self.alone, took);
    }

    /// Times the plan's multiplexed statement run alone for one request.
    pub(super) fn single(&self, took: Duration) {
        Self::fold(&self.single, took);
    }

    /// The one-row form failed for a request: it counts as costing twice the own statement.
    /// A form that keeps failing is then only tried to retime it, rather than before every
    /// request's own statement; one request's bad value weighs as one slow sample.
    pub(super) fn single_failed(&self) {
        let alone = self.alone.load(Ordering::Relaxed);
        if alone > 0 {
            Self::fold_value(&self.single, alone.saturating_mul(2));
        }
    }

    /// Times a shared statement of `rows` rows.
    pub(super) fn shared(&self, took: Duration, rows: usize) {
        if let Ok(rows @ 2..) = u32::try_from(rows) {
            Self::fold(&self.shared_row, took / rows);
        }
    }

    /// What a request alone costs in the cheaper of the forms timed (0: none timed yet).
    fn alone_best(&self) -> u64 {
        match (
            self.alone.load(Ordering::Relaxed),
            self.single.load(Ordering::Relaxed),
        ) {
            (0, single) => single,
            (alone, 0) => alone,
            (alone, single) => alone.min(single),
        }
    }

    /// A request that waited but found nothing to share with (a write, alone of its session
    /// in a batch of several): it cost what a statement alone does, which weighs against sharing as
    /// much as a shared row that saved nothing. A plan whose writes rarely share a session
    /// stops queueing them.
    pub(super) fn unshared(&self) {
        // A cost known, not a timing: nothing to clip.
        let alone = self.alone_best();
        if alone > 0 {
            Self::fold_value(&self.shared_row, alone);
        }
    }

    /// What a request that could wait for a shared statement does: wait, always until both
    /// costs are known and then while a shared row is clearly cheaper than a request alone
    /// (but one in [`MEASURE_EVERY`] runs alone to keep that time current: under sustained
    /// load a sharing plan runs no statement alone otherwise); run alone when sharing does
    /// not pay (but for a window of requests once in a while, which share to measure again);
    /// never wait when a request alone takes longer than `below`. A request alone costs what
    /// its cheaper form does (see [`Cost::alone_form`]).
    pub(super) fn decide(&self, below: Option<Duration>) -> Decision {
        let alone = self.alone_best();
        if below.is_some_and(|below| u128::from(alone) > below.as_nanos()) {
            return Decision::Decline;
        }
        let shared_row = self.shared_row.load(Ordering::Relaxed);
        if alone == 0 || shared_row == 0 {
            return Decision::Share;
        }
        if shared_row.saturating_mul(PAYS_DENOMINATOR) <= alone.saturating_mul(PAYS_NUMERATOR) {
            let turn = self.shares.fetch_add(1, Ordering::Relaxed);
            return if turn % MEASURE_EVERY == MEASURE_EVERY - 1 {
                Decision::Measure
            } else {
                Decision::Share
            };
        }
        let turn = self.declined.fetch_add(1, Ordering::Relaxed);
        if turn % PROBE_PERIOD >= PROBE_PERIOD - PROBE_WINDOW {
            Decision::Share
        } else {
            Decision::Decline
        }
    }

    /// The form in which a read runs alone: its own statement first, then the one-row
    /// multiplexed one, each timed once; from then on the one-row form while it costs at most
    /// nine tenths of the plain one, else the plain one, with one request in [`RETIME_EVERY`]
    /// taking the other form so that its time stays current (the data, the load or Postgres's
    /// plans may change).
    pub(super) fn alone_form(&self) -> AloneForm {
        let alone = self.alone.load(Ordering::Relaxed);
        let single = self.single.load(Ordering::Relaxed);
        if alone == 0 {
            return AloneForm::Plain;
        }
        if single == 0 {
            return AloneForm::Single;
        }
        let pays =
            single.saturating_mul(SINGLE_DENOMINATOR) <= alone.saturating_mul(SINGLE_NUMERATOR);
        let turn = self.alone_runs.fetch_add(1, Ordering::Relaxed);
        let retime = turn % RETIME_EVERY == RETIME_EVERY - 1;
        if pays != retime {
            AloneForm::Single
        } else {
            AloneForm::Plain
        }
    }
}

/// See [`Cost::decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Decision {
    /// Wait for a shared statement.
    Share,
    /// Run alone, as one of the plan's running statements: sharing does not pay.
    Decline,
    /// Run alone beside the plan's running statements, to time a statement alone.
    Measure,
}

/// See [`Cost::alone_form`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AloneForm {
    /// The plan's own statement.
    Plain,
    /// The plan's multiplexed statement with one row.
    Single,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(alone_ns: u64, shared_row_ns: u64) -> Cost {
        let cost = Cost::default();
        cost.alone(Duration::from_nanos(alone_ns));
        cost.shared(Duration::from_nanos(shared_row_ns * 4), 4);
        cost
    }

    /// Whether a request that could wait for a shared statement does.
    fn shares(cost: &Cost, below: Option<Duration>) -> bool {
        cost.decide(below) == Decision::Share
    }

    #[test]
    fn sharing_is_tried_until_both_costs_are_known() {
        let cost = Cost::default();
        assert!(shares(&cost, None));
        cost.alone(Duration::from_millis(5));
        assert!(
            shares(&cost, None),
            "no shared statement of two rows measured yet"
        );
        cost.shared(Duration::from_millis(50), 1);
        assert!(
            shares(&cost, None),
            "a one-row statement measures nothing of sharing"
        );
    }

    #[test]
    fn a_plan_shares_while_a_shared_row_saves_a_fifth() {
        assert!(shares(&cost(1_000, 200), None));
        assert!(shares(&cost(1_000, 800), None));
        assert_eq!(cost(1_000, 801).decide(None), Decision::Decline);
        // The comparison is of ratios: ten times slower hardware decides alike.
        assert!(shares(&cost(10_000, 2_000), None));
        assert_eq!(cost(10_000, 9_000).decide(None), Decision::Decline);
    }

    #[test]
    fn a_sharing_plan_runs_one_request_in_a_while_alone_to_time_it() {
        let cost = cost(1_000, 200);
        let measured: Vec<u64> = (0..2 * MEASURE_EVERY)
            .filter(|_| cost.decide(None) == Decision::Measure)
            .collect();
        assert_eq!(measured.len(), 2);
        // Timed alone at twice the shared row's cost, sharing no longer pays.
        for _ in 0..40 {
            cost.alone(Duration::from_nanos(220));
        }
        assert_eq!(cost.decide(None), Decision::Decline);
    }

    #[test]
    fn a_plan_that_saves_nothing_shares_one_window_per_period() {
        let cost = cost(1_000, 1_000);
        let decisions: Vec<Decision> = (0..2 * PROBE_PERIOD).map(|_| cost.decide(None)).collect();
        let shared: Vec<usize> = decisions
            .iter()
            .enumerate()
            .filter_map(|(i, d)| (*d == Decision::Share).then_some(i))
            .collect();
        assert_eq!(shared.len() as u64, 2 * PROBE_WINDOW);
        let first = (PROBE_PERIOD - PROBE_WINDOW) as usize;
        let window: Vec<usize> = (first..PROBE_PERIOD as usize).collect();
        assert_eq!(&shared[..PROBE_WINDOW as usize], window.as_slice());
        assert!(!decisions.contains(&Decision::Measure));
    }

    #[test]
    fn the_absolute_bound_wins_over_what_sharing_saves() {
        let cost = cost(2_000, 100);
        assert!(shares(&cost, Some(Duration::from_nanos(2_000))));
        assert_eq!(
            cost.decide(Some(Duration::from_nanos(1_999))),
            Decision::Decline
        );
        assert!(shares(&Cost::default(), Some(Duration::from_nanos(1))));
    }

    #[test]
    fn writes_that_find_no_partner_weigh_against_sharing() {
        let cost = cost(1_000, 200);
        assert!(shares(&cost, None));
        for _ in 0..20 {
            cost.unshared();
        }
        assert_eq!(cost.decide(None), Decision::Decline);
        let unmeasured = Cost::default();
        unmeasured.unshared();
        assert_eq!(
            unmeasured.shared_row.load(Ordering::Relaxed),
            0,
            "nothing to weigh before a statement alone was timed"
        );
    }

    #[test]
    fn averages_follow_their_samples() {
        let cost = Cost::default();
        cost.alone(Duration::from_nanos(800));
        assert_eq!(cost.alone.load(Ordering::Relaxed), 800);
        cost.alone(Duration::from_nanos(1_600));
        assert_eq!(cost.alone.load(Ordering::Relaxed), 900);
        cost.shared(Duration::from_nanos(3_000), 3);
        assert_eq!(cost.shared_row.load(Ordering::Relaxed), 1_000);
        // A stall counts as twice the average.
        cost.alone(Duration::from_millis(50));
        assert_eq!(cost.alone.load(Ordering::Relaxed), (7 * 900 + 1_800) / 8);
        // A cost that grew tenfold takes over within a few dozen samples.
        for _ in 0..40 {
            cost.shared(Duration::from_nanos(10_000), 1);
            cost.shared(Duration::from_nanos(20_000), 2);
        }
        assert!(cost.shared_row.load(Ordering::Relaxed) > 9_000);
    }

    /// The forms `n` requests alone take in turn.
    fn forms(cost: &Cost, n: u64) -> Vec<AloneForm> {
        (0..n).map(|_| cost.alone_form()).collect()
    }

    #[test]
    fn a_read_alone_times_each_form_once_before_choosing() {
        let cost = Cost::default();
        assert_eq!(cost.alone_form(), AloneForm::Plain);
        assert_eq!(cost.alone_form(), AloneForm::Plain, "until it is timed");
        cost.alone(Duration::from_micros(300));
        assert_eq!(cost.alone_form(), AloneForm::Single);
        cost.single(Duration::from_micros(200));
        assert_eq!(cost.alone_form(), AloneForm::Single);
    }

    #[test]
    fn a_read_alone_takes_the_one_row_form_only_while_it_saves_a_tenth() {
        let cost = Cost::default();
        cost.alone(Duration::from_nanos(1_000));
        cost.single(Duration::from_nanos(900));
        let chosen = forms(&cost, RETIME_EVERY);
        assert_eq!(
            chosen.iter().filter(|f| **f == AloneForm::Single).count() as u64,
            RETIME_EVERY - 1
        );
        assert_eq!(chosen.last(), Some(&AloneForm::Plain), "the other, retimed");
        // The one-row form slower, or barely faster: the plan's own statement, the one-row form
        // retimed once in a while.
        for single in [901, 1_000, 2_000] {
            let cost = Cost::default();
            cost.alone(Duration::from_nanos(1_000));
            cost.single(Duration::from_nanos(single));
            let chosen = forms(&cost, 2 * RETIME_EVERY);
            let retimed: Vec<usize> = chosen
                .iter()
                .enumerate()
                .filter_map(|(i, f)| (*f == AloneForm::Single).then_some(i))
                .collect();
            let every = RETIME_EVERY as usize;
            assert_eq!(retimed, [every - 1, 2 * every - 1], "single {single} ns");
        }
    }

    #[test]
    fn a_one_row_form_that_fails_is_only_retimed() {
        let cost = Cost::default();
        cost.alone(Duration::from_nanos(1_000));
        assert_eq!(cost.alone_form(), AloneForm::Single);
        cost.single_failed();
        let chosen = forms(&cost, RETIME_EVERY);
        assert_eq!(
            chosen.iter().filter(|f| **f == AloneForm::Single).count(),
            1,
            "{chosen:?}"
        );
        // Once it answers cheaply again, it takes over.
        for _ in 0..40 {
            cost.single(Duration::from_nanos(500));
        }
        assert_eq!(cost.alone_form(), AloneForm::Single);
    }

    #[test]
    fn sharing_weighs_against_the_cheaper_form_alone() {
        // A shared row of 700 ns against the own statement's 1,000: it pays...
        let against_plain = cost(1_000, 700);
        assert!(shares(&against_plain, None));
        // ...but not against a one-row form of 800 ns, which requests alone would take.
        against_plain.single(Duration::from_nanos(800));
        assert_eq!(against_plain.decide(None), Decision::Decline);
        // The absolute bound, too, is of the cheaper form.
        let bounded = cost(2_000, 100);
        bounded.single(Duration::from_nanos(1_000));
        assert!(shares(&bounded, Some(Duration::from_nanos(1_500))));
    }
}
