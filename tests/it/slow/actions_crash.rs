//! An asynchronous action's call in flight when its engine is killed (SIGKILL): a second
//! engine closes it as interrupted once its deadline passed, and the handler is never called
//! twice. Real `basalt serve` processes on one database.

use crate::actions::{create, custom_types, data, Handler};
use crate::harness::{fresh_database, query_json, run_sql, spawn_serve, spawned_query};
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test]
async fn a_call_in_flight_when_its_engine_dies_is_closed_as_interrupted_never_sent_twice() {
    let (handler, base) = Handler::start().await;
    let db = fresh_database().await;
    run_sql(&db, crate::harness::BLOG).await;
    let first = spawn_serve(
        &db,
        "secret",
        &[("BASALT_ASYNC_ACTIONS_FETCH_INTERVAL", "50")],
    )
    .await;
    spawned_query(&first, "secret", json!({"type": "replace_metadata", "args": serde_json::from_str::<Value>(crate::harness::BLOG_METADATA).unwrap()})).await;
    spawned_query(&first, "secret", custom_types()).await;
    spawned_query(
        &first,
        "secret",
        create(
            "hang",
            json!({"handler": format!("{base}/hang"), "output_type": "Card", "kind": "asynchronous", "timeout": 1}),
        ),
    )
    .await;
    let r: Value = reqwest::Client::new()
        .post(format!("{}/v1/graphql", first.base))
        .header("X-Svc-Admin-Secret", "secret")
        .json(&json!({"query": "mutation { hang }"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = data(r)["hang"].as_str().unwrap().to_owned();
    // Wait for the call to be made, then kill the engine while the handler still works on it.
    for _ in 0..100 {
        if !handler.calls("hang").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(handler.calls("hang").len(), 1);
    let mut first = first;
    first.child.kill().await.unwrap();
    let status = query_json(&db, "SELECT status FROM basalt_catalog.action_log").await;
    assert_eq!(status, json!([{"status": "processing"}]));
    let second = spawn_serve(
        &db,
        "secret",
        &[("BASALT_ASYNC_ACTIONS_FETCH_INTERVAL", "50")],
    )
    .await;
    // The action goes away with its calls kept: the interrupted call is still closed, by an
    // engine whose metadata has no asynchronous action left.
    spawned_query(
        &second,
        "secret",
        json!({"type": "drop_action", "args": {"name": "hang", "clear_data": false}}),
    )
    .await;
    // Never closed before its deadline (the handler's timeout plus a margin).
    let early = query_json(
        &db,
        &format!(
            "SELECT status, deadline > now() AS pending FROM basalt_catalog.action_log \
             WHERE id = '{id}'"
        ),
    )
    .await;
    if early[0]["pending"] == true {
        assert_eq!(
            early[0]["status"], "processing",
            "swept before its deadline"
        );
    }
    let mut errors = Value::Null;
    for _ in 0..200 {
        let rows = query_json(
            &db,
            &format!("SELECT status, errors FROM basalt_catalog.action_log WHERE id = '{id}'"),
        )
        .await;
        if rows[0]["status"] == "error" {
            errors = rows[0]["errors"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        errors,
        json!({"path": "$", "error": "the action was interrupted; it may or may not have run", "code": "unexpected"})
    );
    assert_eq!(handler.calls("hang").len(), 1, "never sent twice");
    drop(second);
}
