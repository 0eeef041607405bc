//! Group commit of controller writes (`docs/kubernetes.md`, "Group commit"; design D5 as
//! amended): the writes of reconciles that are ready at the same moment run in one catalog
//! transaction — one lock, one load, one introspection, one consistency check, one version,
//! one `NOTIFY` — instead of one each. Every write keeps its own outcome: each runs under its
//! own savepoint, so one that is refused (a metadata error, a stale plan, an ownership race)
//! is rolled back alone and the others commit.

use super::{
    database, load, lock, managed, notification_payload, remote, run, store, versions, Basis,
    BasisCache, CatalogError, Snapshot, Work, NOTIFY_CHANNEL,
};
use crate::catalog::OwnershipChanges;
use crate::metadata::objects::{self, Object};
use crate::ops::{self, Op};
use crate::resolve;
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
/// not read (and introspect) everything again for the version it just made.
#[derive(Debug)]
pub struct CommittedView {
    /// The counters this describes (read before `rows`, so the rows are at least as recent).
    pub versions: versions::Versions,
    /// The committed metadata, its version and its schema.
    pub snapshot: std::sync::Arc<Snapshot>,
    /// Every ownership row, without its definition (see [`managed::load_for_plans`]).
    pub rows: Vec<crate::metadata::objects::Managed>,
}

/// What [`execute_group`] did.
#[derive(Debug)]
pub struct GroupOutcome {
    /// Each item's result, in order.
    pub results: Vec<Result<i64, CatalogError>>,
    /// The state after the commit, when something was committed and no DDL ran meanwhile
    /// (the group's own capture triggers, or anyone's): then it is exactly what reading again
    /// would find, until the next change.
    pub view: Option<CommittedView>,
}

impl GroupOutcome {
    fn only(results: Vec<Option<Result<i64, CatalogError>>>) -> Self {
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
) -> Vec<Option<Result<i64, CatalogError>>> {
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
            (item.op.may_introspect() || !unchanged(item)).then_some(Err(CatalogError::Conflict {
                expected: item.expected_version,
                current: version,
            }))
        })
        .collect()
}

/// What the group committed, for the controller's shared view: the counters read at its end,
/// the snapshot (with capture-trigger drift among its inconsistencies, which the pure
/// resolution a request makes leaves out) and the ownership rows.
async fn committed_view(
    tx: &tokio_postgres::Transaction<'_>,
    ended: versions::Versions,
    committed: std::sync::Arc<Snapshot>,
    drift: Vec<crate::resolve::Inconsistency>,
) -> Result<CommittedView, CatalogError> {
    let rows = managed::load_for_plans(tx).await?;
    // The basis shares the snapshot when there is no drift, as there usually is none.
    let snapshot = if drift.is_empty() {
        committed
    } else {
        let mut snapshot = Snapshot::clone(&committed);
        snapshot.schema.inconsistencies.extend(drift);
        std::sync::Arc::new(snapshot)
    };
    Ok(CommittedView {
        versions: ended,
        snapshot,
        rows,
    })
}

/// Runs `items` in one transaction. The outer error fails the whole group (nothing was
/// stored; the caller runs each write on its own); otherwise each item has its own result:
/// the committed catalog version, or why it alone was refused ([`CatalogError::Conflict`] for
/// a plan whose objects changed since it was made or a key taken by an earlier write of the
/// group, [`CatalogError::Metadata`] with the path inside the item's `bulk`).
///
/// With `basis`, the group starts from the state the previous group left when nothing changed
/// since (see [`Basis`]), and leaves its own for the next.
pub async fn execute_group(
    client: &mut tokio_postgres::Client,
    items: &[GroupItem<'_>],
    basis: Option<&BasisCache>,
) -> Result<GroupOutcome, CatalogError> {
    let cache = basis;
    let tx = client.transaction().await?;
    lock(&tx).await?;
    // Before the load and the introspection: changes committed after them show as later
    // counts.
    let started = versions::read(&tx).await?;
    let basis = cache.and_then(|c| c.take_for(items.iter().map(|item| item.op), &started));
    let (metadata, version) = match &basis {
        Some(basis) => (basis.snapshot.metadata.clone(), basis.snapshot.version),
        // The row is locked already.
        None => load(&tx, false).await?,
    };
    let mut results = refused_up_front(items, &metadata, version);
    if results.iter().all(Option::is_some) {
        // Every plan is stale: nothing to introspect or store.
        return Ok(GroupOutcome::only(results));
    }
    let mut enum_candidates = metadata.enum_tables();
    for item in items {
        enum_candidates.extend(item.op.enum_candidates());
    }
    let db = match &basis {
        Some(basis) => basis.db.clone(),
        None => std::sync::Arc::new(database::read_model(&tx, &enum_candidates).await?),
    };
    let remotes = remote::world(&tx, &metadata).await?;
    let mut work = Work {
        remotes: remotes.clone(),
        remotes_before: remotes,
        metadata: metadata.clone(),
        db: db.clone(),
        session: serde_json::json!({"x-svc-role": "admin"}),
        enum_candidates,
        own_consistency_rules: false,
        rebuild: false,
        db_before: db,
        resolution: basis.as_ref().map(super::Resolution::of),
    };
    let mut taken: BTreeSet<&str> = BTreeSet::new();
    let mut committed = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if results[i].is_some() {
            continue;
        }
        if item.keys.iter().any(|k| taken.contains(k.as_str())) {
            results[i] = Some(Err(CatalogError::Conflict {
                expected: item.expected_version,
                current: version,
            }));
            continue;
        }
        match apply_item(&tx, &mut work, item).await? {
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
    // Capture triggers follow the group's event-trigger changes, as one write's would.
    super::events::sync(&tx, &metadata, &mut work).await?;
    let after = work.take_resolved();
    // Which write left something inconsistent is not known here: the caller finds out by
    // running each on its own. Nothing inconsistent after: nothing to compare with before.
    if !after.inconsistencies.is_empty() {
        match &basis {
            Some(basis) => ops::check_no_new_inconsistency(&basis.snapshot.schema, &after)?,
            None => {
                let before =
                    resolve::resolve_with(&metadata, &work.db_before, &work.remotes_before);
                ops::check_no_new_inconsistency(&before, &after)?;
            }
        }
    }
    let mut new_version = version;
    if work.metadata != metadata {
        new_version = store(&tx, &work.metadata).await?;
    }
    for &i in &committed {
        managed::write(&tx, items[i].ownership, new_version).await?;
        results[i] = Some(Ok(new_version));
    }
    // The counters first, then the rows: rows written meanwhile make the view look older
    // than it is (read again sooner), never newer.
    let ended = versions::read(&tx).await?;
    let drift = resolve::events::capture_drift(&work.metadata, &work.db);
    let committed = std::sync::Arc::new(Snapshot {
        version: new_version,
        metadata: work.metadata,
        schema: after,
    });
    let next_basis = match cache {
        Some(_) => Basis::after(&started, ended, work.db, &committed),
        None => None,
    };
    let view = match ended.ddl == started.ddl {
        true => Some(committed_view(&tx, ended, committed, drift).await?),
        false => None,
    };
    if new_version != version || work.rebuild {
        let payload = notification_payload(new_version, new_version == version);
        tx.execute("SELECT pg_notify($1, $2)", &[&NOTIFY_CHANNEL, &payload])
            .await?;
    }
    tx.commit().await?;
    if let (Some(cache), Some(basis)) = (cache, next_basis) {
        cache.set(basis);
    }
    Ok(GroupOutcome {
        results: results.into_iter().flatten().collect(),
        view,
    })
}

/// Runs one write under a savepoint; a refusal rolls it (and its changes to `work`) back.
/// The outer error is a database failure that ends the group.
async fn apply_item(
    tx: &Transaction<'_>,
    work: &mut Work,
    item: &GroupItem<'_>,
) -> Result<Result<(), CatalogError>, CatalogError> {
    tx.batch_execute("SAVEPOINT basalt_group_item").await?;
    let saved = work.metadata.clone();
    let outcome = async {
        // Ownership claimed or released by another resource since the plan: planned again.
        if !managed::unchanged(tx, item.ownership).await? {
            return Err(CatalogError::Conflict {
                expected: item.expected_version,
                current: item.expected_version,
            });
        }
        run(tx, work, item.op).await.map(|_| ())
    }
    .await;
    match outcome {
        Ok(()) => {
            tx.batch_execute("RELEASE SAVEPOINT basalt_group_item")
                .await?;
            Ok(Ok(()))
        }
        Err(refused @ (CatalogError::Metadata(_) | CatalogError::Conflict { .. })) => {
            tx.batch_execute("ROLLBACK TO SAVEPOINT basalt_group_item")
                .await?;
            work.metadata = saved;
            Ok(Err(refused))
        }
        Err(failure) => Err(failure),
    }
}
