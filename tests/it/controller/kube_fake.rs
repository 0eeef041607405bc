//! A Kubernetes API server stand-in over `tower_test::mock` (the kube-rs controller-rs
//! pattern): every request the controller makes is recorded (method, path with query, body)
//! and answered as the API server would for the few calls a reconcile makes — JSON patches
//! of finalizers (with their `test` ops honoured), server-side apply and merge patches of
//! `/status`, Event creation, and lists.

use basalt::controller::reconcile::{Context, Settings};
use http::{Request, Response, StatusCode};
use kube::client::Body;
use kube::runtime::events::{Recorder, Reporter};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the API server saw it.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    /// Path and query.
    pub uri: String,
    pub content_type: String,
    pub body: Value,
}

impl Call {
    /// `METHOD /path?query`.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.uri)
    }
}

/// The fake server's state.
#[derive(Default)]
pub struct FakeApi {
    objects: Mutex<HashMap<String, Value>>,
    calls: Mutex<Vec<Call>>,
    /// The last `metadata.resourceVersion` given out: like the API server, every stored
    /// change of an object gives it a new one.
    versions: std::sync::atomic::AtomicU64,
}

fn object_path(obj: &Value) -> String {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    let plural = match kind {
        "AllowListEntry" => "allowlistentries".to_owned(),
        "ApiLimitPolicy" => "apilimitpolicies".to_owned(),
        "NativeQuery" => "nativequeries".to_owned(),
        "CronTrigger" => "crontriggers".to_owned(),
        other => format!("{}s", other.to_lowercase()),
    };
    format!(
        "/apis/{api_version}/namespaces/{}/{plural}/{}",
        obj["metadata"]["namespace"].as_str().unwrap_or_default(),
        obj["metadata"]["name"].as_str().unwrap_or_default()
    )
}

fn respond(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap()
}

fn merge(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

impl FakeApi {
    /// Stores (or replaces) a resource; returns it as stored.
    pub fn put<K: serde::Serialize>(&self, obj: &K) -> Value {
        let mut value = serde_json::to_value(obj).unwrap();
        self.bump(&mut value);
        self.objects
            .lock()
            .unwrap()
            .insert(object_path(&value), value.clone());
        value
    }

    /// Gives `object` a new resource version.
    fn bump(&self, object: &mut Value) {
        let next = self
            .versions
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        object["metadata"]["resourceVersion"] = json!(next.to_string());
    }

    /// The stored resource at `obj`'s path, as `K`.
    pub fn get<K: serde::de::DeserializeOwned + serde::Serialize>(&self, obj: &K) -> K {
        let path = object_path(&serde_json::to_value(obj).unwrap());
        let value = self.objects.lock().unwrap()[&path].clone();
        serde_json::from_value(value).unwrap()
    }

    /// Removes a resource outright, as if its finalizer had been taken off by hand.
    pub fn remove<K: serde::Serialize>(&self, obj: &K) {
        let path = object_path(&serde_json::to_value(obj).unwrap());
        self.objects.lock().unwrap().remove(&path);
    }

    /// The stored manifest at `manifest`'s path.
    pub fn raw(&self, manifest: &Value) -> Value {
        self.objects.lock().unwrap()[&object_path(manifest)].clone()
    }

    /// Takes the calls recorded so far.
    pub fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }

    fn answer(&self, call: &Call) -> Response<Body> {
        let path = call.uri.split('?').next().unwrap_or_default().to_owned();
        if call.method == "POST" && path.ends_with("/events") {
            return respond(StatusCode::CREATED, &call.body);
        }
        if call.method == "PATCH" && path.contains("/events/") {
            return respond(StatusCode::OK, &call.body);
        }
        if call.method == "GET" {
            if let Some(object) = self.objects.lock().unwrap().get(&path) {
                return respond(StatusCode::OK, object);
            }
            let prefix = format!("{path}/");
            // `labelSelector` of the `key=value` form, as the controller's flag is used here.
            let query = call.uri.split_once('?').map(|(_, q)| q).unwrap_or_default();
            let wanted: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
                .filter(|(k, _)| k == "labelSelector")
                .flat_map(|(_, v)| {
                    v.split(',')
                        .filter_map(|term| term.split_once('='))
                        .map(|(k, v)| (k.to_owned(), v.to_owned()))
                        .collect::<Vec<_>>()
                })
                .collect();
            let items: Vec<Value> = self
                .objects
                .lock()
                .unwrap()
                .iter()
                .filter(|(p, _)| p.starts_with(&prefix) && !p[prefix.len()..].contains('/'))
                .filter(|(_, o)| {
                    wanted
                        .iter()
                        .all(|(k, v)| o["metadata"]["labels"][k].as_str() == Some(v.as_str()))
                })
                .map(|(_, o)| o.clone())
                .collect();
            return respond(
                StatusCode::OK,
                &json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": items}),
            );
        }
        let (object_path, status) = match path.strip_suffix("/status") {
            Some(p) => (p.to_owned(), true),
            None => (path.clone(), false),
        };
        let mut objects = self.objects.lock().unwrap();
        let Some(stored) = objects.get_mut(&object_path) else {
            return respond(
                StatusCode::NOT_FOUND,
                &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"}),
            );
        };
        if call.method != "PATCH" {
            return respond(StatusCode::METHOD_NOT_ALLOWED, &json!({}));
        }
        if call.content_type.contains("json-patch") {
            // Like the API server, a `test` for null passes on a missing path.
            let ops: Vec<Value> = call
                .body
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|op| {
                    !(op["op"] == "test"
                        && op["value"].is_null()
                        && stored
                            .pointer(op["path"].as_str().unwrap_or_default())
                            .is_none())
                })
                .collect();
            let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).unwrap();
            if json_patch::patch(stored, &patch).is_err() {
                return respond(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Invalid", "code": 422, "message": "test failed"}),
                );
            }
        } else if status {
            // Server-side apply or merge patch of the status subresource.
            let new_status = call.body.get("status").cloned().unwrap_or(Value::Null);
            if call.content_type.contains("apply-patch") {
                stored["status"] = new_status;
            } else {
                merge(stored, &json!({"status": new_status}));
            }
        } else {
            merge(stored, &call.body);
        }
        self.bump(stored);
        respond(StatusCode::OK, stored)
    }
}

/// A kube client talking to `fake`. Watch requests are left pending, as a quiet API server
/// would keep them open.
pub fn client(fake: Arc<FakeApi>) -> kube::Client {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    tokio::spawn(async move {
        let mut open_watches = Vec::new();
        while let Some((request, send)) = handle.next_request().await {
            let (parts, body) = request.into_parts();
            let bytes = body.collect_bytes().await.unwrap_or_default();
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let call = Call {
                method: parts.method.to_string(),
                uri: parts
                    .uri
                    .path_and_query()
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
                content_type: parts
                    .headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned(),
                body,
            };
            let watch = call.method == "GET" && call.uri.contains("watch=true");
            let response = (!watch).then(|| fake.answer(&call));
            fake.calls.lock().unwrap().push(call);
            match response {
                Some(response) => send.send_response(response),
                None => open_watches.push(send),
            }
        }
    });
    kube::Client::new(service, "default")
}

/// A reconcile context over `fake` and the catalog at `db_url`.
pub fn context(fake: Arc<FakeApi>, db_url: &str, self_heal: bool) -> Arc<Context> {
    let client = client(fake);
    let (pool, _) = basalt::pool::pool_for(db_url, 4).unwrap();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "basalt-controller".into(),
            instance: None,
        },
    );
    Arc::new(Context::new(
        client,
        pool,
        recorder,
        Settings {
            self_heal,
            resync: Duration::from_secs(300),
            scopes: Vec::new(),
            label_selector: None,
            live: Default::default(),
        },
    ))
}
