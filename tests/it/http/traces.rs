//! OpenTelemetry traces: the real binary exporting to a local OTLP/HTTP receiver, a client's
//! `traceparent` taken as the parent, and the trace passed on to the auth webhook.

use crate::auth::{hook_server, serve, Hook};
use crate::harness::{
    fresh_database, run_sql, spawn_serve, spawned_query, Spawned, BLOG, BLOG_METADATA,
};
use crate::remote_schemas::remote_server::{newsletter_schema, RemoteServer};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SECRET: &str = "trace-secret";
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// Every export request received: content type and body.
type Received = Arc<Mutex<Vec<(String, Bytes)>>>;

async fn receiver() -> (String, Received) {
    let received = Received::default();
    let router = Router::new()
        .route(
            "/v1/traces",
            post(
                |State(r): State<Received>, headers: HeaderMap, body: Bytes| async move {
                    let kind = headers["content-type"].to_str().unwrap_or("").to_owned();
                    let json = kind.contains("json");
                    r.lock().unwrap().push((kind, body));
                    if json {
                        "{}"
                    } else {
                        ""
                    }
                },
            ),
        )
        .with_state(received.clone());
    (serve(router).await, received)
}

/// `basalt serve` on the blog, its auth webhook, exporting to `otlp` in `protocol`.
struct Served {
    base: String,
    hook: Hook,
    process: Spawned,
}

async fn start(otlp: &str, protocol: &str) -> Served {
    let db = fresh_database().await;
    run_sql(&db, BLOG).await;
    let hook = Hook::default();
    let hook_base = hook_server(hook.clone()).await;
    let auth_hook = format!("{hook_base}/get");
    let process = spawn_serve(
        &db,
        SECRET,
        &[
            ("BASALT_AUTH_HOOK", auth_hook.as_str()),
            ("BASALT_OTLP_ENDPOINT", otlp),
            ("BASALT_OTLP_PROTOCOL", protocol),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    )
    .await;
    let metadata: Value = serde_json::from_str(BLOG_METADATA).unwrap();
    spawned_query(
        &process,
        SECRET,
        json!({"type": "replace_metadata", "args": metadata}),
    )
    .await;
    Served {
        base: process.base.clone(),
        hook,
        process,
    }
}

/// A GraphQL request under the client's trace (`TRACE`, `CLIENT_SPAN`), with one credential
/// header.
async fn traced(base: &str, credential: (&str, &str), query: &str) -> Value {
    reqwest::Client::new()
        .post(format!("{base}/v1/graphql"))
        .header(credential.0, credential.1)
        .header("traceparent", format!("00-{TRACE}-{CLIENT_SPAN}-01"))
        .json(&json!({"query": query}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// An admin's GraphQL request under the client's trace.
async fn traced_as_admin(base: &str, query: &str) -> Value {
    traced(base, ("X-Svc-Admin-Secret", SECRET), query).await
}

/// A query as an application would send it: a token for the webhook and a W3C parent.
async fn traced_query(base: &str) -> Value {
    traced(
        base,
        ("Authorization", "Bearer good"),
        "{ author(where: {id: {_eq: 1}}) { name } }",
    )
    .await
}

/// The `traceparent` the webhook received: `(trace id, parent span id)`.
fn hook_parent(hook: &Hook) -> (String, String) {
    let last = hook.last.lock().unwrap().clone().unwrap();
    let parts: Vec<String> = last["traceparent"]
        .as_str()
        .unwrap()
        .split('-')
        .map(str::to_owned)
        .collect();
    (parts[1].clone(), parts[2].clone())
}

/// Waits until the spans received satisfy `done`.
async fn wait_for(received: &Received, done: impl Fn(&[(String, Bytes)]) -> bool) {
    for _ in 0..100 {
        if done(&received.lock().unwrap()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the spans did not arrive: {:?}", received.lock().unwrap());
}

fn spans(received: &[(String, Bytes)]) -> Vec<Value> {
    let mut out = Vec::new();
    for (_, body) in received {
        let export: Value = serde_json::from_slice(body).unwrap();
        for resource in export["resourceSpans"].as_array().unwrap() {
            for scope in resource["scopeSpans"].as_array().unwrap() {
                out.extend(scope["spans"].as_array().unwrap().iter().cloned());
            }
        }
    }
    out
}

#[tokio::test]
async fn spans_follow_the_clients_trace_and_reach_the_webhook() {
    let (otlp, received) = receiver().await;
    let s = start(&otlp, "http/json").await;
    let answer = traced_query(&s.base).await;
    assert_eq!(answer, json!({"data": {"author": [{"name": "Ann"}]}}));
    let wanted = [
        "POST /v1/graphql",
        "auth.webhook",
        "graphql.parse",
        "graphql.plan",
        "sql",
    ];
    wait_for(&received, |r| {
        let names: Vec<String> = spans(r)
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect();
        wanted.iter().all(|w| names.iter().any(|n| n == w))
    })
    .await;
    let all = spans(&received.lock().unwrap());
    let of_trace: Vec<&Value> = all.iter().filter(|s| s["traceId"] == TRACE).collect();
    let named = |name: &str| {
        *of_trace
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no {name} span in the client's trace: {all:#?}"))
    };
    // The request continues the client's trace, as a server span.
    let request = named("POST /v1/graphql");
    assert_eq!(request["parentSpanId"], CLIENT_SPAN);
    assert_eq!(request["kind"], 2, "SPAN_KIND_SERVER");
    // The stages are its children.
    for stage in ["graphql.parse", "graphql.plan", "sql", "auth.webhook"] {
        assert_eq!(named(stage)["parentSpanId"], request["spanId"], "{stage}");
    }
    // The webhook was called with the trace, its parent being the webhook call's span.
    let (trace, parent) = hook_parent(&s.hook);
    assert_eq!(trace, TRACE);
    assert_eq!(parent, named("auth.webhook")["spanId"].as_str().unwrap());
    let resource = &received.lock().unwrap()[0].1;
    let export: Value = serde_json::from_slice(resource).unwrap();
    let attributes = &export["resourceSpans"][0]["resource"]["attributes"];
    assert!(
        attributes
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["key"] == "service.name" && a["value"]["stringValue"] == "basalt"),
        "{attributes}"
    );
}

/// A row change made under a traced request carries the trace to the event's webhook.
#[tokio::test]
async fn row_changes_carry_the_trace_to_event_webhooks() {
    let (otlp, _received) = receiver().await;
    let s = start(&otlp, "http/json").await;
    let events = crate::events::Webhook::default();
    let url = events.start().await;
    spawned_query(
        &s.process,
        SECRET,
        json!({"type": "create_event_trigger", "args": {"name": "author_added",
            "table": "author", "webhook": url, "insert": {"columns": "*"}}}),
    )
    .await;
    let r = traced_as_admin(
        &s.base,
        "mutation { insert_author_one(object: {id: 50, name: \"Tia\"}) { id } }",
    )
    .await;
    assert_eq!(r["data"]["insert_author_one"]["id"], 50, "{r}");
    let body = &events.wait_for(1).await[0];
    assert_eq!(body["event"]["trace_context"]["trace_id"], TRACE, "{body}");
    let headers = events.received.lock().unwrap()[0].0.clone();
    let parent = headers["traceparent"].to_str().unwrap().to_owned();
    assert!(parent.starts_with(&format!("00-{TRACE}-")), "{parent}");
}

/// A remote schema and an action handler called for a traced request get its trace.
#[tokio::test]
async fn remote_schemas_and_action_handlers_continue_the_trace() {
    let (otlp, _received) = receiver().await;
    let s = start(&otlp, "http/json").await;
    let remote = RemoteServer::start(newsletter_schema()).await;
    type Calls = Arc<Mutex<Vec<HeaderMap>>>;
    let calls = Calls::default();
    let handler = serve(
        Router::new()
            .route(
                "/greet",
                post(|State(c): State<Calls>, headers: HeaderMap| async move {
                    c.lock().unwrap().push(headers);
                    axum::Json(json!({"text": "hi"}))
                }),
            )
            .with_state(calls.clone()),
    )
    .await;
    spawned_query(
        &s.process,
        SECRET,
        json!({"type": "bulk", "args": [
            {"type": "add_remote_schema", "args": {"name": "newsletter", "definition": {"url": remote.url}}},
            {"type": "set_custom_types", "args": {"objects": [
                {"name": "Greeting", "fields": [{"name": "text", "type": "String"}]}]}},
            {"type": "create_action", "args": {"name": "greet", "definition": {
                "type": "query", "handler": format!("{handler}/greet"), "output_type": "Greeting"}}},
        ]}),
    )
    .await;
    let r = traced_as_admin(&s.base, "{ subscriberCount greet { text } }").await;
    assert_eq!(
        r,
        json!({"data": {"subscriberCount": 2, "greet": {"text": "hi"}}})
    );
    let to_remote = remote.headers().last().cloned().unwrap();
    let to_handler = calls.lock().unwrap()[0].clone();
    for (peer, headers) in [("remote schema", to_remote), ("action handler", to_handler)] {
        let parent = headers
            .get("traceparent")
            .unwrap_or_else(|| panic!("no traceparent to the {peer}"))
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            parent.starts_with(&format!("00-{TRACE}-")) && !parent.contains(CLIENT_SPAN),
            "{peer}: {parent} (the request's trace, under Basalt's own span)"
        );
    }
}

/// The default wire format: protobuf, as collectors expect.
#[tokio::test]
async fn protobuf_is_the_default_wire_format() {
    let (otlp, received) = receiver().await;
    let s = start(&otlp, "http/protobuf").await;
    traced_query(&s.base).await;
    let trace_bytes: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&TRACE[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let contains = |body: &[u8], needle: &[u8]| body.windows(needle.len()).any(|w| w == needle);
    wait_for(&received, |r| {
        r.iter()
            .any(|(_, body)| contains(body, b"graphql.plan") && contains(body, &trace_bytes))
    })
    .await;
    assert!(received
        .lock()
        .unwrap()
        .iter()
        .all(|(kind, _)| kind == "application/x-protobuf"));
    let (trace, _) = hook_parent(&s.hook);
    assert_eq!(trace, TRACE);
}

/// The request log line: one JSON line per request, carrying its span (method, path, the
/// request id set before the span was made, role and operation) and its status, written by
/// the batching log writer and all of it flushed when the process stops on SIGTERM.
#[tokio::test]
async fn every_request_is_one_json_log_line_with_its_request_span() {
    let db = crate::harness::fresh_database().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
        .arg("serve")
        .env("BASALT_HOST", "127.0.0.1")
        .env("BASALT_PORT", port.to_string())
        .env("BASALT_DATABASE_URL", &db)
        .env("BASALT_ADMIN_SECRET", "log-secret")
        .env("BASALT_LOG_FORMAT", "json")
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    crate::harness::wait_ready(&base).await;
    let http = reqwest::Client::new();
    let given = http
        .post(format!("{base}/v1/graphql"))
        .header("X-Svc-Admin-Secret", "log-secret")
        .header("x-request-id", "log-test-1")
        .json(&json!({"query": "{ __typename }"}))
        .send()
        .await
        .unwrap();
    assert_eq!(given.headers()["x-request-id"], "log-test-1");
    let made = http
        .post(format!("{base}/v1/query"))
        .header("X-Svc-Admin-Secret", "log-secret")
        .json(&json!({"type": "export_metadata", "args": {}}))
        .send()
        .await
        .unwrap();
    let made_id = made.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(!made_id.is_empty());

    let pid = child.id().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let mut out = String::new();
    use tokio::io::AsyncReadExt;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    child.wait().await.unwrap();
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let finished = |id: &str| -> Vec<&Value> {
        lines
            .iter()
            .filter(|l| {
                l["span"]["request_id"] == id && l["message"] == "finished processing request"
            })
            .collect()
    };
    let graphql = finished("log-test-1");
    assert_eq!(graphql.len(), 1, "{out}");
    let line = graphql[0];
    assert_eq!(line["span"]["method"], "POST");
    assert_eq!(line["span"]["path"], "/v1/graphql");
    assert_eq!(line["span"]["role"], "admin");
    assert_eq!(line["span"]["operation"], "query");
    assert_eq!(line["status"], 200);
    let latency = line["latency"].as_str().unwrap_or_default();
    let millis = latency.strip_suffix(" ms").unwrap_or_default();
    assert!(
        millis
            .split_once('.')
            .is_some_and(|(_, micros)| micros.len() == 3)
            && millis.parse::<f64>().is_ok(),
        "latency in ms to the µs: {line}"
    );
    assert!(
        line.get("spans").is_none(),
        "the span is not repeated: {line}"
    );
    let metadata = finished(&made_id);
    assert_eq!(metadata.len(), 1, "{out}");
    assert_eq!(metadata[0]["span"]["operation"], "export_metadata");
}
