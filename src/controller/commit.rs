//! Group commit on the reconcile side (`docs/kubernetes.md`, "Group commit"): a reconcile with
//! something to write queues it and waits for its turn to commit. Whoever gets the turn
//! commits every write queued by then in one catalog transaction
//! ([`catalog::execute_group`]) and hands each its own result; a reconcile whose write was
//! committed by an earlier turn just takes its result. No background task: the work runs in
//! the reconciles themselves, so it is bounded by their concurrency and counted with them.

use super::diff::Plan;
use crate::catalog::{self, CatalogError, GroupItem, OwnershipChanges};
use crate::metadata::objects::Object;
use crate::ops::Op;
use std::sync::Mutex;
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
    Refused(CatalogError),
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
#[derive(Default)]
pub(super) struct GroupCommit {
    queue: Mutex<Vec<Queued>>,
    turn: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl GroupCommit {
    /// Queues a write planned against `expected_version` and returns its result once a group
    /// holding it was committed (or refused it).
    pub(super) async fn write(
        &self,
        pool: &deadpool_postgres::Pool,
        op: Op,
        expected_version: i64,
        plan: &Plan,
    ) -> Result<Reply, CatalogError> {
        let (reply, mut result) = oneshot::channel();
        self.lock_queue().push(Queued {
            op,
            expected_version,
            keys: plan.keys(),
            base: plan.base.clone(),
            ownership: plan.ownership.clone(),
            reply,
        });
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
                queue.drain(..n).collect()
            };
            commit(pool, group).await;
        }
    }

    fn lock_queue(&self) -> std::sync::MutexGuard<'_, Vec<Queued>> {
        match self.queue.lock() {
            Ok(q) => q,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

/// Commits `group` and answers every write in it.
async fn commit(pool: &deadpool_postgres::Pool, group: Vec<Queued>) {
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
            catalog::execute_group(&mut client, &items).await
        }
        Err(err) => Err(CatalogError::from(err)),
    };
    match outcome {
        Ok(results) => {
            tracing::debug!(writes = group.len(), "group committed");
            for (queued, result) in group.into_iter().zip(results) {
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
