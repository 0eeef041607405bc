//! Live queries: the subscriptions of every WebSocket, re-run on an interval and answered in
//! bulk. Subscribers whose operation compiles to the same statement for the same role (and,
//! when the statement can observe the session setting, the same session) form a *group*
//! ([`GroupKey`]); one task per group runs the multiplexed statement
//! ([`crate::translate::live_query`]) every `BASALT_LIVE_QUERIES_MULTIPLEXED_REFETCH_INTERVAL`
//! ms, each distinct set of parameter values (a *cohort*) one row of its arrays, at most
//! `BASALT_LIVE_QUERIES_MULTIPLEXED_BATCH_SIZE` cohorts per statement. A subscriber gets its
//! first result at once and later ones only when their hash changes. A new metadata snapshot
//! recompiles every subscriber (one whose fields vanished gets [`LiveEvent::Ended`]).
//!
//! Knows nothing about sockets: results go through each subscriber's [`Deliver`] callback.
//! See `docs/graphql.md`, "Subscriptions".

use crate::engine::{self, GraphqlError, GraphqlRequest, GroupKey, LiveOperation};
use crate::execute::{self, Connection, ExecuteError};
use crate::session::Session;
use crate::sql::print::MultiplexedSql;
use crate::state::{AppState, Served};
use crate::stats::Counters;
use bytes::Bytes;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};

/// What a subscriber receives.
#[derive(Debug, Clone)]
pub enum LiveEvent {
    /// A result: the whole response body (`{"data": …}`).
    Data(Bytes),
    /// The statement failed for this subscriber (the subscription may go on).
    Error(Arc<GraphqlError>),
    /// The subscription cannot go on (its fields vanished in a new metadata version); nothing
    /// follows.
    Ended(Arc<GraphqlError>),
}

/// Hands an event to a subscriber; `false` means the subscriber is gone (or too slow) and
/// is dropped from its group.
pub type Deliver = Arc<dyn Fn(LiveEvent) -> bool + Send + Sync>;

/// Stops its subscription when dropped.
#[derive(Debug)]
pub struct LiveHandle {
    stopped: Arc<AtomicBool>,
}

impl Drop for LiveHandle {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

/// The live queries of one server, and the sockets that carry them: how many may be open
/// and the signal that closes them all at shutdown.
pub struct LiveQueries {
    groups: Mutex<HashMap<GroupKey, Arc<Group>>>,
    sockets: Arc<Semaphore>,
    max_sockets: usize,
    closing: watch::Sender<bool>,
}

impl std::fmt::Debug for LiveQueries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveQueries")
            .field("groups", &self.lock().len())
            .finish()
    }
}

/// One subscriber in a group.
struct Member {
    stopped: Arc<AtomicBool>,
    deliver: Deliver,
    session: Session,
    request: GraphqlRequest,
    values: Vec<Option<String>>,
    /// Hash of the last result sent (none yet: the next one is always sent).
    last: Option<u64>,
}

/// Subscribers sharing one statement.
struct Group {
    key: GroupKey,
    sql: MultiplexedSql,
    /// The snapshot the members were compiled against.
    served: Arc<Served>,
    members: Mutex<Vec<Member>>,
    /// Poll now (a member joined).
    wake: Notify,
}

impl Group {
    fn members(&self) -> MutexGuard<'_, Vec<Member>> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Batches of one group run at once.
const CONCURRENT_BATCHES: usize = 4;

/// A result or failure for one cohort, with its hash.
type Outcome = (u64, Result<Bytes, Arc<GraphqlError>>);

impl LiveQueries {
    /// No subscriptions yet; at most `max_sockets` sockets at once.
    pub fn new(max_sockets: usize) -> Self {
        LiveQueries {
            groups: Mutex::new(HashMap::new()),
            sockets: Arc::new(Semaphore::new(max_sockets)),
            max_sockets,
            closing: watch::channel(false).0,
        }
    }

    /// A place for one more socket, held while it is open; `None` at the limit.
    pub fn open_socket(&self) -> Option<OwnedSemaphorePermit> {
        self.sockets.clone().try_acquire_owned().ok()
    }

    /// Becomes `true` when the server shuts down: every socket then closes (1001).
    pub fn closing(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// Asks every socket to close and waits (at most `grace`) until they have.
    pub async fn close_sockets(&self, grace: Duration) {
        self.closing.send_replace(true);
        let all = u32::try_from(self.max_sockets).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(grace, self.sockets.acquire_many(all)).await;
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<GroupKey, Arc<Group>>> {
        self.groups.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Groups currently polled (each costs one statement per poll and batch).
    pub fn group_count(&self) -> usize {
        self.lock().len()
    }

    /// Subscribers of all groups (live queries being polled).
    pub fn subscriber_count(&self) -> usize {
        self.lock().values().map(|g| g.members().len()).sum()
    }

    /// WebSockets open now.
    pub fn open_sockets(&self) -> usize {
        self.max_sockets
            .saturating_sub(self.sockets.available_permits())
    }

    /// Starts a subscription compiled by [`engine::run_socket`]. Its first result is sent as
    /// soon as its group polls (at once), later ones when they change.
    pub fn subscribe(
        self: &Arc<Self>,
        state: &AppState,
        operation: LiveOperation,
        session: Session,
        request: GraphqlRequest,
        deliver: Deliver,
    ) -> LiveHandle {
        let stopped = Arc::new(AtomicBool::new(false));
        let handle = LiveHandle {
            stopped: stopped.clone(),
        };
        let member = Member {
            stopped,
            deliver,
            session,
            request,
            values: Vec::new(),
            last: None,
        };
        self.join(state, operation, member);
        handle
    }

    /// Puts a member into the group of its operation (creating the group and its task).
    fn join(self: &Arc<Self>, state: &AppState, operation: LiveOperation, mut member: Member) {
        if let Some(body) = operation.constant {
            // Nothing to poll: the answer cannot change.
            if member.last.is_none() {
                (member.deliver)(LiveEvent::Data(body));
            }
            return;
        }
        member.values = operation.values;
        let mut groups = self.lock();
        let group = groups.entry(operation.group.clone()).or_insert_with(|| {
            let group = Arc::new(Group {
                key: operation.group,
                sql: crate::translate::live_query(&operation.plan.planned.data),
                served: operation.served,
                members: Mutex::new(Vec::new()),
                wake: Notify::new(),
            });
            tokio::spawn(run_group(self.clone(), state.clone(), group.clone()));
            group
        });
        group.members().push(member);
        group.wake.notify_one();
    }
}

/// A group's task: poll on every interval (or at once when a member joins) until no member
/// is left or the snapshot changes (then every member is compiled again).
async fn run_group(live: Arc<LiveQueries>, state: AppState, group: Arc<Group>) {
    let period = Duration::from_millis(state.config.live.refetch_interval_ms.max(1));
    // A steady cadence: the next poll is due one period after the last one started, not after
    // it ended (a poll that overruns delays the next instead of queueing several).
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        tokio::select! {
            _ = group.wake.notified() => {}
            _ = ticks.tick() => {}
        }
        if !Arc::ptr_eq(&state.snapshot(), &group.served) {
            regroup(&live, &state, &group);
            return;
        }
        poll(&state, &group).await;
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

/// A new snapshot is served: every member is compiled again and joins its (possibly new)
/// group; one that no longer compiles ends.
fn regroup(live: &Arc<LiveQueries>, state: &AppState, group: &Arc<Group>) {
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
        match engine::live_operation(state, &member.session, member.request.clone()) {
            Ok(operation) => live.join(state, operation, member),
            Err(err) => {
                (member.deliver)(LiveEvent::Ended(Arc::new(err)));
            }
        }
    }
}

/// Runs the group's statement for every cohort and delivers what changed.
async fn poll(state: &AppState, group: &Group) {
    let cohorts: Vec<Vec<Option<String>>> = {
        let mut members = group.members();
        members.retain(|m| !m.stopped.load(Ordering::Relaxed));
        let mut seen = std::collections::HashSet::new();
        let mut distinct: Vec<Vec<Option<String>>> = Vec::new();
        for m in members.iter() {
            if seen.insert(m.values.as_slice()) {
                distinct.push(m.values.clone());
            }
        }
        distinct
    };
    if cohorts.is_empty() {
        return;
    }
    // This poll's statements are counted with the poll, once it ends, so that the two counters
    // always hold whole polls (statements per poll can then be read over any window).
    let mut ran = 0u64;
    let mut outcomes: HashMap<&[Option<String>], Outcome> = HashMap::new();
    let batches: Vec<Vec<&[Option<String>]>> = cohorts
        .chunks(state.config.live.batch_size.max(1))
        .map(|chunk| chunk.iter().map(Vec::as_slice).collect())
        .collect();
    // A large group's batches run a few at a time, so a poll does not take one round trip per
    // batch; the pool bounds what all groups use together.
    for window in batches.chunks(CONCURRENT_BATCHES) {
        let mut running = Vec::with_capacity(window.len());
        for values in window {
            running.push(run_chunk(state, &group.sql, values));
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
                    let result = run_chunk(state, &group.sql, &single).await;
                    record(&single, result, &mut outcomes);
                }
                continue;
            }
            record(values, result, &mut outcomes);
        }
    }
    let counters = &state.counters;
    counters.live_statements.fetch_add(ran, Ordering::Relaxed);
    Counters::bump(&counters.live_polls);
    deliver(group, &outcomes);
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

/// Hands each member its cohort's outcome when it changed; drops members that are gone.
fn deliver(group: &Group, outcomes: &HashMap<&[Option<String>], Outcome>) {
    let mut members = group.members();
    members.retain_mut(|m| {
        if m.stopped.load(Ordering::Relaxed) {
            return false;
        }
        let Some((h, outcome)) = outcomes.get(m.values.as_slice()) else {
            return true; // joined during this poll: served next time
        };
        if m.last == Some(*h) {
            return true;
        }
        m.last = Some(*h);
        let event = match outcome {
            Ok(body) => LiveEvent::Data(body.clone()),
            Err(err) => LiveEvent::Error(err.clone()),
        };
        (m.deliver)(event)
    });
}

/// One multiplexed statement on a pooled connection.
async fn run_chunk(
    state: &AppState,
    sql: &MultiplexedSql,
    cohorts: &[&[Option<String>]],
) -> Result<Vec<(usize, Bytes)>, ExecuteError> {
    let client = state.pool.get().await?;
    let conn = Connection::of(&client, &state.counters);
    execute::run_multiplexed(conn, sql, cohorts).await
}

fn hash(bytes: &[u8]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}
