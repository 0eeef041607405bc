//! The control API under `/_fake/`, for processes that drive the fake from outside (the
//! benchmark runs the `fake-kube` binary): the same operations as the library's
//! [`FakeKube`](crate::FakeKube) methods. These requests are not recorded as calls.
//!
//! - `GET /_fake/calls?since=N[&bodies=true]` → `{"total": T, "calls": [...]}`: the calls from
//!   index `N` on (bodies left out unless asked for).
//! - `GET /_fake/objects[?kind=K]` → every stored object (of one kind).
//! - `POST /_fake/apply` with an object or an array of objects → the stored objects; applies
//!   each as `kubectl apply` would (created when absent).
//! - `POST /_fake/delete` with an object or an array (only `apiVersion`, `kind` and
//!   `metadata.namespace`/`name` are read) → the deleted (or now deleting) objects.
//! - `GET /_fake/kubeconfig?token=T` → a kubeconfig for this server and that bearer token.

use crate::api::{json_response, refusal};
use crate::Shared;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// The `/_fake/` routes.
pub(crate) fn router() -> Router<Arc<Shared>> {
    Router::new()
        .route("/_fake/calls", get(calls))
        .route("/_fake/objects", get(objects))
        .route("/_fake/apply", post(apply))
        .route("/_fake/delete", post(delete))
        .route("/_fake/kubeconfig", get(kubeconfig))
}

#[derive(Debug, Deserialize)]
struct CallsQuery {
    #[serde(default)]
    since: usize,
    #[serde(default)]
    bodies: bool,
}

async fn calls(State(shared): State<Arc<Shared>>, Query(query): Query<CallsQuery>) -> Response {
    let (total, calls) = shared.calls_since(query.since);
    let calls: Vec<Value> = calls
        .into_iter()
        .map(|call| {
            let mut value = serde_json::to_value(&call).unwrap_or(Value::Null);
            if !query.bodies {
                if let Some(object) = value.as_object_mut() {
                    object.remove("body");
                }
            }
            value
        })
        .collect();
    json_response(StatusCode::OK, &json!({"total": total, "calls": calls}))
}

#[derive(Debug, Deserialize)]
struct ObjectsQuery {
    kind: Option<String>,
}

async fn objects(State(shared): State<Arc<Shared>>, Query(query): Query<ObjectsQuery>) -> Response {
    let objects: Vec<Value> = shared.read(|store| {
        store
            .all()
            .filter(|o| {
                query
                    .kind
                    .as_deref()
                    .is_none_or(|k| o.get("kind").and_then(Value::as_str) == Some(k))
            })
            .cloned()
            .collect()
    });
    json_response(StatusCode::OK, &Value::Array(objects))
}

fn many(body: Value) -> Vec<Value> {
    match body {
        Value::Array(items) => items,
        one => vec![one],
    }
}

async fn apply(State(shared): State<Arc<Shared>>, Json(body): Json<Value>) -> Response {
    match shared.apply_all(many(body)) {
        Ok(stored) => json_response(StatusCode::OK, &Value::Array(stored)),
        Err(rejection) => refusal(&rejection),
    }
}

async fn delete(State(shared): State<Arc<Shared>>, Json(body): Json<Value>) -> Response {
    let mut deleted = Vec::new();
    for manifest in many(body) {
        match shared.delete(&manifest) {
            Ok(object) => deleted.push(object),
            Err(rejection) => return refusal(&rejection),
        }
    }
    json_response(StatusCode::OK, &Value::Array(deleted))
}

#[derive(Debug, Deserialize)]
struct KubeconfigQuery {
    token: String,
}

async fn kubeconfig(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<KubeconfigQuery>,
) -> Response {
    (
        [(header::CONTENT_TYPE, "application/yaml")],
        crate::kubeconfig(&shared.url, &query.token),
    )
        .into_response()
}
