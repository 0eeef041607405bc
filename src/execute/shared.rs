//! Shared statements: concurrent requests for the same query plan answered by one statement.
//!
//! A request runs its plan's statement alone while fewer than `in_flight` statements of that
//! plan are running. Past that it waits in the plan's queue, and the next statement of the
//! plan to finish hands everyone queued to one *multiplexed* statement (the one live queries
//! use: each request's parameter values one row of the statement's arrays, each answer tagged
//! with its row). Nothing waits for a batch to fill: with no statement of the plan running, a
//! request starts at once, so a lone client pays nothing. Under load, Postgres parses, plans
//! and answers one statement for many requests, and the engine makes one round trip for them.
//! A batch that fills up ([`MAX_SHARED_REQUESTS`]) starts at once beside the running ones, so
//! more load means more statements, not longer waits.
//!
//! Sharing pays where a statement's fixed cost (a round trip, parsing, planning, starting
//! the executor) is a large part of it; a batch runs its requests one after another in one
//! backend, so a plan whose statement takes long ([`Sharing::below`], a moving average of its
//! statements that ran while nothing else of the plan did: under load, waiting for a CPU would
//! make any statement look slow) keeps one statement per request and Postgres's parallelism.
//!
//! Only plans whose statement cannot observe the session setting are shared (the caller
//! decides: see `graphql-api.md` §7); their session values, if any, are parameters like any
//! other, so requests of different sessions and roles never see each other's values. A
//! multiplexed statement that fails (one request's value Postgres refuses, a lost
//! connection) answers nobody: each of its requests runs alone, and gets its own answer or
//! error. Requests of a batch with equal values (the session's included) are one row of the
//! statement and share its answer: their statement could not tell them apart.

use super::{Connection, ExecuteError};
use crate::sql::print::MultiplexedSql;
use crate::sql::SqlText;
use crate::stats::Counters;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Most requests one multiplexed statement answers.
pub const MAX_SHARED_REQUESTS: usize = 32;

/// A query plan's shareable form: its multiplexed statement and its queue.
#[derive(Debug)]
pub struct SharedStatement {
    /// The statement that answers many requests of the plan at once.
    pub sql: MultiplexedSql,
    queue: Mutex<Queue>,
    /// Moving average of the time the plan's statement took, run alone while nothing else of
    /// the plan ran, in µs (0: not measured yet).
    cost_micros: AtomicU64,
}

/// What runs shared statements: the pool, the counters, and how many statements of one plan
/// may run before requests queue (`0`: never share).
#[derive(Clone)]
pub struct Sharing {
    /// Where statements run.
    pub pool: deadpool_postgres::Pool,
    /// Work counters.
    pub counters: Arc<Counters>,
    /// Statements of one plan running at once before requests queue for a shared one.
    pub in_flight: usize,
    /// Time per request above which a plan's requests stop sharing statements.
    pub below: Duration,
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
    /// The request's answer, or its values back: the shared statement failed, run alone.
    answer: oneshot::Sender<Result<Bytes, Vec<Option<String>>>>,
}

impl SharedStatement {
    /// The shareable form of a plan whose statement is `sql`.
    pub fn new(sql: MultiplexedSql) -> Self {
        SharedStatement {
            sql,
            queue: Mutex::new(Queue::default()),
            cost_micros: AtomicU64::new(0),
        }
    }

    /// Folds the time a statement took into the moving average.
    fn record(&self, took: Duration) {
        let sample = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let old = self.cost_micros.load(Ordering::Relaxed);
        // Races between concurrent updates lose a sample, which an average can afford.
        let new = if old == 0 {
            sample
        } else {
            old.saturating_mul(7).saturating_add(sample) / 8
        };
        self.cost_micros.store(new, Ordering::Relaxed);
    }

    /// Whether the plan's requests are cheap enough to share statements.
    fn cheap(&self, below: Duration) -> bool {
        u128::from(self.cost_micros.load(Ordering::Relaxed)) <= below.as_micros()
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
        if sharing.in_flight == 0 {
            return self.run_alone(sharing, alone, &values, false).await;
        }
        let cheap = self.cheap(sharing.below);
        let (next, full) = {
            let mut queue = self.queue();
            if !cheap || queue.running < sharing.in_flight {
                let timed = queue.running == 0;
                queue.running += 1;
                (Next::Alone { values, timed }, None)
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
            Next::Alone { values, timed } => {
                // Hands the queue on when this statement ends, even if the request is dropped.
                let _turn = Turn {
                    shared: self.clone(),
                    sharing,
                };
                return self.run_alone(sharing, alone, &values, timed).await;
            }
        };
        match answered.await {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(values)) => self.run_alone(sharing, alone, &values, false).await,
            Err(_) => Err(ExecuteError::Unexpected(
                "a shared statement was abandoned".into(),
            )),
        }
    }

    /// Runs one request's statement on its own; `timed`: its time goes into the plan's
    /// moving average.
    async fn run_alone(
        &self,
        sharing: &Sharing,
        sql: &SqlText,
        values: &[Option<String>],
        timed: bool,
    ) -> Result<Bytes, ExecuteError> {
        let client = sharing.pool.get().await?;
        let conn = Connection::of(&client, &sharing.counters);
        if timed {
            // Prepared first (usually found in the connection's cache), so that the time
            // taken is the statement's, not its preparation's.
            super::prepare(conn, &sql.sql, sql.params.len()).await?;
        }
        let started = Instant::now();
        let answer = super::run_values(conn, sql, values).await;
        if timed {
            self.record(started.elapsed());
        }
        answer
    }
}

/// What a request does next: run its own statement, or wait for a shared one.
enum Next {
    Alone {
        values: Vec<Option<String>>,
        timed: bool,
    },
    Wait(oneshot::Receiver<Result<Bytes, Vec<Option<String>>>>),
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

/// Answers a batch with one multiplexed statement, one row per distinct value list; on any
/// failure, tells each request to run alone.
async fn run_batch(sharing: &Sharing, shared: &SharedStatement, batch: Vec<Waiter>) {
    let (rows, row_of) = distinct_values(&batch);
    let mut answers: Vec<Option<Bytes>> = vec![None; rows.len()];
    if let Ok(tagged) = run_shared(sharing, shared, &rows).await {
        for (row, bytes) in tagged {
            if let Some(slot) = answers.get_mut(row) {
                *slot = Some(bytes);
            }
        }
    }
    let counters = &sharing.counters;
    counters
        .shared_coalesced
        .fetch_add((batch.len() - rows.len()) as u64, Ordering::Relaxed);
    for (waiter, row) in batch.into_iter().zip(row_of) {
        let answer = match answers.get(row).cloned().flatten() {
            Some(bytes) => {
                Counters::bump(&counters.shared_requests);
                Ok(bytes)
            }
            None => Err(waiter.values),
        };
        // A request that went away meanwhile has nobody to answer.
        let _ = waiter.answer.send(answer);
    }
}

/// The batch's distinct value lists (the rows of its statement), and for each request the
/// row that answers it. Requests of one plan with equal values (the session's included) get
/// equal answers from one statement, which reads one snapshot and cannot observe anything
/// else of the request (only such plans are shared), so they take one row: a hot key asked
/// by many clients at once costs Postgres once per statement.
fn distinct_values(batch: &[Waiter]) -> (Vec<&[Option<String>]>, Vec<usize>) {
    let mut rows: Vec<&[Option<String>]> = Vec::with_capacity(batch.len());
    let mut seen: HashMap<&[Option<String>], usize> = HashMap::with_capacity(batch.len());
    let row_of = batch
        .iter()
        .map(|waiter| {
            let values = waiter.values.as_slice();
            *seen.entry(values).or_insert_with(|| {
                rows.push(values);
                rows.len() - 1
            })
        })
        .collect();
    (rows, row_of)
}

async fn run_shared(
    sharing: &Sharing,
    shared: &SharedStatement,
    rows: &[&[Option<String>]],
) -> Result<Vec<(usize, Bytes)>, ExecuteError> {
    let client = sharing.pool.get().await?;
    let conn = Connection::of(&client, &sharing.counters);
    let tagged = super::run_multiplexed(conn, &shared.sql, rows).await;
    Counters::bump(&sharing.counters.shared_statements);
    tagged
}
