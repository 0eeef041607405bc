//! Live results: changes pushed (and only changes), subscribers of one query multiplexed
//! without mixing sessions, regrouped when the metadata changes, the subscription root in the
//! schema (and subscriptions refused over HTTP), a client too slow for its results closed, and
//! one subscriber's refused values never failing the others of its group.

use super::*;

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

/// Twenty subscribers with different variables and one shape share one group: one statement
/// per poll, each answered with its own row.
#[tokio::test]
async fn subscribers_are_multiplexed() {
    // Every cohort polled every interval, so that polls happen without writes.
    let off = |c: &mut ServeConfig| {
        c.live.refetch_interval_ms = 200;
        c.live.detection.change_detection = basalt::config::ChangeDetection::Off;
    };
    let s = server(off).await;
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
        off(c);
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

/// A tracked function's field is a live query too: run again at every poll, its answer pushed
/// when the rows it returns change, each subscriber's session passed to the function.
#[tokio::test]
async fn tracked_function_fields_are_live() {
    let s = server(|_| {}).await;
    s.ok(json!({"type": "track_function", "args": {"name": "search_articles"}}))
        .await;
    let mut ws = open_transport(&s).await;
    send(
        &mut ws,
        json!({"type": "subscribe", "id": "1", "payload": {
        "query": "subscription($t: String) { search_articles(args: {term: $t}, order_by: {id: asc}) { id } }",
        "variables": {"t": "rust"}}}),
    )
    .await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "next", "id": "1", "payload": {"data": {"search_articles": [{"id": 1}]}}})
    );
    gql(
        &s,
        r#"mutation { update_article(where: {id: {_eq: 2}}, _set: {title: "Rust poems"}) { affected_rows } }"#,
    )
    .await;
    assert_eq!(
        message(&mut ws).await["payload"]["data"],
        json!({"search_articles": [{"id": 1}, {"id": 2}]})
    );
}

/// A native query with a relationship is a live query too: its code and the related table
/// read again at every poll, the answer pushed when the related rows change.
#[tokio::test]
async fn native_query_fields_with_relationships_are_live() {
    let s = server(|_| {}).await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_logical_model", "args": {"name": "headline",
            "fields": [{"name": "id", "type": {"scalar": "integer"}},
                {"name": "author_id", "type": {"scalar": "integer"}}]}},
        {"type": "track_native_query", "args": {"root_field_name": "headlines", "returns": "headline",
            "arguments": {"min_views": {"type": "bigint"}},
            "code": "SELECT id, author_id FROM article WHERE views >= {{min_views}}",
            "object_relationships": [{"name": "by", "using": {"column_mapping": {"author_id": "id"},
                "remote_table": {"schema": "public", "name": "author"}}}]}}]}))
        .await;
    let mut ws = open_transport(&s).await;
    send(
        &mut ws,
        json!({"type": "subscribe", "id": "1", "payload": {
        "query": "subscription { headlines(args: {min_views: 200}) { id by { name } } }"}}),
    )
    .await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "next", "id": "1", "payload": {"data": {"headlines": [{"id": 3, "by": {"name": "Bo"}}]}}})
    );
    gql(
        &s,
        r#"mutation { update_author(where: {id: {_eq: 2}}, _set: {name: "Bob"}) { affected_rows } }"#,
    )
    .await;
    assert_eq!(
        message(&mut ws).await["payload"]["data"],
        json!({"headlines": [{"id": 3, "by": {"name": "Bob"}}]})
    );
}
