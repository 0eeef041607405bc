//! The `basalt_catalog` schema: versioned migrations, loading the stored metadata, and running
//! `/v1/query` operations in one transaction that locks the catalog row, so concurrent writers
//! serialize and never lose an update. Peers learn of commits through `NOTIFY`.

use crate::introspect::{self, DbModel, IntrospectError};
use crate::metadata::ops::{self, Context, Op};
use crate::metadata::{Metadata, MetadataError};
use crate::schema::{self, SchemaCache};
use serde_json::Value;
use tokio_postgres::GenericClient;
use tracing::Instrument;

/// The channel every Basalt process listens on; the payload is the new resource version.
pub const NOTIFY_CHANNEL: &str = "basalt_metadata";

/// Advisory-lock key serializing migrations across replicas ("basalt" in ASCII).
const MIGRATION_LOCK: i64 = 0x6261_7361_6c74;

/// Migrations in order; each runs once, recorded in `basalt_catalog.schema_migrations`.
const MIGRATIONS: &[(i32, &str)] = &[(
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
)];

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
    Introspect(#[from] IntrospectError),
    /// The stored document does not parse (edited by hand?).
    #[error("stored metadata is unreadable: {0}")]
    Corrupt(String),
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
    let value: Value = row.try_get(0)?;
    let version: i32 = row.try_get(1)?;
    let metadata =
        serde_json::from_value(value).map_err(|e| CatalogError::Corrupt(e.to_string()))?;
    Ok((metadata, i64::from(version)))
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
    let db = introspect::introspect(client, &metadata.enum_tables()).await?;
    let schema = schema::resolve(&metadata, &db);
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
    pub snapshot: Snapshot,
    /// Whether the catalog row was written.
    pub wrote: bool,
    /// Whether peers should rebuild (a write, or a reload of the database model).
    pub notify: bool,
}

/// Runs an operation: lock, load, introspect, apply, check, store, NOTIFY — one transaction.
/// `expected_version` gives compare-and-swap semantics.
pub async fn execute(
    client: &mut tokio_postgres::Client,
    op: &Op,
    expected_version: Option<i64>,
) -> Result<Executed, CatalogError> {
    let read_only = op.is_read_only();
    let tx = client.transaction().await?;
    let (metadata, version) = load(&tx, !read_only)
        .instrument(tracing::debug_span!("catalog.load"))
        .await?;
    if let Some(expected) = expected_version.filter(|_| !read_only) {
        if expected != version {
            return Err(CatalogError::Conflict {
                expected,
                current: version,
            });
        }
    }
    let mut candidates = metadata.enum_tables();
    candidates.extend(op.enum_candidates());
    let db: DbModel = introspect::introspect(&tx, &candidates).await?;
    let outcome = ops::apply(&metadata, op, Context { db: &db })?;
    let schema = {
        let _span = tracing::debug_span!("schema.rebuild").entered();
        schema::resolve(&outcome.metadata, &db)
    };
    if !outcome.own_consistency_rules {
        let before = schema::resolve(&metadata, &db);
        ops::check_no_new_inconsistency(&before, &schema)?;
    }
    let wrote = outcome.metadata != metadata;
    let mut new_version = version;
    if wrote {
        let document = serde_json::to_value(&outcome.metadata)
            .map_err(|e| CatalogError::Corrupt(e.to_string()))?;
        let row = tx
            .query_one(
                "UPDATE basalt_catalog.metadata SET metadata = $1, resource_version = resource_version + 1
                 WHERE id = 1 RETURNING resource_version",
                &[&document],
            )
            .instrument(tracing::debug_span!("catalog.commit"))
            .await?;
        new_version = i64::from(row.try_get::<_, i32>(0)?);
    }
    let reloaded = matches!(op, Op::Manage(ops::ManageOp::Reload));
    let notify = wrote || reloaded;
    if notify {
        let payload = notification_payload(new_version, reloaded);
        tx.execute("SELECT pg_notify($1, $2)", &[&NOTIFY_CHANNEL, &payload])
            .await?;
    }
    tx.commit().await?;
    Ok(Executed {
        response: outcome.response,
        snapshot: Snapshot {
            version: new_version,
            metadata: outcome.metadata,
            schema,
        },
        wrote,
        notify,
    })
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
}
