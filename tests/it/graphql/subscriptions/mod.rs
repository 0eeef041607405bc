//! Subscriptions and the WebSocket transport: both protocols, their messages and close codes,
//! live results pushed on change, multiplexing, limits, session expiry and metadata changes.

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

async fn gql(s: &TestServer, query: &str) {
    let r = s.gql(query).await;
    assert!(r.get("errors").is_none(), "{r}");
}

#[tokio::test]
async fn transport_ws_pushes_changes_only() {
    let s = server(|_| {}).await;
    let (mut ws, chosen) = connect(&s, Some(TRANSPORT), &[]).await;
    assert_eq!(chosen.as_deref(), Some(TRANSPORT));
    assert_eq!(
        init(&mut ws, json!({})).await,
        json!({"type": "connection_ack"})
    );
    send(
        &mut ws,
        json!({"type": "subscribe", "id": "1", "payload": {
        "query": "subscription($id: Int!) { author_by_pk(id: $id) { name } __typename }",
        "variables": {"id": 1}}}),
    )
    .await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "next", "id": "1", "payload": {"data": {"author_by_pk": {"name": "Ann"}, "__typename": "subscription_root"}}})
    );
    // Unrelated changes and polls with the same answer send nothing.
    gql(&s, r#"mutation { update_author(where: {id: {_eq: 2}}, _set: {name: "Bea"}) { affected_rows } }"#).await;
    quiet(&mut ws, 400).await;
    gql(&s, r#"mutation { update_author(where: {id: {_eq: 1}}, _set: {name: "Anna"}) { affected_rows } }"#).await;
    assert_eq!(
        message(&mut ws).await["payload"]["data"]["author_by_pk"]["name"],
        "Anna"
    );
    // Pings are answered; a query answers once, then completes.
    send(&mut ws, json!({"type": "ping", "payload": {"n": 1}})).await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "pong", "payload": {"n": 1}})
    );
    send(&mut ws, json!({"type": "subscribe", "id": "q", "payload": {"query": "{ articleById(id: 1) { title } }"}})).await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "next", "id": "q", "payload": {"data": {"articleById": {"title": "Rust in practice"}}}})
    );
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "complete", "id": "q"})
    );
    // A mutation over the socket, then the subscription sees it.
    send(&mut ws, json!({"type": "subscribe", "id": "m", "payload": {"query": r#"mutation { update_author(where: {id: {_eq: 1}}, _set: {name: "Ann"}) { affected_rows } }"#}})).await;
    let mut got = vec![
        message(&mut ws).await,
        message(&mut ws).await,
        message(&mut ws).await,
    ];
    got.sort_by_key(|m| m.to_string());
    assert_eq!(
        got,
        [
            json!({"type": "complete", "id": "m"}),
            json!({"type": "next", "id": "1", "payload": {"data": {"author_by_pk": {"name": "Ann"}, "__typename": "subscription_root"}}}),
            json!({"type": "next", "id": "m", "payload": {"data": {"update_author": {"affected_rows": 1}}}}),
        ]
    );
    // Stopped: nothing more.
    send(&mut ws, json!({"type": "complete", "id": "1"})).await;
    gql(&s, r#"mutation { update_author(where: {id: {_eq: 1}}, _set: {name: "Zed"}) { affected_rows } }"#).await;
    quiet(&mut ws, 400).await;
    // Validation errors end the operation with `error`; the socket stays open.
    send(&mut ws, json!({"type": "subscribe", "id": "bad", "payload": {"query": "subscription { nope { id } }"}})).await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "error", "id": "bad", "payload": [{"message": "field \"nope\" not found in type: 'subscription_root'",
            "extensions": {"path": "$.selectionSet.nope", "code": "validation-failed"}}]})
    );
    // The id of a finished operation can be used again.
    send(&mut ws, json!({"type": "subscribe", "id": "q", "payload": {"query": "{ articleById(id: 1) { id } }"}})).await;
    assert_eq!(message(&mut ws).await["type"], "next");
}

#[tokio::test]
async fn transport_ws_close_codes() {
    let s = server(|c| c.admin_secret = Some(SECRET.into())).await;
    let ok = json!({"headers": {"X-Svc-Admin-Secret": SECRET}});
    let sub = |id: &str| json!({"type": "subscribe", "id": id, "payload": {"query": "subscription { author { id } }"}});
    let cases: Vec<(Vec<Value>, u16, &str)> = vec![
        (vec![sub("1")], 4401, "Unauthorized"),
        (
            vec![
                json!({"type": "connection_init", "payload": {"headers": {"X-Svc-Admin-Secret": "wrong"}}}),
            ],
            4403,
            "4403: Forbidden",
        ),
        (
            vec![json!({"type": "connection_init"})],
            4403,
            "4403: Forbidden",
        ),
        (
            vec![
                json!({"type": "connection_init", "payload": ok}),
                json!({"type": "connection_init", "payload": ok}),
            ],
            4429,
            "Too many initialisation requests",
        ),
        (
            vec![
                json!({"type": "connection_init", "payload": ok}),
                sub("1"),
                sub("1"),
            ],
            4409,
            "4409: Subscriber for 1 already exists",
        ),
        (
            vec![json!({"type": "nonsense"})],
            4400,
            "4400: Parsing client message failed: unknown message type \"nonsense\"",
        ),
    ];
    for (messages, code, reason) in cases {
        let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
        for m in &messages {
            send(&mut ws, m.clone()).await;
        }
        let close = loop {
            match next(&mut ws, 5).await {
                Some(Got::Closed(c, r)) => break (c, r),
                Some(Got::Message(_)) => continue,
                None => panic!("no close for {messages:?}"),
            }
        };
        assert_eq!(close, (code, reason.to_owned()), "{messages:?}");
    }
    // Not JSON.
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    ws.send(Message::text("{oops")).await.unwrap();
    let (code, reason) = closed(&mut ws).await;
    assert_eq!(code, 4400);
    assert!(
        reason.starts_with("4400: Parsing client message failed: "),
        "{reason}"
    );
    // No connection_init in time.
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    assert_eq!(
        closed(&mut ws).await,
        (4408, "Connection initialisation timeout".to_owned())
    );
    // The upgrade's own headers authenticate too.
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[("X-Svc-Admin-Secret", SECRET)]).await;
    assert_eq!(
        init(&mut ws, json!({})).await,
        json!({"type": "connection_ack"})
    );
}

#[tokio::test]
async fn apollo_protocol_messages() {
    let s = server(|c| c.admin_secret = Some(SECRET.into())).await;
    // No subprotocol asked: Apollo's.
    let (mut ws, chosen) = connect(&s, None, &[]).await;
    assert_eq!(chosen, None);
    send(
        &mut ws,
        json!({"type": "start", "id": "1", "payload": {"query": "subscription { author { id } }"}}),
    )
    .await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "error", "id": "1", "payload": {"errors": [{"message": "start received before the connection is initialised",
            "extensions": {"path": "$", "code": "start-failed"}}]}})
    );
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "complete", "id": "1"})
    );
    // A failed init is reported and remembered; the socket stays open.
    let r = init(&mut ws, json!({"headers": {"X-Svc-Admin-Secret": "wrong"}})).await;
    assert_eq!(r["type"], "connection_error");
    send(
        &mut ws,
        json!({"type": "start", "id": "2", "payload": {"query": "subscription { author { id } }"}}),
    )
    .await;
    let r = message(&mut ws).await;
    assert!(
        r["payload"]["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("cannot start as connection_init failed with : "),
        "{r}"
    );
    assert_eq!(message(&mut ws).await["type"], "complete");

    let (mut ws, chosen) = connect(&s, Some(APOLLO), &[]).await;
    assert_eq!(chosen.as_deref(), Some(APOLLO));
    send(
        &mut ws,
        json!({"type": "connection_init", "payload": {"headers": {"X-Svc-Admin-Secret": SECRET}}}),
    )
    .await;
    // connection_ack, then a keep-alive right away.
    let first = ws.next().await.unwrap().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(first.to_text().unwrap()).unwrap(),
        json!({"type": "connection_ack"})
    );
    let second = ws.next().await.unwrap().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(second.to_text().unwrap()).unwrap(),
        json!({"type": "ka"})
    );
    send(&mut ws, json!({"type": "start", "id": "1", "payload": {"query": "subscription { author(order_by: {id: asc}, limit: 1) { name } }"}})).await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "data", "id": "1", "payload": {"data": {"author": [{"name": "Ann"}]}}})
    );
    send(
        &mut ws,
        json!({"type": "start", "id": "1", "payload": {"query": "subscription { author { id } }"}}),
    )
    .await;
    assert_eq!(
        message(&mut ws).await["payload"]["errors"][0]["message"],
        "an operation already exists with this id: 1"
    );
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "complete", "id": "1"})
    );
    // Queries answer once; execution errors arrive as data with errors.
    send(&mut ws, json!({"type": "start", "id": "q", "payload": {"query": r#"mutation { insert_author_one(object: {id: 1, name: "Dup"}) { id } }"#}})).await;
    let r = message(&mut ws).await;
    assert_eq!(r["type"], "data", "{r}");
    assert_eq!(
        r["payload"]["errors"][0]["extensions"]["code"],
        "constraint-violation"
    );
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "complete", "id": "q"})
    );
    // stop ends the subscription silently.
    send(&mut ws, json!({"type": "stop", "id": "1"})).await;
    gql(&s, r#"mutation { update_author(where: {id: {_eq: 1}}, _set: {name: "Zed"}) { affected_rows } }"#).await;
    quiet(&mut ws, 400).await;
    // Unparseable frames are reported, not fatal.
    ws.send(Message::text("[]")).await.unwrap();
    assert_eq!(message(&mut ws).await["type"], "connection_error");
    send(&mut ws, json!({"type": "connection_terminate"})).await;
    assert_eq!(closed(&mut ws).await.0, 1000);
}

/// Twenty subscribers with different variables and one shape share one group: one statement
/// per poll, each answered with its own row.
#[tokio::test]
async fn subscribers_are_multiplexed() {
    let s = server(|c| c.live.refetch_interval_ms = 200).await;
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    init(&mut ws, json!({})).await;
    for i in 0..20 {
        send(&mut ws, json!({"type": "subscribe", "id": i.to_string(), "payload": {
            "query": "subscription($id: Int!) { author_by_pk(id: $id) { id } }", "variables": {"id": i % 4}}}))
        .await;
    }
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..20 {
        let m = message(&mut ws).await;
        seen.insert(
            m["id"].as_str().unwrap().parse::<i64>().unwrap(),
            m["payload"]["data"]["author_by_pk"].clone(),
        );
    }
    for (i, data) in &seen {
        let expected = if i % 4 == 0 {
            Value::Null
        } else {
            json!({"id": i % 4})
        };
        assert_eq!(data, &expected, "subscriber {i}");
    }
    assert_eq!(s.running.live.group_count(), 1);
    let counters = &s.running.state.counters;
    let before = counters.snapshot();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let after = counters.snapshot();
    let (statements, polls) = (
        after.live_statements - before.live_statements,
        after.live_polls - before.live_polls,
    );
    // About five polls of 200 ms, exactly one statement each (twenty without multiplexing).
    assert!((2..=8).contains(&polls), "{polls} polls in one second");
    assert_eq!(statements, polls, "one statement per poll");
    // Small batches split the same group into several statements per poll.
    let s = server(|c| {
        c.live.refetch_interval_ms = 200;
        c.live.batch_size = 2;
    })
    .await;
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    init(&mut ws, json!({})).await;
    for i in 0..6 {
        send(&mut ws, json!({"type": "subscribe", "id": i.to_string(), "payload": {
            "query": "subscription($id: Int!) { author_by_pk(id: $id) { id } }", "variables": {"id": i}}}))
        .await;
    }
    for _ in 0..6 {
        message(&mut ws).await;
    }
    let before = s.running.state.counters.snapshot();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let after = s.running.state.counters.snapshot();
    let (statements, polls) = (
        after.live_statements - before.live_statements,
        after.live_polls - before.live_polls,
    );
    assert!(polls >= 2, "{polls} polls in one second");
    assert_eq!(
        statements,
        3 * polls,
        "three per poll: six cohorts, batches of two"
    );
    assert_eq!(s.running.live.group_count(), 1);
}

/// A statement that can read the session setting (here a computed field taking the session)
/// is shared only by subscribers of the same session; one that cannot is shared by all.
#[tokio::test]
async fn sessions_are_never_mixed() {
    let s = server(|c| c.admin_secret = Some(SECRET.into())).await;
    let mut sockets = Vec::new();
    for user in ["1", "2", "3"] {
        let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
        init(&mut ws, json!({"headers": {"X-Svc-Admin-Secret": SECRET, "X-Svc-Role": "user", "X-Svc-User-Id": user}})).await;
        send(&mut ws, json!({"type": "subscribe", "id": "me", "payload": {"query": "subscription { author(order_by: {id: asc}) { id is_me } }"}})).await;
        let m = message(&mut ws).await;
        let mine: Vec<i64> = m["payload"]["data"]["author"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["is_me"] == true)
            .map(|a| a["id"].as_i64().unwrap())
            .collect();
        assert_eq!(mine, [user.parse::<i64>().unwrap()], "{m}");
        sockets.push(ws);
    }
    assert_eq!(s.running.live.group_count(), 3, "one group per session");
    for ws in &mut sockets {
        send(ws, json!({"type": "subscribe", "id": "plain", "payload": {"query": "subscription { author(order_by: {id: asc}) { id name } }"}})).await;
        assert_eq!(message(ws).await["id"], "plain");
    }
    assert_eq!(s.running.live.group_count(), 4, "the plain query is shared");
}

#[tokio::test]
async fn limits_on_connections_and_operations() {
    let s = server(|c| {
        c.live.max_connections = 1;
        c.live.max_operations = 2;
    })
    .await;
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    init(&mut ws, json!({})).await;
    // A second socket is refused with 503 while the first is open.
    let url = format!("{}/v1/graphql", s.base.replace("http://", "ws://"));
    let refused = tokio_tungstenite::connect_async(url.as_str()).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 503)
        }
        other => panic!("expected 503, got {other:?}"),
    }
    for id in ["a", "b"] {
        send(&mut ws, json!({"type": "subscribe", "id": id, "payload": {"query": "subscription { author { id } }"}})).await;
        assert_eq!(message(&mut ws).await["type"], "next");
    }
    send(&mut ws, json!({"type": "subscribe", "id": "c", "payload": {"query": "subscription { author { id } }"}})).await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "error", "id": "c", "payload": [{"message": "too many operations on this connection (at most 2)",
            "extensions": {"path": "$", "code": "start-failed"}}]})
    );
    // Still open: stopping one makes room.
    send(&mut ws, json!({"type": "complete", "id": "a"})).await;
    send(&mut ws, json!({"type": "subscribe", "id": "c", "payload": {"query": "subscription { author { id } }"}})).await;
    assert_eq!(message(&mut ws).await["id"], "c");
    drop(ws);
    // The slot comes back when the socket closes.
    let mut reopened = false;
    for _ in 0..50 {
        if tokio_tungstenite::connect_async(url.as_str()).await.is_ok() {
            reopened = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(reopened);
}

#[tokio::test]
async fn socket_closes_when_the_jwt_expires() {
    let s = server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.jwt_secret = Some(json!({"type": "HS256", "key": HS_KEY}).to_string());
    })
    .await;
    let token = hs_token(&claims(json!({"exp": now() + 2})));
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    let ack = init(
        &mut ws,
        json!({"headers": {"Authorization": format!("Bearer {token}")}}),
    )
    .await;
    assert_eq!(ack, json!({"type": "connection_ack"}));
    send(&mut ws, json!({"type": "subscribe", "id": "1", "payload": {"query": "subscription { articles(limit: 1, order_by: {id: asc}) { id } }"}})).await;
    assert_eq!(message(&mut ws).await["type"], "next");
    let started = std::time::Instant::now();
    assert_eq!(closed(&mut ws).await, (4403, "session expired".to_owned()));
    assert!(started.elapsed() < Duration::from_secs(4));
    // An expired token never gets in.
    let token = hs_token(&claims(json!({"exp": now() - 100})));
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    send(&mut ws, json!({"type": "connection_init", "payload": {"headers": {"Authorization": format!("Bearer {token}")}}})).await;
    assert_eq!(closed(&mut ws).await, (4403, "4403: Forbidden".to_owned()));
}

#[tokio::test]
async fn socket_closes_when_the_webhook_session_expires() {
    let base = hook_server(Hook::default()).await;
    let s = server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.auth_hook = Some(format!("{base}/get"));
    })
    .await;
    // The hook's answer is good for two seconds (Cache-Control: max-age=2).
    let (mut ws, _) = connect(&s, Some(APOLLO), &[("Authorization", "Bearer brief")]).await;
    assert_eq!(
        init(&mut ws, json!({})).await,
        json!({"type": "connection_ack"})
    );
    send(&mut ws, json!({"type": "start", "id": "1", "payload": {"query": "subscription { articles(limit: 1, order_by: {id: asc}) { id } }"}})).await;
    assert_eq!(message(&mut ws).await["type"], "data");
    let started = std::time::Instant::now();
    assert_eq!(closed(&mut ws).await, (4403, "session expired".to_owned()));
    assert!(started.elapsed() < Duration::from_secs(4));
    // An answer without a lifetime keeps the socket open.
    let (mut ws, _) = connect(&s, Some(APOLLO), &[("Authorization", "Bearer fresh")]).await;
    assert_eq!(
        init(&mut ws, json!({})).await,
        json!({"type": "connection_ack"})
    );
    quiet(&mut ws, 2500).await;
}

/// A metadata change recompiles every subscription: one that still compiles goes on, one
/// whose fields vanished ends with an error.
#[tokio::test]
async fn metadata_changes_regroup_subscriptions() {
    let s = server(|_| {}).await;
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    init(&mut ws, json!({})).await;
    send(&mut ws, json!({"type": "subscribe", "id": "c", "payload": {"query": "subscription { comment(order_by: {id: asc}, limit: 1) { body } }"}})).await;
    send(&mut ws, json!({"type": "subscribe", "id": "a", "payload": {"query": "subscription { author_by_pk(id: 1) { name } }"}})).await;
    let mut ids = vec![
        message(&mut ws).await["id"].clone(),
        message(&mut ws).await["id"].clone(),
    ];
    ids.sort_by_key(|v| v.to_string());
    assert_eq!(ids, [json!("a"), json!("c")]);
    s.ok(json!({"type": "untrack_table", "args": {"table": "comment", "cascade": true}}))
        .await;
    let m = message(&mut ws).await;
    assert_eq!(m["type"], "error", "{m}");
    assert_eq!(m["id"], "c");
    assert_eq!(m["payload"][0]["extensions"]["code"], "validation-failed");
    // The other one goes on, without resending an unchanged result.
    quiet(&mut ws, 400).await;
    gql(&s, r#"mutation { update_author(where: {id: {_eq: 1}}, _set: {name: "New"}) { affected_rows } }"#).await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "next", "id": "a", "payload": {"data": {"author_by_pk": {"name": "New"}}}})
    );
}

#[tokio::test]
async fn subscriptions_in_schema_and_over_http() {
    let s = server(|c| c.admin_secret = Some(SECRET.into())).await;
    let r = s
        .graphql_as(
            json!({"query": "{ __schema { subscriptionType { name fields { name } } } }"}),
            &[("X-Svc-Admin-Secret", SECRET)],
        )
        .await;
    let fields: Vec<&str> = r["data"]["__schema"]["subscriptionType"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        r["data"]["__schema"]["subscriptionType"]["name"],
        "subscription_root"
    );
    assert!(
        fields.contains(&"author")
            && fields.contains(&"author_aggregate")
            && fields.contains(&"articleById"),
        "{fields:?}"
    );
    // A role that can select nothing has no subscription root.
    let r = s
        .graphql_as(
            json!({"query": "subscription { author { id } }"}),
            &[("X-Svc-Admin-Secret", SECRET), ("X-Svc-Role", "stranger")],
        )
        .await;
    assert_eq!(r["errors"][0]["message"], "no subscriptions exist");
    // Over HTTP a subscription is refused.
    let r = s
        .graphql_as(
            json!({"query": "subscription { author { id } }"}),
            &[("X-Svc-Admin-Secret", SECRET)],
        )
        .await;
    assert_eq!(
        r,
        json!({"errors": [{"message": "subscriptions are not supported over HTTP, use websockets instead",
            "extensions": {"path": "$", "code": "validation-failed"}}]})
    );
}

#[tokio::test]
async fn allow_list_and_limits_apply_to_socket_operations() {
    let s = server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.enable_allowlist = true;
        c.max_query_depth = 2;
    })
    .await;
    s.ok(json!({"type": "create_query_collection", "args": {"name": "allowed", "definition": {"queries": [
        {"name": "authors", "query": "subscription { author { id } }"}]}}})).await;
    s.ok(json!({"type": "add_collection_to_allowlist", "args": {"collection": "allowed"}}))
        .await;
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    init(&mut ws, json!({"headers": {"X-Svc-Admin-Secret": SECRET, "X-Svc-Role": "user", "X-Svc-User-Id": "1"}})).await;
    send(&mut ws, json!({"type": "subscribe", "id": "ok", "payload": {"query": "subscription { author { id } }"}})).await;
    assert_eq!(message(&mut ws).await["type"], "next");
    send(&mut ws, json!({"type": "subscribe", "id": "no", "payload": {"query": "subscription { author { name } }"}})).await;
    let m = message(&mut ws).await;
    assert_eq!(m["payload"][0]["message"], "query is not allowed", "{m}");
    // The admin is not bound by the allow-list, but by the depth limit.
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    init(&mut ws, json!({"headers": {"X-Svc-Admin-Secret": SECRET}})).await;
    send(&mut ws, json!({"type": "subscribe", "id": "deep", "payload": {"query": "subscription { author { articles { comments { id } } } }"}})).await;
    let m = message(&mut ws).await;
    assert_eq!(m["type"], "error", "{m}");
    assert_eq!(m["payload"][0]["extensions"]["code"], "validation-failed");
}

#[tokio::test]
async fn shutdown_closes_sockets_with_1001() {
    let s = server(|_| {}).await;
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    init(&mut ws, json!({})).await;
    let (mut apollo, _) = connect(&s, Some(APOLLO), &[]).await;
    init(&mut apollo, json!({})).await;
    let TestServer { running, .. } = s;
    let stop = tokio::spawn(running.shutdown());
    assert_eq!(closed(&mut ws).await.0, 1001);
    assert_eq!(closed(&mut apollo).await.0, 1001);
    stop.await.unwrap();
}

/// `graphql-transport-ws`: the server pings an idle socket on the keep-alive interval (one
/// second here), and the socket stays open.
#[tokio::test]
async fn transport_ws_sends_keep_alive_pings() {
    let s = server(|_| {}).await;
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    assert_eq!(
        init(&mut ws, json!({})).await,
        json!({"type": "connection_ack"})
    );
    let mut pings = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(3500);
    while let Ok(Some(Ok(frame))) = tokio::time::timeout_at(deadline, ws.next()).await {
        if let Message::Text(text) = frame {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                v,
                json!({"type": "ping", "payload": {"message": "keepalive"}})
            );
            pings += 1;
        }
    }
    assert!(
        (2..=4).contains(&pings),
        "{pings} pings in 3.5 s at a 1 s interval"
    );
    // Still open: a ping of the client's is answered.
    send(&mut ws, json!({"type": "ping"})).await;
    assert_eq!(message(&mut ws).await, json!({"type": "pong"}));
}

/// The npm WebSocket clients, installed once per machine into the target directory.
fn ws_clients() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        crate::harness::npm_workspace(
            "ws-clients",
            &[
                "graphql@16.9.0",
                "graphql-ws@5.16.0",
                "subscriptions-transport-ws@0.11.0",
                "ws@8.18.0",
            ],
            "ws-clients.mjs",
        )
    })
    .clone()
}

/// `graphql-ws` and `subscriptions-transport-ws`, as applications use them.
#[tokio::test]
async fn real_npm_clients_subscribe_and_query() {
    let s = server(|c| c.admin_secret = Some(SECRET.into())).await;
    let dir = ws_clients();
    let summary =
        crate::harness::node_json(&dir, "ws-clients.mjs", &[s.base.as_ref(), SECRET.as_ref()])
            .await;
    let query = json!([{"data": {"articleById": {"title": "Rust in practice"}}}]);
    assert_eq!(
        summary["graphqlWs"],
        json!({"subscription": [{"data": {"author_by_pk": {"name": "Ann"}}},
            {"data": {"author_by_pk": {"name": "Ann (graphql-ws)"}}}], "query": query})
    );
    assert_eq!(
        summary["apollo"],
        json!({"subscription": [{"data": {"author_by_pk": {"name": "Ann (graphql-ws)"}}},
            {"data": {"author_by_pk": {"name": "Ann (apollo)"}}}], "query": query})
    );
}

/// A client that does not keep up with its results is closed (1008) instead of growing the
/// server's memory: the outgoing queue is bounded.
#[tokio::test]
async fn a_client_too_slow_is_closed() {
    let s = server(|c| c.live.max_queued_messages = 1).await;
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    init(&mut ws, json!({})).await;
    for i in 0..60 {
        send(&mut ws, json!({"type": "subscribe", "id": i.to_string(), "payload": {"query": "subscription { author { id name } }"}})).await;
    }
    let close = loop {
        match next(&mut ws, 10).await {
            Some(Got::Message(_)) => continue,
            Some(Got::Closed(code, reason)) => break (code, reason),
            None => panic!("the socket stayed open"),
        }
    };
    assert_eq!(close, (1008, "client too slow".to_owned()));
}

/// A subscriber whose values Postgres refuses (a date that is not one) gets the error in its
/// result and goes on; the other subscribers of its group are not affected.
#[tokio::test]
async fn one_bad_cohort_does_not_break_its_group() {
    let s = server(|_| {}).await;
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    init(&mut ws, json!({})).await;
    let query = "subscription($d: date!) { author(where: {joined: {_eq: $d}}) { name } }";
    send(&mut ws, json!({"type": "subscribe", "id": "bad", "payload": {"query": query, "variables": {"d": "not a date"}}})).await;
    send(&mut ws, json!({"type": "subscribe", "id": "good", "payload": {"query": query, "variables": {"d": "2019-05-01"}}})).await;
    let mut got = std::collections::BTreeMap::new();
    while got.len() < 2 {
        let m = message(&mut ws).await;
        got.insert(m["id"].as_str().unwrap().to_owned(), m);
    }
    assert_eq!(
        got["good"],
        json!({"type": "next", "id": "good", "payload": {"data": {"author": [{"name": "Ann"}]}}})
    );
    assert_eq!(got["bad"]["type"], "next", "{}", got["bad"]);
    assert_eq!(
        got["bad"]["payload"]["errors"][0]["extensions"]["code"],
        "data-exception"
    );
    assert_eq!(s.running.live.group_count(), 1);
    // Both go on: the good one sees changes.
    gql(&s, r#"mutation { update_author(where: {id: {_eq: 1}}, _set: {name: "Ann B"}) { affected_rows } }"#).await;
    let m = message(&mut ws).await;
    assert_eq!(
        m,
        json!({"type": "next", "id": "good", "payload": {"data": {"author": [{"name": "Ann B"}]}}})
    );
}
