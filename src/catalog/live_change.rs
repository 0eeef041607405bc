//! Change detection's triggers put in step with what is tracked (`docs/graphql.md`, "When
//! subscriptions run"). What must change is worked out from the database model
//! ([`crate::resolve::live_change::plan`]); this runs it: under an advisory lock (so
//! replicas installing at once do not race), the notify function when missing, then each
//! change in its own savepoint with a short lock wait, so that a table the role does not own,
//! or one that stays locked, is left uncovered instead of failing the rest.

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
        let refusal = match in_savepoint(tx, &statements).await? {
            None => {
                applied.statements += statements.len() as i64;
                applied.done.push(change.clone());
                continue;
            }
            Some(refusal) => refusal,
        };
        let (TriggerChange::Create(table)
        | TriggerChange::EnableAlways(table)
        | TriggerChange::Drop(table)) = change;
        tracing::warn!(%table, reason = refusal, "cannot change the live-query change trigger of this table: its subscriptions run every interval until a later schema build manages to");
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

/// Runs `statements` in a savepoint, waiting at most a moment for the table's lock; `None`
/// when done, or why Postgres refused them (nothing done): the role does not own the table, or
/// the table stayed locked by other transactions. Any other failure is an error.
async fn in_savepoint(
    tx: &impl GenericClient,
    statements: &[String],
) -> Result<Option<&'static str>, CatalogError> {
    use tokio_postgres::error::SqlState;
    tx.batch_execute(ddl::SAVEPOINT).await?;
    tx.batch_execute(ddl::LOCK_TIMEOUT).await?;
    for statement in statements {
        if let Err(err) = tx.batch_execute(statement).await {
            let refusal = match err.code() {
                Some(code) if *code == SqlState::INSUFFICIENT_PRIVILEGE => "not its owner",
                Some(code) if *code == SqlState::LOCK_NOT_AVAILABLE => "busy",
                _ => return Err(err.into()),
            };
            tx.batch_execute(ddl::ROLLBACK_SAVEPOINT).await?;
            return Ok(Some(refusal));
        }
    }
    tx.batch_execute(ddl::RELEASE_SAVEPOINT).await?;
    tx.batch_execute(ddl::DEFAULT_LOCK_TIMEOUT).await?;
    Ok(None)
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
