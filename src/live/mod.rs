//! Live queries: the subscriptions of every WebSocket, re-run on an interval and answered in
//! bulk. Subscribers whose operation compiles to the same statement for the same role (and,
//! when the statement can observe the session setting, the same session) form a *group*
//! ([`GroupKey`]); one task per group ([`poll`]) runs the multiplexed statement
//! ([`crate::translate::live_query`]) every `BASALT_LIVE_QUERIES_MULTIPLEXED_REFETCH_INTERVAL`
//! ms, each distinct set of parameter values (a *cohort*) one row of its arrays, at most
//! `BASALT_LIVE_QUERIES_MULTIPLEXED_BATCH_SIZE` cohorts per statement. A subscriber gets its
//! first result at once and later ones only when their hash changes. A new metadata version
//! plans every subscriber again (one whose fields vanished gets [`LiveEvent::Ended`]).
//!
//! The engine plans a subscription (stages 1 to 3); this module runs it. It knows nothing
//! about sockets: results go through each subscriber's [`Deliver`] callback. See
//! `docs/graphql.md`, "Subscriptions".

pub mod changes;
mod due;
pub mod observe;
mod poll;
mod stream;

use crate::engine::{self, ApiVersion, Engine, Execution, GraphqlError, GraphqlRequest};
use crate::execute::{self, Binding};
use crate::session::Session;
use crate::sql::print::MultiplexedSql;
use bytes::Bytes;
use std::collections::HashMap;
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
    /// A stream's statement failed for this subscriber: the cursor has not moved. The
    /// protocol decides whether the subscription goes on (see `docs/graphql.md`, "Streaming
    /// subscriptions").
    StreamError(Arc<GraphqlError>),
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

/// How often live queries (or streams) run, and how many cohorts one statement answers.
#[derive(Debug, Clone, Copy)]
pub struct Polling {
    pub interval: Duration,
    pub batch_size: usize,
}

/// What makes live queries shareable: the same statement for the same role, and, when the
/// statement can observe the session setting, the same session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupKey {
    pub role: String,
    /// The backend-only variant of the role.
    pub backend_only: bool,
    /// The statement's text (as one subscriber would run it alone).
    pub sql: String,
    /// The session, when the statement may observe it.
    pub session: Option<Vec<(String, String)>>,
}

/// The live queries of one server, and the sockets that carry them: how many may be open
/// and the signal that closes them all at shutdown.
pub struct LiveQueries {
    engine: Arc<Engine>,
    polling: Polling,
    /// The polling of streams (`<t>_stream`).
    streaming: Polling,
    /// Change detection: which cohorts must run.
    changes: Arc<changes::Changes>,
    /// What pollers record as they run.
    metrics: observe::SubscriptionMetrics,
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
    /// The request, planned again for every new metadata version.
    request: GraphqlRequest,
    /// This subscriber's bound parameter values, in the statement's parameter order.
    values: Vec<Option<String>>,
    /// Hash of the last result sent (none yet: the next one is always sent).
    last: Option<u64>,
    /// When its cohort was last polled (streams: at most once per interval).
    polled: Option<std::time::Instant>,
    /// For a stream: the position of its cursor in `values`.
    cursor: Option<usize>,
    /// What its cohort read at its last successful poll (change detection).
    watch: due::Watch,
    /// A live query's last result, for a member that joins its cohort.
    body: Option<Bytes>,
    /// A stream whose last batch was full: more rows may wait.
    backlog: bool,
}

/// Subscribers sharing one statement.
struct Group {
    key: GroupKey,
    sql: MultiplexedSql,
    /// For a stream: the position of its cursor among the statement's parameters.
    cursor: Option<usize>,
    /// What the statement reads (its tables, whether it calls functions).
    footprint: crate::graphql::ir::Footprint,
    /// Its last poll found it cannot be watched (change detection cannot see its changes).
    opaque: AtomicBool,
    /// The version the members were planned against.
    version: Arc<ApiVersion>,
    members: Mutex<Vec<Member>>,
    /// Poll now (a member joined).
    wake: Notify,
}

impl Group {
    fn members(&self) -> MutexGuard<'_, Vec<Member>> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where a planned subscription goes.
enum Placement {
    /// Into the group of this key, with these bound values.
    Group(GroupKey, Vec<Option<String>>),
    /// Nowhere: it reads nothing, and this constant answer is all it ever gets.
    Constant(Bytes),
}

/// What a subscription's statement reads, for change detection: the plan's relations, and the
/// action log for the results of asynchronous actions.
fn read_footprint(plan: &crate::graphql::ir::QueryPlan) -> crate::graphql::ir::Footprint {
    let mut footprint = plan.footprint();
    if plan
        .fields
        .iter()
        .any(|(_, f)| matches!(f, crate::graphql::ir::RootField::ActionResult(_)))
    {
        footprint.relations.insert(crate::names::QualifiedName::new(
            "basalt_catalog",
            "action_log",
        ));
    }
    footprint
}

/// The group of a planned subscription for `session`, and its bound values.
fn placement(execution: &Execution, session: &Session) -> Result<Placement, GraphqlError> {
    let Some(sql) = execution.plan.whole_sql() else {
        let body = execution
            .constant_body()
            .unwrap_or_else(|| engine::data_body(b"{}"));
        return Ok(Placement::Constant(body));
    };
    let binding = Binding {
        variables: &execution.variables,
        session: &session.variables,
        provided: None,
    };
    let values = execute::bind(&sql.params, &binding, None)?;
    let resolved = &execution.version.catalog.resolution.resolved;
    let observes_session = engine::observes_session(&execution.plan.operation.data, resolved);
    let key = GroupKey {
        role: session.role.clone(),
        backend_only: session.backend_only,
        sql: sql.sql.clone(),
        session: observes_session.then(|| {
            session
                .variables
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        }),
    };
    Ok(Placement::Group(key, values))
}

impl LiveQueries {
    /// No subscriptions yet; at most `max_sockets` sockets at once. `polling` is for live
    /// queries, `streaming` for streams.
    pub fn new(
        engine: Arc<Engine>,
        polling: Polling,
        streaming: Polling,
        changes: Arc<changes::Changes>,
        max_sockets: usize,
    ) -> Self {
        LiveQueries {
            engine,
            polling,
            streaming,
            changes,
            metrics: observe::SubscriptionMetrics::default(),
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

    /// Cohorts of groups whose last poll found them impossible to watch: (live, stream).
    pub fn opaque_cohorts(&self) -> (usize, usize) {
        let mut counts = (0, 0);
        for group in self.lock().values() {
            if !group.opaque.load(Ordering::Relaxed) {
                continue;
            }
            let members = group.members();
            let cohorts: std::collections::HashSet<&[Option<String>]> =
                members.iter().map(|m| m.values.as_slice()).collect();
            match group.cursor {
                Some(_) => counts.1 += cohorts.len(),
                None => counts.0 += cohorts.len(),
            }
        }
        counts
    }

    /// What subscription pollers record.
    pub fn metrics(&self) -> &observe::SubscriptionMetrics {
        &self.metrics
    }

    /// WebSockets open now.
    pub fn open_sockets(&self) -> usize {
        self.max_sockets
            .saturating_sub(self.sockets.available_permits())
    }

    /// Starts a subscription the engine planned. Its first result is sent as soon as its
    /// group polls (at once), later ones when they change.
    pub fn subscribe(
        self: &Arc<Self>,
        execution: &Execution,
        session: Session,
        request: GraphqlRequest,
        deliver: Deliver,
    ) -> Result<LiveHandle, GraphqlError> {
        let stopped = Arc::new(AtomicBool::new(false));
        let handle = LiveHandle {
            stopped: stopped.clone(),
        };
        let placement = placement(execution, &session)?;
        let member = Member {
            stopped,
            deliver,
            session,
            request,
            values: Vec::new(),
            last: None,
            polled: None,
            cursor: None,
            watch: due::Watch::default(),
            body: None,
            backlog: false,
        };
        self.join(execution, placement, member);
        Ok(handle)
    }

    /// Puts a member into the group of its subscription (creating the group and its task).
    fn join(self: &Arc<Self>, execution: &Execution, placement: Placement, mut member: Member) {
        let (key, values) = match placement {
            Placement::Constant(body) => {
                // Nothing to poll: the answer cannot change.
                if member.last.is_none() {
                    (member.deliver)(LiveEvent::Data(body));
                }
                return;
            }
            Placement::Group(key, values) => (key, values),
        };
        let mut groups = self.lock();
        let group = groups.entry(key.clone()).or_insert_with(|| {
            let sql = crate::translate::live_query(&execution.plan.operation.data);
            let cursor = sql
                .params
                .iter()
                .position(|p| matches!(p.source, crate::sql::ast::ParamSource::Cursor(_)));
            let group = Arc::new(Group {
                key,
                sql,
                cursor,
                footprint: read_footprint(&execution.plan.operation.data),
                opaque: AtomicBool::new(false),
                version: execution.version.clone(),
                members: Mutex::new(Vec::new()),
                wake: Notify::new(),
            });
            tokio::spawn(poll::run_group(self.clone(), group.clone()));
            group
        });
        // A stream planned again (a new metadata version) goes on from where it was.
        let mut values = values;
        if let (Some(at), Some(old)) = (group.cursor, member.cursor) {
            if let (Some(slot), Some(current)) = (values.get_mut(at), member.values.get(old)) {
                *slot = current.clone();
            }
        }
        member.values = values;
        member.cursor = group.cursor;
        // Planned again for a new version, it polls once more before relying on what it saw.
        member.watch.replanned();
        let mut members = group.members();
        if group.cursor.is_none() && member.last.is_none() {
            // A new subscriber of a cohort whose answer is current gets that answer at once.
            let marks = self.changes.marks(&group.footprint);
            let current = members
                .iter()
                .find(|m| m.values == member.values && m.watch.current(&marks));
            if let Some((body, peer)) = current.and_then(|m| Some((m.body.clone()?, m))) {
                member.watch = peer.watch.clone();
                member.last = peer.last;
                member.body = Some(body.clone());
                if (member.deliver)(LiveEvent::Data(body)) {
                    members.push(member);
                }
                return;
            }
        }
        members.push(member);
        drop(members);
        group.wake.notify_one();
    }
}
