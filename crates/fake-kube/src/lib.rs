//! A Kubernetes API server stand-in over plain HTTP on loopback, for Basalt's controller tests
//! and the controller benchmark, where no real API server can run (`docs/kubernetes.md`). Real
//! kube clients talk to it through a kubeconfig, so the whole client stack (connection pool,
//! watch streaming, bearer tokens) is exercised, and several processes can share it.
//!
//! # Layout
//! - [`resources`]: the served types (Basalt's eleven kinds, Events) and request paths.
//! - `store`: objects, the global `resourceVersion`, generations, finalizers and the change log.
//! - `selector`: label selectors.
//! - `api`: the Kubernetes routes (list, watch, get, create, replace, patch, delete); every
//!   request is recorded as a [`Call`] with the bearer token that made it.
//! - `watch`: chunked JSON-lines watch streams with bookmarks.
//! - `control`: the `/_fake/` routes the `fake-kube` binary offers to other processes.
//!
//! [`FakeKube`] is the handle: start, point a client at [`FakeKube::kubeconfig`], act as a user
//! ([`FakeKube::apply`], [`FakeKube::delete`]) and inspect ([`FakeKube::get`],
//! [`FakeKube::calls`], [`FakeKube::writes_by`]).
//!
//! What it does not do: authentication or RBAC (tokens are only recorded), validation against
//! the CRD schemas, field ownership of server-side apply (the fields given replace the stored
//! ones), field selectors, `resourceVersionMatch=Exact` lists of old versions, namespaces as
//! objects, garbage collection. Lists are served from the latest state.
#![warn(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod api;
mod control;
pub mod resources;
mod selector;
mod store;
mod watch;

pub use resources::{ResourceType, RESOURCE_TYPES};
pub use store::Rejection;

use serde::Serialize;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use store::{Key, Store, Write};
use tokio::sync::watch as signal;

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Call {
    /// `GET`, `POST`, `PATCH`, …
    pub method: String,
    /// Path and query, e.g. `/apis/basalt.dev/v1alpha1/namespaces/default/trackedtables?watch=true&…`.
    pub uri: String,
    /// The bearer token of the `Authorization` header: which client made the call.
    pub token: Option<String>,
    /// The `Content-Type` header.
    pub content_type: Option<String>,
    /// The body: JSON, a string when it is not JSON, `null` when empty.
    pub body: Value,
}

impl Call {
    /// The path without the query.
    pub fn path(&self) -> &str {
        self.uri.split('?').next().unwrap_or_default()
    }

    /// Whether the call could change state (`POST`, `PUT`, `PATCH`, `DELETE`).
    pub fn is_write(&self) -> bool {
        matches!(self.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE")
    }

    /// Whether the call opened a watch.
    pub fn is_watch(&self) -> bool {
        self.method == "GET"
            && self
                .uri
                .split_once('?')
                .is_some_and(|(_, q)| q.split('&').any(|p| p == "watch=true" || p == "watch=1"))
    }
}

/// State shared by the routes and the handle.
pub(crate) struct Shared {
    store: Mutex<Store>,
    /// The latest `resourceVersion`, published after every write so watches wake up.
    versions: signal::Sender<u64>,
    calls: Mutex<Vec<Call>>,
    /// Turns true (or closes) when the server stops, ending open watches.
    stop: signal::Receiver<bool>,
    /// `http://127.0.0.1:<port>`.
    url: String,
}

impl Shared {
    pub(crate) fn read<T>(&self, read: impl FnOnce(&Store) -> T) -> T {
        let store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        read(&store)
    }

    pub(crate) fn write<T>(&self, write: impl FnOnce(&mut Store) -> T) -> T {
        let mut store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        let out = write(&mut store);
        let version = store.version();
        drop(store);
        self.versions.send_if_modified(|v| {
            let moved = *v != version;
            *v = version;
            moved
        });
        out
    }

    pub(crate) fn record(&self, call: Call) {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(call);
    }

    /// How many calls were made, and those from index `since` on.
    pub(crate) fn calls_since(&self, since: usize) -> (usize, Vec<Call>) {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        (calls.len(), calls.iter().skip(since).cloned().collect())
    }

    /// Applies every manifest as a user would, in one step (watches see them together).
    pub(crate) fn apply_all(&self, manifests: Vec<Value>) -> Result<Vec<Value>, Rejection> {
        self.write(|store| {
            manifests
                .into_iter()
                .map(|manifest| {
                    let (resource, key) = identify(&manifest)?;
                    store.write(resource, key, false, Write::Apply, manifest)
                })
                .collect()
        })
    }

    pub(crate) fn delete(&self, manifest: &Value) -> Result<Value, Rejection> {
        let (resource, key) = identify(manifest)?;
        self.write(|store| store.delete(resource, key))
    }
}

/// The type and key a manifest names (namespace `default` when it names none).
fn identify(manifest: &Value) -> Result<(&'static ResourceType, Key), Rejection> {
    let text = |pointer: &str| manifest.pointer(pointer).and_then(Value::as_str);
    let (api_version, kind) = (
        text("/apiVersion").unwrap_or_default(),
        text("/kind").unwrap_or_default(),
    );
    let resource = ResourceType::by_kind(api_version, kind).ok_or_else(|| {
        Rejection::new(
            404,
            "NotFound",
            format!("no resource type {kind} in {api_version} is served"),
        )
    })?;
    let name = text("/metadata/name")
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Rejection::new(422, "Invalid", "metadata.name: Required value"))?;
    let namespace = text("/metadata/namespace")
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    Ok((resource, Key::new(resource, namespace, name)))
}

/// A kubeconfig for the server at `url` whose one user authenticates with `token`; its
/// current context is `default`, with namespace `default`.
pub(crate) fn kubeconfig(url: &str, token: &str) -> String {
    // A JSON string is a valid YAML double-quoted scalar, whatever the token holds.
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: fake-kube
  cluster:
    server: {url}
contexts:
- name: default
  context:
    cluster: fake-kube
    namespace: default
    user: fake-kube-user
current-context: default
users:
- name: fake-kube-user
  user:
    token: {token}
",
        url = quoted(url),
        token = quoted(token),
    )
}

/// A running fake API server. Dropping it stops the server and ends open watches.
pub struct FakeKube {
    shared: Arc<Shared>,
    stop: signal::Sender<bool>,
}

impl std::fmt::Debug for FakeKube {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeKube")
            .field("url", &self.shared.url)
            .finish_non_exhaustive()
    }
}

impl FakeKube {
    /// Starts a server on a free port of 127.0.0.1.
    pub async fn start() -> std::io::Result<FakeKube> {
        FakeKube::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Starts a server on `address`.
    pub async fn bind(address: SocketAddr) -> std::io::Result<FakeKube> {
        let listener = tokio::net::TcpListener::bind(address).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = signal::channel(false);
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::default()),
            versions: signal::channel(0).0,
            calls: Mutex::new(Vec::new()),
            stop: stopped.clone(),
            url,
        });
        let router = control::router()
            .fallback(api::serve)
            // Benchmarks apply thousands of objects in one control request.
            .layer(axum::extract::DefaultBodyLimit::max(256 << 20))
            .with_state(shared.clone());
        let mut stopped = stopped;
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async move {
                    let _ = stopped.wait_for(|s| *s).await;
                })
                .await;
        });
        Ok(FakeKube { shared, stop })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.shared.url.clone()
    }

    /// A kubeconfig (YAML) for this server whose user sends `token` as its bearer token, so
    /// the calls of each client can be told apart; context and namespace are `default`.
    pub fn kubeconfig(&self, token: &str) -> String {
        kubeconfig(&self.shared.url, token)
    }

    /// Creates or updates an object as a user's `kubectl apply` would: created when absent,
    /// else its top-level fields (`spec`, …) replaced and labels, annotations and finalizers
    /// merged; `status` is ignored. Returns the object as stored. No call is recorded.
    pub fn apply(&self, manifest: &Value) -> Result<Value, Rejection> {
        self.shared
            .apply_all(vec![manifest.clone()])
            .map(|mut stored| stored.pop().unwrap_or_default())
    }

    /// Deletes the object `manifest` names (its `apiVersion`, `kind`, `metadata.namespace`
    /// and `metadata.name`): removed at once, or marked for deletion while it has finalizers.
    pub fn delete(&self, manifest: &Value) -> Result<Value, Rejection> {
        self.shared.delete(manifest)
    }

    /// The stored object `manifest` names, if any.
    pub fn get(&self, manifest: &Value) -> Option<Value> {
        let (_, key) = identify(manifest).ok()?;
        self.shared.read(|store| store.get(&key).cloned())
    }

    /// Every stored object.
    pub fn objects(&self) -> Vec<Value> {
        self.shared.read(|store| store.all().cloned().collect())
    }

    /// Every API request received so far, oldest first.
    pub fn calls(&self) -> Vec<Call> {
        self.shared.calls_since(0).1
    }

    /// The calls that could change state (see [`Call::is_write`]) made with `token`.
    pub fn writes_by(&self, token: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.is_write() && c.token.as_deref() == Some(token))
            .collect()
    }
}

impl Drop for FakeKube {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}
