//! The state a server shares between requests and its background tasks: the pool, the
//! configuration, the authenticator, the work counters and the engine, and the rebuilds that
//! have the engine serve each new catalog version ([`Writing::install`],
//! [`AppState::reload`]). Rebuilds are serialized, and an older version never replaces a
//! newer one (see `docs/architecture.md`, "Keeping replicas in sync").
//!
//! Used by `http` and `app`. Must not parse requests, edit metadata, or start anything
//! (startup, the catalog watcher and shutdown belong to `app`).

use crate::auth::Authenticator;
use crate::catalog::{self, CatalogError, Snapshot};
use crate::config::ServeConfig;
use crate::engine::Engine;
use crate::stats::Counters;
use deadpool_postgres::Pool;
use std::sync::Arc;
use tokio::sync::Mutex;

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
    /// The database pool, shared by the engine, the metadata API and the workers.
    pub pool: Pool,
    pub config: Arc<ServeConfig>,
    /// The GraphQL engine, with what it serves, swapped whole on every rebuild.
    pub engine: Arc<Engine>,
    /// Serializes rebuilds so an older one never overwrites a newer one. Holds the `NOTIFY`
    /// payloads of this process's own commits whose snapshots it installed itself, so the
    /// watcher does not rebuild them a second time (see [`AppState::writing`]).
    rebuild: Arc<Mutex<OwnCommits>>,
    /// Authentication (admin secret, JWT, webhook, unauthorized role).
    pub auth: Arc<Authenticator>,
    /// Work counters (plan cache, schema builds, prepares).
    pub counters: Arc<Counters>,
    /// The state this process's last metadata write committed, for its next one.
    pub basis: catalog::BasisCache,
    /// Request counts and latencies (`/metrics`).
    pub metrics: crate::metrics::Metrics,
    /// Event delivery counters (`/metrics`).
    pub events: Arc<crate::stats::EventCounters>,
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
        let counters = Arc::new(Counters::default());
        let sharing = crate::execute::Sharing {
            pool: pool.clone(),
            counters: counters.clone(),
            in_flight: config.shared_statements_in_flight,
            // `BASALT_SHARED_STATEMENTS_IN_FLIGHT=0` turns all sharing off.
            writes_in_flight: if config.shared_statements_in_flight == 0 {
                0
            } else {
                config.shared_writes_in_flight
            },
            below: (config.shared_statements_below_us > 0)
                .then(|| std::time::Duration::from_micros(config.shared_statements_below_us)),
        };
        let settings = crate::engine::Settings {
            limits: crate::graphql::plan::Limits {
                max_depth: config.max_query_depth,
                max_root_fields: config.max_root_fields,
            },
            enforce_allowlist: config.enable_allowlist,
        };
        let engine = Engine::new(pool.clone(), counters.clone(), sharing, settings);
        AppState(Arc::new(SharedState {
            pool,
            config: Arc::new(config),
            engine: Arc::new(engine),
            rebuild: Arc::new(Mutex::new(OwnCommits::default())),
            auth: Arc::new(auth),
            counters,
            basis: catalog::BasisCache::default(),
            metrics: crate::metrics::Metrics::default(),
            events: Arc::default(),
        }))
    }

    /// The catalog state being served.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.engine.current().catalog.clone()
    }

    /// Holds off rebuilds while this process writes the catalog: taken before a write's
    /// transaction and given its snapshot with [`Writing::install`]. The write's own `NOTIFY`
    /// reaches the catalog watcher as soon as it commits, before the writer can install what
    /// it already resolved; without this the watcher would load, introspect and resolve the
    /// same version again (at 1,000 tables, about as much work as the write itself).
    ///
    /// Take it before the write's pool connection: a rebuild holds this lock while it waits
    /// for a connection, so the other order deadlocks when the pool is exhausted.
    pub async fn writing(&self) -> Writing<'_> {
        Writing {
            state: self,
            guard: self.rebuild.lock().await,
        }
    }

    /// Rebuilds after the catalog notification `payload` unless it is one of this process's
    /// own commits (installed by their writer) or a version already served.
    pub async fn notified(&self, payload: &str) -> Result<(), CatalogError> {
        let mut guard = self.rebuild.lock().await;
        if guard.take(payload) || !catalog::needs_rebuild(payload, self.snapshot().version) {
            return Ok(());
        }
        self.reload_locked(payload.starts_with("reload:")).await
    }

    /// Has the engine serve `next`; the caller holds `rebuild`, so one version is never
    /// built twice (the writer's install and its own NOTIFY race).
    fn install_locked(&self, next: Arc<Snapshot>, force: bool) {
        self.engine.install(next, force);
    }

    /// Rebuilds from the catalog (after a peer's NOTIFY, a poll, or at start). Without
    /// `force`, nothing is built when the catalog version is the one already served. A forced
    /// rebuild (at start, after the watcher reconnects) also forgets the own commits not yet
    /// notified: their notifications may have been lost with the connection.
    pub async fn reload(&self, force: bool) -> Result<(), CatalogError> {
        let mut guard = self.rebuild.lock().await;
        if force {
            guard.pending.clear();
        }
        self.reload_locked(force).await
    }

    /// [`AppState::reload`] with the rebuild lock held.
    async fn reload_locked(&self, force: bool) -> Result<(), CatalogError> {
        let client = self.pool.get().await?;
        if !force && catalog::current_version(&**client).await? <= self.snapshot().version {
            return Ok(());
        }
        let snapshot = catalog::build(&**client).await?;
        Counters::bump(&self.counters.catalog_reads);
        tracing::info!(
            version = snapshot.version,
            inconsistent = snapshot.schema.inconsistencies.len(),
            "schema cache rebuilt"
        );
        self.install_locked(Arc::new(snapshot), force);
        Ok(())
    }
}

/// The notifications of this process's own commits, each to be skipped once by the watcher.
#[derive(Debug, Default)]
struct OwnCommits {
    /// Payloads, oldest first; at most [`OwnCommits::LIMIT`] (older ones were lost).
    pending: std::collections::VecDeque<String>,
}

impl OwnCommits {
    /// Enough for every write in flight; a payload whose notification never came (the
    /// listener was reconnecting) is dropped once this many newer ones wait.
    const LIMIT: usize = 64;

    fn push(&mut self, payload: String) {
        if self.pending.len() == Self::LIMIT {
            self.pending.pop_front();
        }
        self.pending.push_back(payload);
    }

    /// Whether `payload` is an own commit (forgotten once taken).
    fn take(&mut self, payload: &str) -> bool {
        match self.pending.iter().position(|p| p == payload) {
            Some(at) => {
                self.pending.remove(at);
                true
            }
            None => false,
        }
    }
}

/// A catalog write in progress in this process (see [`AppState::writing`]): rebuilds wait
/// until it installs its result or is dropped.
pub struct Writing<'a> {
    state: &'a AppState,
    guard: tokio::sync::MutexGuard<'a, OwnCommits>,
}

impl Writing<'_> {
    /// Installs the snapshot of the write that committed with `notification` (see
    /// [`catalog::Executed`]), and marks that notification as already handled.
    pub fn install(mut self, next: Arc<Snapshot>, notification: String) {
        let force = notification.starts_with("reload:");
        self.guard.push(notification);
        self.state.install_locked(next, force);
    }
}
