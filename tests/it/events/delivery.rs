//! Delivery to a real local webhook: row changes captured (from GraphQL and from outside) and
//! delivered, failed attempts retried then ended in error and redelivered on request,
//! unreachable webhooks logged, manual events with the caller's session, a NOTIFY waking the
//! workers before their poll, and requests in flight bounded by the pool size.

use super::*;

#[tokio::test]
async fn row_changes_are_captured_and_delivered() {
    let s = server().await;
    let hook = Webhook::default();
    let url = hook.start().await;
    s.ok(trigger(
        &url,
        json!({"headers": [{"name": "X-Key", "value": "k1"}]}),
    ))
    .await;
    // Through GraphQL, as a role with session variables.
    let r = s
        .graphql_as(
            json!({"query": "mutation { insert_author_one(object: {id: 10, name: \"Eve\"}) { id } }"}),
            &[
                ("X-Svc-Role", "backend"),
                ("X-Svc-User-Id", "7"),
                ("X-Svc-Use-Backend-Only-Permissions", "true"),
            ],
        )
        .await;
    assert_eq!(r["data"]["insert_author_one"]["id"], 10, "{r}");
    let first = hook.wait_for(1).await;
    let body = &first[0];
    assert_eq!(body["trigger"], json!({"name": "author_changed"}));
    assert_eq!(body["table"], json!({"schema": "public", "name": "author"}));
    assert_eq!(body["event"]["op"], "INSERT");
    assert_eq!(body["event"]["data"]["old"], Value::Null);
    assert_eq!(body["event"]["data"]["new"]["name"], "Eve");
    assert_eq!(body["event"]["data"]["new"]["joined"], "2020-01-01");
    assert_eq!(body["event"]["session_variables"]["x-svc-role"], "backend");
    assert_eq!(body["event"]["session_variables"]["x-svc-user-id"], "7");
    assert_eq!(
        body["delivery_info"],
        json!({"current_retry": 0, "max_retries": 0})
    );
    assert!(body["created_at"].as_str().unwrap().ends_with('Z'));
    let headers = hook.received.lock().unwrap()[0].0.clone();
    assert_eq!(headers["x-key"], "k1");
    assert_eq!(headers["content-type"], "application/json");
    assert!(headers["user-agent"]
        .to_str()
        .unwrap()
        .starts_with("basalt/"));

    // From outside Basalt: captured too, without a session. An update of a column the trigger
    // does not listen to fires nothing; one of `name` does, with the payload columns only.
    run_sql(&s.db_url, "UPDATE author SET bio = 'quiet' WHERE id = 10").await;
    run_sql(&s.db_url, "UPDATE author SET name = 'Evelyn' WHERE id = 10").await;
    run_sql(&s.db_url, "DELETE FROM author WHERE id = 10").await;
    let all = hook.wait_for(3).await;
    assert_eq!(all.len(), 3, "{all:#?}");
    let update = &all[1]["event"];
    assert_eq!(update["op"], "UPDATE");
    assert_eq!(
        update["data"],
        json!({"old": {"id": 10, "name": "Eve"}, "new": {"id": 10, "name": "Evelyn"}})
    );
    assert_eq!(update["session_variables"], Value::Null);
    assert_eq!(all[2]["event"]["op"], "DELETE");
    assert_eq!(
        all[2]["event"]["data"],
        json!({"old": {"id": 10}, "new": null})
    );
    let log = settle(&s, |e| e["delivered"] == true).await;
    assert_eq!(log.as_array().unwrap().len(), 3);
    assert!(log
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["tries"] == 1 && e["locked"] == false));
    let invocations = query_json(
        &s.db_url,
        "SELECT status, request->'headers' AS headers, response->>'type' AS kind
         FROM basalt_catalog.event_invocation_logs",
    )
    .await;
    let metrics = crate::http::scrape(&s, s.admin_secret.as_deref()).await;
    assert_eq!(
        metrics["basalt_events_delivered_total{}"], 3.0,
        "{metrics:?}"
    );
    assert_eq!(metrics["basalt_events_pending{}"], 0.0);
    assert_eq!(metrics["basalt_events_in_flight{}"], 0.0);
    assert_eq!(metrics["basalt_events_errors_total{}"], 0.0);
    assert_eq!(invocations.as_array().unwrap().len(), 3);
    assert_eq!(
        invocations[0],
        json!({"status": 200, "headers": [{"name": "X-Key", "value": "k1"}], "kind": "webhook_response"})
    );
}

#[tokio::test]
async fn failed_attempts_are_retried_then_end_in_error_and_can_be_redelivered() {
    let s = server().await;
    let hook = Webhook::default();
    let url = hook.start().await;
    // Two failures, then success: three attempts, one second apart.
    *hook.script.lock().unwrap() = vec![(500, None), (502, None)];
    s.ok(trigger(
        &url,
        json!({"retry_conf": {"num_retries": 2, "interval_sec": 1, "timeout_sec": 5}}),
    ))
    .await;
    run_sql(
        &s.db_url,
        "INSERT INTO author (id, name) VALUES (20, 'Ria')",
    )
    .await;
    let all = hook.wait_for(3).await;
    let retries: Vec<&Value> = all.iter().map(|b| &b["delivery_info"]).collect();
    assert_eq!(
        retries,
        [
            &json!({"current_retry": 0, "max_retries": 2}),
            &json!({"current_retry": 1, "max_retries": 2}),
            &json!({"current_retry": 2, "max_retries": 2})
        ]
    );
    assert!(all.iter().all(|b| b["id"] == all[0]["id"]));
    let log = settle(&s, |e| e["delivered"] == true).await;
    assert_eq!(log[0]["tries"], 3);
    let statuses = query_json(
        &s.db_url,
        "SELECT status FROM basalt_catalog.event_invocation_logs ORDER BY created_at",
    )
    .await;
    assert_eq!(
        statuses,
        json!([{"status": 500}, {"status": 502}, {"status": 200}])
    );

    // Retry-After is honoured even with no retries left; then attempts run out.
    s.ok(trigger(
        &url,
        json!({"replace": true, "retry_conf": {"num_retries": 0}}),
    ))
    .await;
    *hook.script.lock().unwrap() = vec![(503, Some(1)), (500, None)];
    run_sql(
        &s.db_url,
        "INSERT INTO author (id, name) VALUES (21, 'Sol')",
    )
    .await;
    hook.wait_for(5).await;
    let log = settle(&s, |e| e["delivered"] == true || e["error"] == true).await;
    assert_eq!(
        (&log[1]["error"], &log[1]["tries"]),
        (&json!(true), &json!(2))
    );
    // redeliver_event: pending again, attempts reset; delivered now the webhook works.
    let id = hook.bodies()[4]["id"].as_str().unwrap().to_owned();
    s.ok(json!({"type": "redeliver_event", "args": {"event_id": id}}))
        .await;
    let bodies = hook.wait_for(6).await;
    assert_eq!(bodies[5]["id"], id);
    assert_eq!(bodies[5]["delivery_info"]["current_retry"], 0);
    let log = settle(&s, |e| e["delivered"] == true).await;
    assert_eq!(log[1]["tries"], 1);
    s.fails(
        json!({"type": "redeliver_event", "args": {"event_id": "no-such-event"}}),
        400,
        "not-exists",
        "$.args.event_id",
    )
    .await;
}

#[tokio::test]
async fn unreachable_webhooks_are_logged_as_client_errors() {
    let s = server().await;
    s.ok(trigger(
        "http://127.0.0.1:9/closed",
        json!({"retry_conf": {"num_retries": 0, "timeout_sec": 2}}),
    ))
    .await;
    run_sql(
        &s.db_url,
        "INSERT INTO author (id, name) VALUES (30, 'Kit')",
    )
    .await;
    settle(&s, |e| e["error"] == true).await;
    let metrics = crate::http::scrape(&s, s.admin_secret.as_deref()).await;
    assert_eq!(metrics["basalt_events_errors_total{}"], 1.0, "{metrics:?}");
    assert_eq!(metrics["basalt_events_failed_attempts_total{}"], 1.0);
    let logs = query_json(
        &s.db_url,
        "SELECT status, response->>'type' AS kind FROM basalt_catalog.event_invocation_logs",
    )
    .await;
    assert_eq!(logs, json!([{"status": 1000, "kind": "client_error"}]));
    // An event a worker holds cannot be redelivered.
    run_sql(
        &s.db_url,
        "UPDATE basalt_catalog.event_log SET locked = now()",
    )
    .await;
    let id = query_json(&s.db_url, "SELECT id FROM basalt_catalog.event_log").await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = s
        .fails(
            json!({"type": "redeliver_event", "args": {"event_id": id}}),
            400,
            "busy",
            "$.args.event_id",
        )
        .await;
    assert_eq!(r["error"], "event is already being processed");
    s.fails(
        trigger(
            "http://127.0.0.1:9/closed",
            json!({"replace": true, "retry_conf": {"interval_sec": 0}}),
        ),
        400,
        "parse-failed",
        "$.args.retry_conf.interval_sec",
    )
    .await;
}

#[tokio::test]
async fn manual_events_carry_the_payload_and_the_callers_session() {
    let s = server().await;
    let hook = Webhook::default();
    let url = hook.start().await;
    s.ok(trigger(&url, json!({}))).await;
    let r = s
        .fails(
            json!({"type": "invoke_event_trigger", "args": {"name": "author_changed", "payload": {}}}),
            400,
            "not-supported",
            "$.args.name",
        )
        .await;
    assert_eq!(r["error"], "manual mode is not enabled for event trigger");
    s.ok(trigger(
        &url,
        json!({"replace": true, "enable_manual": true}),
    ))
    .await;
    let payload = json!({"old": null, "new": {"id": 1, "name": "Ann"}});
    let r = s
        .ok(json!({"type": "invoke_event_trigger", "args": {"name": "author_changed", "payload": payload}}))
        .await;
    let id = r["event_id"].as_str().unwrap();
    let body = &hook.wait_for(1).await[0];
    assert_eq!(body["id"], id);
    assert_eq!(body["event"]["op"], "MANUAL");
    assert_eq!(body["event"]["data"], payload);
    assert_eq!(body["event"]["session_variables"]["x-svc-role"], "admin");
    s.fails(
        json!({"type": "invoke_event_trigger", "args": {"name": "nope", "payload": {}}}),
        400,
        "not-exists",
        "$.args.name",
    )
    .await;
}

/// A row change wakes the workers through `NOTIFY`: delivered at once, although the poll
/// would not look for a minute.
#[tokio::test]
async fn a_notify_wakes_the_workers_before_their_poll() {
    let s = blog_server(|c| c.events.fetch_interval_ms = 60_000).await;
    let hook = Webhook::default();
    let url = hook.start().await;
    s.ok(trigger(&url, json!({}))).await;
    // Let the workers finish the look they take at start, then sleep on their poll.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let changed = std::time::Instant::now();
    run_sql(&s.db_url, "INSERT INTO author (id, name) VALUES (41, 'Wu')").await;
    let body = &hook.wait_for(1).await[0];
    assert_eq!(body["event"]["data"]["new"]["name"], "Wu");
    assert!(
        changed.elapsed() < Duration::from_secs(10),
        "delivered after {:?}: the poll, not the NOTIFY",
        changed.elapsed()
    );
}

/// At most `BASALT_EVENTS_HTTP_POOL_SIZE` webhook requests in flight at once, and that many
/// when events wait.
#[tokio::test]
async fn webhook_requests_in_flight_are_bounded_by_the_pool_size() {
    #[derive(Clone, Default)]
    struct Slow {
        now: Arc<std::sync::atomic::AtomicUsize>,
        most: Arc<std::sync::atomic::AtomicUsize>,
        done: Arc<std::sync::atomic::AtomicUsize>,
    }
    use std::sync::atomic::Ordering::SeqCst;
    let slow = Slow::default();
    let router = Router::new()
        .route(
            "/hook",
            post(|State(w): State<Slow>| async move {
                let now = w.now.fetch_add(1, SeqCst) + 1;
                w.most.fetch_max(now, SeqCst);
                tokio::time::sleep(Duration::from_millis(300)).await;
                w.now.fetch_sub(1, SeqCst);
                w.done.fetch_add(1, SeqCst);
                StatusCode::OK
            }),
        )
        .with_state(slow.clone());
    let url = format!("{}/hook", serve(router).await);
    let s = blog_server(|c| {
        c.events.fetch_interval_ms = 100;
        c.events.http_pool_size = 3;
    })
    .await;
    s.ok(trigger(&url, json!({}))).await;
    run_sql(
        &s.db_url,
        "INSERT INTO author (id, name) SELECT g, 'n' || g FROM generate_series(100, 111) g",
    )
    .await;
    for _ in 0..200 {
        if slow.done.load(SeqCst) >= 12 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(slow.done.load(SeqCst), 12);
    assert_eq!(slow.most.load(SeqCst), 3, "most requests in flight at once");
}
