//! The controller process (`docs/kubernetes.md`): watches and caches on every replica (warm
//! standbys), leader election, one kube-rs `Controller` per kind and watched namespace sharing
//! one [`Context`] on the leader, catalog `NOTIFY` re-triggering every resource, periodic orphan
//! scans, probes, graceful shutdown.

use super::kinds::for_each_kind;
use super::kinds::Kind;
use super::leader;
use super::metrics::ControllerMetrics;
use super::reconcile::{self, Context, Settings};
use super::scope::{self, ScanReport};
use crate::catalog;
use crate::config::ControllerConfig;
use anyhow::{Context as _, Result};
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use kube::api::ListParams;
use kube::core::DeserializeGuard;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::{predicates, reflector, watcher, Controller, Predicate, WatchStreamExt};
use kube::Api;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Where the controller looks: one namespace each, or all (`None`).
pub type Scopes = Vec<Option<String>>;

/// The namespaces to watch: `--all-namespaces`, else `--watch-namespaces`, else
/// `POD_NAMESPACE`, else the client's (kubeconfig) default namespace.
pub fn scopes(settings: &ControllerConfig, client_default: &str) -> Scopes {
    if settings.all_namespaces {
        return vec![None];
    }
    let listed: Vec<String> = settings
        .watch_namespaces
        .iter()
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .collect();
    if !listed.is_empty() {
        return listed.into_iter().map(Some).collect();
    }
    match std::env::var("POD_NAMESPACE") {
        Ok(ns) if !ns.is_empty() => vec![Some(ns)],
        _ => vec![Some(client_default.to_owned())],
    }
}

fn api<K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>>(
    client: &kube::Client,
    scope: &Option<String>,
) -> Api<K> {
    match scope {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Runs `basalt controller` until `shutdown` turns true; fails when leadership is lost
/// (crash-only: the pod restarts and a standby takes over).
pub async fn run(
    settings: ControllerConfig,
    database_url: &str,
    shutdown: watch::Receiver<bool>,
) -> Result<()> {
    let client = kube::Client::try_default()
        .await
        .context("cannot reach the Kubernetes API (in-cluster config or kubeconfig)")?;
    let (pool, _) = crate::pool::pool_for(database_url, 4)?;
    {
        let mut c = pool.get().await.context("cannot connect to the database")?;
        catalog::migrate(&mut c)
            .await
            .context("catalog migration failed")?;
    }
    let lock_url = settings
        .controller_database_url
        .clone()
        .unwrap_or_else(|| database_url.to_owned());
    let lock_config: tokio_postgres::Config = lock_url.parse().context("invalid database URL")?;
    let ready = Arc::new(AtomicBool::new(false));
    let metrics = ControllerMetrics::default();
    let probes = probes(
        settings.probe_port,
        ready.clone(),
        metrics.clone(),
        shutdown.clone(),
    )
    .await?;
    let result = run_with(
        client,
        pool,
        lock_config,
        settings,
        ready,
        metrics,
        shutdown,
    )
    .await;
    probes.abort();
    result
}

/// Serves `/healthz` (alive), `/readyz` (caches synced, on the leader and on standbys) and
/// `/metrics`.
async fn probes(
    port: u16,
    ready: Arc<AtomicBool>,
    metrics: ControllerMetrics,
    mut shutdown: watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<()>> {
    use axum::routing::get;
    let router = axum::Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/metrics",
            get(move || {
                let metrics = metrics.clone();
                async move {
                    match metrics.render() {
                        Ok(text) => (
                            http::StatusCode::OK,
                            [(http::header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
                            text,
                        ),
                        Err(_) => (
                            http::StatusCode::INTERNAL_SERVER_ERROR,
                            [(http::header::CONTENT_TYPE, "text/plain")],
                            String::new(),
                        ),
                    }
                }
            }),
        )
        .route(
            "/readyz",
            get(move || {
                let ready = ready.clone();
                async move {
                    if ready.load(Ordering::Relaxed) {
                        (http::StatusCode::OK, "ready")
                    } else {
                        (http::StatusCode::SERVICE_UNAVAILABLE, "starting")
                    }
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind(("0.0.0.0", port))
        .await
        .with_context(|| format!("cannot listen on probe port {port}"))?;
    Ok(tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = shutdown.wait_for(|s| *s).await;
            })
            .await;
    }))
}

/// The controller with its parts given. Every replica checks the CRDs and starts its watches
/// and caches at once, and reports ready once they hold their first list (a warm standby);
/// only the replica holding the leader lock reconciles, so only it writes (catalog, status,
/// finalizers, Events). Runs until shutdown, or fails when leadership is lost.
pub async fn run_with(
    client: kube::Client,
    pool: deadpool_postgres::Pool,
    lock_config: tokio_postgres::Config,
    settings: ControllerConfig,
    ready: Arc<AtomicBool>,
    metrics: ControllerMetrics,
    mut shutdown: watch::Receiver<bool>,
) -> Result<()> {
    let retry = Duration::from_millis(settings.leader_retry_ms.max(10));
    metrics.set_leader(false);
    let scopes = scopes(&settings, client.default_namespace());
    check_crds(&client, &scopes).await?;
    let mut caches = Vec::new();
    for scope in &scopes {
        macro_rules! warm {
            ($kind:ty) => {
                caches.push(cache::<$kind>(
                    api::<DeserializeGuard<$kind>>(&client, scope),
                    &settings,
                ));
            };
        }
        for_each_kind!(warm);
    }
    // The watches, and the readiness that waits on them, end with this function however it
    // returns.
    let mut tasks = Tasks(caches.iter().map(|c| c.driver.abort_handle()).collect());
    let synced = futures_util::future::join_all(caches.iter_mut().map(Cache::take_synced));
    tasks.push(tokio::spawn({
        let ready = ready.clone();
        async move {
            synced.await;
            ready.store(true, Ordering::Relaxed);
            tracing::info!("caches synced");
        }
    }));
    let mut leadership = tokio::select! {
        l = leader::acquire(&lock_config, retry) => l,
        _ = shutdown.wait_for(|s| *s) => return Ok(()),
    };
    metrics.set_leader(true);
    // Leadership ends with this function, however it returns.
    let _leading = scopeguard(metrics.clone());
    let reporter = Reporter {
        controller: "basalt-controller".to_owned(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let mut context = Context::new(
        client.clone(),
        pool.clone(),
        Recorder::new(client.clone(), reporter),
        Settings {
            self_heal: settings.self_heal,
            resync: Duration::from_secs(settings.resync_seconds.max(1)),
            scopes: scopes.clone(),
            label_selector: settings.label_selector.clone(),
            live: settings.live.clone(),
        },
    );
    context.metrics = metrics;
    let ctx = Arc::new(context);
    let mut triggers = Vec::new();
    let mut controllers: Vec<BoxFuture<'static, ()>> = Vec::new();
    for cache in caches {
        let (tx, rx) = mpsc::unbounded_channel();
        triggers.push(tx);
        controllers.push((cache.lead)(ctx.clone(), rx, shutdown.clone()));
    }
    tasks.push(tokio::spawn(listen_catalog(
        lock_config.clone(),
        triggers,
        retry,
    )));
    tasks.push(tokio::spawn(scan_orphans(
        ctx.clone(),
        scopes.clone(),
        settings.label_selector.clone(),
        settings.prune_orphans,
        ctx.settings.resync,
    )));
    tracing::info!(?scopes, "controller running");
    tokio::select! {
        _ = futures_util::future::join_all(controllers) => Ok(()),
        _ = leadership.lost() => Err(anyhow::anyhow!("controller leadership lost: the leader lock session ended")),
    }
}

/// Background tasks aborted when dropped.
struct Tasks(Vec<tokio::task::AbortHandle>);

impl Tasks {
    fn push(&mut self, task: tokio::task::JoinHandle<()>) {
        self.0.push(task.abort_handle());
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Fails with an install hint when a CRD is missing.
async fn check_crds(client: &kube::Client, scopes: &Scopes) -> Result<()> {
    let scope = scopes.first().cloned().flatten();
    let scope = &scope;
    macro_rules! check {
        ($kind:ty) => {
            api::<$kind>(client, scope)
                .list_metadata(&ListParams::default().limit(1))
                .await
                .with_context(|| {
                    format!(
                        "cannot list {} resources: are the CRDs installed? (kubectl apply --server-side -f crds/)",
                        stringify!($kind)
                    )
                })?;
        };
    }
    for_each_kind!(check);
    Ok(())
}

/// Builds one kind's running controller from the shared context, its channel of catalog
/// triggers and the shutdown signal.
type Lead = Box<
    dyn FnOnce(
            Arc<Context>,
            mpsc::UnboundedReceiver<()>,
            watch::Receiver<bool>,
        ) -> BoxFuture<'static, ()>
        + Send,
>;

/// One kind's watch in one scope, kept warm on every replica from startup.
///
/// Construction: a driver task runs `watcher → reflect(store) → predicates` from the start,
/// whether or not this replica leads, so the store is current and the predicates have seen
/// every object. The changes it lets through go nowhere until leadership is won; then `lead`
/// opens a gate (a channel the driver forwards into from then on) and builds the kube
/// `Controller` with `for_stream` over that channel and the warm store, plus one
/// reconcile-all trigger that fires when the store holds its first list — at once on a
/// standby that has been watching. The gate opens before that trigger reads the store, so a
/// change lands either in the store the trigger reads or in the channel, never in between,
/// and nothing is listed again on a takeover.
///
/// Why not kube's shared streams (`reflect_shared`, `for_shared_stream`): a subscriber that is
/// not polled (a standby has no controller yet) fills the broadcast buffer and stalls the
/// watch, and one subscribed later only sees later events, so a reconcile-all at takeover is
/// needed anyway; the gate gives the same with the stable `for_stream` API.
struct Cache {
    /// Resolves once the store holds its first list; taken by the readiness task.
    synced: BoxFuture<'static, ()>,
    /// Builds the kind's controller over the warm store; called once leadership is won.
    lead: Lead,
    /// The task keeping the store current.
    driver: tokio::task::JoinHandle<()>,
}

impl Cache {
    fn take_synced(&mut self) -> BoxFuture<'static, ()> {
        std::mem::replace(&mut self.synced, futures_util::future::ready(()).boxed())
    }
}

/// Starts one kind's watch and store (see [`Cache`]). Only spec (generation), annotation,
/// finalizer and deletion changes are let through to reconciles: our own status patches do
/// not loop back.
fn cache<K: Kind>(api: Api<DeserializeGuard<K>>, settings: &ControllerConfig) -> Cache {
    let mut config = watcher::Config::default().any_semantic();
    if let Some(selector) = &settings.label_selector {
        config = config.labels(selector);
    }
    let (reader, writer) = reflector::store();
    let deleting = |o: &DeserializeGuard<K>| {
        use kube::Resource;
        o.meta().deletion_timestamp.as_ref().map(|_| 1)
    };
    let changes = watcher(api, config)
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(
            predicates::generation
                .combine(predicates::annotations)
                .combine(predicates::finalizers)
                .combine(deleting),
            Default::default(),
        );
    let gate: Arc<OnceLock<mpsc::UnboundedSender<DeserializeGuard<K>>>> = Arc::default();
    let driver = tokio::spawn({
        let gate = gate.clone();
        async move {
            let mut changes = std::pin::pin!(changes);
            while let Some(change) = changes.next().await {
                match change {
                    Ok(object) => {
                        if let Some(leader) = gate.get() {
                            let _ = leader.send(object);
                        }
                    }
                    // The watcher backs off and retries by itself.
                    Err(err) => tracing::warn!(
                        kind = <K as kube::Resource>::kind(&()).as_ref(),
                        %err,
                        "watch failed"
                    ),
                }
            }
        }
    });
    let synced = {
        let reader = reader.clone();
        async move {
            let _ = reader.wait_until_ready().await;
        }
        .boxed()
    };
    let concurrency = settings.concurrency;
    let lead: Lead = Box::new(move |ctx, catalog, shutdown| {
        controller::<K>(reader, &gate, concurrency, ctx, catalog, shutdown)
    });
    Cache {
        synced,
        lead,
        driver,
    }
}

/// One kind's controller over its warm store: reconciles what the driver forwards through the
/// gate it opens here, everything cached once the store is synced, and everything again on
/// every catalog trigger.
fn controller<K: Kind>(
    reader: reflector::Store<DeserializeGuard<K>>,
    gate: &OnceLock<mpsc::UnboundedSender<DeserializeGuard<K>>>,
    concurrency: u16,
    ctx: Arc<Context>,
    catalog: mpsc::UnboundedReceiver<()>,
    mut shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    let (forward, forwarded) = mpsc::unbounded_channel();
    let _ = gate.set(forward);
    let changes = futures_util::stream::unfold(forwarded, |mut rx| async move {
        rx.recv()
            .await
            .map(|object| (Ok::<_, watcher::Error>(object), rx))
    });
    let cached = futures_util::stream::once({
        let reader = reader.clone();
        async move {
            let _ = reader.wait_until_ready().await;
        }
    });
    let catalog = futures_util::stream::unfold(catalog, |mut rx| async move {
        rx.recv().await.map(|()| ((), rx))
    });
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = shutdown.wait_for(|s| *s).await;
        let _ = stop_tx.send(());
    });
    Controller::for_stream(changes, reader)
        .with_config(
            kube::runtime::controller::Config::default()
                .concurrency(concurrency)
                .debounce(Duration::from_millis(500)),
        )
        .reconcile_all_on(futures_util::stream::select(cached, catalog))
        .graceful_shutdown_on(stop_rx.map(|_| ()))
        .run(counted::<K>, reconcile::error_policy::<K>, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(%err, "reconcile did not complete");
            }
        })
        .boxed()
}

/// A reconcile, counted in the controller's metrics.
async fn counted<K: Kind>(
    guarded: Arc<DeserializeGuard<K>>,
    ctx: Arc<Context>,
) -> Result<kube::runtime::controller::Action, reconcile::Error> {
    let kind = <K as kube::Resource>::kind(&()).into_owned();
    let running = ctx.metrics.start(&kind);
    let result = reconcile::reconcile::<K>(guarded, ctx.clone()).await;
    if result.is_ok() {
        running.succeeded();
    }
    result
}

/// Clears the leader gauge when dropped.
struct Leading(ControllerMetrics);

impl Drop for Leading {
    fn drop(&mut self) {
        self.0.set_leader(false);
    }
}

fn scopeguard(metrics: ControllerMetrics) -> Leading {
    Leading(metrics)
}

/// LISTENs for catalog commits (from `/v1/query`, other resources, migrations) and re-triggers
/// every controller, so drift and waiting dependencies are re-evaluated at once.
async fn listen_catalog(
    config: tokio_postgres::Config,
    triggers: Vec<mpsc::UnboundedSender<()>>,
    retry: Duration,
) {
    let fire = || {
        for t in &triggers {
            let _ = t.send(());
        }
    };
    loop {
        if let Ok(mut listener) = catalog::listen(&config, None).await {
            let mut last = catalog::current_version(&listener.client).await.ok();
            // Whatever was committed while the listener was down.
            fire();
            let mut poll = tokio::time::interval(Duration::from_secs(10));
            loop {
                tokio::select! {
                    message = listener.payloads.recv() => match message {
                        Some(_) => fire(),
                        None => break,
                    },
                    _ = poll.tick() => match catalog::current_version(&listener.client).await {
                        Ok(v) if Some(v) != last => { last = Some(v); fire(); }
                        Ok(_) => {}
                        Err(_) => break,
                    },
                }
            }
        }
        tokio::time::sleep(retry).await;
    }
}

/// Periodically scans ownership against the resources that exist ([`scan`]).
async fn scan_orphans(
    ctx: Arc<Context>,
    scopes: Scopes,
    selector: Option<String>,
    prune: bool,
    every: Duration,
) {
    let pod = scope::own_pod();
    let mut ticker = tokio::time::interval(every);
    loop {
        ticker.tick().await;
        if let Err(err) = scan(&ctx, &scopes, selector.as_deref(), prune, pod.as_ref()).await {
            tracing::warn!(%err, "orphan scan failed");
        }
    }
}

/// One scan of ownership against the resources that exist (`docs/kubernetes.md`, "Scope and
/// orphans"): resources outside the label selector or the watched namespaces are released,
/// rows whose resource is gone are marked orphaned and reported on `pod` (and removed with
/// `prune`). A listing that fails ends the scan before anything is marked.
pub async fn scan(
    ctx: &Context,
    scopes: &Scopes,
    selector: Option<&str>,
    prune: bool,
    pod: Option<&k8s_openapi::api::core::v1::ObjectReference>,
) -> Result<ScanReport, reconcile::Error> {
    let mut live = scope::Live::new();
    let mut report = ScanReport::default();
    for watched in scopes {
        macro_rules! list {
            ($kind:ty) => {
                report
                    .released
                    .extend(scope::list::<$kind>(ctx, watched, selector, &mut live).await?);
            };
        }
        for_each_kind!(list);
    }
    if !scopes.contains(&None) {
        let client = ctx.pool.get().await.map_err(catalog::CatalogError::from)?;
        let rows = catalog::managed::load(&**client).await?;
        drop(client);
        macro_rules! unwatched {
            ($kind:ty) => {
                report
                    .released
                    .extend(scope::release_unwatched::<$kind>(ctx, scopes, &rows).await?);
            };
        }
        for_each_kind!(unwatched);
    }
    scope::settle_orphans(ctx, &live, scopes, prune, pod, &mut report).await?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_come_from_flags_before_the_client_default() {
        let mut settings = ControllerConfig {
            watch_namespaces: vec!["a".into(), " b ".into(), "".into()],
            ..Default::default()
        };
        assert_eq!(
            scopes(&settings, "dflt"),
            vec![Some("a".into()), Some("b".into())]
        );
        settings.all_namespaces = true;
        assert_eq!(scopes(&settings, "dflt"), vec![None]);
        let settings = ControllerConfig::default();
        let expected = std::env::var("POD_NAMESPACE")
            .ok()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "dflt".into());
        assert_eq!(scopes(&settings, "dflt"), vec![Some(expected)]);
    }
}
