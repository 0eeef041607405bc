//! Shared statements: concurrent requests for the same query plan answered by one statement
//! (a read's multiplexed statement, one row per distinct list of values; for an insert, one
//! copy of the write per request). A request runs alone while fewer than the plan's width of
//! statements run, and queues otherwise; the next statement of the plan to finish hands the
//! queue to one shared statement. It exists because a cheap statement's cost is mostly fixed
//! (round trip, parsing, planning), which one statement for many requests pays once; whether
//! queueing pays for a plan is [`Cost`]'s decision.
//!
//! Must not decide which plans may share (the caller does: a plan whose statement can observe
//! the session setting never gets here), nor build SQL. The mechanism and its reasons are in
//! `docs/design-notes.md`, "Shared statements".

use super::cost::{AloneForm, Cost, Decision};
use super::{Connection, ExecuteError};
use crate::sql::ast::{Param, ParamSource};
use crate::sql::print::MultiplexedSql;
use crate::sql::SqlText;
use crate::stats::Counters;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Most requests one multiplexed statement answers.
pub const MAX_SHARED_REQUESTS: usize = 32;

/// A plan's shareable form: how one statement answers many of its requests, and its queue.
#[derive(Debug)]
pub struct SharedStatement {
    form: Form,
    queue: Mutex<Queue>,
    /// What answering costs alone and shared.
    cost: Cost,
}

/// How a shared statement answers many requests.
#[derive(Debug)]
enum Form {
    /// A read: the multiplexed statement, one row per distinct list of values.
    Multiplexed(MultiplexedSql),
    /// A write: one copy of the write per request (see [`SharedStatement::writes`]).
    Copies(Copies),
}

/// Builds a write plan's statement for a batch of n requests (n ≥ 2): n copies of its write,
/// answering rows of `(cohort, data)` where `cohort` is the copy (`None`: the plan has no such
/// statement).
pub type BuildCopies = Box<dyn Fn(usize) -> Option<SqlText> + Send + Sync>;

/// A write plan's statements by batch size, built when first needed.
struct Copies {
    build: BuildCopies,
    /// The parameters of the write run alone, which each copy repeats in order.
    params: Vec<Param>,
    /// `built[n - 2]`: the statement for n requests, if it has one.
    built: Vec<OnceLock<Option<Arc<SqlText>>>>,
    /// Which parameters carry the session: a statement takes requests of one session.
    session: Vec<usize>,
}

impl std::fmt::Debug for Copies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Copies")
            .field("params", &self.params)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl Copies {
    /// The statement for `n` requests, built on first use; `None` if the plan has none, or if
    /// its parameters are not the write's repeated `n` times (binding could not be right).
    fn statement(&self, n: usize) -> Option<Arc<SqlText>> {
        let slot = self.built.get(n.checked_sub(2)?)?;
        slot.get_or_init(|| {
            let sql = (self.build)(n)?;
            let repeated = sql.params.len() == n * self.params.len()
                && (self.params.is_empty()
                    || sql
                        .params
                        .chunks(self.params.len())
                        .all(|copy| copy == self.params.as_slice()));
            repeated.then(|| Arc::new(sql))
        })
        .clone()
    }

    /// The batch's groups of one session each, in order of arrival.
    fn by_session(&self, batch: Vec<Waiter>) -> Vec<Vec<Waiter>> {
        let mut groups: Vec<(Vec<Option<String>>, Vec<Waiter>)> = Vec::new();
        for waiter in batch {
            let key: Vec<Option<String>> = self
                .session
                .iter()
                .map(|&i| waiter.values.get(i).cloned().flatten())
                .collect();
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, group)) => group.push(waiter),
                None => groups.push((key, vec![waiter])),
            }
        }
        groups.into_iter().map(|(_, group)| group).collect()
    }
}

/// What runs shared statements: the pool, the counters, and how many statements of one plan
/// may run before requests queue (`0`: never share).
#[derive(Clone)]
pub struct Sharing {
    pub pool: deadpool_postgres::Pool,
    pub counters: Arc<Counters>,
    /// Statements of one read plan running at once before requests queue for a shared one.
    pub in_flight: usize,
    /// The same for a write plan: set apart because writes sharing a statement also share
    /// its transaction, which a deployment may want for its reads only (`0`).
    pub writes_in_flight: usize,
    /// Time of a plan's statement alone above which its requests never share statements
    /// (`None`: no such bound, sharing is decided by what it saves).
    pub below: Option<Duration>,
}

#[derive(Debug, Default)]
struct Queue {
    /// Statements of the plan running now (alone or shared).
    running: usize,
    waiting: Vec<Waiter>,
}

#[derive(Debug)]
struct Waiter {
    values: Vec<Option<String>>,
    answer: oneshot::Sender<Outcome>,
}

/// What a shared statement tells a request that waited for it.
#[derive(Debug)]
enum Outcome {
    Answer(Bytes),
    /// No answer: run alone (its values back).
    Alone(Vec<Option<String>>),
    /// Its write may have happened, or not: this error is its answer.
    Failed(ExecuteError),
}

impl SharedStatement {
    /// The shareable form of a read whose multiplexed statement is `sql`.
    pub fn new(sql: MultiplexedSql) -> Self {
        Self::with_form(Form::Multiplexed(sql))
    }

    /// The shareable form of a write whose statement alone has the parameters `params`, and
    /// whose statement for n requests `build` makes (see [`BuildCopies`]): its parameters must
    /// be `params` repeated n times, each request's values bound in turn.
    pub fn writes(params: &[Param], build: BuildCopies) -> Self {
        let session = params
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                matches!(
                    p.source,
                    ParamSource::Session(_) | ParamSource::SessionObject
                )
            })
            .map(|(i, _)| i)
            .collect();
        Self::with_form(Form::Copies(Copies {
            build,
            params: params.to_vec(),
            built: (2..=MAX_SHARED_REQUESTS).map(|_| OnceLock::new()).collect(),
            session,
        }))
    }

    fn with_form(form: Form) -> Self {
        SharedStatement {
            form,
            queue: Mutex::new(Queue::default()),
            cost: Cost::default(),
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock leaves a consistent queue (only pushes and takes).
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Answers one request: `alone` is the plan's one-request statement, whose parameters are
    /// the shared statement's, in order; `values` the request's values for them.
    pub async fn run(
        self: &Arc<Self>,
        sharing: &Sharing,
        alone: &SqlText,
        values: Vec<Option<String>>,
    ) -> Result<Bytes, ExecuteError> {
        let width = self.width(sharing);
        if width == 0 {
            return self.run_plain(sharing, alone, &values).await;
        }
        let (next, full) = {
            let mut queue = self.queue();
            let decision = if queue.running < width {
                // Room beside the plan's running statements: run as one of them.
                Decision::Decline
            } else {
                let decision = self.cost.decide(sharing.below);
                if decision == Decision::Decline {
                    Counters::bump(&sharing.counters.shared_declined);
                }
                decision
            };
            if decision == Decision::Decline {
                queue.running += 1;
                (Next::Alone(values), None)
            } else if decision == Decision::Measure {
                (Next::Measure(values), None)
            } else {
                let (answer, answered) = oneshot::channel();
                queue.waiting.push(Waiter { values, answer });
                Counters::bump(&sharing.counters.shared_waits);
                // A full batch starts at once, beside the running statements: a load that
                // fills batches gets more statements rather than longer queues.
                let full = (queue.waiting.len() >= MAX_SHARED_REQUESTS).then(|| {
                    queue.running += 1;
                    std::mem::take(&mut queue.waiting)
                });
                (Next::Wait(answered), full)
            }
        };
        if let Some(batch) = full {
            tokio::spawn(drain(self.clone(), sharing.clone(), batch));
        }
        let answered = match next {
            Next::Wait(answered) => answered,
            // Not one of the running statements: nothing to hand on when it ends.
            Next::Measure(values) => return self.run_alone(sharing, alone, &values).await,
            Next::Alone(values) => {
                // Hands the queue on when this statement ends, even if the request is dropped.
                let _turn = Turn {
                    shared: self.clone(),
                    sharing,
                };
                return self.run_alone(sharing, alone, &values).await;
            }
        };
        match answered.await {
            Ok(Outcome::Answer(bytes)) => Ok(bytes),
            // The shared statement failed before its row: the plan's own statement gives this
            // request its own answer or error.
            Ok(Outcome::Alone(values)) => self.run_plain(sharing, alone, &values).await,
            Ok(Outcome::Failed(error)) => Err(error),
            Err(_) => Err(ExecuteError::Unexpected(
                "a shared statement was abandoned".into(),
            )),
        }
    }

    /// Statements of the plan that run at once before its requests queue (`0`: never).
    fn width(&self, sharing: &Sharing) -> usize {
        match self.form {
            Form::Multiplexed(_) => sharing.in_flight,
            Form::Copies(_) => sharing.writes_in_flight,
        }
    }

    /// Runs one request on its own, in the form that costs its plan less (a read may run as
    /// its multiplexed statement with one row, see [`Cost::alone_form`]). If the one-row form
    /// fails, the plan's own statement runs, so that the request gets exactly the answer or
    /// error it would have had, and the failure counts against the one-row form.
    async fn run_alone(
        &self,
        sharing: &Sharing,
        sql: &SqlText,
        values: &[Option<String>],
    ) -> Result<Bytes, ExecuteError> {
        if let Form::Multiplexed(multiplexed) = &self.form {
            if self.cost.alone_form() == AloneForm::Single {
                match self.run_single(sharing, multiplexed, values).await {
                    Ok(answer) => return Ok(answer),
                    Err(_) => self.cost.single_failed(),
                }
            }
        }
        self.run_plain(sharing, sql, values).await
    }

    /// Runs one request's own statement, timing it for the plan's [`Cost`].
    async fn run_plain(
        &self,
        sharing: &Sharing,
        sql: &SqlText,
        values: &[Option<String>],
    ) -> Result<Bytes, ExecuteError> {
        let client = sharing.pool.get().await?;
        let conn = Connection::of(&client, &sharing.counters);
        let started = Instant::now();
        let answer = super::run_values(conn, sql, values).await;
        if answer.is_ok() {
            self.cost.alone(started.elapsed());
        }
        answer
    }

    /// Runs a read's multiplexed statement for one request, timing it for the plan's [`Cost`].
    async fn run_single(
        &self,
        sharing: &Sharing,
        sql: &MultiplexedSql,
        values: &[Option<String>],
    ) -> Result<Bytes, ExecuteError> {
        let client = sharing.pool.get().await?;
        let conn = Connection::of(&client, &sharing.counters);
        let started = Instant::now();
        let mut answer = None;
        super::stream_multiplexed(conn, sql, &[values], |_, bytes| answer = Some(bytes)).await?;
        let answer = answer.ok_or_else(|| {
            ExecuteError::Unexpected("a one-row multiplexed statement answered no row".into())
        })?;
        self.cost.single(started.elapsed());
        Counters::bump(&sharing.counters.alone_multiplexed);
        Ok(answer)
    }
}

/// What a request does next: run its own statement, or wait for a shared one.
enum Next {
    Alone(Vec<Option<String>>),
    Measure(Vec<Option<String>>),
    Wait(oneshot::Receiver<Outcome>),
}

/// One statement of a plan running; when it ends, the requests queued meanwhile get a shared
/// statement (run by a task of their own), or the plan's running count goes down.
struct Turn<'a> {
    shared: Arc<SharedStatement>,
    sharing: &'a Sharing,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let batch = next_batch(&mut self.shared.queue());
        if let Some(batch) = batch {
            let shared = self.shared.clone();
            let sharing = self.sharing.clone();
            tokio::spawn(async move { drain(shared, sharing, batch).await });
        }
    }
}

/// Up to [`MAX_SHARED_REQUESTS`] queued requests, or none (and one running statement less).
fn next_batch(queue: &mut Queue) -> Option<Vec<Waiter>> {
    if queue.waiting.is_empty() {
        queue.running = queue.running.saturating_sub(1);
        return None;
    }
    let take = queue.waiting.len().min(MAX_SHARED_REQUESTS);
    Some(queue.waiting.drain(..take).collect())
}

/// Runs shared statements for a plan's queue until it is empty.
async fn drain(shared: Arc<SharedStatement>, sharing: Sharing, mut batch: Vec<Waiter>) {
    loop {
        run_batch(&sharing, &shared, batch).await;
        match next_batch(&mut shared.queue()) {
            Some(next) => batch = next,
            None => return,
        }
    }
}

/// Answers a batch with the plan's shared statements.
async fn run_batch(sharing: &Sharing, shared: &SharedStatement, batch: Vec<Waiter>) {
    match &shared.form {
        Form::Multiplexed(sql) => run_multiplexed(sharing, shared, sql, batch).await,
        Form::Copies(copies) => {
            // A request alone in its batch only met a quiet moment; alone of its session in a
            // larger batch, it found no partner where others did.
            let split = batch.len() > 1;
            let groups = copies.by_session(batch);
            let runs = groups
                .into_iter()
                .map(|group| run_copies(sharing, shared, copies, group, split));
            futures_util::future::join_all(runs).await;
        }
    }
}

/// Answers a batch of writes of one session with one statement, a copy of the write per
/// request. A request alone, a batch size without a statement and a statement Postgres
/// refused run each request alone; a statement that may have written answers its error.
/// `split`: the batch was larger, split by session (a lone request then weighs against
/// sharing, see [`Cost::unshared`]).
async fn run_copies(
    sharing: &Sharing,
    shared: &SharedStatement,
    copies: &Copies,
    batch: Vec<Waiter>,
    split: bool,
) {
    let statement = match batch.len() {
        0 | 1 => None,
        n => copies.statement(n),
    };
    let Some(sql) = statement else {
        if split {
            batch.iter().for_each(|_| shared.cost.unshared());
        }
        return each_alone(batch);
    };
    // Without a connection nothing ran: each request tries alone.
    let Ok(client) = sharing.pool.get().await else {
        return each_alone(batch);
    };
    let values: Vec<Option<String>> = batch
        .iter()
        .flat_map(|w| w.values.iter().cloned())
        .collect();
    let conn = Connection::of(&client, &sharing.counters);
    let started = Instant::now();
    let answered = super::run_copies(conn, &sql, &values).await;
    if answered.is_ok() {
        shared.cost.shared(started.elapsed(), batch.len());
    }
    Counters::bump(&sharing.counters.shared_statements);
    let mut answers: Vec<Option<Bytes>> = vec![None; batch.len()];
    let failed = match answered {
        Ok(tagged) => {
            for (copy, bytes) in tagged {
                if let Some(slot) = answers.get_mut(copy) {
                    *slot = Some(bytes);
                }
            }
            None
        }
        Err(error) => Some(error),
    };
    for (waiter, answer) in batch.into_iter().zip(answers) {
        let outcome = match (answer, &failed) {
            (Some(bytes), _) => {
                Counters::bump(&sharing.counters.shared_requests);
                Outcome::Answer(bytes)
            }
            (None, Some(error)) if error.wrote_nothing() => Outcome::Alone(waiter.values),
            (None, Some(error)) => Outcome::Failed(error.clone()),
            // The statement ran without answering this copy: whether it wrote is unknown.
            (None, None) => Outcome::Failed(ExecuteError::Unexpected(
                "a shared write answered no row for a request".into(),
            )),
        };
        let _ = waiter.answer.send(outcome);
    }
}

/// Tells each request of a batch to run alone.
fn each_alone(batch: Vec<Waiter>) {
    for waiter in batch {
        // A request that went away meanwhile has nobody to tell.
        let _ = waiter.answer.send(Outcome::Alone(waiter.values));
    }
}

/// Answers a batch with one multiplexed statement, one row per distinct value list. Each row
/// answers its requests as it arrives; if the statement fails, the requests its rows did not
/// answer run alone.
async fn run_multiplexed(
    sharing: &Sharing,
    shared: &SharedStatement,
    sql: &MultiplexedSql,
    batch: Vec<Waiter>,
) {
    let (values, mut answers): (Vec<_>, Vec<_>) = batch
        .into_iter()
        .map(|waiter| (waiter.values, Some(waiter.answer)))
        .unzip();
    let (rows, row_of) = distinct_values(&values);
    let counters = &sharing.counters;
    counters
        .shared_coalesced
        .fetch_add((values.len() - rows.len()) as u64, Ordering::Relaxed);
    let answer_row = |row: usize, bytes: Bytes| {
        for (request, _) in row_of.iter().enumerate().filter(|(_, of)| **of == row) {
            if let Some(answer) = answers.get_mut(request).and_then(Option::take) {
                Counters::bump(&counters.shared_requests);
                // A request that went away meanwhile has nobody to answer.
                let _ = answer.send(Outcome::Answer(bytes.clone()));
            }
        }
    };
    // Failed or not, every request its rows answered has its answer.
    let _ = run_shared(sharing, shared, sql, &rows, answer_row).await;
    for (values, answer) in values.into_iter().zip(answers) {
        if let Some(answer) = answer {
            let _ = answer.send(Outcome::Alone(values));
        }
    }
}

/// The batch's distinct value lists (the rows of its statement), and for each request the
/// row that answers it. Requests of one plan with equal values (the session's included) get
/// equal answers from one statement, which reads one snapshot and cannot observe anything
/// else of the request (only such plans are shared), so they take one row: a hot key asked
/// by many clients at once costs Postgres once per statement.
fn distinct_values(batch: &[Vec<Option<String>>]) -> (Vec<&[Option<String>]>, Vec<usize>) {
    let mut rows: Vec<&[Option<String>]> = Vec::with_capacity(batch.len());
    let mut seen: HashMap<&[Option<String>], usize> = HashMap::with_capacity(batch.len());
    let row_of = batch
        .iter()
        .map(|values| {
            let values = values.as_slice();
            *seen.entry(values).or_insert_with(|| {
                rows.push(values);
                rows.len() - 1
            })
        })
        .collect();
    (rows, row_of)
}

/// Runs a batch's multiplexed statement, handing each row to `each` as it arrives, and times
/// it for the plan's [`Cost`] if it succeeds.
async fn run_shared(
    sharing: &Sharing,
    shared: &SharedStatement,
    sql: &MultiplexedSql,
    rows: &[&[Option<String>]],
    each: impl FnMut(usize, Bytes),
) -> Result<(), ExecuteError> {
    let client = sharing.pool.get().await?;
    let conn = Connection::of(&client, &sharing.counters);
    let started = Instant::now();
    let streamed = super::stream_multiplexed(conn, sql, rows, each).await;
    if streamed.is_ok() {
        shared.cost.shared(started.elapsed(), rows.len());
    }
    Counters::bump(&sharing.counters.shared_statements);
    streamed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    fn param(source: ParamSource) -> Param {
        Param {
            source,
            encoding: crate::db_model::Encoding::Text,
        }
    }

    /// A write plan whose parameters are a variable and the session object.
    fn write_params() -> Vec<Param> {
        vec![
            param(ParamSource::Variable("title".into())),
            param(ParamSource::SessionObject),
        ]
    }

    fn copies(build: BuildCopies) -> Copies {
        match SharedStatement::writes(&write_params(), build).form {
            Form::Copies(copies) => copies,
            Form::Multiplexed(_) => unreachable!("a write has copies"),
        }
    }

    #[test]
    fn a_statement_of_copies_is_built_once_per_size_and_must_repeat_the_parameters() {
        let calls = Arc::new(AtomicU64::new(0));
        let counted = calls.clone();
        let copies = copies(Box::new(move |n| {
            counted.fetch_add(1, Ordering::Relaxed);
            // For three requests, a statement whose parameters bind wrongly.
            let params = if n == 3 {
                vec![param(ParamSource::SessionObject); 2 * n]
            } else {
                (0..n).flat_map(|_| write_params()).collect()
            };
            Some(SqlText {
                sql: format!("-- {n} copies"),
                params,
            })
        }));
        assert_eq!(copies.session, vec![1]);
        assert!(copies.statement(1).is_none(), "one request runs alone");
        let two = copies.statement(2).expect("two copies");
        assert_eq!(two.sql, "-- 2 copies");
        assert!(copies.statement(3).is_none(), "parameters out of order");
        assert!(copies.statement(2).is_some());
        assert!(copies.statement(3).is_none());
        assert!(copies.statement(MAX_SHARED_REQUESTS).is_some());
        assert!(copies.statement(MAX_SHARED_REQUESTS + 1).is_none());
        assert_eq!(
            calls.load(Ordering::Relaxed),
            3,
            "sizes 2, 3 and 32, once each"
        );
    }

    #[test]
    fn a_batch_of_writes_is_split_by_session_in_order_of_arrival() {
        let copies = copies(Box::new(|_| None));
        let waiter = |title: &str, session: &str| Waiter {
            values: vec![Some(title.to_owned()), Some(session.to_owned())],
            answer: oneshot::channel().0,
        };
        let batch = vec![
            waiter("a", "{\"x-svc-user-id\":\"1\"}"),
            waiter("b", "{\"x-svc-user-id\":\"2\"}"),
            waiter("a", "{\"x-svc-user-id\":\"1\"}"),
            waiter("c", "{\"x-svc-user-id\":\"1\"}"),
        ];
        let titles: Vec<Vec<String>> = copies
            .by_session(batch)
            .iter()
            .map(|group| group.iter().filter_map(|w| w.values[0].clone()).collect())
            .collect();
        assert_eq!(titles, [vec!["a", "a", "c"], vec!["b"]]);
    }

    /// Sharing over a pool that is never reached: lone writes run no statement.
    fn unreachable_sharing() -> Sharing {
        let (pool, _) =
            crate::pool::pool_for("postgres://nobody@127.0.0.1:1/none", 1).expect("a lazy pool");
        Sharing {
            pool,
            counters: Arc::new(Counters::default()),
            in_flight: 2,
            writes_in_flight: 2,
            below: None,
        }
    }

    /// Queued writes of `sessions`, one each; returns what each is told.
    async fn lone_writes(shared: &SharedStatement, sessions: &[&str]) -> Vec<Outcome> {
        let (batch, answers): (Vec<Waiter>, Vec<_>) = sessions
            .iter()
            .map(|session| {
                let (answer, answered) = oneshot::channel();
                let values = vec![Some("t".to_owned()), Some((*session).to_owned())];
                (Waiter { values, answer }, answered)
            })
            .unzip();
        run_batch(&unreachable_sharing(), shared, batch).await;
        let mut outcomes = Vec::new();
        for answered in answers {
            outcomes.push(answered.await.expect("an outcome"));
        }
        outcomes
    }

    #[tokio::test]
    async fn a_write_alone_of_its_session_in_a_batch_weighs_against_sharing_a_lone_batch_not() {
        let shared = SharedStatement::writes(&write_params(), Box::new(|_| None));
        shared.cost.alone(Duration::from_micros(500));
        shared.cost.shared(Duration::from_micros(400), 4);
        assert_eq!(shared.cost.decide(None), Decision::Share);
        // A batch of one request: a quiet moment, not a failure to share.
        for _ in 0..20 {
            let outcomes = lone_writes(&shared, &["{\"u\":\"1\"}"]).await;
            assert!(matches!(outcomes.as_slice(), [Outcome::Alone(_)]));
        }
        assert_eq!(shared.cost.decide(None), Decision::Share);
        // Batches of three users, each alone of its session: every request ran alone.
        for _ in 0..4 {
            let outcomes = lone_writes(
                &shared,
                &["{\"u\":\"1\"}", "{\"u\":\"2\"}", "{\"u\":\"3\"}"],
            )
            .await;
            assert_eq!(outcomes.len(), 3);
            assert!(outcomes.iter().all(|o| matches!(o, Outcome::Alone(_))));
        }
        assert_eq!(shared.cost.decide(None), Decision::Decline);
    }
}
