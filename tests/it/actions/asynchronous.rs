//! Asynchronous actions: the call logged and run by the workers, its result read by id (only
//! by the session that made it) and pushed to subscribers.

use super::*;

/// Polls the result of an asynchronous call until it has an output or errors.
async fn settled(s: &TestServer, query: &str, role: &str, user: &str) -> Value {
    for _ in 0..100 {
        let r = data(s.gql_role(query, role, &[("X-Svc-User-Id", user)]).await);
        let result = r.as_object().unwrap().values().next().unwrap().clone();
        if !result["output"].is_null() || !result["errors"].is_null() {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the asynchronous call did not settle");
}

#[tokio::test]
async fn asynchronous_actions_log_the_call_and_answer_by_id_to_the_same_session() {
    let (s, handler, base) = blog_with_handler().await;
    for (name, kind) in [("archiveLater", "later"), ("refuseLater", "refuse")] {
        s.ok(create(
            name,
            json!({"handler": format!("{base}/{kind}"), "output_type": "Card", "kind": "asynchronous",
                   "arguments": [{"name": "author_id", "type": "Int!"}]}),
        ))
        .await;
        s.ok(allow(name, "user")).await;
    }
    let mutation = "mutation { archiveLater(author_id: 2) }";
    let r = data(
        s.gql_role(mutation, "user", &[("X-Svc-User-Id", "2")])
            .await,
    );
    let id = r["archiveLater"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 36, "a uuid: {id}");
    let query = format!(
        "{{ archiveLater(id: \"{id}\") {{ __typename id errors output {{ ok note author {{ name }} }} }} }}"
    );
    let result = settled(&s, &query, "user", "2").await;
    assert_eq!(
        result,
        json!({"__typename": "archiveLater", "id": id, "errors": null,
               "output": {"ok": true, "note": "done", "author": {"name": "Bo"}}})
    );
    let (_, body) = handler.calls("later").remove(0);
    assert_eq!(
        body,
        json!({"action": {"name": "archiveLater"}, "input": {"author_id": 2},
               "session_variables": {"x-svc-role": "user", "x-svc-user-id": "2"},
               "request_query": mutation})
    );
    // Another session sees nothing; the admin sees every call.
    let other = data(s.gql_role(&query, "user", &[("X-Svc-User-Id", "3")]).await);
    assert_eq!(other, json!({"archiveLater": null}));
    let admin = data(s.gql(&query).await);
    assert_eq!(admin["archiveLater"]["output"]["note"], "done");
    let unknown = data(
        s.gql("{ archiveLater(id: \"00000000-0000-0000-0000-000000000000\") { id } }")
            .await,
    );
    assert_eq!(unknown, json!({"archiveLater": null}));
    // A failed call stores the error in the metadata error shape; it is not sent again.
    let r = data(
        s.gql_role(
            "mutation { refuseLater(author_id: 1) }",
            "user",
            &[("X-Svc-User-Id", "2")],
        )
        .await,
    );
    let failed = r["refuseLater"].as_str().unwrap().to_owned();
    let result = settled(
        &s,
        &format!("{{ refuseLater(id: \"{failed}\") {{ errors output {{ ok }} }} }}"),
        "user",
        "2",
    )
    .await;
    assert_eq!(
        result,
        json!({"errors": {"path": "$", "error": "cannot archive", "code": "nope"}, "output": null})
    );
    let rows = query_json(
        &s.db_url,
        "SELECT action_name, status FROM basalt_catalog.action_log ORDER BY created_at",
    )
    .await;
    assert_eq!(
        rows,
        json!([{"action_name": "archiveLater", "status": "completed"},
               {"action_name": "refuseLater", "status": "error"}])
    );
    assert_eq!(handler.calls("refuse").len(), 1);
    // drop_action clears the log unless told otherwise.
    s.ok(json!({"type": "drop_action", "args": {"name": "refuseLater", "clear_data": false}}))
        .await;
    s.ok(json!({"type": "drop_action", "args": {"name": "archiveLater"}}))
        .await;
    let rows = query_json(
        &s.db_url,
        "SELECT action_name FROM basalt_catalog.action_log",
    )
    .await;
    assert_eq!(rows, json!([{"action_name": "refuseLater"}]));
}

#[tokio::test]
async fn asynchronous_results_are_pushed_to_subscribers() {
    use crate::graphql::subscriptions::{connect, init, message, send, TRANSPORT};
    let (handler, base) = Handler::start().await;
    let s = blog_server(|c| {
        c.actions.poll_interval_ms = 50;
        c.live.refetch_interval_ms = 100;
    })
    .await;
    s.ok(custom_types()).await;
    s.ok(create(
        "archiveLater",
        json!({"handler": format!("{base}/later"), "output_type": "Card", "kind": "asynchronous",
               "arguments": [{"name": "author_id", "type": "Int!"}]}),
    ))
    .await;
    let r = data(s.gql("mutation { archiveLater(author_id: 1) }").await);
    let id = r["archiveLater"].as_str().unwrap().to_owned();
    let secret = s.admin_secret.clone().unwrap_or_default();
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    let ack = init(&mut ws, json!({"headers": {"X-Svc-Admin-Secret": secret}})).await;
    assert_eq!(ack["type"], "connection_ack");
    send(
        &mut ws,
        json!({"id": "1", "type": "subscribe", "payload": {"query":
            format!("subscription {{ archiveLater(id: \"{id}\") {{ output {{ note author {{ name }} }} }} }}")}}),
    )
    .await;
    let mut last = Value::Null;
    for _ in 0..20 {
        let m = message(&mut ws).await;
        assert_eq!(m["type"], "next", "{m}");
        last = m["payload"]["data"]["archiveLater"]["output"].clone();
        if !last.is_null() {
            break;
        }
    }
    assert_eq!(last, json!({"note": "done", "author": {"name": "Ann"}}));
    assert_eq!(handler.calls("later").len(), 1);
}
