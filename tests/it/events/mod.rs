//! Event triggers through the HTTP API: the operations and their errors, capture in Postgres
//! (from GraphQL and from outside), delivery to a real local webhook, retries, manual events,
//! redelivery and the lifecycle of triggers and their events.

use crate::auth::{blog_server, serve};
use crate::harness::{query_json, run_sql, TestServer};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Statuses a [`Webhook`] answers, in order: `(status, Retry-After seconds)`.
type Script = Arc<Mutex<Vec<(u16, Option<u64>)>>>;

/// A webhook that records what it receives and answers as told.
#[derive(Clone, Default)]
pub(crate) struct Webhook {
    /// `(headers, body)` of each request, in arrival order.
    pub(crate) received: Arc<Mutex<Vec<(HeaderMap, Value)>>>,
    /// Statuses to answer, in order; 200 once exhausted. `(status, Retry-After)`.
    pub(crate) script: Script,
}

impl Webhook {
    pub(crate) async fn start(&self) -> String {
        let router = Router::new()
            .route(
                "/hook",
                post(
                    |State(w): State<Webhook>, headers: HeaderMap, Json(body): Json<Value>| async move {
                        w.received.lock().unwrap().push((headers, body));
                        let next = {
                            let mut script = w.script.lock().unwrap();
                            (!script.is_empty()).then(|| script.remove(0))
                        };
                        match next {
                            None => (StatusCode::OK, "{\"ok\":true}").into_response(),
                            Some((status, retry_after)) => {
                                let mut response =
                                    (StatusCode::from_u16(status).unwrap(), "nope").into_response();
                                if let Some(s) = retry_after {
                                    response
                                        .headers_mut()
                                        .insert("retry-after", s.to_string().parse().unwrap());
                                }
                                response
                            }
                        }
                    },
                ),
            )
            .with_state(self.clone());
        format!("{}/hook", serve(router).await)
    }

    pub(crate) fn bodies(&self) -> Vec<Value> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .map(|(_, b)| b.clone())
            .collect()
    }

    /// Waits until at least `n` requests arrived.
    pub(crate) async fn wait_for(&self, n: usize) -> Vec<Value> {
        for _ in 0..300 {
            if self.received.lock().unwrap().len() >= n {
                return self.bodies();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{n} deliveries expected, got {:#?}", self.bodies());
    }
}

async fn server() -> TestServer {
    blog_server(|c| c.events.fetch_interval_ms = 100).await
}

fn trigger(url: &str, extra: Value) -> Value {
    let mut args = json!({
        "name": "author_changed",
        "table": {"schema": "public", "name": "author"},
        "webhook": url,
        "insert": {"columns": "*"},
        "update": {"columns": ["name"], "payload": ["id", "name"]},
        "delete": {"columns": "*", "payload": ["id"]},
    });
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    json!({"type": "create_event_trigger", "args": args})
}

async fn events(s: &TestServer) -> Value {
    query_json(
        &s.db_url,
        "SELECT trigger_name, payload->>'op' AS op, delivered, error, tries, archived,
                locked IS NOT NULL AS locked
         FROM basalt_catalog.event_log ORDER BY created_at, id",
    )
    .await
}

/// Waits until every event of the log satisfies `done`.
async fn settle(s: &TestServer, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..300 {
        let all = events(s).await;
        if all.as_array().unwrap().iter().all(&done) {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("events did not settle: {:#}", events(s).await);
}

#[tokio::test]
async fn create_event_trigger_validates_as_the_spec_says() {
    let s = server().await;
    let url = "http://127.0.0.1:9/hook";
    s.fails(
        trigger(url, json!({"table": {"schema": "public", "name": "nope"}})),
        400,
        "not-exists",
        "$.args.table",
    )
    .await;
    let r = s
        .fails(
            trigger(url, json!({"update": {"columns": ["name", "ghost"]}})),
            400,
            "not-exists",
            "$.args.update.columns[1]",
        )
        .await;
    assert_eq!(r["error"], "column \"ghost\" does not exist");
    let r = s
        .fails(
            trigger(url, json!({"name": "bad name"})),
            400,
            "parse-failed",
            "$.args.name",
        )
        .await;
    assert_eq!(
        r["error"],
        "only alphanumeric and underscore and hyphens allowed for name"
    );
    s.fails(
        trigger(url, json!({"webhook_from_env": "X"})),
        400,
        "parse-failed",
        "$.args",
    )
    .await;
    let r = s
        .fails(
            json!({"type": "create_event_trigger", "args": {"name": "t", "table": "author", "webhook": url}}),
            400,
            "parse-failed",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "atleast one amongst insert/update/delete/enable_manual spec must be provided"
    );
    s.fails(
        trigger(url, json!({"insert": {"columns": "*", "payload": []}})),
        400,
        "parse-failed",
        "$.args.insert.payload",
    )
    .await;
    let r = s
        .fails(
            trigger(
                url,
                json!({"headers": [{"name": "X-Key", "value_from_env": "BASALT_TEST_SURELY_UNSET"}]}),
            ),
            400,
            "not-found",
            "$.args.headers[0]",
        )
        .await;
    assert_eq!(
        r["error"],
        "environment variable 'BASALT_TEST_SURELY_UNSET' not set"
    );
    s.ok(trigger(url, json!({}))).await;
    let r = s
        .fails(trigger(url, json!({})), 400, "already-exists", "$.args")
        .await;
    assert_eq!(
        r["error"],
        "Event trigger with name \"author_changed\" already exists"
    );
    let r = s
        .fails(
            trigger(
                url,
                json!({"replace": true, "table": {"schema": "public", "name": "article"}}),
            ),
            400,
            "not-supported",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "cannot replace table or schema for trigger");
    s.fails(
        json!({"type": "delete_event_trigger", "args": {"name": "nope"}}),
        400,
        "not-exists",
        "$.args.name",
    )
    .await;
    // The metadata holds it as created, defaults filled in.
    let exported = s.export().await;
    let author = exported["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"]["name"] == "author")
        .unwrap();
    assert_eq!(
        author["event_triggers"],
        json!([{"name": "author_changed",
                "definition": {"enable_manual": false, "insert": {"columns": "*"},
                               "update": {"columns": ["name"], "payload": ["id", "name"]},
                               "delete": {"columns": "*", "payload": ["id"]}},
                "retry_conf": {"num_retries": 0, "interval_sec": 10, "timeout_sec": 60},
                "webhook": url}])
    );
}

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

/// Whether the capture triggers of `name` exist in Postgres.
async fn captures(s: &TestServer) -> Value {
    query_json(
        &s.db_url,
        "SELECT tgname FROM pg_trigger WHERE tgname LIKE 'notify\\_basalt\\_%' ORDER BY tgname",
    )
    .await
}

#[tokio::test]
async fn triggers_follow_the_lifecycle_of_their_table_and_columns() {
    let s = server().await;
    let hook = Webhook::default();
    let url = hook.start().await;
    s.ok(trigger(&url, json!({}))).await;
    assert_eq!(
        captures(&s).await,
        json!([{"tgname": "notify_basalt_author_changed_DELETE"},
               {"tgname": "notify_basalt_author_changed_INSERT"},
               {"tgname": "notify_basalt_author_changed_UPDATE"}])
    );
    // A renamed column follows: the spec names the new column and the capture fires on it.
    s.ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE author RENAME COLUMN name TO display_name"}}))
        .await;
    let exported = s.export().await;
    let author = exported["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"]["name"] == "author")
        .unwrap()
        .clone();
    assert_eq!(
        author["event_triggers"][0]["definition"]["update"],
        json!({"columns": ["display_name"], "payload": ["id", "display_name"]})
    );
    run_sql(
        &s.db_url,
        "UPDATE author SET display_name = 'Anna' WHERE id = 1",
    )
    .await;
    let body = &hook.wait_for(1).await[0];
    assert_eq!(
        body["event"]["data"]["new"],
        json!({"id": 1, "display_name": "Anna"})
    );

    // A capture dropped behind Basalt's back is reported; reload_metadata installs it again.
    run_sql(
        &s.db_url,
        "DROP TRIGGER \"notify_basalt_author_changed_INSERT\" ON author",
    )
    .await;
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], true, "{r}");
    assert_eq!(captures(&s).await.as_array().unwrap().len(), 3);
    run_sql(
        &s.db_url,
        "DROP TRIGGER \"notify_basalt_author_changed_INSERT\" ON author",
    )
    .await;
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], false);
    assert_eq!(r["inconsistent_objects"][0]["type"], "event_trigger");
    assert!(r["inconsistent_objects"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("notify_basalt_author_changed_INSERT"));
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;

    // Dropping a listened column: refused without cascade, naming the trigger; with cascade
    // the trigger goes, and its captures with it.
    let r = s
        .fails(
            json!({"type": "run_sql", "args": {"sql": "ALTER TABLE author DROP COLUMN display_name CASCADE"}}),
            400,
            "dependency-error",
            "$.args",
        )
        .await;
    assert!(
        r["error"].as_str().unwrap().contains("event-trigger"),
        "{r}"
    );
    s.ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE author DROP COLUMN display_name CASCADE", "cascade": true}}))
        .await;
    assert_eq!(captures(&s).await, json!([]));
    run_sql(&s.db_url, "ALTER TABLE author ADD COLUMN name text").await;

    // Deleting the trigger drops its captures and archives what was not delivered.
    hook.script.lock().unwrap().extend([(500, None); 5]);
    s.ok(trigger(
        &url,
        json!({"update": {"columns": "*"}, "retry_conf": {"num_retries": 5, "interval_sec": 60}}),
    ))
    .await;
    run_sql(&s.db_url, "INSERT INTO author (id, name) VALUES (40, 'Lo')").await;
    settle(&s, |e| {
        e["tries"].as_i64().unwrap() >= 1 || e["delivered"] == true
    })
    .await;
    s.ok(json!({"type": "delete_event_trigger", "args": {"name": "author_changed"}}))
        .await;
    assert_eq!(captures(&s).await, json!([]));
    let log = events(&s).await;
    let last = log.as_array().unwrap().last().unwrap();
    assert_eq!(
        (&last["archived"], &last["delivered"]),
        (&json!(true), &json!(false))
    );
    // Untracking a table takes its triggers with it.
    s.ok(trigger(&url, json!({"update": {"columns": "*"}})))
        .await;
    s.ok(json!({"type": "untrack_table", "args": {"table": "author", "cascade": true}}))
        .await;
    assert_eq!(captures(&s).await, json!([]));
}

#[tokio::test]
async fn replace_metadata_installs_and_removes_captures() {
    let s = server().await;
    let hook = Webhook::default();
    let url = hook.start().await;
    s.ok(trigger(&url, json!({}))).await;
    let with = s.export().await;
    let mut without = with.clone();
    for table in without["tables"].as_array_mut().unwrap() {
        table.as_object_mut().unwrap().remove("event_triggers");
    }
    s.ok(json!({"type": "replace_metadata", "args": without}))
        .await;
    assert_eq!(captures(&s).await, json!([]));
    s.ok(json!({"type": "replace_metadata", "args": with}))
        .await;
    assert_eq!(captures(&s).await.as_array().unwrap().len(), 3);
    s.ok(json!({"type": "clear_metadata", "args": {}})).await;
    assert_eq!(captures(&s).await, json!([]));
}

/// Rows older than the default retention (168 hours) and newer ones, delivered or in error.
async fn old_and_new_rows(s: &TestServer) {
    run_sql(
        &s.db_url,
        "INSERT INTO basalt_catalog.event_log (id, schema_name, table_name, trigger_name, payload, delivered, error, created_at) VALUES
           ('old-delivered', 'public', 'author', 't', '{}', true, false, now() - interval '200 hours'),
           ('old-error', 'public', 'author', 't', '{}', false, true, now() - interval '200 hours'),
           ('new-delivered', 'public', 'author', 't', '{}', true, false, now());
         INSERT INTO basalt_catalog.event_invocation_logs (event_id, status, created_at) VALUES
           ('old-delivered', 200, now() - interval '200 hours'),
           ('new-delivered', 200, now() - interval '200 hours'),
           ('new-delivered', 200, now());",
    )
    .await;
}

async fn event_ids(s: &TestServer) -> Value {
    query_json(
        &s.db_url,
        "SELECT id FROM basalt_catalog.event_log ORDER BY id",
    )
    .await
}

#[tokio::test]
async fn old_rows_are_cleaned_up_after_the_retention_period() {
    let s = server().await;
    old_and_new_rows(&s).await;
    let mut client = s.running.state.pool.get().await.unwrap();
    let deleted = basalt::events::store::clean_up(&mut client, 168.0)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    assert_eq!(
        event_ids(&s).await,
        json!([{"id": "new-delivered"}, {"id": "old-error"}])
    );
    let logs = query_json(
        &s.db_url,
        "SELECT count(*) AS n FROM basalt_catalog.event_invocation_logs",
    )
    .await;
    assert_eq!(logs, json!([{"n": 1}]));
}

/// The engine cleans up on its own, on its interval, with the configured retention; a
/// retention of 0 keeps everything.
#[tokio::test]
async fn the_engine_cleans_up_on_its_interval_unless_retention_is_zero() {
    let s = blog_server(|c| c.events.cleanup_interval_seconds = 1).await;
    old_and_new_rows(&s).await;
    let mut left = Value::Null;
    for _ in 0..100 {
        left = event_ids(&s).await;
        if left.as_array().unwrap().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(left, json!([{"id": "new-delivered"}, {"id": "old-error"}]));

    let kept = blog_server(|c| {
        c.events.cleanup_interval_seconds = 1;
        c.events.retention_hours = 0;
    })
    .await;
    old_and_new_rows(&kept).await;
    // Three intervals.
    tokio::time::sleep(Duration::from_millis(3200)).await;
    assert_eq!(event_ids(&kept).await.as_array().unwrap().len(), 3);
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

/// A tracked table renamed through `run_sql` keeps its trigger (captures fire on the new
/// name); dropped, it takes its trigger with it; dropped unchecked, the trigger is reported
/// inconsistent with the table, and `drop_inconsistent_metadata` removes both.
#[tokio::test]
async fn triggers_follow_their_table_renamed_or_dropped() {
    let s = server().await;
    let hook = Webhook::default();
    let url = hook.start().await;
    s.ok(json!({"type": "run_sql", "args": {"sql": "CREATE TABLE note (id int PRIMARY KEY, body text)"}}))
        .await;
    let note_trigger = |table: &str| {
        json!({"type": "create_event_trigger", "args": {
            "name": "note_changed", "table": table, "webhook": url, "insert": {"columns": "*"}}})
    };
    s.ok(json!({"type": "track_table", "args": {"table": "note"}}))
        .await;
    s.ok(note_trigger("note")).await;
    s.ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE note RENAME TO memo"}}))
        .await;
    let exported = s.export().await;
    let memo = exported["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"]["name"] == "memo")
        .cloned()
        .unwrap_or_else(|| panic!("memo not tracked: {exported}"));
    assert_eq!(memo["event_triggers"][0]["name"], "note_changed");
    run_sql(&s.db_url, "INSERT INTO memo VALUES (1, 'hi')").await;
    let body = &hook.wait_for(1).await[0];
    assert_eq!(body["table"], json!({"schema": "public", "name": "memo"}));
    assert_eq!(body["trigger"]["name"], "note_changed");

    // Dropped (checked): the table and its trigger leave the metadata.
    s.ok(json!({"type": "run_sql", "args": {"sql": "DROP TABLE memo", "cascade": true}}))
        .await;
    let exported = s.export().await;
    assert!(!exported.to_string().contains("note_changed"), "{exported}");

    // Dropped unchecked: both reported, each on its own, then dropped together.
    s.ok(json!({"type": "run_sql", "args": {"sql": "CREATE TABLE note (id int PRIMARY KEY, body text)"}}))
        .await;
    s.ok(json!({"type": "track_table", "args": {"table": "note"}}))
        .await;
    s.ok(note_trigger("note")).await;
    s.ok(json!({"type": "run_sql", "args": {"sql": "DROP TABLE note", "check_metadata_consistency": false}}))
        .await;
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    let items = r["inconsistent_objects"].as_array().unwrap();
    let trigger = items
        .iter()
        .find(|i| i["type"] == "event_trigger")
        .unwrap_or_else(|| panic!("no event_trigger item: {r}"));
    assert_eq!(
        trigger["definition"]["configuration"]["name"],
        "note_changed"
    );
    assert_eq!(trigger["definition"]["table"]["name"], "note");
    assert!(
        trigger["reason"].as_str().unwrap().contains("note"),
        "{trigger}"
    );
    assert!(items.iter().any(|i| i["type"] == "table"), "{r}");
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], true, "{r}");
    assert!(!s.export().await.to_string().contains("note_changed"));
}
