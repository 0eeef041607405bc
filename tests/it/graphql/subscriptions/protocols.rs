//! The WebSocket transport: both protocols' messages and close codes, limits on connections and
//! operations, sockets closed when the JWT or the webhook session expires and on shutdown,
//! keep-alive pings, the allow-list on socket operations, and real npm clients (graphql-ws,
//! subscriptions-transport-ws) subscribing and querying.

use super::*;

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
    let stream = json!([{"data": {"author_stream": [{"id": 2}, {"id": 3}]}}]);
    assert_eq!(
        summary["graphqlWs"],
        json!({"subscription": [{"data": {"author_by_pk": {"name": "Ann"}}},
            {"data": {"author_by_pk": {"name": "Ann (graphql-ws)"}}}], "query": query, "stream": stream})
    );
    assert_eq!(
        summary["apollo"],
        json!({"subscription": [{"data": {"author_by_pk": {"name": "Ann (graphql-ws)"}}},
            {"data": {"author_by_pk": {"name": "Ann (apollo)"}}}], "query": query, "stream": stream})
    );
}
