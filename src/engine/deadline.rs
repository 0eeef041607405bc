//! The time limit of one operation (`docs/limits.md`, "Time limit"): one deadline for all of
//! its work. Work that holds no connection (waiting for one, calling an action handler or a
//! remote schema) is dropped when the deadline passes, which aborts an outgoing call. Work on
//! a connection is not dropped: Postgres is asked to cancel the running statement, and the
//! work is awaited until it ends, so the connection goes back to the pool idle (a mutation's
//! transaction rolls back as it drops). A connection a cancel was sent on is then closed
//! rather than pooled ([`release`]): Postgres delivers a cancel on its own time, and one that
//! arrives after the statement ended must find no later request's statement to stop.

use super::error::GraphqlError;
use crate::metadata::types::Seconds;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;
use tokio_postgres::CancelToken;

/// How long cancelled work may take to end before it is dropped anyway. Postgres ends a
/// cancelled statement at once; this only bounds a connection that stopped answering (its
/// client then still runs requests in order, behind the cancelled one).
const CANCELLED_GRACE: Duration = Duration::from_secs(10);

/// When an operation must have finished, and the limit that set it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadline {
    at: Instant,
    limit: Seconds,
}

impl Deadline {
    /// The deadline of an operation starting now under `limit`.
    pub(super) fn starting_now(limit: Seconds) -> Self {
        Deadline {
            at: Instant::now() + limit.duration(),
            limit,
        }
    }

    fn exceeded(self) -> GraphqlError {
        GraphqlError::TimeLimit { limit: self.limit }
    }

    /// Fails once the deadline has passed: checked between the steps of work that a cancel
    /// may miss (Postgres ignores one that arrives while the connection is idle).
    pub(super) fn check(deadline: Option<Deadline>) -> Result<(), GraphqlError> {
        match deadline {
            Some(d) if Instant::now() >= d.at => Err(d.exceeded()),
            _ => Ok(()),
        }
    }
}

/// `work` that holds no connection, within `deadline` (when there is one): at the deadline it
/// is dropped and the operation fails.
pub(super) async fn bounded<T, E>(
    deadline: Option<Deadline>,
    work: impl Future<Output = Result<T, E>>,
) -> Result<T, GraphqlError>
where
    GraphqlError: From<E>,
{
    let Some(deadline) = deadline else {
        return Ok(work.await?);
    };
    match tokio::time::timeout_at(deadline.at, work).await {
        Ok(done) => Ok(done?),
        Err(_) => Err(deadline.exceeded()),
    }
}

/// A deadline, and how to cancel the statement running on the connection it guards.
pub(super) struct Guard {
    deadline: Deadline,
    cancel: CancelToken,
    /// A cancel request was sent on the connection.
    cancelled: std::sync::atomic::AtomicBool,
}

/// The guard of `client` under `deadline`, when there is one.
pub(super) fn guard(deadline: Option<Deadline>, client: &tokio_postgres::Client) -> Option<Guard> {
    deadline.map(|deadline| Guard {
        deadline,
        cancel: client.cancel_token(),
        cancelled: std::sync::atomic::AtomicBool::new(false),
    })
}

/// Gives `client` back: to the pool, or, when a cancel request was sent on it, closed.
pub(super) fn release(guard: Option<Guard>, client: deadpool_postgres::Client) {
    let cancelled = guard.is_some_and(|g| g.cancelled.into_inner());
    if cancelled {
        drop(deadpool_postgres::Object::take(client));
    }
}

/// Work on the connection `guard` guards, within its deadline (when there is one): at the
/// deadline the connection's running statement is cancelled and the work awaited until it
/// ends. Work that still succeeds (it finished as the cancel arrived) keeps its result.
pub(super) async fn on_connection<T, E>(
    guard: Option<&Guard>,
    work: impl Future<Output = Result<T, E>>,
) -> Result<T, GraphqlError>
where
    GraphqlError: From<E>,
{
    let Some(Guard {
        deadline,
        cancel,
        cancelled,
    }) = guard
    else {
        return Ok(work.await?);
    };
    let mut work = std::pin::pin!(work);
    if let Ok(done) = tokio::time::timeout_at(deadline.at, work.as_mut()).await {
        return Ok(done?);
    }
    cancelled.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Err(error) = cancel.cancel_query(tokio_postgres::NoTls).await {
        tracing::warn!(%error, "cannot cancel a statement past its time limit");
    }
    match tokio::time::timeout(CANCELLED_GRACE, work).await {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(_)) => Err(deadline.exceeded()),
        Err(_) => {
            tracing::warn!("a cancelled statement did not end; its connection is left to finish");
            Err(deadline.exceeded())
        }
    }
}
