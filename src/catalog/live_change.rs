//! Change detection's triggers put in step with what is tracked (`docs/graphql.md`, "When
//! subscriptions run"). What must change is worked out from the database model
//! ([`crate::resolve::live_change::plan`]); this runs it: under an advisory lock (so
//! replicas installing at once do not race), the notify function when missing, then each
//! change in its own savepoint, so that a table the role does not own is left uncovered
//! instead of failing the rest.

use super::CatalogError;
use crate::resolve::live_change::{tracked, LivePolicy, TriggerChange, TriggerPlan};
use crate::sql::live_change as ddl;
use tokio_postgres::GenericClient;

/// What ran of a plan.
#[derive(Debug, Default)]
pub struct Applied {
    /// The changes that took effect.
    pub done: Vec<TriggerChange>,
    /// The notify function was created.
    pub function: bool,
    /// DDL statements that ran (each counts once in the database's DDL counter).
    pub statements: i64,
}

/// Runs `plan` in the transaction `tx` is in.
pub async fn apply(tx: &impl GenericClient, plan: &TriggerPlan) -> Result<Applied, CatalogError> {
    let mut applied = Applied::default();
    if plan.is_empty() {
        return Ok(applied);
    }
    tx.batch_execute(ddl::LOCK).await?;
    if plan.function {
        tx.batch_execute(ddl::FUNCTION).await?;
        applied.function = true;
        applied.statements += 1;
    }
    for change in &plan.changes {
        let statements = match change {
            TriggerChange::Create(table) => ddl::create(table).to_vec(),
            TriggerChange::EnableAlways(table) => vec![ddl::enable_always(table)],
            TriggerChange::Drop(table) => vec![ddl::drop(table)],
        };
        if in_savepoint(tx, &statements).await? {
            applied.statements += statements.len() as i64;
            applied.done.push(change.clone());
            continue;
        }
        let (TriggerChange::Create(table)
        | TriggerChange::EnableAlways(table)
        | TriggerChange::Drop(table)) = change;
        tracing::warn!(%table, "cannot change the live-query change trigger of this table (not its owner): its subscriptions run every interval");
    }
    Ok(applied)
}

/// Puts the triggers in step under `policy` in a transaction of its own, waiting at most a
/// moment for locks. What to change is worked out again inside, under the catalog's lock, from
/// the committed metadata and the database as they are then: a metadata write in flight keeps
/// the triggers in step itself, and a plan made from an older view could undo its work. When
/// it changed anything, every process is told to rebuild (so each reads the new coverage).
pub async fn apply_alone(
    client: &mut tokio_postgres::Client,
    policy: &LivePolicy,
) -> Result<Applied, CatalogError> {
    let tx = client.transaction().await?;
    tx.batch_execute(ddl::LOCK_TIMEOUT).await?;
    let (metadata, version) = super::load(&tx, true).await?;
    let db = super::database::read_model(&tx, &[]).await?;
    let plan = crate::resolve::live_change::plan(&db, &tracked(&metadata), policy);
    let applied = apply(&tx, &plan).await?;
    if applied.statements > 0 {
        super::Notification::Reload(version).send(&tx).await?;
    }
    tx.commit().await?;
    Ok(applied)
}

/// Runs `statements` in a savepoint; `false` (and nothing done) when Postgres refuses them
/// for lack of privilege, an error otherwise.
async fn in_savepoint(
    tx: &impl GenericClient,
    statements: &[String],
) -> Result<bool, CatalogError> {
    tx.batch_execute(ddl::SAVEPOINT).await?;
    for statement in statements {
        if let Err(err) = tx.batch_execute(statement).await {
            if err.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) {
                tx.batch_execute(ddl::ROLLBACK_SAVEPOINT).await?;
                return Ok(false);
            }
            return Err(err.into());
        }
    }
    tx.batch_execute(ddl::RELEASE_SAVEPOINT).await?;
    Ok(true)
}

/// The fallback check, on the listener's session: the notification queue's usage (0 to 1),
/// and which of the tables `covered` (OIDs) lost their trigger or have it not firing always.
pub async fn recheck(
    client: &impl GenericClient,
    covered: &[u32],
) -> Result<(f64, Vec<u32>), CatalogError> {
    let row = client.query_one(ddl::RECHECK, &[&covered]).await?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}
