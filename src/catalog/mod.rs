//! The `basalt_catalog` schema, where the metadata lives: versioned migrations, the document
//! loaded and stored under the catalog row lock (so concurrent writers serialize and never
//! lose an update), and the [`Notification`] every process listens for. Its submodules hold
//! the other tables (the event log, the action log, remote schemas' last introspections, the
//! controller's ownership rows, the change counters) and the reading of the database model
//! ([`database`]). Applying operations is `crate::transaction`'s business: nothing here knows
//! operations or GraphQL.

use crate::metadata::Metadata;
use crate::resolve::Resolution;
use database::DatabaseError;
use tokio_postgres::GenericClient;
use tracing::Instrument;

pub mod actions;
pub mod database;
pub mod events;
pub mod live_change;
pub mod managed;
pub mod probes;
pub mod remote;
pub mod scheduled;
pub mod versions;

pub use managed::OwnershipChanges;

/// The channel every Basalt process listens on for new versions ([`Notification`]).
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
    (8, scheduled::MIGRATION),
    (9, scheduled::HORIZON_MIGRATION),
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

/// Failures of the catalog's storage.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("catalog database error: {0}")]
    Database(#[from] tokio_postgres::Error),
    #[error("catalog connection unavailable: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
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

/// Takes the catalog row lock without reading the document (a write that starts from the
/// state its process's last write left reads only the change counters).
pub async fn lock(client: &impl GenericClient) -> Result<(), CatalogError> {
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

/// Stores `metadata` as the next resource version, in the caller's transaction (which holds
/// the catalog lock); returns that version.
pub async fn store(
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

/// One version of the catalog: its number, the document, and the document resolved against
/// the database (what a process serves, and what a write starts from).
#[derive(Debug, Clone, Default)]
pub struct CatalogVersion {
    /// The resource version.
    pub version: i64,
    pub metadata: Metadata,
    /// The document resolved against the database model.
    pub resolution: Resolution,
    /// The database model it was resolved against.
    pub db: std::sync::Arc<crate::db_model::DbModel>,
}

/// What a process tells the others through [`NOTIFY_CHANNEL`] when it commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notification {
    /// A new version was committed.
    Version(i64),
    /// The database model changed without a metadata change (`reload_metadata`, checked
    /// `run_sql`): processes rebuild even though they serve this version already.
    Reload(i64),
    /// A payload this process does not read: rebuilding is the safe answer.
    Unknown(String),
}

impl Notification {
    /// The notification a commit sends: a new `version`, or with `reloaded` the same one
    /// over a changed database model.
    pub fn of(version: i64, reloaded: bool) -> Self {
        match reloaded {
            true => Notification::Reload(version),
            false => Notification::Version(version),
        }
    }

    /// A received payload.
    pub fn read(payload: &str) -> Self {
        let parsed = match payload.strip_prefix("reload:") {
            Some(version) => version.parse().map(Notification::Reload),
            None => payload.parse().map(Notification::Version),
        };
        parsed.unwrap_or_else(|_| Notification::Unknown(payload.to_owned()))
    }

    /// Whether a process serving `current` must rebuild.
    pub fn needs_rebuild(&self, current: i64) -> bool {
        match self {
            Notification::Version(version) => *version > current,
            Notification::Reload(_) | Notification::Unknown(_) => true,
        }
    }

    /// Whether the rebuild must happen even at the version served.
    pub fn forces_rebuild(&self) -> bool {
        matches!(self, Notification::Reload(_))
    }

    /// Sends it, in the committing transaction (delivered at its commit).
    pub async fn send(&self, tx: &tokio_postgres::Transaction<'_>) -> Result<(), CatalogError> {
        tx.execute(
            "SELECT pg_notify($1, $2)",
            &[&NOTIFY_CHANNEL, &self.to_string()],
        )
        .await?;
        Ok(())
    }
}

impl std::fmt::Display for Notification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notification::Version(version) => write!(f, "{version}"),
            Notification::Reload(version) => write!(f, "reload:{version}"),
            Notification::Unknown(payload) => f.write_str(payload),
        }
    }
}

/// A session LISTENing on [`NOTIFY_CHANNEL`]: the engine's schema reloads and the controller's
/// re-triggers both follow the catalog through one of these. The engine's also LISTENs on
/// the change-detection channel of live queries ([`live_change`]).
pub struct Listener {
    /// The session, also usable for version polls.
    pub client: tokio_postgres::Client,
    /// Notification payloads; closed when the session is lost.
    pub payloads: tokio::sync::mpsc::UnboundedReceiver<Notification>,
    driver: tokio::task::JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// What the listener does with each table OID the change triggers of live queries send: it
/// is called on the session's own task, so it must only count.
pub type OnChange = std::sync::Arc<dyn Fn(u32) + Send + Sync>;

/// Connects and LISTENs; notifications arrive on [`Listener::payloads`], and with
/// `on_change` the tables live queries watch go to it as they arrive.
pub async fn listen(
    config: &tokio_postgres::Config,
    on_change: Option<OnChange>,
) -> Result<Listener, CatalogError> {
    use futures_util::StreamExt;
    let (client, mut connection) = config.connect(tokio_postgres::NoTls).await?;
    let (tx, payloads) = tokio::sync::mpsc::unbounded_channel();
    let live_changes = on_change.is_some();
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(tokio_postgres::AsyncMessage::Notification(n))
                    if n.channel() == crate::sql::live_change::NAME =>
                {
                    if let (Some(on_change), Ok(oid)) = (&on_change, n.payload().parse()) {
                        on_change(oid);
                    }
                }
                Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                    let _ = tx.send(Notification::read(n.payload()));
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
    if live_changes {
        listener
            .client
            .batch_execute(&crate::sql::helpers::listen(crate::sql::live_change::NAME))
            .await?;
    }
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_skip_versions_already_served() {
        assert!(!Notification::of(4, false).needs_rebuild(4));
        assert!(Notification::of(5, false).needs_rebuild(4));
        assert!(Notification::of(4, true).needs_rebuild(4));
        assert!(Notification::read("garbage").needs_rebuild(4));
        for sent in [Notification::of(7, false), Notification::of(7, true)] {
            assert_eq!(Notification::read(&sent.to_string()), sent);
        }
        assert_eq!(Notification::of(7, true).to_string(), "reload:7");
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
