//! Process state and lifecycle: pool, schema cache, catalog reload on NOTIFY or poll, and the
//! HTTP server with graceful shutdown.

use crate::catalog::{self, CatalogError, Snapshot};
use crate::config::ServeConfig;
use crate::embedded::{EmbeddedPostgres, StartOptions};
use anyhow::{Context as _, Result};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{watch, Mutex};
use tokio_postgres::NoTls;

/// What a process serves for one metadata version: the catalog snapshot and the GraphQL
/// schemas built from it.
#[derive(Debug)]
pub struct Served {
    /// Metadata, version and schema cache.
    pub snapshot: Snapshot,
    /// Per-role GraphQL schemas.
    pub graphql: crate::graphql::schemas::Schemas,
}

impl Served {
    fn new(snapshot: Snapshot) -> Self {
        let graphql =
            crate::graphql::schemas::Schemas::build(&snapshot.schema.resolved, &snapshot.metadata);
        Served { snapshot, graphql }
    }
}

impl std::ops::Deref for Served {
    type Target = Snapshot;

    fn deref(&self) -> &Snapshot {
        &self.snapshot
    }
}

/// Shared state of a running server. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// Database pool (catalog and, later, GraphQL).
    pub pool: Pool,
    /// Configuration.
    pub config: Arc<ServeConfig>,
    /// What is served, swapped whole on every rebuild.
    snapshot: Arc<RwLock<Arc<Served>>>,
    /// Serializes rebuilds so an older one never overwrites a newer one.
    rebuild: Arc<Mutex<()>>,
    /// Authentication (admin secret, JWT, webhook, unauthorized role).
    pub auth: Arc<crate::auth::Authenticator>,
    /// Work counters (plan cache, schema builds, prepares).
    pub counters: Arc<crate::stats::Counters>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("version", &self.snapshot().version)
            .finish()
    }
}

impl AppState {
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
        // Build the schemas outside the lock; requests keep using the old ones meanwhile.
        let next = Served::new(next);
        crate::stats::Counters::bump(&self.counters.schema_builds);
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

/// A server started by [`start`].
#[derive(Debug)]
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its state.
    pub state: AppState,
    shutdown: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Running {
    /// Stops accepting requests, finishes in-flight ones and stops background tasks.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// A connection pool of `size` on `url`, and the parsed connection settings.
pub fn pool_for(url: &str, size: usize) -> Result<(Pool, tokio_postgres::Config)> {
    let pg = tokio_postgres::Config::from_str(url).context("invalid database URL")?;
    let manager = Manager::from_config(
        pg.clone(),
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(size)
        .build()
        .context("cannot build the connection pool")?;
    Ok((pool, pg))
}

/// Connects, migrates the catalog, builds the schema cache and starts serving.
pub async fn start(config: ServeConfig) -> Result<Running> {
    let url = config.database_url.clone().context("no database URL")?;
    let auth = crate::auth::Authenticator::new(
        config.admin_secret.clone(),
        config.jwt_secret.as_deref(),
        config.auth_hook.as_deref(),
        &config.auth_hook_mode,
        std::time::Duration::from_secs(config.auth_hook_timeout_seconds.max(1)),
        config.unauthorized_role.clone(),
    )
    .await
    .map_err(anyhow::Error::msg)
    .context("invalid authentication settings")?;
    let (pool, pg_config) = pool_for(&url, config.pool_size)?;
    {
        let mut client = pool.get().await.context("cannot connect to the database")?;
        catalog::migrate(&mut client)
            .await
            .context("catalog migration failed")?;
    }
    let state = AppState {
        pool,
        config: Arc::new(config),
        snapshot: Arc::new(RwLock::new(Arc::new(Served::new(Snapshot {
            version: -1,
            ..Snapshot::default()
        })))),
        rebuild: Arc::new(Mutex::new(())),
        auth: Arc::new(auth),
        counters: Arc::new(crate::stats::Counters::default()),
    };
    state
        .reload(true)
        .await
        .context("cannot load the metadata")?;
    let addr = SocketAddr::new(
        state.config.host.parse().context("invalid --host")?,
        state.config.port,
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let addr = listener.local_addr()?;
    let (shutdown, mut stopped) = watch::channel(false);
    let router = crate::http::router(state.clone());
    let mut server_stop = shutdown.subscribe();
    let server = tokio::spawn(async move {
        let result = axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = server_stop.wait_for(|s| *s).await;
            })
            .await;
        if let Err(err) = result {
            tracing::error!(%err, "server error");
        }
    });
    let watcher_state = state.clone();
    let watcher = tokio::spawn(async move {
        tokio::select! {
            _ = watch_catalog(watcher_state, pg_config) => {}
            _ = stopped.wait_for(|s| *s) => {}
        }
    });
    tracing::info!(%addr, "basalt listening");
    Ok(Running {
        addr,
        state,
        shutdown,
        tasks: vec![server, watcher],
    })
}

/// Keeps the snapshot current: LISTEN for peers' commits, with a periodic version poll as
/// backup; reconnects after failures.
async fn watch_catalog(state: AppState, pg_config: tokio_postgres::Config) {
    let poll = Duration::from_secs(state.config.metadata_poll_seconds.max(1));
    let mut reconnect = false;
    loop {
        match catalog::listen(&pg_config).await {
            Ok(mut listener) => {
                // Catch up on anything committed before LISTEN took effect. After a reconnect
                // a `reload:N` (model change, same version) may have been missed: rebuild
                // unconditionally then.
                let _ = state.reload(reconnect).await;
                reconnect = true;
                let mut ticker = tokio::time::interval(poll);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        message = listener.payloads.recv() => {
                            let Some(payload) = message else { break };
                            tracing::debug!(%payload, "catalog change notified");
                            if !catalog::needs_rebuild(&payload, state.snapshot().version) {
                                continue;
                            }
                            let force = payload.starts_with("reload:");
                            if let Err(err) = state.reload(force).await {
                                tracing::warn!(%err, "reload after notification failed");
                            }
                        }
                        _ = ticker.tick() => {
                            let current = match catalog::current_version(&listener.client).await {
                                Ok(v) => v,
                                Err(err) => { tracing::warn!(%err, "catalog poll failed"); break; }
                            };
                            if current != state.snapshot().version {
                                if let Err(err) = state.reload(false).await {
                                    tracing::warn!(%err, "reload after poll failed");
                                }
                            }
                        }
                    }
                }
            }
            Err(err) => tracing::warn!(%err, "cannot listen for catalog changes"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// `basalt serve`: embedded Postgres when needed, serve until SIGINT/SIGTERM, clean up.
pub async fn serve(mut config: ServeConfig) -> Result<()> {
    let embedded = match &config.database_url {
        Some(_) => None,
        None => {
            let dir = config.data_dir.clone();
            let cluster = tokio::task::spawn_blocking(move || {
                EmbeddedPostgres::start(&dir, StartOptions::default())
            })
            .await
            .context("embedded postgres task failed")??;
            cluster.ensure_database("basalt").await?;
            let url = cluster.url("basalt");
            tracing::info!(
                url = %url,
                data_dir = %cluster.data_dir().display(),
                "no database URL given: using the embedded PostgreSQL cluster"
            );
            config.database_url = Some(url);
            Some(cluster)
        }
    };
    if config.admin_secret.is_none() {
        tracing::warn!("no admin secret configured: the metadata API is open to anyone who can reach this port; set BASALT_ADMIN_SECRET");
    }
    let result = async {
        let controller_settings = config.controller_settings.clone();
        let with_controller = config.controller;
        let database_url = config.database_url.clone().unwrap_or_default();
        let running = start(config).await?;
        let (stop, stopped) = watch::channel(false);
        let controller = async {
            if with_controller {
                crate::controller::run::run(controller_settings, &database_url, stopped).await
            } else {
                std::future::pending().await
            }
        };
        // A failed controller (lost leadership, no Kubernetes API) stops the process:
        // crash-only, the orchestrator restarts it.
        let outcome = tokio::select! {
            _ = shutdown_signal() => Ok(()),
            result = controller => result,
        };
        tracing::info!("shutting down");
        let _ = stop.send(true);
        running.shutdown().await;
        outcome
    }
    .await;
    if let Some(cluster) = embedded {
        if let Err(err) = tokio::task::spawn_blocking(move || cluster.stop()).await? {
            tracing::warn!(%err, "could not stop the embedded PostgreSQL cluster");
        }
    }
    result
}

/// Resolves on SIGINT or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}
