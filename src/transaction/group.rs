//! Group commit of controller writes (`docs/kubernetes.md`, "Group commit"): the writes of
//! reconciles that are ready at the same moment run in one catalog transaction — one lock, one
//! load, one read of the database model, one consistency check, one version, one `NOTIFY` —
//! instead of one each. Every write keeps its own outcome: each runs under its own savepoint,
//! so one that is refused (a metadata error, a stale plan, an ownership race) is rolled back
//! alone and the others commit.

use super::draft::Draft;
use super::last_write::{LastWrite, LastWriteCache};
use super::{events, remotes, run_op, scheduled, TransactionError};
use crate::catalog::{
    self, database, managed, versions, CatalogError, CatalogVersion, Notification, OwnershipChanges,
};
use crate::metadata::objects::{self, Object};
use crate::ops::{self, Op};
use crate::session::Session;
use std::collections::BTreeSet;
use tokio_postgres::Transaction;

/// One controller write joining a group.
#[derive(Debug)]
pub struct GroupItem<'a> {
    /// The resource's operations (a `bulk`).
    pub op: &'a Op,
    /// The catalog version the write was planned against.
    pub expected_version: i64,
    /// The catalog's definition, at `expected_version`, of every key in `keys` (`None`:
    /// absent). A write planned against an older version still commits when none of these
    /// changed since: other resources' writes in between do not make its plan stale.
    pub base: &'a [(String, Option<Object>)],
    /// Every object key its operations or ownership rows touch: two writes of one group may not
    /// share one (the later is refused as a conflict and planned again).
    pub keys: &'a [String],
    /// Ownership rows written with it.
    pub ownership: &'a OwnershipChanges,
}

/// What the catalog and the database hold once a group committed, read as a controller's
/// view of them would be, inside the group's transaction: handed back so the controller does
/// not read the catalog and the database model again for the version it just made.
#[derive(Debug)]
pub struct CommittedView {
    /// The counters this describes (read before `rows`, so the rows are at least as recent).
    pub versions: versions::Versions,
    /// The committed metadata, its version and its resolution.
    pub catalog: std::sync::Arc<CatalogVersion>,
    /// Every ownership row, without its definition (see [`managed::load_for_plans`]).
    pub rows: Vec<crate::metadata::objects::Managed>,
}

/// What [`run_group`] did.
#[derive(Debug)]
pub struct GroupOutcome {
    /// Each item's result, in order.
    pub results: Vec<Result<i64, TransactionError>>,
    /// The state after the commit, when something was committed and no DDL ran meanwhile
    /// (the group's own capture triggers, or anyone's): then it is exactly what reading again
    /// would find, until the next change.
    pub view: Option<CommittedView>,
}

impl GroupOutcome {
    fn only(results: Vec<Option<Result<i64, TransactionError>>>) -> Self {
        GroupOutcome {
            results: results.into_iter().flatten().collect(),
            view: None,
        }
    }
}

/// The items refused before anything runs, as conflicts: those planned on an older version
/// whose objects changed since, and those that introspect a remote server first (the
/// controller sends those alone; refused here rather than run unprepared).
fn refused_up_front(
    items: &[GroupItem<'_>],
    metadata: &crate::metadata::types::Metadata,
    version: i64,
) -> Vec<Option<Result<i64, TransactionError>>> {
    let stale = |item: &GroupItem<'_>| item.expected_version != version;
    let wanted: BTreeSet<&str> = items
        .iter()
        .filter(|item| stale(item))
        .flat_map(|item| item.base.iter().map(|(key, _)| key.as_str()))
        .collect();
    let current = items
        .iter()
        .any(stale)
        .then(|| objects::objects_with_keys(metadata, &wanted));
    let unchanged = |item: &GroupItem<'_>| match &current {
        Some(objects) if stale(item) => item
            .base
            .iter()
            .all(|(key, before)| objects.get(key) == before.as_ref()),
        _ => true,
    };
    items
        .iter()
        .map(|item| {
            (item.op.may_introspect() || !unchanged(item)).then_some(Err(
                TransactionError::Conflict {
                    expected: item.expected_version,
                    current: version,
                },
            ))
        })
        .collect()
}

/// What the group committed, for the controller's shared view: the counters read at its end,
/// the catalog version (with capture-trigger drift among its inconsistencies, which the pure
/// resolution a request makes leaves out) and the ownership rows.
async fn committed_view(
    tx: &tokio_postgres::Transaction<'_>,
    ended: versions::Versions,
    committed: std::sync::Arc<CatalogVersion>,
    drift: Vec<crate::resolve::Inconsistency>,
) -> Result<CommittedView, CatalogError> {
    let rows = managed::load_for_plans(tx).await?;
    // The last write shares the version when there is no drift, as there usually is none.
    let catalog = if drift.is_empty() {
        committed
    } else {
        let mut catalog = CatalogVersion::clone(&committed);
        catalog.resolution.inconsistencies.extend(drift);
        std::sync::Arc::new(catalog)
    };
    Ok(CommittedView {
        versions: ended,
        catalog,
        rows,
    })
}

/// Runs `items` in one transaction. The outer error fails the whole group (nothing was
/// stored; the caller runs each write on its own); otherwise each item has its own result:
/// the committed catalog version, or why it alone was refused ([`TransactionError::Conflict`]
/// for a plan whose objects changed since it was made or a key taken by an earlier write of
/// the group, [`TransactionError::Metadata`] with the path inside the item's `bulk`).
///
/// With `cache`, the group starts from the state the previous group left when nothing changed
/// since (see [`LastWrite`]), and leaves its own for the next.
pub async fn run_group(
    client: &mut tokio_postgres::Client,
    items: &[GroupItem<'_>],
    cache: Option<&LastWriteCache>,
    live: &crate::resolve::live_change::LivePolicy,
) -> Result<GroupOutcome, TransactionError> {
    let tx = client.transaction().await?;
    catalog::lock(&tx).await?;
    // Before the load and the database model: changes committed after them show as later
    // counts.
    let started = versions::read(&tx).await?;
    let last = cache.and_then(|c| c.take_for(items.iter().map(|item| item.op), &started));
    let (metadata, version) = match &last {
        Some(last) => (last.catalog.metadata.clone(), last.catalog.version),
        // The row is locked already.
        None => catalog::load(&tx, false).await?,
    };
    let mut results = refused_up_front(items, &metadata, version);
    if results.iter().all(Option::is_some) {
        // Every plan is stale: no database model to read, nothing to store.
        return Ok(GroupOutcome::only(results));
    }
    let mut enum_candidates = metadata.enum_tables();
    for item in items {
        enum_candidates.extend(item.op.enum_candidates());
    }
    let db = match &last {
        Some(last) => last.db.clone(),
        None => {
            let mut db = database::read_model(&tx, &enum_candidates)
                .await
                .map_err(CatalogError::from)?;
            crate::catalog::probes::probe(&tx, &mut db, &metadata)
                .await
                .map_err(CatalogError::from)?;
            std::sync::Arc::new(db)
        }
    };
    let stored = remotes::world(&tx, &metadata).await?;
    let mut draft = Draft::new(
        metadata.clone(),
        db,
        (stored, &[]),
        Session::admin(),
        enum_candidates,
        last.as_ref(),
    );
    let mut taken: BTreeSet<&str> = BTreeSet::new();
    let mut committed = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if results[i].is_some() {
            continue;
        }
        if item.keys.iter().any(|k| taken.contains(k.as_str())) {
            results[i] = Some(Err(TransactionError::Conflict {
                expected: item.expected_version,
                current: version,
            }));
            continue;
        }
        match apply_item(&tx, &mut draft, item).await? {
            Ok(()) => {
                taken.extend(item.keys.iter().map(String::as_str));
                committed.push(i);
            }
            Err(refused) => results[i] = Some(Err(refused)),
        }
    }
    if committed.is_empty() {
        return Ok(GroupOutcome::only(results));
    }
    // Capture triggers and cron events follow the group's changes, as one write's would.
    events::sync(&tx, &metadata, &mut draft).await?;
    scheduled::sync(&tx, &metadata, &draft.metadata, false).await?;
    draft.probe(&tx).await?;
    let after = draft.take_resolution();
    for &i in &committed {
        ops::native_queries::check_deferred(items[i].op, &draft.metadata, &after)?;
    }
    // As one write does (after resolving: the triggers are no part of resolution).
    let own_ddl = super::live_change::sync(&tx, &mut draft, live).await?;
    let mut started = started;
    if let Some(ddl) = started.ddl.as_mut() {
        *ddl += own_ddl;
    }
    // Which write left something inconsistent is not known here: the caller finds out by
    // running each on its own. Nothing inconsistent after: nothing to compare with before.
    if !after.inconsistencies.is_empty() {
        match &last {
            Some(last) => ops::check_no_new_inconsistency(&last.catalog.resolution, &after)?,
            None => {
                let before = draft.resolution_before(&metadata);
                ops::check_no_new_inconsistency(&before, &after)?;
            }
        }
    }
    let mut new_version = version;
    if draft.metadata != metadata {
        new_version = catalog::store(&tx, &draft.metadata).await?;
    }
    for &i in &committed {
        managed::write(&tx, items[i].ownership, new_version).await?;
        results[i] = Some(Ok(new_version));
    }
    // The counters first, then the rows: rows written meanwhile make the view look older
    // than it is (read again sooner), never newer.
    let ended = versions::read(&tx).await?;
    let drift = crate::resolve::events::capture_drift(&draft.metadata, &draft.db);
    let committed = std::sync::Arc::new(CatalogVersion {
        version: new_version,
        metadata: draft.metadata,
        resolution: after,
        db: draft.db.clone(),
    });
    let next = match cache {
        Some(_) => LastWrite::after(&started, ended, draft.db, &committed),
        None => None,
    };
    let view = match ended.ddl == started.ddl {
        true => Some(committed_view(&tx, ended, committed, drift).await?),
        false => None,
    };
    if new_version != version || draft.rebuild {
        Notification::of(new_version, new_version == version)
            .send(&tx)
            .await?;
    }
    tx.commit().await?;
    if let (Some(cache), Some(last)) = (cache, next) {
        cache.set(last);
    }
    Ok(GroupOutcome {
        results: results.into_iter().flatten().collect(),
        view,
    })
}

/// Runs one write under a savepoint; a refusal rolls it (and its changes to the draft) back.
/// The outer error is a database failure that ends the group.
async fn apply_item(
    tx: &Transaction<'_>,
    draft: &mut Draft,
    item: &GroupItem<'_>,
) -> Result<Result<(), TransactionError>, TransactionError> {
    tx.batch_execute("SAVEPOINT basalt_group_item").await?;
    let saved = draft.metadata.clone();
    let outcome = async {
        // Ownership claimed or released by another resource since the plan: planned again.
        if !managed::unchanged(tx, item.ownership).await? {
            return Err(TransactionError::Conflict {
                expected: item.expected_version,
                current: item.expected_version,
            });
        }
        run_op(tx, draft, item.op).await.map(|_| ())
    }
    .await;
    match outcome {
        Ok(()) => {
            tx.batch_execute("RELEASE SAVEPOINT basalt_group_item")
                .await?;
            Ok(Ok(()))
        }
        Err(refused @ (TransactionError::Metadata(_) | TransactionError::Conflict { .. })) => {
            tx.batch_execute("ROLLBACK TO SAVEPOINT basalt_group_item")
                .await?;
            draft.metadata = saved;
            Ok(Err(refused))
        }
        Err(failure) => Err(failure),
    }
}
