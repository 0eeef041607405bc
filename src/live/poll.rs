//! One group's task: run its multiplexed statement for every cohort on each interval, and
//! deliver to each member what changed; plan every member again when a new metadata version
//! is served.

use super::due::{Marks, Reason, Watch};
use super::{observe, placement, Group, LiveEvent, LiveQueries};
use crate::engine::{self, GraphqlError, Transport};
use crate::execute::{self, Connection, ExecuteError};
use crate::sql::print::MultiplexedSql;
use crate::stats::Counters;
use bytes::Bytes;
use indexmap::IndexMap;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Batches of one group run at once.
const CONCURRENT_BATCHES: usize = 4;

/// A result or failure for one cohort, with its hash.
type Outcome = (u64, Result<Bytes, Arc<GraphqlError>>);

/// Polls on every interval (or at once when a member joins) until no member is left or a new
/// version is served (then every member is planned again).
pub(super) async fn run_group(live: Arc<LiveQueries>, group: Arc<Group>) {
    let polling = match group.cursor {
        Some(_) => live.streaming,
        None => live.polling,
    };
    let period = polling.interval.max(std::time::Duration::from_millis(1));
    // A steady cadence: the next poll is due one period after the last one started, not after
    // it ended (a poll that overruns delays the next instead of queueing several).
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    // Every fallback interval, counted from the group's start, all its cohorts run together.
    let fallback = live.changes.fallback;
    let mut next_fallback = fallback.map(|f| std::time::Instant::now() + f);
    loop {
        tokio::select! {
            _ = group.wake.notified() => {}
            _ = ticks.tick() => {}
        }
        let now = std::time::Instant::now();
        let fallback_due = next_fallback.is_some_and(|at| now >= at);
        if fallback_due {
            next_fallback = fallback.map(|f| now + f);
        }
        if !Arc::ptr_eq(&live.engine.current(), &group.version) {
            regroup(&live, &group);
            return;
        }
        match group.cursor {
            Some(cursor) => super::stream::poll(&live, &group, cursor, fallback_due).await,
            None => poll(&live, &group, fallback_due).await,
        }
        let mut groups = live.lock();
        if group.members().is_empty() {
            if groups
                .get(&group.key)
                .is_some_and(|g| Arc::ptr_eq(g, &group))
            {
                groups.remove(&group.key);
            }
            return;
        }
    }
}

/// A new version is served: every member is planned again and joins its (possibly new)
/// group; one that no longer plans ends.
fn regroup(live: &Arc<LiveQueries>, group: &Arc<Group>) {
    {
        let mut groups = live.lock();
        if groups
            .get(&group.key)
            .is_some_and(|g| Arc::ptr_eq(g, group))
        {
            groups.remove(&group.key);
        }
    }
    let members = std::mem::take(&mut *group.members());
    for member in members {
        if member.stopped.load(Ordering::Relaxed) {
            continue;
        }
        let planned = live
            .engine
            .prepare(&member.session, member.request.clone(), Transport::Socket)
            .and_then(|execution| {
                placement(&execution, &member.session).map(|placed| (execution, placed))
            });
        match planned {
            Ok((execution, placed)) => live.join(&execution, placed, member),
            Err(err) => {
                (member.deliver)(LiveEvent::Ended(Arc::new(err)));
            }
        }
    }
}

/// Runs the group's statement for every cohort that is due (see [`super::due`]) and
/// delivers what changed.
async fn poll(live: &LiveQueries, group: &Group, fallback_due: bool) {
    let kind = observe::kind(false);
    // Taken before the statement: a change notified while it runs makes the cohorts due again.
    let marks = live.changes.marks(&group.footprint);
    group.opaque.store(marks.opaque(), Ordering::Relaxed);
    let due = Due::of(live, group, kind, &marks, fallback_due, |_| true);
    let cohorts: Vec<&[Option<String>]> = due.cohorts().collect();
    if cohorts.is_empty() {
        return;
    }
    let counters = live.engine.counters();
    // This poll's statements are counted with the poll, once it ends, so that the two counters
    // always hold whole polls (statements per poll can then be read over any window).
    let mut ran = 0u64;
    let mut outcomes: HashMap<&[Option<String>], Outcome> = HashMap::new();
    let batches: Vec<Vec<&[Option<String>]>> = cohorts
        .chunks(live.polling.batch_size.max(1))
        .map(<[_]>::to_vec)
        .collect();
    // A large group's batches run a few at a time, so a poll does not take one round trip per
    // batch; the pool bounds what all groups use together.
    for window in batches.chunks(CONCURRENT_BATCHES) {
        let mut running = Vec::with_capacity(window.len());
        for values in window {
            running.push(run_chunk(live, &group.sql, values));
        }
        ran += window.len() as u64;
        let results = futures_util::future::join_all(running).await;
        for (values, result) in window.iter().zip(results) {
            if let (Err(err), true) = (&result, values.len() > 1) {
                // One cohort's values may fail the whole statement (a variable Postgres cannot
                // cast): answer each alone, so only that cohort gets the error.
                tracing::warn!(error = %err, cohorts = values.len(),
                    "a live-query statement failed; its cohorts run one by one");
                for cohort in values {
                    let single = [*cohort];
                    ran += 1;
                    let result = run_chunk(live, &group.sql, &single).await;
                    record(&single, result, &mut outcomes);
                }
                continue;
            }
            record(values, result, &mut outcomes);
        }
    }
    counters.live_statements.fetch_add(ran, Ordering::Relaxed);
    live.metrics.statements(kind, ran);
    Counters::bump(&counters.live_polls);
    deliver(live, group, &outcomes, &marks, &due);
}

/// The cohorts a poll runs, in the order their members come, each with the first reason one
/// of its members gave and when the oldest change it has not seen was notified.
pub(super) struct Due {
    why: IndexMap<Vec<Option<String>>, (Reason, Option<Instant>)>,
}

impl Due {
    /// The due cohorts of the group's members that `consider` lets through (see
    /// [`Marks::reason`]; `fallback_due`: the poller's fallback tick), members that stopped
    /// dropped; the tick is counted for pollers of `kind`.
    pub(super) fn of(
        live: &LiveQueries,
        group: &Group,
        kind: &'static str,
        marks: &Marks,
        fallback_due: bool,
        consider: impl Fn(&super::Member) -> bool,
    ) -> Due {
        let mut members = group.members();
        members.retain(|m| !m.stopped.load(Ordering::Relaxed));
        let mut due = Due {
            why: IndexMap::new(),
        };
        let mut waiting = std::collections::HashSet::new();
        for m in members.iter().filter(|m| consider(m)) {
            match marks.reason(&m.watch, m.backlog, fallback_due) {
                Some(reason) => due.add(live, &m.values, reason, &m.watch),
                None => {
                    waiting.insert(m.values.as_slice());
                }
            }
        }
        let skipped = waiting
            .into_iter()
            .filter(|values| !due.why.contains_key(*values))
            .count();
        due.count(live, kind, skipped as u64);
        due
    }

    /// A member of the cohort `values` is due for `reason`.
    fn add(
        &mut self,
        live: &LiveQueries,
        values: &[Option<String>],
        reason: Reason,
        watch: &Watch,
    ) {
        let noticed = match reason {
            Reason::Changed => live.changes.change_noticed(watch),
            _ => None,
        };
        match self.why.get_mut(values) {
            Some((first, at)) => {
                *first = (*first).min(reason);
                *at = match (*at, noticed) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            None => {
                self.why.insert(values.to_vec(), (reason, noticed));
            }
        }
    }

    /// The due cohorts' values.
    pub(super) fn cohorts(&self) -> impl Iterator<Item = &[Option<String>]> {
        self.why.keys().map(Vec::as_slice)
    }

    /// Counts a tick of a poller of `kind`: these cohorts run, `skipped` others do not.
    fn count(&self, live: &LiveQueries, kind: &'static str, skipped: u64) {
        let reasons: Vec<Reason> = self.why.values().map(|(reason, _)| *reason).collect();
        live.metrics.polled(kind, skipped, &reasons);
        let counters = live.engine.counters();
        counters
            .live_cohorts_skipped
            .fetch_add(skipped, Ordering::Relaxed);
        counters
            .live_cohorts_run
            .fetch_add(self.why.len() as u64, Ordering::Relaxed);
    }

    /// When the change that made the cohort due was notified, if one did.
    pub(super) fn noticed(&self, values: &[Option<String>]) -> Option<Instant> {
        self.why.get(values).and_then(|(_, at)| *at)
    }
}

/// The outcome of one batch, per cohort.
fn record<'v>(
    values: &[&'v [Option<String>]],
    result: Result<Vec<(usize, Bytes)>, ExecuteError>,
    outcomes: &mut HashMap<&'v [Option<String>], Outcome>,
) {
    match result {
        Ok(rows) => {
            for (index, data) in rows {
                if let Some(cohort) = values.get(index).copied() {
                    let body = engine::data_body(&data);
                    outcomes.insert(cohort, (hash(&body), Ok(body)));
                }
            }
        }
        Err(err) => {
            let err = Arc::new(GraphqlError::from(err));
            let h = hash(err.to_string().as_bytes());
            for cohort in values {
                outcomes.insert(cohort, (h, Err(err.clone())));
            }
        }
    }
}

/// Hands each member its cohort's outcome when it changed, and records what a cohort that
/// ran without error has seen; drops members that are gone.
fn deliver(
    live: &LiveQueries,
    group: &Group,
    outcomes: &HashMap<&[Option<String>], Outcome>,
    marks: &Marks,
    due: &Due,
) {
    let mut members = group.members();
    members.retain_mut(|m| {
        if m.stopped.load(Ordering::Relaxed) {
            return false;
        }
        let Some((h, outcome)) = outcomes.get(m.values.as_slice()) else {
            return true; // not due, or joined during this poll: served next time
        };
        match outcome {
            Ok(body) => {
                m.watch.succeeded(marks);
                m.body = Some(body.clone());
            }
            // A failed poll keeps the old marks: the cohort stays due.
            Err(_) => m.watch.failed(),
        }
        if m.last == Some(*h) {
            return true;
        }
        m.last = Some(*h);
        let event = match outcome {
            Ok(body) => LiveEvent::Data(body.clone()),
            Err(err) => LiveEvent::Error(err.clone()),
        };
        let open = (m.deliver)(event);
        if let Some(at) = due.noticed(&m.values) {
            live.metrics
                .pushed(observe::kind(false), at.elapsed().as_secs_f64());
        }
        open
    });
}

/// One multiplexed statement on a pooled connection.
async fn run_chunk(
    live: &LiveQueries,
    sql: &MultiplexedSql,
    cohorts: &[&[Option<String>]],
) -> Result<Vec<(usize, Bytes)>, ExecuteError> {
    let engine = &live.engine;
    let mut client = engine.pool().get().await?;
    if !sql.read_only {
        let conn = Connection::of(&client, engine.counters());
        return execute::run_multiplexed(conn, sql, cohorts).await;
    }
    // A native query's code: read-only, whatever it calls.
    let tx = client.build_transaction().read_only(true).start().await?;
    let conn = Connection::of_transaction(&tx, engine.counters());
    let rows = execute::run_multiplexed(conn, sql, cohorts).await?;
    tx.commit().await?;
    Ok(rows)
}

fn hash(bytes: &[u8]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}
