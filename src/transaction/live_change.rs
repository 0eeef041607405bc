//! Change detection's triggers in the metadata transaction (`docs/graphql.md`, "When
//! subscriptions run"): after a write's operations, the tables it tracks get the
//! `basalt_live_change` trigger and the tables it no longer tracks lose it, in the same
//! transaction, so a commit never leaves them apart. The draft's database model then
//! describes the triggers as they now are.

use super::draft::Draft;
use super::TransactionError;
use crate::catalog::live_change as install;
use crate::resolve::live_change::{self as live, LivePolicy};
use std::sync::Arc;
use tokio_postgres::Transaction;

/// Puts the triggers in step with the draft's document under `policy`; answers the number
/// of DDL statements run (the transaction knows what they changed, so they do not make the
/// model it leaves stale). Nothing runs when the triggers are in step already.
pub(super) async fn sync(
    tx: &Transaction<'_>,
    draft: &mut Draft,
    policy: &LivePolicy,
) -> Result<i64, TransactionError> {
    let tracked = crate::resolve::live_change::tracked(&draft.metadata);
    let plan = live::plan(&draft.db, &tracked, policy);
    if plan.is_empty() {
        return Ok(0);
    }
    let applied = install::apply(tx, &plan).await?;
    if !applied.done.is_empty() || applied.function {
        let mut state = draft.db.live.clone();
        live::applied(&mut state, &draft.db, &applied.done, applied.function);
        Arc::make_mut(&mut draft.db).live = state;
    }
    Ok(applied.statements)
}
