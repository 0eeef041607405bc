//! Subscriptions and the WebSocket transport: both protocols, their messages and close codes,
//! live results pushed on change, multiplexing, limits, session expiry and metadata changes.
//! The WebSocket client helpers here are shared with the actions' subscription test.

mod change_detection;
mod live;
mod protocols;
mod stream;

use crate::auth::{blog_server, claims, hook_server, hs_token, now, Hook, HS_KEY, SECRET};
use crate::harness::TestServer;
use basalt::config::ServeConfig;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

pub(crate) type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub(crate) const TRANSPORT: &str = "graphql-transport-ws";
const APOLLO: &str = "graphql-ws";

/// Fast polls and short timers for tests.
fn fast(c: &mut ServeConfig) {
    c.live.refetch_interval_ms = 100;
    c.live.keepalive_seconds = 1;
    c.live.init_timeout_seconds = 1;
}

async fn server(configure: impl FnOnce(&mut ServeConfig)) -> TestServer {
    blog_server(|c| {
        fast(c);
        configure(c);
    })
    .await
}

/// Opens a socket on `/v1/graphql` asking for `protocol`; returns it and the protocol the
/// server chose.
pub(crate) async fn connect(
    s: &TestServer,
    protocol: Option<&str>,
    headers: &[(&str, &str)],
) -> (Ws, Option<String>) {
    let url = format!("{}/v1/graphql", s.base.replace("http://", "ws://"));
    let mut request = url.into_client_request().unwrap();
    if let Some(p) = protocol {
        request
            .headers_mut()
            .insert("Sec-WebSocket-Protocol", p.parse().unwrap());
    }
    for (k, v) in headers {
        let name =
            tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(k.as_bytes()).unwrap();
        request.headers_mut().insert(name, v.parse().unwrap());
    }
    let (ws, response) = tokio_tungstenite::connect_async(request).await.unwrap();
    let chosen = response
        .headers()
        .get("sec-websocket-protocol")
        .map(|v| v.to_str().unwrap().to_owned());
    (ws, chosen)
}

pub(crate) async fn send(ws: &mut Ws, message: Value) {
    ws.send(Message::text(message.to_string())).await.unwrap();
}

/// What the server sent next: a message, or how it closed.
#[derive(Debug, PartialEq)]
pub(crate) enum Got {
    Message(Value),
    Closed(u16, String),
}

/// The next frame within `secs` seconds, skipping keep-alives (`ka`, `ping`).
pub(crate) async fn next(ws: &mut Ws, secs: u64) -> Option<Got> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let frame = tokio::time::timeout_at(deadline, ws.next()).await.ok()?;
        match frame {
            Some(Ok(Message::Text(t))) => {
                let v: Value = serde_json::from_str(&t).unwrap();
                if v["type"] == "ka" || v["type"] == "ping" {
                    continue;
                }
                return Some(Got::Message(v));
            }
            Some(Ok(Message::Close(frame))) => {
                let (code, reason) = frame
                    .map(|f| (u16::from(f.code), f.reason.to_string()))
                    .unwrap_or((1005, String::new()));
                return Some(Got::Closed(code, reason));
            }
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return Some(Got::Closed(1006, String::new())),
        }
    }
}

pub(crate) async fn message(ws: &mut Ws) -> Value {
    match next(ws, 5).await {
        Some(Got::Message(v)) => v,
        other => panic!("expected a message, got {other:?}"),
    }
}

async fn closed(ws: &mut Ws) -> (u16, String) {
    match next(ws, 5).await {
        Some(Got::Closed(code, reason)) => (code, reason),
        other => panic!("expected a close, got {other:?}"),
    }
}

/// Nothing arrives within `millis` (keep-alives aside).
async fn quiet(ws: &mut Ws, millis: u64) {
    let got = tokio::time::timeout(Duration::from_millis(millis), next(ws, 60)).await;
    assert!(got.is_err(), "expected nothing, got {got:?}");
}

pub(crate) async fn init(ws: &mut Ws, payload: Value) -> Value {
    send(ws, json!({"type": "connection_init", "payload": payload})).await;
    message(ws).await
}

/// A `graphql-transport-ws` socket as admin, acknowledged.
pub(crate) async fn open_transport(s: &TestServer) -> Ws {
    let (mut ws, _) = connect(s, Some(TRANSPORT), &[]).await;
    init(&mut ws, json!({})).await;
    ws
}

async fn gql(s: &TestServer, query: &str) {
    let r = s.gql(query).await;
    assert!(r.get("errors").is_none(), "{r}");
}
