//! Startup and lifecycle of `basalt serve`: the embedded cluster when no URL is given, the
//! pool, catalog migration, the first load of the metadata, the HTTP server, the catalog watcher
//! (reload on NOTIFY or poll), the in-process controller (`--controller`) and graceful
//! shutdown. See `docs/architecture.md`, "Keeping replicas in sync" and "Other notes".
//!
//! The top of the crate: only `main.rs` and tests use it. Must not parse requests or edit
//! metadata; the shared state it starts is [`crate::state::AppState`].

use crate::catalog;
use crate::config::ServeConfig;
use crate::embedded::{EmbeddedPostgres, StartOptions};
use crate::live::LiveQueries;
use crate::pool::pool_for;
use crate::shutdown::shutdown_signal;
use crate::state::AppState;
use anyhow::{Context as _, Result};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// A server started by [`start`].
#[derive(Debug)]
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    pub state: AppState,
    /// Its WebSockets and the live queries they carry.
    pub live: Arc<LiveQueries>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Running {
    /// Stops accepting requests, finishes in-flight ones and stops background tasks.
    pub async fn shutdown(self) {
        // WebSockets outlive the HTTP server's graceful shutdown: close them first (1001).
        self.live
            .close_sockets(std::time::Duration::from_secs(5))
            .await;
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Connects, migrates the catalog, resolves the metadata and starts serving.
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
    .context("invalid authentication settings")?;
    let (pool, pg_config) = pool_for(&url, config.pool_size)?;
    {
        let mut client = pool.get().await.context("cannot connect to the database")?;
        catalog::migrate(&mut client)
            .await
            .context("catalog migration failed")?;
        // Remote schemas are introspected again at start; one that is down keeps its stored
        // schema and is reported inconsistent, so the server still starts.
        crate::transaction::refresh_remotes(&mut client)
            .await
            .context("cannot store remote schema introspection results")?;
    }
    let state = AppState::new(pool, config, auth);
    state
        .reload(true)
        .await
        .context("cannot load the metadata")?;
    state
        .put_triggers_in_step()
        .await
        .context("cannot install the live-query change triggers")?;
    let addr = SocketAddr::new(
        state.config.host.parse().context("invalid --host")?,
        state.config.port,
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let addr = listener.local_addr()?;
    let (shutdown, mut stopped) = watch::channel(false);
    let polling = crate::live::Polling {
        interval: std::time::Duration::from_millis(state.config.live.refetch_interval_ms),
        batch_size: state.config.live.batch_size,
    };
    let streaming = crate::live::Polling {
        interval: std::time::Duration::from_millis(state.config.live.stream_refetch_interval_ms),
        batch_size: state.config.live.stream_batch_size,
    };
    let live = Arc::new(LiveQueries::new(
        state.engine.clone(),
        polling,
        streaming,
        state.changes.clone(),
        state.config.live.max_connections,
    ));
    let app = crate::http::app(state.clone(), live.clone());
    let mut server_stop = shutdown.subscribe();
    let server = tokio::spawn(async move {
        // With the peer's address in each request's extensions (rate limits keyed on it).
        let service =
            axum::ServiceExt::<axum::extract::Request>::into_make_service_with_connect_info::<
                SocketAddr,
            >(app);
        let result = axum::serve(listener, service)
            .with_graceful_shutdown(async move {
                let _ = server_stop.wait_for(|s| *s).await;
            })
            .await;
        if let Err(err) = result {
            tracing::error!(%err, "server error");
        }
    });
    let watcher_state = state.clone();
    // One HTTP pool for every webhook delivery: event triggers and scheduled events.
    let permits = Arc::new(tokio::sync::Semaphore::new(
        state.config.events.http_pool_size.max(1),
    ));
    let events = tokio::spawn(crate::events::run(
        state.clone(),
        pg_config.clone(),
        permits.clone(),
        shutdown.subscribe(),
    ));
    let scheduled = tokio::spawn(crate::scheduled::run(
        state.clone(),
        permits,
        shutdown.subscribe(),
    ));
    let actions = tokio::spawn(crate::async_actions::run(
        state.clone(),
        pg_config.clone(),
        shutdown.subscribe(),
    ));
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
        live,
        shutdown,
        tasks: vec![server, watcher, events, actions, scheduled],
    })
}

/// How long `serve --controller` waits for its controller to drain on shutdown.
const CONTROLLER_DRAIN: Duration = Duration::from_secs(20);

/// Keeps the served catalog version current: LISTEN for peers' commits, with a periodic version
/// poll as backup; reconnects after failures, waiting 1 s and doubling up to 30 s. The same
/// session counts the change notifications of live queries, and at each fallback interval
/// checks that the tables they rely on still carry their trigger (and samples the
/// notification queue).
async fn watch_catalog(state: AppState, mut pg_config: tokio_postgres::Config) {
    // The session is recognisable among the server's connections.
    pg_config.application_name("basalt-listen");
    let poll = Duration::from_secs(state.config.metadata_poll_seconds.max(1));
    let recheck = state.changes.fallback.unwrap_or(RECHECK_WITHOUT_FALLBACK);
    let on_change: Option<catalog::OnChange> = state.changes.policy.on.then(|| {
        let changes = state.changes.clone();
        Arc::new(move |oid| changes.changed(oid)) as catalog::OnChange
    });
    let mut reconnect = false;
    let mut backoff = LISTEN_BACKOFF_FIRST;
    loop {
        match catalog::listen(&pg_config, on_change.clone()).await {
            Ok(listener) => {
                backoff = LISTEN_BACKOFF_FIRST;
                state.changes.connected();
                // Catch up on anything committed before LISTEN took effect. After a reconnect
                // a `reload:N` (model change, same version) may have been missed: rebuild
                // unconditionally then.
                let _ = state.reload(reconnect).await;
                reconnect = true;
                follow(&state, listener, poll, recheck).await;
            }
            Err(err) => tracing::warn!(%err, "cannot listen for catalog changes"),
        }
        state.changes.disconnected();
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(LISTEN_BACKOFF_MAX);
    }
}

/// The first wait before the catalog listener reconnects, and the longest.
const LISTEN_BACKOFF_FIRST: Duration = Duration::from_secs(1);
const LISTEN_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// How often the change triggers are checked when there is no fallback poll.
const RECHECK_WITHOUT_FALLBACK: Duration = Duration::from_secs(30);

/// Follows one listener session until it is lost.
async fn follow(
    state: &AppState,
    mut listener: catalog::Listener,
    poll: Duration,
    recheck: Duration,
) {
    let mut ticker = tokio::time::interval(poll);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut rechecks = tokio::time::interval_at(tokio::time::Instant::now() + recheck, recheck);
    rechecks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            message = listener.payloads.recv() => {
                let Some(notification) = message else { return };
                tracing::debug!(%notification, "catalog change notified");
                if let Err(err) = state.notified(&notification).await {
                    tracing::warn!(%err, "reload after notification failed");
                }
            }
            _ = ticker.tick() => {
                let current = match catalog::current_version(&listener.client).await {
                    Ok(v) => v,
                    Err(err) => { tracing::warn!(%err, "catalog poll failed"); return; }
                };
                if current != state.snapshot().version {
                    if let Err(err) = state.reload(false).await {
                        tracing::warn!(%err, "reload after poll failed");
                    }
                }
            }
            _ = rechecks.tick(), if state.changes.policy.on => {
                let covered = state.changes.covered_oids();
                match catalog::live_change::recheck(&listener.client, &covered).await {
                    Ok((usage, lost)) => {
                        state.changes.set_queue_usage(usage);
                        state.changes.lost(&lost);
                    }
                    Err(err) => { tracing::warn!(%err, "change trigger check failed"); return; }
                }
            }
        }
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
        let mut controller_settings = config.controller_settings.clone();
        controller_settings.live = config.live.detection.policy();
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
        tokio::pin!(controller);
        // A failed controller (lost leadership, no Kubernetes API) stops the process:
        // crash-only, the orchestrator restarts it.
        let outcome = tokio::select! {
            _ = shutdown_signal() => {
                tracing::info!("shutting down");
                let _ = stop.send(true);
                // The controller drains: it stops taking work, lets the reconciles in
                // flight finish (their catalog transactions commit or roll back whole) and
                // releases its lease, within the orchestrator's grace period.
                if with_controller {
                    match tokio::time::timeout(CONTROLLER_DRAIN, &mut controller).await {
                        Ok(result) => result,
                        Err(_) => {
                            tracing::warn!("the controller did not drain in time");
                            Ok(())
                        }
                    }
                } else {
                    Ok(())
                }
            }
            result = &mut controller => result,
        };
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
