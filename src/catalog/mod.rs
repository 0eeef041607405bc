//! The `basalt_catalog` schema: versioned migrations, loading the stored metadata, and running
//! `/v1/query` operations in one transaction that locks the catalog row, so concurrent writers
//! serialize and never lose an update. Peers learn of commits through `NOTIFY`.

use crate::db_model::{DbModel, QualifiedName};
use crate::metadata::path::JsonPath;
use crate::metadata::{Metadata, MetadataError};
use crate::ops::{self, schema_changes, Context, Op};
use crate::resolve::{self, SchemaCache};
use database::DatabaseError;
use serde_json::Value;
use tokio_postgres::GenericClient;

pub mod actions;
mod basis;
pub mod database;
pub mod events;
mod group;
pub mod managed;
pub mod remote;
mod run_sql;
pub mod versions;
use crate::metadata::objects;
pub use basis::{Basis, BasisCache};
pub use group::{execute_group, CommittedView, GroupItem, GroupOutcome};
pub use managed::OwnershipChanges;
use tracing::Instrument;

/// The channel every Basalt process listens on; the payload is the new resource version.
pub const NOTIFY_CHANNEL: &str = "basalt_metadata";

/// Subscribes a session to [`NOTIFY_CHANNEL`].
const LISTEN: &str = "LISTEN basalt_metadata";

/// Advisory-lock key serializing migrations across replicas ("basalt" in ASCII).
const MIGRATION_LOCK: i64 = 0x6261_7361_6c74;

/// Migrations in order; each runs once, recorded in `basalt_catalog.schema_migrations`.
const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
        r#"
    CREATE TABLE basalt_catalog.metadata (
        id integer PRIMARY KEY CHECK (id = 1),
        metadata json NOT NULL,
        resource_version integer NOT NULL DEFAULT 1
    );
    INSERT INTO basalt_catalog.metadata (id, metadata, resource_version)
    VALUES (1, '{"version":2,"tables":[]}', 1);
    "#,
    ),
    (2, managed::MIGRATION),
    (3, events::MIGRATION),
    (4, remote::MIGRATION),
    (5, actions::MIGRATION),
    (6, versions::MIGRATION),
    (7, CHECK_FAILED_MIGRATION),
];

/// Catalog migration: the function a one-statement mutation calls when the rows it wrote fail
/// a permission check. It raises SQLSTATE `BS403` ([`crate::execute::CHECK_FAILED`]) with the
/// kind of check as `DETAIL`, so the statement, and everything it wrote, fails with it.
const CHECK_FAILED_MIGRATION: &str = r#"
    CREATE FUNCTION basalt_catalog.check_failed(kind text) RETURNS json LANGUAGE plpgsql
    VOLATILE AS $$
    BEGIN
        RAISE EXCEPTION 'check constraint of an % permission has failed', kind
            USING ERRCODE = 'BS403', DETAIL = kind;
    END
    $$;
"#;

/// Failures of the catalog layer.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The operation was rejected (400).
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    /// The caller's expected `resource_version` is stale (409).
    #[error("resource_version mismatch: expected {expected}, but the catalog is at {current}")]
    Conflict {
        /// What the caller expected.
        expected: i64,
        /// What the catalog holds.
        current: i64,
    },
    /// Database failure.
    #[error("catalog database error: {0}")]
    Database(#[from] tokio_postgres::Error),
    /// No pooled connection.
    #[error("catalog connection unavailable: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    /// Introspection failure.
    #[error(transparent)]
    DatabaseModel(#[from] DatabaseError),
    /// The stored document does not parse (edited by hand?), or the document to store does
    /// not serialize.
    #[error("stored metadata is unreadable: {0}")]
    Corrupt(serde_json::Error),
}

/// Creates or upgrades the catalog schema. Safe when several processes start at once.
pub async fn migrate(client: &mut tokio_postgres::Client) -> Result<(), CatalogError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS basalt_catalog;
         CREATE TABLE IF NOT EXISTS basalt_catalog.schema_migrations (
             version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );",
    )
    .await?;
    let applied: Vec<i32> = tx
        .query("SELECT version FROM basalt_catalog.schema_migrations", &[])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for (version, sql) in MIGRATIONS {
        if applied.contains(version) {
            continue;
        }
        tracing::info!(version, "applying catalog migration");
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO basalt_catalog.schema_migrations (version) VALUES ($1)",
            &[version],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The stored metadata and its resource version.
pub async fn load(
    client: &impl GenericClient,
    lock: bool,
) -> Result<(Metadata, i64), CatalogError> {
    let sql = if lock {
        "SELECT metadata, resource_version FROM basalt_catalog.metadata WHERE id = 1 FOR UPDATE"
    } else {
        "SELECT metadata, resource_version FROM basalt_catalog.metadata WHERE id = 1"
    };
    let row = client.query_one(sql, &[]).await?;
    let text: crate::sql::types::JsonText<'_> = row.try_get(0)?;
    let version: i32 = row.try_get(1)?;
    // Parsed from the row's bytes: no `serde_json::Value` of the whole document first.
    let metadata = serde_json::from_slice(text.0).map_err(CatalogError::Corrupt)?;
    Ok((metadata, i64::from(version)))
}

/// Takes the catalog row lock without reading the document (a write starting from a
/// [`Basis`] reads only the counters).
async fn lock(client: &impl GenericClient) -> Result<(), CatalogError> {
    client
        .execute(
            "SELECT 1 FROM basalt_catalog.metadata WHERE id = 1 FOR UPDATE",
            &[],
        )
        .await?;
    Ok(())
}

/// The current resource version alone (cheap poll).
pub async fn current_version(client: &impl GenericClient) -> Result<i64, CatalogError> {
    let row = client
        .query_one(
            "SELECT resource_version FROM basalt_catalog.metadata WHERE id = 1",
            &[],
        )
        .await?;
    Ok(i64::from(row.try_get::<_, i32>(0)?))
}

/// Loads metadata and database model and resolves them: what a process serves.
pub async fn build(client: &impl GenericClient) -> Result<Snapshot, CatalogError> {
    let (metadata, version) = load(client, false).await?;
    let db = database::read_model(client, &metadata.enum_tables()).await?;
    let remotes = remote::world(client, &metadata).await?;
    let mut schema = resolve::resolve_with(&metadata, &db, &remotes);
    schema
        .inconsistencies
        .extend(resolve::events::capture_drift(&metadata, &db));
    Ok(Snapshot {
        version,
        metadata,
        schema,
    })
}

/// One consistent view of the catalog: the metadata, its version, and its schema cache.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Resource version.
    pub version: i64,
    /// The stored metadata.
    pub metadata: Metadata,
    /// Metadata resolved against the database.
    pub schema: SchemaCache,
}

/// The result of running an operation.
#[derive(Debug)]
pub struct Executed {
    /// Response body.
    pub response: Value,
    /// The state after the operation.
    pub snapshot: std::sync::Arc<Snapshot>,
    /// Whether the catalog row was written.
    pub wrote: bool,
    /// The `NOTIFY` payload sent so that peers rebuild (a write, or a reload of the database
    /// model); `None` when nothing changed.
    pub notification: Option<String>,
}

/// What a request accumulates while its operations run in one transaction.
struct Work {
    /// The metadata so far.
    metadata: Metadata,
    /// The database as the next operation sees it (shared with `db_before` and the basis
    /// until an operation changes it).
    db: std::sync::Arc<DbModel>,
    /// The caller's session (`invoke_event_trigger` records it).
    session: Value,
    /// Tables whose enum rows each introspection loads.
    enum_candidates: Vec<QualifiedName>,
    /// An operation enforced its own consistency rules (replace, reload, unchecked SQL).
    own_consistency_rules: bool,
    /// The database model changed: rebuild here and on peers even without a metadata write.
    rebuild: bool,
    /// The database as the request found it.
    db_before: std::sync::Arc<DbModel>,
    /// Remote schemas' stored state with this request's introspection results laid over it.
    remotes: resolve::remote::Remotes,
    /// Remote schemas' stored state as the request found it.
    remotes_before: resolve::remote::Remotes,
    /// The last resolution made (or the basis the request started from): where the next
    /// one starts, when it is of the same database model.
    resolution: Option<Resolution>,
}

/// A document resolved against a database model.
struct Resolution {
    /// The model.
    db: std::sync::Arc<DbModel>,
    /// The document.
    metadata: Metadata,
    /// Its resolution.
    schema: Held,
}

/// A resolution held by a request: the basis's, shared, or one it made.
enum Held {
    Kept(std::sync::Arc<Basis>),
    Made(Box<SchemaCache>),
}

impl Resolution {
    /// The basis's document and resolution.
    fn of(basis: &std::sync::Arc<Basis>) -> Self {
        Resolution {
            db: basis.db.clone(),
            metadata: basis.snapshot.metadata.clone(),
            schema: Held::Kept(basis.clone()),
        }
    }

    fn schema(&self) -> &SchemaCache {
        match &self.schema {
            Held::Kept(basis) => &basis.snapshot.schema,
            Held::Made(schema) => schema,
        }
    }
}

impl Work {
    /// The current document's resolution ([`resolve`]), taken to keep (the next one starts
    /// afresh).
    fn take_resolved(&mut self) -> SchemaCache {
        let last = self.resolution.take();
        match current(last, &self.metadata, &self.db, &self.remotes).schema {
            Held::Made(schema) => *schema,
            Held::Kept(basis) => basis.snapshot.schema.clone(),
        }
    }
}

/// `metadata` resolved against `db`, kept in `last`. With the model of the last resolution,
/// only what the changes since reach is resolved again ([`resolve::resolve_from`]): a
/// `bulk`'s operations and a group's writes each start from the previous one's.
fn resolve<'w>(
    last: &'w mut Option<Resolution>,
    metadata: &Metadata,
    db: &std::sync::Arc<DbModel>,
    remotes: &resolve::remote::Remotes,
) -> &'w SchemaCache {
    let resolution = current(last.take(), metadata, db, remotes);
    last.insert(resolution).schema()
}

/// `metadata` resolved against `db`: `last` itself when it is that already, resolved from it
/// when it is of the same model, otherwise resolved whole.
fn current(
    last: Option<Resolution>,
    metadata: &Metadata,
    db: &std::sync::Arc<DbModel>,
    remotes: &resolve::remote::Remotes,
) -> Resolution {
    let made = |schema| Resolution {
        db: db.clone(),
        metadata: metadata.clone(),
        schema: Held::Made(Box::new(schema)),
    };
    match last.filter(|l| std::sync::Arc::ptr_eq(&l.db, db)) {
        Some(same) if same.metadata == *metadata => same,
        Some(earlier) => {
            let _span = tracing::debug_span!("schema.rebuild", incremental = true).entered();
            let schema =
                resolve::resolve_from(earlier.schema(), &earlier.metadata, metadata, db, remotes);
            made(schema)
        }
        None => {
            let _span = tracing::debug_span!("schema.rebuild", incremental = false).entered();
            made(resolve::resolve_with(metadata, db, remotes))
        }
    }
}

/// Who writes, and what that means for objects owned by Kubernetes resources.
#[derive(Debug, Clone, Copy)]
pub enum Writer<'a> {
    /// A `/v1/query` request; with `reject_managed` a change to a managed object is refused
    /// (`BASALT_MANAGED_METADATA=reject`).
    Api {
        /// Refuse changes to managed objects.
        reject_managed: bool,
        /// The caller's session ([`crate::session::Session::to_json`]); the admin's when
        /// `None`.
        session: Option<&'a Value>,
        /// The process's last committed state, to start from when it is still current and
        /// to update after a commit; `None` reads everything again.
        basis: Option<&'a BasisCache>,
    },
    /// The Kubernetes controller, recording ownership in the same transaction.
    Controller(&'a OwnershipChanges),
}

/// Runs a `/v1/query` request that may change managed objects (see [`execute_with`]).
pub async fn execute(
    client: &mut tokio_postgres::Client,
    op: &Op,
    expected_version: Option<i64>,
) -> Result<Executed, CatalogError> {
    execute_with(
        client,
        op,
        expected_version,
        Writer::Api {
            reject_managed: false,
            session: None,
            basis: None,
        },
    )
    .await
}

impl Writer<'_> {
    /// See `basis` in [`Writer::Api`].
    fn basis(&self) -> Option<&BasisCache> {
        match self {
            Writer::Api { basis, .. } => *basis,
            Writer::Controller(_) => None,
        }
    }
}

/// Runs a request: lock, load, introspect, run each operation, check, store (with ownership
/// rows for the controller), NOTIFY — one transaction. `expected_version` gives
/// compare-and-swap semantics.
pub async fn execute_with(
    client: &mut tokio_postgres::Client,
    op: &Op,
    expected_version: Option<i64>,
    writer: Writer<'_>,
) -> Result<Executed, CatalogError> {
    let fetched = remote::prefetch(&*client, op).await?;
    let tx = client.transaction().await?;
    let Applied {
        metadata,
        version,
        mut work,
        schema,
        mut response,
        started,
    } = apply(&tx, op, expected_version, writer, &fetched).await?;
    if !op.is_read_only() {
        work.rebuild |= remote::store(&tx, &metadata, &work.metadata, &fetched).await?;
    }
    let wrote = work.metadata != metadata;
    annotate(&tx, op, &metadata, &work.db, &mut response).await?;
    let mut new_version = version;
    if wrote {
        new_version = store(&tx, &work.metadata).await?;
    }
    if let Writer::Controller(changes) = writer {
        // Another resource claimed or released one of these objects since the plan was
        // made: a conflict, so the controller plans again and sees who owns it now.
        if !managed::unchanged(&tx, changes).await? {
            return Err(CatalogError::Conflict {
                expected: version,
                current: version,
            });
        }
        managed::write(&tx, changes, new_version).await?;
    }
    let notification = (wrote || work.rebuild).then(|| notification_payload(new_version, !wrote));
    if let Some(payload) = &notification {
        tx.execute("SELECT pg_notify($1, $2)", &[&NOTIFY_CHANNEL, payload])
            .await?;
    }
    // The counters again, for the basis the next write may start from.
    let ended = match started {
        Some(_) if Basis::cacheable(&work.metadata) => Some(versions::read(&tx).await?),
        _ => None,
    };
    tx.commit().await?;
    let snapshot = std::sync::Arc::new(Snapshot {
        version: new_version,
        metadata: work.metadata,
        schema,
    });
    if let (Some(cache), Some(started), Some(ended)) = (writer.basis(), started, ended) {
        if let Some(basis) = Basis::after(&started, ended, work.db, &snapshot) {
            cache.set(basis);
        }
    }
    Ok(Executed {
        response,
        snapshot,
        wrote,
        notification,
    })
}

/// Stores `metadata` as the next resource version, in the caller's transaction (which holds
/// the catalog lock); returns that version.
async fn store(
    tx: &tokio_postgres::Transaction<'_>,
    metadata: &Metadata,
) -> Result<i64, CatalogError> {
    // Serialized straight to text (no `serde_json::Value` of the whole document first).
    let document = serde_json::to_string(metadata).map_err(CatalogError::Corrupt)?;
    let row = tx
        .query_one(
            "UPDATE basalt_catalog.metadata SET metadata = $1::text::json,
                 resource_version = resource_version + 1
             WHERE id = 1 RETURNING resource_version",
            &[&document],
        )
        .instrument(tracing::debug_span!("catalog.commit"))
        .await?;
    Ok(i64::from(row.try_get::<_, i32>(0)?))
}

/// Runs a request exactly as [`execute_with`] would — the same locks, SQL, checks and errors —
/// then rolls the transaction back: nothing is stored and no `NOTIFY` is sent. Answers what
/// would change, object by object, and the inconsistent objects the change would leave that
/// were not there before (`dry_run` on `/v1/query`).
pub async fn dry_run(
    client: &mut tokio_postgres::Client,
    op: &Op,
    expected_version: Option<i64>,
    writer: Writer<'_>,
) -> Result<Value, CatalogError> {
    let fetched = remote::prefetch(&*client, op).await?;
    let tx = client.transaction().await?;
    let applied = apply(&tx, op, expected_version, writer, &fetched).await?;
    let changes =
        crate::metadata::objects::object_changes(&applied.metadata, &applied.work.metadata);
    let before = resolve::resolve_with(
        &applied.metadata,
        &applied.work.db_before,
        &applied.work.remotes_before,
    );
    let known = before.blocking_ids();
    let inconsistent: Vec<Value> = applied
        .schema
        .inconsistencies
        .iter()
        .filter(|i| !known.contains(&i.object))
        .map(resolve::Inconsistency::to_json)
        .collect();
    let mut answer = serde_json::json!({
        "dry_run": true,
        "added": changes.added,
        "changed": changes.changed,
        "removed": changes.removed,
        "inconsistent_objects": inconsistent,
    });
    annotate(&tx, op, &applied.metadata, &applied.work.db, &mut answer).await?;
    tx.rollback().await?;
    Ok(answer)
}

/// A request's operations run in a transaction, checked, not yet stored.
struct Applied {
    /// The document before.
    metadata: Metadata,
    /// Its version.
    version: i64,
    /// The document and database after.
    work: Work,
    /// The document after, resolved against the database after.
    schema: SchemaCache,
    /// The operation's answer.
    response: Value,
    /// The change counters read once the catalog row was locked, when the writer keeps a
    /// [`BasisCache`].
    started: Option<versions::Versions>,
}

/// Lock, load, introspect, run each operation, check.
async fn apply(
    tx: &tokio_postgres::Transaction<'_>,
    op: &Op,
    expected_version: Option<i64>,
    writer: Writer<'_>,
    fetched: &[resolve::remote::Fetched],
) -> Result<Applied, CatalogError> {
    // A controller write that changes only ownership still takes the catalog lock: ownership
    // rows are claimed in the catalog's order, like metadata.
    let read_only = op.is_read_only() && !matches!(writer, Writer::Controller(c) if !c.is_empty());
    // With a basis cache: lock, then read the counters; a basis recorded at exactly these
    // counters is what loading and introspecting would read.
    let (started, basis) = match writer.basis() {
        Some(cache) => {
            if !read_only {
                lock(tx).await?;
            }
            let now = versions::read(tx).await?;
            let basis = cache.take_for(std::iter::once(op), &now);
            (Some(now), basis)
        }
        None => (None, None),
    };
    let (metadata, version) = match &basis {
        Some(basis) => (basis.snapshot.metadata.clone(), basis.snapshot.version),
        None => {
            // Locked here unless the basis path locked it already.
            load(tx, !read_only && started.is_none())
                .instrument(tracing::debug_span!("catalog.load"))
                .await?
        }
    };
    if let Some(expected) = expected_version.filter(|_| !read_only) {
        if expected != version {
            return Err(CatalogError::Conflict {
                expected,
                current: version,
            });
        }
    }
    let mut enum_candidates = metadata.enum_tables();
    enum_candidates.extend(op.enum_candidates());
    let db = match &basis {
        Some(basis) => basis.db.clone(),
        None => std::sync::Arc::new(database::read_model(tx, &enum_candidates).await?),
    };
    let session = match writer {
        Writer::Api {
            session: Some(session),
            ..
        } => session.clone(),
        _ => serde_json::json!({"x-svc-role": "admin"}),
    };
    let remotes_before = remote::world(tx, &metadata).await?;
    let mut remotes = remotes_before.clone();
    remotes.record(fetched);
    let mut work = Work {
        remotes,
        remotes_before,
        metadata: metadata.clone(),
        db: db.clone(),
        session,
        enum_candidates,
        own_consistency_rules: false,
        rebuild: false,
        db_before: db,
        resolution: basis.as_ref().map(Resolution::of),
    };
    let response = run(tx, &mut work, op).await?;
    if !read_only {
        events::sync(tx, &metadata, &mut work).await?;
    }
    let schema = work.take_resolved();
    // Nothing inconsistent after: nothing new either, and the state before need not be
    // resolved (the whole schema again, at 1,000 tables a good part of an operation's time).
    if !work.own_consistency_rules && !schema.inconsistencies.is_empty() {
        match &basis {
            Some(basis) => ops::check_no_new_inconsistency(&basis.snapshot.schema, &schema)?,
            None => {
                let before =
                    resolve::resolve_with(&metadata, &work.db_before, &work.remotes_before);
                ops::check_no_new_inconsistency(&before, &schema)?;
            }
        }
    }
    if let Writer::Api {
        reject_managed: true,
        ..
    } = writer
    {
        if work.metadata != metadata {
            refuse_managed_changes(tx, &metadata, &work.metadata).await?;
        }
    }
    Ok(Applied {
        metadata,
        version,
        work,
        schema,
        response,
        started,
    })
}

fn exports_owners(op: &Op) -> bool {
    matches!(op, Op::Metadata(m) if matches!(m.as_ref(), ops::MetadataOp::Manage(ops::ManageOp::Export { include_owners: true })))
}

fn is_get_inconsistent(op: &Op) -> bool {
    matches!(op, Op::Metadata(m) if matches!(m.as_ref(), ops::MetadataOp::Manage(ops::ManageOp::GetInconsistent)))
}

/// What the ownership rows add to a response, read once: who owns each inconsistent object
/// (`owner`), the drifted managed objects of a `get_inconsistent_metadata`, and the `owners`
/// of an `export_metadata` with `include_owners`.
async fn annotate(
    client: &impl GenericClient,
    op: &Op,
    metadata: &crate::metadata::Metadata,
    db: &DbModel,
    response: &mut Value,
) -> Result<(), CatalogError> {
    if is_get_inconsistent(op) {
        let captures = resolve::events::capture_drift(metadata, db);
        if let (false, Some(Value::Array(items))) = (
            captures.is_empty(),
            response.get_mut("inconsistent_objects"),
        ) {
            items.extend(captures.iter().map(resolve::Inconsistency::to_json));
            response["is_consistent"] = Value::Bool(false);
        }
    }
    let has_inconsistent = matches!(response.get("inconsistent_objects"), Some(Value::Array(items)) if !items.is_empty());
    let (drift, owners) = (is_get_inconsistent(op), exports_owners(op));
    if !(has_inconsistent || drift || owners) {
        return Ok(());
    }
    let rows = managed::load(client).await?;
    add_owners(&rows, response);
    if drift {
        add_drift(&rows, metadata, response);
    }
    if owners {
        response["owners"] = Value::Object(objects::owners(metadata, &rows));
    }
    Ok(())
}

/// Appends one `type: "drift"` item per drifted managed object to a
/// `get_inconsistent_metadata` response. Drift never fails a request; it is only reported.
fn add_drift(
    rows: &[objects::Managed],
    metadata: &crate::metadata::Metadata,
    response: &mut Value,
) {
    let drift = objects::drift(rows, metadata);
    if drift.is_empty() {
        return;
    }
    if let Some(Value::Array(items)) = response.get_mut("inconsistent_objects") {
        items.extend(drift.iter().map(objects::Drift::to_json));
    }
    response["is_consistent"] = Value::Bool(false);
}

/// Says who owns each object of a response's `inconsistent_objects` (`owner`: the resource
/// that declares it, or `"api"`), so an operator knows where to fix it.
fn add_owners(rows: &[objects::Managed], response: &mut Value) {
    let Some(Value::Array(items)) = response.get_mut("inconsistent_objects") else {
        return;
    };
    let owners: std::collections::BTreeMap<&str, Value> = rows
        .iter()
        .map(|r| (r.key.as_str(), r.owner.to_json()))
        .collect();
    for item in items.iter_mut() {
        let kind = item["type"].as_str().unwrap_or_default().to_owned();
        let key = objects::item_key(&kind, &item["definition"]);
        item["owner"] = key
            .and_then(|k| owners.get(k.as_str()).cloned())
            .unwrap_or_else(|| Value::String("api".to_owned()));
    }
}

/// `BASALT_MANAGED_METADATA=reject`: fails when the write changes or removes an object a
/// Kubernetes resource owns.
async fn refuse_managed_changes(
    client: &impl GenericClient,
    before: &crate::metadata::Metadata,
    after: &crate::metadata::Metadata,
) -> Result<(), CatalogError> {
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
            return Err(CatalogError::Metadata(MetadataError::new(
                crate::metadata::Code::NotSupported,
                JsonPath::args(),
                format!("{} is managed by {}", row.key, row.owner.describe()),
            )));
        }
    }
    Ok(())
}

/// Runs one operation of a request (recursing into `bulk`), updating `work`.
fn run<'a>(
    tx: &'a tokio_postgres::Transaction<'_>,
    work: &'a mut Work,
    op: &'a Op,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, CatalogError>> + Send + 'a>> {
    Box::pin(async move {
        match op {
            Op::Metadata(op) => {
                let resolved = match op.reads_schema() {
                    true => Some(resolve(
                        &mut work.resolution,
                        &work.metadata,
                        &work.db,
                        &work.remotes,
                    )),
                    false => None,
                };
                let ctx = Context {
                    db: &work.db,
                    remotes: &work.remotes,
                    resolved,
                };
                let outcome = ops::apply(&work.metadata, op, ctx)?;
                if let ops::MetadataOp::Action(action) = op.as_ref() {
                    if let Some(name) = action.clears_log_of(&work.metadata) {
                        actions::clear_log(tx, &name).await?;
                    }
                }
                work.metadata = outcome.metadata;
                work.own_consistency_rules |= outcome.own_consistency_rules;
                work.rebuild |= matches!(
                    op.as_ref(),
                    ops::MetadataOp::Manage(ops::ManageOp::Reload { .. })
                );
                Ok(outcome.response)
            }
            Op::Bulk(ops) => {
                let mut responses = Vec::with_capacity(ops.len());
                for (i, op) in ops.iter().enumerate() {
                    let response = run(tx, work, op).await.map_err(|e| match e {
                        CatalogError::Metadata(m) => {
                            CatalogError::Metadata(m.under(&JsonPath::args().index(i)))
                        }
                        other => other,
                    })?;
                    responses.push(response);
                }
                Ok(Value::Array(responses))
            }
            Op::RunSql(sql) => run_sql_op(tx, work, sql).await,
            Op::EventLog(op) => events::run(tx, &work.metadata, op, &work.session).await,
        }
    })
}

/// `run_sql`: snapshot, run, snapshot, reconcile metadata with the difference.
async fn run_sql_op(
    tx: &tokio_postgres::Transaction<'_>,
    work: &mut Work,
    sql: &ops::RunSql,
) -> Result<Value, CatalogError> {
    let response = run_sql::run(tx, &sql.sql, sql.read_only)
        .instrument(tracing::debug_span!("run_sql"))
        .await?;
    if sql.read_only {
        return Ok(response);
    }
    // Later operations of a bulk see the database as the SQL left it.
    let after = database::read_model(tx, &work.enum_candidates).await?;
    if sql.check_metadata_consistency {
        let before = resolve(
            &mut work.resolution,
            &work.metadata,
            &work.db,
            &work.remotes,
        );
        let changes = schema_changes::diff(&work.metadata, &work.db, &after);
        if !changes.altered_tables.is_empty() {
            // Event triggers hook in here to regenerate capture triggers of these tables.
            tracing::debug!(tables = ?changes.altered_tables, "run_sql altered tracked tables");
        }
        work.metadata = schema_changes::reconcile(&work.metadata, before, &changes, sql.cascade)?;
        work.rebuild = true;
    } else {
        // Unchecked SQL commits as it is; what it broke shows at the next rebuild.
        work.own_consistency_rules = true;
    }
    work.db = std::sync::Arc::new(after);
    Ok(response)
}

/// A session LISTENing on [`NOTIFY_CHANNEL`]: the engine's schema reloads and the controller's
/// re-triggers both follow the catalog through one of these.
pub struct Listener {
    /// The session, also usable for version polls.
    pub client: tokio_postgres::Client,
    /// Notification payloads; closed when the session is lost.
    pub payloads: tokio::sync::mpsc::UnboundedReceiver<String>,
    driver: tokio::task::JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// Connects and LISTENs; notifications arrive on [`Listener::payloads`].
pub async fn listen(config: &tokio_postgres::Config) -> Result<Listener, CatalogError> {
    use futures_util::StreamExt;
    let (client, mut connection) = config.connect(tokio_postgres::NoTls).await?;
    let (tx, payloads) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                    let _ = tx.send(n.payload().to_owned());
                }
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!(%err, "catalog listener connection lost");
                    break;
                }
            }
        }
    });
    let listener = Listener {
        client,
        payloads,
        driver,
    };
    listener.client.batch_execute(LISTEN).await?;
    Ok(listener)
}

/// NOTIFY payload: the new version, prefixed with `reload:` when the database model changed
/// without a metadata change (peers must rebuild even though the version is the same).
fn notification_payload(version: i64, reloaded: bool) -> String {
    if reloaded {
        format!("reload:{version}")
    } else {
        version.to_string()
    }
}

/// Whether a process serving `current` must rebuild after a notification with `payload`.
/// Its own writes (already installed) are skipped; anything unparsable triggers a rebuild.
pub fn needs_rebuild(payload: &str, current: i64) -> bool {
    match payload.parse::<i64>() {
        Ok(version) => version > current,
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_skip_versions_already_served() {
        assert!(!needs_rebuild(&notification_payload(4, false), 4));
        assert!(needs_rebuild(&notification_payload(5, false), 4));
        assert!(needs_rebuild(&notification_payload(4, true), 4));
        assert!(needs_rebuild("garbage", 4));
    }

    #[test]
    fn the_check_failed_function_raises_the_sqlstate_the_engine_maps() {
        assert!(CHECK_FAILED_MIGRATION
            .contains(&format!("ERRCODE = '{}'", crate::execute::CHECK_FAILED)));
    }

    #[test]
    fn the_session_listens_on_the_channel_notifications_go_to() {
        assert_eq!(LISTEN, format!("LISTEN {NOTIFY_CHANNEL}"));
    }
}
