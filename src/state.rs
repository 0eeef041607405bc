//! The state a server shares between requests and its background tasks: the pool, the
//! configuration, the authenticator, the work counters and the [`Served`] snapshot, swapped
//! whole on every rebuild ([`AppState::install`], [`AppState::reload`]). Rebuilds are
//! serialized, and an older snapshot never replaces a newer one (see `docs/architecture.md`,
//! "Keeping replicas in sync").
//!
//! Used by `http`, `engine` and `app`. Must not parse requests, edit metadata, or start
//! anything (startup, the catalog watcher and shutdown belong to `app`).

use crate::auth::Authenticator;
use crate::catalog::{self, CatalogError, Snapshot};
use crate::config::ServeConfig;
use crate::graphql::schemas::Schemas;
use crate::stats::Counters;
use deadpool_postgres::Pool;
use std::sync::{Arc, RwLock};
use tokio::sync::Mutex;

/// What a process serves for one metadata version: the catalog snapshot and the GraphQL
/// schemas built from it.
#[derive(Debug)]
pub struct Served {
    /// Metadata, version and schema cache.
    pub snapshot: Snapshot,
    /// Per-role GraphQL schemas.
    pub graphql: Schemas,
}

impl Served {
    /// The GraphQL schemas of `snapshot` (each role's built on first use).
    fn new(snapshot: Snapshot) -> Self {
        let graphql = Schemas::build(&snapshot.schema.resolved, &snapshot.metadata);
        Served { snapshot, graphql }
    }

    /// The schema of a role (see [`Schemas::role`]); a build is counted in
    /// [`Counters::role_schema_builds`] and timed in [`Counters::schema_build_seconds`].
    pub fn role(
        &self,
        role: &str,
        backend_flagged: bool,
        counters: &Counters,
    ) -> Arc<crate::graphql::schemas::RoleSchema> {
        let resolved = &self.snapshot.schema.resolved;
        self.graphql.role(
            resolved,
            role,
            backend_flagged,
            |took: std::time::Duration| {
                Counters::bump(&counters.role_schema_builds);
                counters.schema_build_seconds.observe(took.as_secs_f64());
            },
        )
    }
}

impl std::ops::Deref for Served {
    type Target = Snapshot;

    fn deref(&self) -> &Snapshot {
        &self.snapshot
    }
}

/// Shared state of a running server: one reference-counted handle, so the clones every
/// request makes (router, middleware, handlers) cost one atomic increment each.
#[derive(Clone)]
pub struct AppState(Arc<SharedState>);

impl std::ops::Deref for AppState {
    type Target = SharedState;

    fn deref(&self) -> &SharedState {
        &self.0
    }
}

/// What an [`AppState`] handle points to.
pub struct SharedState {
    /// Database pool (catalog and, later, GraphQL).
    pub pool: Pool,
    /// Configuration.
    pub config: Arc<ServeConfig>,
    /// What is served, swapped whole on every rebuild.
    snapshot: Arc<RwLock<Arc<Served>>>,
    /// Serializes rebuilds so an older one never overwrites a newer one.
    rebuild: Arc<Mutex<()>>,
    /// Authentication (admin secret, JWT, webhook, unauthorized role).
    pub auth: Arc<Authenticator>,
    /// Work counters (plan cache, schema builds, prepares).
    pub counters: Arc<Counters>,
    /// The subscriptions of every socket, grouped into multiplexed live queries.
    pub live: Arc<crate::live::LiveQueries>,
    /// Request counts and latencies (`/metrics`).
    pub metrics: crate::metrics::Metrics,
    /// Event delivery counters (`/metrics`).
    pub events: Arc<crate::events::EventCounters>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("version", &self.snapshot().version)
            .finish()
    }
}

impl AppState {
    /// State serving nothing yet (version -1, so the first [`AppState::reload`] installs).
    pub fn new(pool: Pool, config: ServeConfig, auth: Authenticator) -> Self {
        let live = crate::live::LiveQueries::new(config.live.max_connections);
        AppState(Arc::new(SharedState {
            pool,
            config: Arc::new(config),
            snapshot: Arc::new(RwLock::new(Arc::new(Served::new(Snapshot {
                version: -1,
                ..Snapshot::default()
            })))),
            rebuild: Arc::new(Mutex::new(())),
            auth: Arc::new(auth),
            counters: Arc::new(Counters::default()),
            live: Arc::new(live),
            metrics: crate::metrics::Metrics::default(),
            events: Arc::default(),
        }))
    }

    /// The snapshot being served, with its GraphQL schemas.
    pub fn snapshot(&self) -> Arc<Served> {
        match self.snapshot.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Installs `next` (a snapshot this process just committed) unless the same or a newer
    /// version is already served; `force` rebuilds an unchanged version whose database model
    /// changed (`reload_metadata`, `run_sql`).
    pub async fn install(&self, next: Snapshot, force: bool) {
        let _guard = self.rebuild.lock().await;
        self.install_locked(next, force);
    }

    /// Builds the GraphQL schemas of `next` and swaps them in; the caller holds `rebuild`,
    /// so one version is never built twice (the writer's install and its own NOTIFY race).
    fn install_locked(&self, next: Snapshot, force: bool) {
        let current = self.snapshot().version;
        if next.version < current || (next.version == current && !force) {
            return;
        }
        // Prepare outside the lock; requests keep using the old version meanwhile. Role
        // schemas are built by the requests that need them (`Served::role`).
        let next = Served::new(next);
        Counters::bump(&self.counters.schema_builds);
        let mut guard = match self.snapshot.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if next.version >= guard.version {
            *guard = Arc::new(next);
        }
    }

    /// Rebuilds from the catalog (after a peer's NOTIFY, a poll, or at start). Without
    /// `force`, nothing is built when the catalog version is the one already served.
    pub async fn reload(&self, force: bool) -> Result<(), CatalogError> {
        let _guard = self.rebuild.lock().await;
        let client = self.pool.get().await?;
        if !force && catalog::current_version(&**client).await? <= self.snapshot().version {
            return Ok(());
        }
        let snapshot = catalog::build(&**client).await?;
        tracing::info!(
            version = snapshot.version,
            inconsistent = snapshot.schema.inconsistencies.len(),
            "schema cache rebuilt"
        );
        self.install_locked(snapshot, force);
        Ok(())
    }
}
