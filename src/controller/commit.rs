//! A reconcile's catalog writes (`docs/kubernetes.md`, "How a resource is reconciled"): plan
//! against the shared view, then commit — alone, or in a group commit ("Group commit"): a
//! reconcile with something to write queues it and waits for its turn to commit. Whoever gets
//! the turn commits every write queued by then in one catalog transaction
//! ([`transaction::run_group`]) and hands each its own result; a reconcile whose write was
//! committed by an earlier turn just takes its result. No background task: the work runs in
//! the reconciles themselves, so it is bounded by their concurrency and counted with them.

use super::conditions::{self, Reason};
use super::diff::{self, Plan, Policy};
use super::reconcile::{seed, Context, Error};
use super::view::View;
use crate::catalog::OwnershipChanges;
use crate::metadata::objects::{Object, Owner};
use crate::metadata::MetadataError;
use crate::ops::{Limits, Op};
use crate::resolve::live_change::LivePolicy;
use crate::transaction::{self, GroupItem, LastWriteCache, TransactionError, Writer};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// Most writes committed in one transaction.
const MAX_GROUP: usize = 256;

/// What became of a queued write.
#[derive(Debug)]
pub(super) enum Reply {
    /// Committed; the catalog version it is part of.
    Committed(i64),
    /// Refused alone: a stale plan or a key taken in the same group (`Conflict`), or the
    /// operations' own error.
    Refused(TransactionError),
    /// The group failed as a whole (nothing stored): write on your own, so the failure is
    /// attributed to the write that caused it.
    Alone,
}

/// One queued write.
struct Queued {
    op: Op,
    expected_version: i64,
    keys: Vec<String>,
    base: Vec<(String, Option<Object>)>,
    ownership: OwnershipChanges,
    reply: oneshot::Sender<Reply>,
}

/// The queue of writes waiting to be committed, and the turn to commit them.
pub(super) struct GroupCommit {
    queue: Mutex<Vec<Queued>>,
    /// How many writes wait in the queue (`basalt_controller_commit_queue`).
    waiting: prometheus_client::metrics::gauge::Gauge,
    turn: tokio::sync::Mutex<()>,
    /// The state the last group committed, for the next one.
    last_write: LastWriteCache,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl GroupCommit {
    /// An empty queue whose length `waiting` follows.
    pub(super) fn new(waiting: prometheus_client::metrics::gauge::Gauge) -> Self {
        GroupCommit {
            queue: Mutex::default(),
            waiting,
            turn: tokio::sync::Mutex::default(),
            last_write: LastWriteCache::default(),
        }
    }

    /// Queues a write planned against `expected_version` and returns its result once a group
    /// holding it was committed (or refused it).
    pub(super) async fn write(
        &self,
        pool: &deadpool_postgres::Pool,
        view: &super::view::SharedView,
        op: Op,
        expected_version: i64,
        plan: &Plan,
        live: &LivePolicy,
    ) -> Result<Reply, TransactionError> {
        let (reply, mut result) = oneshot::channel();
        self.lock_queue().push(Queued {
            op,
            expected_version,
            keys: plan.keys(),
            base: plan.base.clone(),
            ownership: plan.ownership.clone(),
            reply,
        });
        self.waiting.inc();
        let _turn = self.turn.lock().await;
        loop {
            match result.try_recv() {
                Ok(reply) => return Ok(reply),
                // The turn that took it was cancelled mid-way: nothing is known, write alone.
                Err(oneshot::error::TryRecvError::Closed) => return Ok(Reply::Alone),
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            let group: Vec<Queued> = {
                let mut queue = self.lock_queue();
                let n = queue.len().min(MAX_GROUP);
                self.waiting.dec_by(n as i64);
                queue.drain(..n).collect()
            };
            commit(pool, view, &self.last_write, group, live).await;
        }
    }

    fn lock_queue(&self) -> std::sync::MutexGuard<'_, Vec<Queued>> {
        match self.queue.lock() {
            Ok(q) => q,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

/// Commits `group` and answers every write in it; the state it committed becomes the shared
/// view (no other reconcile reads the catalog and the database again for it).
async fn commit(
    pool: &deadpool_postgres::Pool,
    view: &super::view::SharedView,
    last_write: &LastWriteCache,
    group: Vec<Queued>,
    live: &LivePolicy,
) {
    let outcome = match pool.get().await {
        Ok(mut client) => {
            let items: Vec<GroupItem<'_>> = group
                .iter()
                .map(|q| GroupItem {
                    op: &q.op,
                    expected_version: q.expected_version,
                    keys: &q.keys,
                    base: &q.base,
                    ownership: &q.ownership,
                })
                .collect();
            transaction::run_group(&mut client, &items, Some(last_write), live).await
        }
        Err(err) => Err(TransactionError::from(err)),
    };
    match outcome {
        Ok(outcome) => {
            tracing::debug!(writes = group.len(), "group committed");
            if let Some(committed) = outcome.view {
                view.offer(committed).await;
            }
            for (queued, result) in group.into_iter().zip(outcome.results) {
                let _ = queued.reply.send(match result {
                    Ok(version) => Reply::Committed(version),
                    Err(refused) => Reply::Refused(refused),
                });
            }
        }
        Err(err) => {
            tracing::debug!(%err, writes = group.len(), "group failed; each writes alone");
            for queued in group {
                let _ = queued.reply.send(Reply::Alone);
            }
        }
    }
}

/// What a catalog write did.
pub(super) struct Written {
    pub(super) plan: Plan,
    /// Catalog version after the write (or as read, when nothing was written).
    pub(super) version: i64,
    /// The view the plan was made against when nothing was written (`None`: something was
    /// committed). It still describes the catalog this reconcile found, so its consistency is
    /// read from it rather than from a view fetched again.
    pub(super) planned_on: Option<Arc<View>>,
    /// Relationships left out because their target is not there yet: key, what it waits
    /// for, and whether for a resource or a migration.
    pub(super) waiting: Vec<(String, String, Reason)>,
}

impl Written {
    /// Whether anything was committed.
    pub(super) fn wrote(&self) -> bool {
        self.planned_on.is_none()
    }
}

/// Stale plans tolerated per write before the reconcile fails and backs off. Under group
/// commit a plan goes stale whenever a group commits between planning and committing, and each
/// such retry means the catalog moved on.
const MAX_CONFLICTS: u64 = 20;

/// Plans and writes (in a group commit when the plan allows, [`super::commit`]), retrying lost
/// compare-and-swap races; a relationship whose target is missing is left out (as if rolled
/// back to its savepoint) so the table still lands.
pub(super) async fn write(
    ctx: &Context,
    resource: &diff::Resource<'_>,
    policy: Policy,
    cleanup: Option<diff::Removal>,
) -> Result<Result<Written, MetadataError>, Error> {
    write_with(ctx, resource, &[], policy, cleanup).await
}

/// [`write`], with the writes (or removals) of `together` (the other members of a cycle
/// `resource` is in, each planned under its own policy, [`super::cycles`]) in the same bulk.
pub(super) async fn write_with(
    ctx: &Context,
    resource: &diff::Resource<'_>,
    together: &[(diff::Resource<'_>, Policy)],
    policy: Policy,
    cleanup: Option<diff::Removal>,
) -> Result<Result<Written, MetadataError>, Error> {
    let mut waiting: Vec<(String, String, Reason)> = Vec::new();
    let mut conflicts = 0;
    // Set when a group this write was part of failed as a whole: from then on it commits on
    // its own, so an error is attributed to it alone.
    let mut alone = false;
    loop {
        let view = ctx.view.current(&ctx.pool).await?;
        let (metadata, rows) = (&view.catalog.metadata, &view.rows);
        let version = view.catalog.version;
        let objects = &view.objects;
        let mut plan = match cleanup {
            Some(removal) => {
                let mut plan =
                    diff::cleanup_against(resource.owner, metadata, objects, rows, removal);
                for (member, _) in together {
                    let theirs =
                        diff::cleanup_against(member.owner, metadata, objects, rows, removal);
                    plan.absorb(theirs);
                }
                plan
            }
            None => {
                let mut plan = diff::plan_against(resource, metadata, objects, rows, policy);
                for (member, own) in together {
                    plan.absorb(diff::plan_against(member, metadata, objects, rows, *own));
                }
                plan
            }
        };
        for (key, _, _) in &waiting {
            plan.without(key);
        }
        // The owners the plan was made against, checked again under the catalog lock.
        let touched: Vec<String> = plan
            .ownership
            .upsert
            .iter()
            .map(|r| r.key.clone())
            .chain(plan.ownership.remove.iter().cloned())
            .collect();
        plan.ownership.seen = touched
            .into_iter()
            .map(|key| {
                let owner = rows.get(&key).map(|r| r.owner.uid.clone());
                (key, owner)
            })
            .collect();
        if plan.is_noop() {
            return Ok(Ok(Written {
                plan,
                version,
                planned_on: Some(view),
                waiting,
            }));
        }
        drop(view);
        let requests: Vec<Value> = plan.ops.iter().map(|o| o.request.clone()).collect();
        let op = Op::parse(
            &json!({"type": "bulk", "args": requests}),
            Limits {
                max_batch_size: usize::MAX,
            },
        );
        let op = match op {
            Ok(op) => op,
            Err(e) => return Ok(Err(e)),
        };
        let committed = if alone || !plan.shares_commit() || op.may_introspect() {
            let mut client = ctx.pool.get().await.map_err(TransactionError::from)?;
            transaction::run_as(
                &mut client,
                &op,
                Some(version),
                Writer::Controller(&plan.ownership, &ctx.settings.live),
            )
            .await
            .map(|outcome| outcome.catalog.version)
        } else {
            match ctx
                .commits
                .write(&ctx.pool, &ctx.view, op, version, &plan, &ctx.settings.live)
                .await?
            {
                Reply::Committed(version) => Ok(version),
                Reply::Refused(refused) => Err(refused),
                Reply::Alone => {
                    alone = true;
                    continue;
                }
            }
        };
        match committed {
            Ok(version) => {
                return Ok(Ok(Written {
                    plan,
                    version,
                    planned_on: None,
                    waiting,
                }))
            }
            // A write of the same group or an earlier one moved the catalog since the plan:
            // plan again on the new view (shared, so this is cheap).
            Err(TransactionError::Conflict { .. }) if conflicts < MAX_CONFLICTS => {
                conflicts += 1;
                if alone {
                    let jitter = seed(&resource.owner.name) % 50 + 10 * conflicts;
                    tokio::time::sleep(Duration::from_millis(jitter)).await;
                }
            }
            Err(TransactionError::Metadata(e)) => {
                let failed = e.path.bulk_index().and_then(|i| plan.ops.get(i));
                let reason = conditions::classify(&e, cleanup.is_some());
                let wait = failed
                    .filter(|_| cleanup.is_none())
                    .filter(|_| {
                        matches!(
                            reason,
                            Reason::DependencyNotReady | Reason::DatabaseObjectMissing
                        )
                    })
                    .filter(|o| !waiting.iter().any(|(k, _, _)| *k == o.key))
                    .and_then(|o| {
                        conditions::waits(&o.key, &o.request, &e)
                            .map(|w| (o.key.clone(), w, reason))
                    });
                match wait {
                    Some(wait) => waiting.push(wait),
                    None => return Ok(Err(e)),
                }
            }
            Err(other) => return Err(other.into()),
        }
    }
}

/// Removes (or, with `orphan`, releases) everything `owner` owns: the objects on its tables
/// first, committed on their own, then the tables, so two tables whose relationships point at
/// each other can be deleted in any order.
pub(super) async fn remove_owned(
    ctx: &Context,
    owner: &Owner,
    generation: i64,
    orphan: bool,
    cascade: bool,
) -> Result<Result<Written, MetadataError>, Error> {
    let target = diff::Resource {
        owner,
        generation,
        desired: &[],
    };
    let mut removal = diff::Removal {
        orphan,
        cascade,
        tables: false,
    };
    let first = match write(ctx, &target, Policy::default(), Some(removal)).await? {
        Ok(written) => written,
        Err(refused) => return Ok(Err(refused)),
    };
    removal.tables = true;
    Ok(write(ctx, &target, Policy::default(), Some(removal))
        .await?
        .map(|mut written| {
            // What both phases removed.
            let mut steps = first.plan.steps;
            steps.append(&mut written.plan.steps);
            written.plan.steps = steps;
            written
        }))
}

/// The note of a `Deleted` Event: what was removed or released.
pub(super) fn deleted_note(written: &Written, orphan: bool) -> String {
    let keys: BTreeSet<&str> = written.plan.steps.iter().map(|(k, _)| k.as_str()).collect();
    if orphan {
        format!(
            "released ownership of {} (deletion policy orphan)",
            join(&keys)
        )
    } else {
        format!("removed {} from the catalog", join(&keys))
    }
}

fn join(keys: &BTreeSet<&str>) -> String {
    if keys.is_empty() {
        "nothing".to_owned()
    } else {
        keys.iter().copied().collect::<Vec<_>>().join(", ")
    }
}
