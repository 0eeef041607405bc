//! The state a server shares between requests and its background tasks: the pool, the
//! configuration, the authenticator, the work counters and the engine, and the rebuilds that
//! have the engine serve each new catalog version ([`Writing::install`],
//! [`AppState::reload`]). Rebuilds are serialized, and an older version never replaces a
//! newer one (see `docs/architecture.md`, "Keeping replicas in sync").
//!
//! Used by `http` and `app`. Must not parse requests, edit metadata, or start anything
//! (startup, the catalog watcher and shutdown belong to `app`).

use crate::auth::Authenticator;
use crate::catalog::{self, CatalogVersion, Notification};
use crate::config::ServeConfig;
use crate::engine::Engine;
use crate::stats::Counters;
use crate::transaction::{LastWriteCache, TransactionError};
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
    /// payloads of this process's own commits whose catalog versions it installed itself, so
    /// the watcher does not rebuild them a second time (see [`AppState::writing`]).
    rebuild: Arc<Mutex<OwnCommits>>,
    /// Authentication (admin secret, JWT, webhook, unauthorized role).
    pub auth: Arc<Authenticator>,
    /// Work counters (plan cache, schema builds, prepares).
    pub counters: Arc<Counters>,
    /// The state this process's last metadata write committed, for its next one.
    pub last_write: LastWriteCache,
    /// Request counts and latencies (`/metrics`).
    pub metrics: crate::metrics::Metrics,
    /// Event delivery counters (`/metrics`).
    pub events: Arc<crate::stats::EventCounters>,
    /// Scheduled-event counts (`/metrics`).
    pub scheduled: Arc<crate::stats::ScheduledCounters>,
    /// This process's counts of rate-limited operations (`docs/limits.md`).
    pub rate: crate::limits::rate::RateLimiter,
    /// Change detection of live queries and streams: counters, listener, coverage.
    pub changes: Arc<crate::live::changes::Changes>,
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
            model: crate::graphql::model::ModelSettings {
                infer_function_permissions: config.infer_function_permissions,
            },
        };
        let engine = Engine::new(pool.clone(), counters.clone(), sharing, settings);
        let live = &config.live;
        let policy = live.detection.policy();
        let changes = crate::live::changes::Changes::new(
            policy,
            (live.fallback_refetch_interval_ms > 0)
                .then(|| std::time::Duration::from_millis(live.fallback_refetch_interval_ms)),
        );
        AppState(Arc::new(SharedState {
            changes: Arc::new(changes),
            pool,
            config: Arc::new(config),
            engine: Arc::new(engine),
            rebuild: Arc::new(Mutex::new(OwnCommits::default())),
            auth: Arc::new(auth),
            counters,
            last_write: LastWriteCache::default(),
            metrics: crate::metrics::Metrics::default(),
            events: Arc::default(),
            scheduled: Arc::default(),
            rate: crate::limits::rate::RateLimiter::default(),
        }))
    }

    /// The catalog state being served.
    pub fn snapshot(&self) -> Arc<CatalogVersion> {
        self.engine.current().catalog.clone()
    }

    /// Holds off rebuilds while this process writes the catalog: taken before a write's
    /// transaction and given its result with [`Writing::install`]. The write's own
    /// notification reaches the catalog watcher as soon as it commits, before the writer can
    /// install what it already resolved; without this the watcher would load, read the
    /// database model and resolve the same version again (about as much work as the write
    /// itself).
    ///
    /// Take it before the write's pool connection: a rebuild holds this lock while it waits
    /// for a connection, so the other order deadlocks when the pool is exhausted.
    pub async fn writing(&self) -> Writing<'_> {
        Writing {
            state: self,
            guard: self.rebuild.lock().await,
        }
    }

    /// Rebuilds after a catalog notification unless it is one of this process's own commits
    /// (installed by their writer) or a version already served.
    pub async fn notified(&self, notification: &Notification) -> Result<(), TransactionError> {
        let mut guard = self.rebuild.lock().await;
        if guard.take(notification) || !notification.needs_rebuild(self.snapshot().version) {
            return Ok(());
        }
        self.reload_locked(notification.forces_rebuild()).await
    }

    /// Has the engine serve `next`; the caller holds `rebuild`, so one version is never
    /// built twice (the writer's install and its own NOTIFY race).
    fn install_locked(&self, next: Arc<CatalogVersion>, force: bool) {
        use crate::resolve::live_change;
        let tracked = crate::resolve::live_change::tracked(&next.metadata);
        let policy = &self.changes.policy;
        let (plan, coverage) = live_change::assess(&next.db, &tracked, policy);
        self.changes.set_coverage(coverage);
        self.engine.install(next, force);
        // A write of this process put the triggers in step already; one by another writer
        // (the controller, the CLI, a replica with other settings) may not have.
        if plan.is_empty() {
            // In step: a later build that finds the same changes wanting tries them again.
            self.changes.forget_try();
            return;
        }
        if !self.changes.ready() || !self.changes.first_try(&plan) {
            return;
        }
        let (pool, changes) = (self.pool.clone(), self.changes.clone());
        tokio::spawn(async move {
            let applied = async {
                let mut client = pool.get().await?;
                crate::catalog::live_change::apply_alone(&mut client, &changes.policy).await
            };
            if let Err(err) = applied.await {
                tracing::warn!(%err, "cannot put the live-query change triggers in step");
                changes.forget_try();
            }
        });
    }

    /// At start, before serving: puts the live-query change triggers in step with the
    /// metadata and this process's settings, and rebuilds if that changed anything.
    pub async fn put_triggers_in_step(&self) -> Result<(), TransactionError> {
        use crate::resolve::live_change;
        let snapshot = self.snapshot();
        let tracked = crate::resolve::live_change::tracked(&snapshot.metadata);
        let plan = live_change::plan(&snapshot.db, &tracked, &self.changes.policy);
        let mut changed = false;
        if !plan.is_empty() && self.changes.first_try(&plan) {
            let mut client = self.pool.get().await?;
            // Not fatal: subscriptions reading what is not covered run every interval.
            match crate::catalog::live_change::apply_alone(&mut client, &self.changes.policy).await
            {
                Ok(applied) => changed = applied.statements > 0,
                Err(err) => {
                    tracing::warn!(%err, "cannot put the live-query change triggers in step");
                    self.changes.forget_try();
                }
            }
        }
        self.changes.set_ready();
        if changed {
            self.reload(true).await?;
        }
        Ok(())
    }

    /// Rebuilds from the catalog (after a peer's NOTIFY, a poll, or at start). Without
    /// `force`, nothing is built when the catalog version is the one already served. A forced
    /// rebuild (at start, after the watcher reconnects) also forgets the own commits not yet
    /// notified: their notifications may have been lost with the connection.
    pub async fn reload(&self, force: bool) -> Result<(), TransactionError> {
        let mut guard = self.rebuild.lock().await;
        if force {
            guard.pending.clear();
        }
        self.reload_locked(force).await
    }

    /// [`AppState::reload`] with the rebuild lock held.
    async fn reload_locked(&self, force: bool) -> Result<(), TransactionError> {
        let mut client = self.pool.get().await?;
        if !force && catalog::current_version(&**client).await? <= self.snapshot().version {
            return Ok(());
        }
        // One snapshot: the document and the database model as one commit left them.
        let session: &mut tokio_postgres::Client = &mut client;
        let tx = session
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(catalog::CatalogError::from)?;
        let catalog = crate::transaction::read(&tx).await?;
        tx.commit().await.map_err(catalog::CatalogError::from)?;
        Counters::bump(&self.counters.catalog_reads);
        tracing::info!(
            version = catalog.version,
            inconsistent = catalog.resolution.inconsistencies.len(),
            "schema cache rebuilt"
        );
        self.install_locked(Arc::new(catalog), force);
        Ok(())
    }
}

/// The notifications of this process's own commits, each to be skipped once by the watcher.
#[derive(Debug, Default)]
struct OwnCommits {
    /// Oldest first; at most [`OwnCommits::LIMIT`] (older ones were lost).
    pending: std::collections::VecDeque<Notification>,
}

impl OwnCommits {
    /// Enough for every write in flight; a notification that never came (the listener was
    /// reconnecting) is dropped once this many newer ones wait.
    const LIMIT: usize = 64;

    fn push(&mut self, notification: Notification) {
        if self.pending.len() == Self::LIMIT {
            self.pending.pop_front();
        }
        self.pending.push_back(notification);
    }

    /// Whether `notification` is an own commit's (forgotten once taken).
    fn take(&mut self, notification: &Notification) -> bool {
        match self.pending.iter().position(|p| p == notification) {
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
    /// Installs the catalog version of the write that committed with `notification` (see
    /// [`crate::transaction::Outcome`]), and marks that notification as already handled.
    pub fn install(mut self, next: Arc<CatalogVersion>, notification: Notification) {
        let force = notification.forces_rebuild();
        self.guard.push(notification);
        self.state.install_locked(next, force);
    }
}
