//! The metadata transaction: runs `/v1/query` operations (and the controller's writes) against
//! the catalog in one Postgres transaction. It takes the catalog row lock, loads the document
//! and reads the database model (or starts from the process's [`LastWrite`]), applies each
//! operation ([`crate::ops::apply`], `run_sql`, the event log), keeps the capture triggers in
//! step, checks that nothing new is inconsistent, answers with what only the catalog knows
//! (owners, drift), stores the document as the next version and sends the [`Notification`].
//! [`group`] commits several controller writes in one transaction; [`read`] is what a process
//! loads to serve. Storage itself is `crate::catalog`'s.

mod annotate;
mod draft;
mod events;
pub mod group;
mod last_write;
mod live_change;
mod remotes;
mod run_sql;
mod scheduled;

pub use group::{run_group, CommittedView, GroupItem, GroupOutcome};
pub use last_write::{LastWrite, LastWriteCache};
pub use remotes::refresh as refresh_remotes;

use crate::catalog::{self, managed, versions, CatalogError, CatalogVersion, Notification};
use crate::catalog::{database, OwnershipChanges};
use crate::metadata::objects;
use crate::metadata::path::JsonPath;
use crate::metadata::{Code, Metadata, MetadataError};
use crate::ops::answer::DryRun;
use crate::ops::{self, schema_changes, Answer, Context, Op};
use crate::resolve::live_change::LivePolicy;
use crate::resolve::{self, Resolution};
use crate::session::Session;
use draft::Draft;
use std::sync::Arc;
use tokio_postgres::{GenericClient, Transaction};
use tracing::Instrument;

/// Why a metadata transaction did not commit.
#[derive(Debug, thiserror::Error)]
pub enum TransactionError {
    /// An operation was refused (400).
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    /// The caller's expected `resource_version` is stale (409).
    #[error("resource_version mismatch: expected {expected}, but the catalog is at {current}")]
    Conflict { expected: i64, current: i64 },
    /// The catalog could not be read or written.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

impl From<tokio_postgres::Error> for TransactionError {
    fn from(err: tokio_postgres::Error) -> Self {
        TransactionError::Catalog(CatalogError::Database(err))
    }
}

impl From<deadpool_postgres::PoolError> for TransactionError {
    fn from(err: deadpool_postgres::PoolError) -> Self {
        TransactionError::Catalog(CatalogError::Pool(err))
    }
}

/// Who writes, and what that means for objects owned by Kubernetes resources.
#[derive(Debug, Clone, Copy)]
pub enum Writer<'a> {
    /// A `/v1/query` request; with `reject_managed` a change to a managed object is refused
    /// (`BASALT_MANAGED_METADATA=reject`).
    Api {
        reject_managed: bool,
        /// The caller; the admin when `None`.
        session: Option<&'a Session>,
        /// The process's last write, to start from when it is still current and to update
        /// after a commit; `None` reads everything again.
        last_write: Option<&'a LastWriteCache>,
        /// The process's change-detection settings, to put the live-query triggers in step
        /// in the same transaction; `None` leaves that to the engines' schema builds.
        live: Option<&'a LivePolicy>,
    },
    /// The Kubernetes controller, recording ownership in the same transaction, and keeping
    /// the live-query change triggers in step under its settings.
    Controller(&'a OwnershipChanges, &'a LivePolicy),
}

impl Writer<'_> {
    fn last_write(&self) -> Option<&LastWriteCache> {
        match self {
            Writer::Api { last_write, .. } => *last_write,
            Writer::Controller(..) => None,
        }
    }

    fn live(&self) -> Option<&LivePolicy> {
        match self {
            Writer::Api { live, .. } => *live,
            Writer::Controller(_, live) => Some(live),
        }
    }
}

/// What a committed (or read-only) transaction did.
#[derive(Debug)]
pub struct Outcome {
    pub answer: Answer,
    /// The state after the transaction.
    pub catalog: Arc<CatalogVersion>,
    /// Whether the document was stored as a new version.
    pub wrote: bool,
    /// What was sent so that peers rebuild (a write, or a change of the database model);
    /// `None` when nothing changed.
    pub notification: Option<Notification>,
}

/// The committed document, the database model and the document resolved against it: what a
/// process serves.
pub async fn read(client: &impl GenericClient) -> Result<CatalogVersion, TransactionError> {
    let (metadata, version) = catalog::load(client, false).await?;
    let mut db = database::read_model(client, &metadata.enum_tables())
        .await
        .map_err(CatalogError::from)?;
    crate::catalog::probes::probe(client, &mut db, &metadata)
        .await
        .map_err(CatalogError::from)?;
    let remotes = remotes::world(client, &metadata).await?;
    let mut schema = resolve::resolve_with(&metadata, &db, &remotes);
    schema
        .inconsistencies
        .extend(resolve::events::capture_drift(&metadata, &db));
    Ok(CatalogVersion {
        version,
        metadata,
        resolution: schema,
        db: Arc::new(db),
    })
}

/// Runs a request as the admin, through the metadata API's rules (see [`run_as`]).
pub async fn run(
    client: &mut tokio_postgres::Client,
    op: &Op,
    expected_version: Option<i64>,
) -> Result<Outcome, TransactionError> {
    let writer = Writer::Api {
        reject_managed: false,
        session: None,
        last_write: None,
        live: None,
    };
    run_as(client, op, expected_version, writer).await
}

/// Runs a request: lock, load, read the database model, run each operation, check, store
/// (with ownership rows for the controller), notify, in one transaction. `expected_version`
/// gives compare-and-swap semantics.
pub async fn run_as(
    client: &mut tokio_postgres::Client,
    op: &Op,
    expected_version: Option<i64>,
    writer: Writer<'_>,
) -> Result<Outcome, TransactionError> {
    let fetched = remotes::prefetch(&*client, op).await?;
    let tx = client.transaction().await?;
    let Change {
        metadata,
        version,
        mut draft,
        schema,
        mut answer,
        started,
    } = stage(&tx, op, expected_version, writer, &fetched).await?;
    if !op.is_read_only() {
        draft.rebuild |= catalog::remote::store(&tx, &metadata, &draft.metadata, &fetched).await?;
    }
    let wrote = draft.metadata != metadata;
    annotate::annotate(&tx, op, &metadata, &draft.db, &mut answer).await?;
    let mut new_version = version;
    if wrote {
        new_version = catalog::store(&tx, &draft.metadata).await?;
    }
    if let Writer::Controller(changes, _) = writer {
        // Another resource claimed or released one of these objects since the plan was
        // made: a conflict, so the controller plans again and sees who owns it now.
        if !managed::unchanged(&tx, changes).await? {
            return Err(TransactionError::Conflict {
                expected: version,
                current: version,
            });
        }
        managed::write(&tx, changes, new_version).await?;
    }
    let notification = (wrote || draft.rebuild).then(|| Notification::of(new_version, !wrote));
    if let Some(notification) = &notification {
        notification.send(&tx).await?;
    }
    // The counters again, for the state the next write may start from.
    let ended = match started {
        Some(_) if LastWrite::cacheable(&draft.metadata) => Some(versions::read(&tx).await?),
        _ => None,
    };
    tx.commit().await?;
    let catalog = Arc::new(CatalogVersion {
        version: new_version,
        metadata: draft.metadata,
        resolution: schema,
        db: draft.db.clone(),
    });
    if let (Some(cache), Some(started), Some(ended)) = (writer.last_write(), started, ended) {
        if let Some(last) = LastWrite::after(&started, ended, draft.db, &catalog) {
            cache.set(last);
        }
    }
    Ok(Outcome {
        answer,
        catalog,
        wrote,
        notification,
    })
}

/// Runs a request exactly as [`run_as`] would (the same locks, SQL, checks and errors), then
/// rolls the transaction back: nothing is stored and nothing is sent. Answers what would
/// change, object by object, and the inconsistent objects the change would leave that were
/// not there before (`dry_run` on `/v1/query`).
pub async fn dry_run(
    client: &mut tokio_postgres::Client,
    op: &Op,
    expected_version: Option<i64>,
    writer: Writer<'_>,
) -> Result<Answer, TransactionError> {
    let fetched = remotes::prefetch(&*client, op).await?;
    let tx = client.transaction().await?;
    let change = stage(&tx, op, expected_version, writer, &fetched).await?;
    let changes = objects::object_changes(&change.metadata, &change.draft.metadata);
    let known = change
        .draft
        .resolution_before(&change.metadata)
        .blocking_ids();
    let fresh: Vec<_> = change
        .schema
        .inconsistencies
        .iter()
        .filter(|i| !known.contains(&i.object))
        .cloned()
        .collect();
    let mut answer = Answer::DryRun(DryRun {
        dry_run: true,
        added: changes.added,
        changed: changes.changed,
        removed: changes.removed,
        inconsistent_objects: ops::answer::items(&fresh),
        is_consistent: None,
        owners: None,
    });
    let db = &change.draft.db;
    annotate::annotate(&tx, op, &change.metadata, db, &mut answer).await?;
    tx.rollback().await?;
    Ok(answer)
}

/// A request's operations run in a transaction, checked, not yet stored.
struct Change {
    /// The document before.
    metadata: Metadata,
    /// Its version.
    version: i64,
    /// The document and database after.
    draft: Draft,
    /// The document after, resolved against the database after.
    schema: Resolution,
    answer: Answer,
    /// The change counters read once the catalog row was locked, when the writer keeps its
    /// last write.
    started: Option<versions::Versions>,
}

/// Lock, load, read the database model, run each operation, check.
async fn stage(
    tx: &Transaction<'_>,
    op: &Op,
    expected_version: Option<i64>,
    writer: Writer<'_>,
    fetched: &[crate::resolve::remote::Fetched],
) -> Result<Change, TransactionError> {
    // A controller write that changes only ownership still takes the catalog lock: ownership
    // rows are claimed in the catalog's order, like metadata.
    let read_only =
        op.is_read_only() && !matches!(writer, Writer::Controller(c, _) if !c.is_empty());
    // With a last write kept: lock, then read the counters; one recorded at exactly these
    // counters is what loading and reading the database would find.
    let (mut started, last) = match writer.last_write() {
        Some(cache) => {
            if !read_only {
                catalog::lock(tx).await?;
            }
            let now = versions::read(tx).await?;
            let last = cache.take_for(std::iter::once(op), &now);
            (Some(now), last)
        }
        None => (None, None),
    };
    let (metadata, version) = match &last {
        Some(last) => (last.catalog.metadata.clone(), last.catalog.version),
        None => {
            // Locked here unless the last-write path locked it already.
            catalog::load(tx, !read_only && started.is_none())
                .instrument(tracing::debug_span!("catalog.load"))
                .await?
        }
    };
    if let Some(expected) = expected_version.filter(|_| !read_only) {
        if expected != version {
            return Err(TransactionError::Conflict {
                expected,
                current: version,
            });
        }
    }
    let mut enum_candidates = metadata.enum_tables();
    enum_candidates.extend(op.enum_candidates());
    let db = match &last {
        Some(last) => last.db.clone(),
        None => {
            let mut db = database::read_model(tx, &enum_candidates)
                .await
                .map_err(CatalogError::from)?;
            crate::catalog::probes::probe(tx, &mut db, &metadata)
                .await
                .map_err(CatalogError::from)?;
            Arc::new(db)
        }
    };
    let session = match writer {
        Writer::Api {
            session: Some(session),
            ..
        } => session.clone(),
        _ => Session::admin(),
    };
    let stored = remotes::world(tx, &metadata).await?;
    let mut draft = Draft::new(
        metadata.clone(),
        db,
        (stored, fetched),
        session,
        enum_candidates,
        last.as_ref(),
    );
    let answer = run_op(tx, &mut draft, op).await?;
    if !read_only {
        events::sync(tx, &metadata, &mut draft).await?;
        scheduled::sync(tx, &metadata, &draft.metadata, draft.rebuild).await?;
    }
    draft.probe(tx).await?;
    let schema = draft.take_resolution();
    ops::native_queries::check_deferred(op, &draft.metadata, &schema)?;
    // After resolving: the triggers are no part of what resolution reads, and changing the
    // model before would make it resolve the whole document again.
    if let (false, Some(policy)) = (read_only, writer.live()) {
        let statements = live_change::sync(tx, &mut draft, policy).await?;
        if let Some(ddl) = started.as_mut().and_then(|s| s.ddl.as_mut()) {
            *ddl += statements;
        }
    }
    // Nothing inconsistent after: nothing new either, and the state before need not be
    // resolved (the whole document again, expensive for a large one).
    if !draft.own_consistency_rules && !schema.inconsistencies.is_empty() {
        match &last {
            Some(last) => ops::check_no_new_inconsistency(&last.catalog.resolution, &schema)?,
            None => {
                let before = draft.resolution_before(&metadata);
                ops::check_no_new_inconsistency(&before, &schema)?;
            }
        }
    }
    if let Writer::Api {
        reject_managed: true,
        ..
    } = writer
    {
        if draft.metadata != metadata {
            refuse_managed_changes(tx, &metadata, &draft.metadata).await?;
        }
    }
    Ok(Change {
        metadata,
        version,
        draft,
        schema,
        answer,
        started,
    })
}

/// `BASALT_MANAGED_METADATA=reject`: fails when the write changes or removes an object a
/// Kubernetes resource owns.
async fn refuse_managed_changes(
    client: &impl GenericClient,
    before: &Metadata,
    after: &Metadata,
) -> Result<(), TransactionError> {
    let rows = managed::load(client).await?;
    if rows.is_empty() {
        return Ok(());
    }
    let (old, new) = (
        objects::catalog_objects(before),
        objects::catalog_objects(after),
    );
    for row in rows.iter().filter(|r| !r.orphaned) {
        if old.get(&row.key) != new.get(&row.key) {
            return Err(MetadataError::new(
                Code::NotSupported,
                JsonPath::args(),
                format!("{} is managed by {}", row.key, row.owner.describe()),
            )
            .into());
        }
    }
    Ok(())
}

/// Runs one operation of a request (recursing into `bulk`), updating the draft.
fn run_op<'a>(
    tx: &'a Transaction<'_>,
    draft: &'a mut Draft,
    op: &'a Op,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Answer, TransactionError>> + Send + 'a>,
> {
    Box::pin(async move {
        match op {
            Op::Metadata(op) => {
                let outcome = match op.reads_schema() {
                    true => {
                        let (resolved, metadata, db, remotes) = draft.view();
                        let ctx = Context {
                            db,
                            remotes,
                            resolved: Some(resolved),
                        };
                        ops::apply(metadata, op, ctx)?
                    }
                    false => {
                        let ctx = Context {
                            db: &draft.db,
                            remotes: &draft.remotes,
                            resolved: None,
                        };
                        ops::apply(&draft.metadata, op, ctx)?
                    }
                };
                if let ops::MetadataOp::Action(action) = op.as_ref() {
                    if let Some(name) = action.clears_log_of(&draft.metadata) {
                        catalog::actions::clear_log(tx, &name).await?;
                    }
                }
                draft.metadata = outcome.metadata;
                draft.own_consistency_rules |= outcome.own_consistency_rules;
                draft.rebuild |= matches!(
                    op.as_ref(),
                    ops::MetadataOp::Manage(ops::ManageOp::Reload { .. })
                );
                Ok(outcome.answer)
            }
            Op::Bulk(ops) => {
                let mut answers = Vec::with_capacity(ops.len());
                for (i, op) in ops.iter().enumerate() {
                    let answer = run_op(tx, draft, op).await.map_err(|e| match e {
                        TransactionError::Metadata(m) => {
                            TransactionError::Metadata(m.under(&JsonPath::args().index(i)))
                        }
                        other => other,
                    })?;
                    answers.push(answer);
                }
                Ok(Answer::Bulk(answers))
            }
            Op::RunSql(sql) => run_sql_op(tx, draft, sql).await,
            Op::EventLog(op) => events::run(tx, draft, op).await,
            Op::Scheduled(op) => scheduled::run(tx, draft, op).await,
        }
    })
}

/// `run_sql`: the SQL, then the database model read again and the metadata reconciled with
/// what changed.
async fn run_sql_op(
    tx: &Transaction<'_>,
    draft: &mut Draft,
    sql: &ops::RunSql,
) -> Result<Answer, TransactionError> {
    let result = run_sql::run(tx, &sql.sql, sql.read_only)
        .instrument(tracing::debug_span!("run_sql"))
        .await?;
    if sql.read_only {
        return Ok(Answer::Sql(result));
    }
    // Later operations of a bulk see the database as the SQL left it.
    let after = database::read_model(tx, &draft.enum_candidates)
        .await
        .map_err(CatalogError::from)?;
    if sql.check_metadata_consistency {
        let changes = schema_changes::diff(&draft.metadata, &draft.db, &after);
        let (before, metadata, ..) = draft.view();
        let next = schema_changes::reconcile(metadata, before, &changes, sql.cascade)?;
        draft.metadata = next;
        draft.rebuild = true;
    } else {
        // Unchecked SQL commits as it is; what it broke shows at the next rebuild.
        draft.own_consistency_rules = true;
    }
    draft.db = Arc::new(after);
    Ok(Answer::Sql(result))
}
