//! Actions through the HTTP API (`docs/actions.md`), against a real local handler server
//! (axum, [`Handler`]): the metadata operations and their errors, synchronous query and
//! mutation actions, and asynchronous actions. An engine killed while an asynchronous call is
//! in flight is in the slow tier (`slow/actions_crash.rs`).

mod asynchronous;
mod operations;
mod synchronous;

use crate::auth::{blog_server, serve};
use crate::harness::{query_json, TestServer};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A handler server: each path answers one way; every request is kept.
#[derive(Clone, Default)]
pub(crate) struct Handler {
    received: Arc<Mutex<Vec<(String, HeaderMap, Value)>>>,
}

impl Handler {
    pub(crate) async fn start() -> (Handler, String) {
        let handler = Handler::default();
        let router = Router::new()
            .route("/{kind}", post(answer))
            .with_state(handler.clone());
        let base = serve(router).await;
        (handler, base)
    }

    /// Requests to `kind`, in arrival order.
    pub(crate) fn calls(&self, kind: &str) -> Vec<(HeaderMap, Value)> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _, _)| k == kind)
            .map(|(_, h, b)| (h.clone(), b.clone()))
            .collect()
    }
}

fn header(headers: &HeaderMap, name: &str) -> Value {
    headers
        .get(name)
        .map(|v| json!(v.to_str().unwrap()))
        .unwrap_or(Value::Null)
}

async fn answer(
    State(handler): State<Handler>,
    Path(kind): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    handler
        .received
        .lock()
        .unwrap()
        .push((kind.clone(), headers.clone(), body.clone()));
    let input = &body["input"];
    let ok = |v: Value| Json(v).into_response();
    let status =
        |code: u16, v: Value| (StatusCode::from_u16(code).unwrap(), Json(v)).into_response();
    match kind.as_str() {
        // Echoes what it saw, joined to author `author_id`.
        "card" => ok(json!({
            "ok": true,
            "author_id": input["author_id"],
            "note": "card",
            "seen": {
                "role": body["session_variables"]["x-svc-role"],
                "secret": header(&headers, "x-action-secret"),
                "forwarded": header(&headers, "x-client-thing"),
                "query": body["request_query"],
                "input": input,
            },
        })),
        "archive" => ok(json!([
            {"ok": true, "author_id": 1, "note": input["input"]["reason"], "extra": "ignored"},
            {"ok": false, "author_id": 2, "note": null},
        ])),
        "extensions" => status(
            400,
            json!({"message": "member 7 is already archived", "code": "ignored",
                   "extensions": {"code": "already-archived", "member": 7}}),
        ),
        "code" => status(
            422,
            json!({"message": "no such member", "code": "no-member"}),
        ),
        "message" => status(400, json!({"message": "just no"})),
        "nomessage" => status(400, json!({"error": "no message here"})),
        "crash" => status(500, json!({"trace": "boom"})),
        "array" => ok(json!([{"ok": true}])),
        "missing" => ok(json!({"author_id": 1})),
        "wrongtype" => ok(json!({"ok": "yes"})),
        "text" => "plain text".into_response(),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            ok(json!({"ok": true}))
        }
        "hang" => {
            tokio::time::sleep(Duration::from_secs(120)).await;
            ok(json!({"ok": true}))
        }
        "later" => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            ok(json!({"ok": true, "author_id": input["author_id"], "note": "done"}))
        }
        "refuse" => status(
            400,
            json!({"message": "cannot archive", "extensions": {"code": "nope"}}),
        ),
        _ => status(404, json!({"message": "unknown handler"})),
    }
}

/// The custom types of these tests: an output object with relationships to `author` and
/// `article`, a nested object, an input object and an enum.
pub(crate) fn custom_types() -> Value {
    json!({"type": "set_custom_types", "args": {
        "objects": [
            {"name": "Card", "description": "what a handler answers", "fields": [
                {"name": "ok", "type": "Boolean!"},
                {"name": "author_id", "type": "Int"},
                {"name": "note", "type": "String"},
                {"name": "seen", "type": "Seen"}
            ], "relationships": [
                {"name": "author", "type": "object", "remote_table": "author", "field_mapping": {"author_id": "id"}},
                {"name": "articles", "type": "array", "remote_table": "article", "field_mapping": {"author_id": "author_id"}}
            ]},
            {"name": "Seen", "fields": [
                {"name": "role", "type": "String"}, {"name": "secret", "type": "String"},
                {"name": "forwarded", "type": "String"}, {"name": "query", "type": "String"},
                {"name": "input", "type": "jsonb"}
            ]}
        ],
        "input_objects": [{"name": "ArchiveInput", "fields": [
            {"name": "reason", "type": "String"}, {"name": "mood", "type": "Mood"}
        ]}],
        "enums": [{"name": "Mood", "values": [{"value": "calm"}, {"value": "angry"}]}]
    }})
}

pub(crate) fn create(name: &str, definition: Value) -> Value {
    json!({"type": "create_action", "args": {"name": name, "definition": definition}})
}

fn allow(action: &str, role: &str) -> Value {
    json!({"type": "create_action_permission", "args": {"action": action, "role": role}})
}

/// A blog server with the custom types, the handler server, and fast asynchronous workers.
async fn blog_with_handler() -> (TestServer, Handler, String) {
    let (handler, base) = Handler::start().await;
    let s = blog_server(|c| c.actions.poll_interval_ms = 50).await;
    s.ok(custom_types()).await;
    (s, handler, base)
}

/// The data of a response that must have no errors.
pub(crate) fn data(r: Value) -> Value {
    assert!(r.get("errors").is_none(), "{r}");
    r["data"].clone()
}

/// The one error of a response that must fail.
fn error(r: Value) -> Value {
    assert!(r.get("data").is_none(), "no partial data: {r}");
    let errors = r["errors"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert_eq!(errors.len(), 1, "{r}");
    errors[0].clone()
}
