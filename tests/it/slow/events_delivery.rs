//! At least once, shown with real processes and a real webhook: an engine killed with
//! SIGKILL in the middle of a burst loses nothing; a webhook that is down for a while gets
//! every event once it is back, with the attempts counted; two healthy engines on one
//! database never deliver an event twice.

use crate::auth::serve;
use crate::harness::{fresh_database, query_json, run_sql, spawn_serve, spawned_query, TestServer};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SECRET: &str = "events-secret";

/// A webhook counting deliveries per event id; answers 503 while `down`.
#[derive(Clone, Default)]
struct Counter {
    /// Event id → the `current_retry` of each request received for it.
    seen: Arc<Mutex<HashMap<String, Vec<i64>>>>,
    /// `X-Engine` header value (which process delivered) → requests.
    by_engine: Arc<Mutex<HashMap<String, usize>>>,
    down: Arc<AtomicBool>,
}

impl Counter {
    async fn start(&self) -> String {
        let router = Router::new()
            .route(
                "/hook",
                post(
                    |State(c): State<Counter>,
                     headers: axum::http::HeaderMap,
                     Json(body): Json<Value>| async move {
                        let engine = headers
                            .get("x-engine")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_owned();
                        *c.by_engine.lock().unwrap().entry(engine).or_default() += 1;
                        let id = body["id"].as_str().unwrap_or_default().to_owned();
                        let retry = body["delivery_info"]["current_retry"]
                            .as_i64()
                            .unwrap_or(-1);
                        c.seen.lock().unwrap().entry(id).or_default().push(retry);
                        if c.down.load(Ordering::SeqCst) {
                            StatusCode::SERVICE_UNAVAILABLE.into_response()
                        } else {
                            StatusCode::OK.into_response()
                        }
                    },
                ),
            )
            .with_state(self.clone());
        format!("{}/hook", serve(router).await)
    }

    fn distinct(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn snapshot(&self) -> HashMap<String, Vec<i64>> {
        self.seen.lock().unwrap().clone()
    }

    async fn wait_for_distinct(&self, n: usize, seconds: u64) {
        for _ in 0..seconds * 10 {
            if self.distinct() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{n} distinct events expected, {} arrived", self.distinct());
    }
}

/// Tracks `burst` and puts a trigger on its inserts.
fn trigger(url: &str, retry: Value) -> Value {
    json!({"type": "bulk", "args": [
        {"type": "track_table", "args": {"table": "burst"}},
        {"type": "create_event_trigger", "args": {
            "name": "burst_inserted",
            "table": {"schema": "public", "name": "burst"},
            "webhook": url,
            "insert": {"columns": "*"},
            "retry_conf": retry,
        }},
    ]})
}

async fn burst_database() -> String {
    let db = fresh_database().await;
    run_sql(&db, "CREATE TABLE burst (id integer PRIMARY KEY)").await;
    db
}

/// Waits until no event is left undelivered.
async fn all_delivered(db: &str, seconds: u64) -> Vec<String> {
    for _ in 0..seconds * 5 {
        let left = query_json(
            db,
            "SELECT count(*) AS n FROM basalt_catalog.event_log WHERE NOT delivered",
        )
        .await;
        if left[0]["n"] == 0 {
            let ids = query_json(db, "SELECT id FROM basalt_catalog.event_log").await;
            return ids
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["id"].as_str().unwrap().to_owned())
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!(
        "undelivered events remain: {}",
        query_json(db, "SELECT count(*) AS n, bool_or(error) AS error FROM basalt_catalog.event_log WHERE NOT delivered").await
    );
}

/// SIGKILL in the middle of 10,000 deliveries, then a new process: every event arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_killed_mid_burst_loses_no_event() {
    let db = burst_database().await;
    let hook = Counter::default();
    let url = hook.start().await;
    let lease = [
        ("BASALT_EVENTS_LEASE_SECONDS", "2"),
        ("BASALT_EVENTS_FETCH_INTERVAL", "100"),
    ];
    let mut first = spawn_serve(&db, SECRET, &lease).await;
    spawned_query(
        &first,
        SECRET,
        trigger(&url, json!({"num_retries": 3, "interval_sec": 1})),
    )
    .await;
    run_sql(&db, "INSERT INTO burst SELECT generate_series(1, 10000)").await;
    hook.wait_for_distinct(1500, 120).await;
    first.child.start_kill().unwrap();
    first.child.wait().await.unwrap();
    let at_kill = hook.distinct();
    assert!(at_kill < 10_000, "the burst finished before the kill");
    let _second = spawn_serve(&db, SECRET, &lease).await;
    hook.wait_for_distinct(10_000, 240).await;
    let ids = all_delivered(&db, 60).await;
    assert_eq!(ids.len(), 10_000);
    let seen = hook.snapshot();
    for id in &ids {
        assert!(seen.contains_key(id), "event {id} was never delivered");
    }
    assert_eq!(seen.len(), 10_000, "deliveries of events that do not exist");
}

/// The webhook answers 503 for a while: each event is retried until it is back, and the
/// attempts recorded match the requests it received.
#[tokio::test]
async fn a_webhook_down_for_a_while_gets_every_event_with_counted_attempts() {
    let db = burst_database().await;
    let s = TestServer::on(&db, |c| c.events.fetch_interval_ms = 100).await;
    let hook = Counter::default();
    hook.down.store(true, Ordering::SeqCst);
    let url = hook.start().await;
    s.ok(trigger(&url, json!({"num_retries": 20, "interval_sec": 1})))
        .await;
    run_sql(&db, "INSERT INTO burst SELECT generate_series(1, 200)").await;
    hook.wait_for_distinct(200, 60).await;
    // Longer than two retry intervals.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    hook.down.store(false, Ordering::SeqCst);
    let ids = all_delivered(&db, 60).await;
    assert_eq!(ids.len(), 200);
    let seen = hook.snapshot();
    let tries = query_json(
        &db,
        "SELECT e.id, e.tries, count(l.id) AS logs, count(l.id) FILTER (WHERE l.status = 503) AS failed
         FROM basalt_catalog.event_log e LEFT JOIN basalt_catalog.event_invocation_logs l ON l.event_id = e.id
         GROUP BY e.id, e.tries",
    )
    .await;
    for row in tries.as_array().unwrap() {
        let id = row["id"].as_str().unwrap();
        let requests = &seen[id];
        let attempts = row["tries"].as_i64().unwrap();
        assert!(
            attempts >= 3,
            "{row}: fewer attempts than the outage allows"
        );
        assert_eq!(requests.len() as i64, attempts, "{row}");
        assert_eq!(row["logs"].as_i64().unwrap(), attempts, "{row}");
        assert_eq!(row["failed"].as_i64().unwrap(), attempts - 1, "{row}");
        let expected: Vec<i64> = (0..attempts).collect();
        assert_eq!(requests, &expected, "{row}: current_retry of each attempt");
    }
}

/// Two healthy engines share the work and never deliver one event twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_engines_never_deliver_an_event_twice() {
    let db = burst_database().await;
    let hook = Counter::default();
    let url = hook.start().await;
    // Small claims, so both processes get work; each names itself in a header whose value
    // comes from its own environment.
    let settings = |engine| {
        [
            ("BASALT_EVENTS_FETCH_INTERVAL", "100"),
            ("BASALT_EVENTS_FETCH_BATCH_SIZE", "20"),
            ("BASALT_EVENTS_HTTP_POOL_SIZE", "20"),
            ("BURST_ENGINE", engine),
        ]
    };
    let a = spawn_serve(&db, SECRET, &settings("a")).await;
    let _b = spawn_serve(&db, SECRET, &settings("b")).await;
    let mut create = trigger(&url, json!({}));
    create["args"][1]["args"]["headers"] =
        json!([{"name": "X-Engine", "value_from_env": "BURST_ENGINE"}]);
    spawned_query(&a, SECRET, create).await;
    for chunk in 0..6 {
        let from = chunk * 500 + 1;
        run_sql(
            &db,
            &format!(
                "INSERT INTO burst SELECT generate_series({from}, {})",
                from + 499
            ),
        )
        .await;
    }
    hook.wait_for_distinct(3000, 120).await;
    all_delivered(&db, 60).await;
    let seen = hook.snapshot();
    let twice: Vec<(&String, &Vec<i64>)> = seen.iter().filter(|(_, r)| r.len() > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    // One attempt per event, recorded once.
    let logs = query_json(
        &db,
        "SELECT count(*) AS n FROM basalt_catalog.event_invocation_logs",
    )
    .await;
    assert_eq!(logs[0]["n"], 3000);
    // Both processes delivered: the absence of duplicates is not one engine doing it all.
    let by_engine = hook.by_engine.lock().unwrap().clone();
    assert_eq!(by_engine.values().sum::<usize>(), 3000, "{by_engine:?}");
    assert!(
        by_engine.get("a").is_some_and(|n| *n > 0) && by_engine.get("b").is_some_and(|n| *n > 0),
        "both engines deliver: {by_engine:?}"
    );
}

/// The webhook URL and a header value from the environment: delivered with them, and the
/// invocation log names the variable instead of keeping the secret.
#[tokio::test]
async fn webhook_and_header_values_come_from_the_environment() {
    let db = burst_database().await;
    let hook = crate::events::Webhook::default();
    let url = hook.start().await;
    let engine = spawn_serve(
        &db,
        SECRET,
        &[
            ("BURST_HOOK_URL", url.as_str()),
            ("BURST_HOOK_TOKEN", "t0ken-s3cret"),
        ],
    )
    .await;
    spawned_query(
        &engine,
        SECRET,
        json!({"type": "bulk", "args": [
            {"type": "track_table", "args": {"table": "burst"}},
            {"type": "create_event_trigger", "args": {
                "name": "burst_inserted", "table": "burst", "webhook_from_env": "BURST_HOOK_URL",
                "insert": {"columns": "*"},
                "headers": [{"name": "X-Token", "value_from_env": "BURST_HOOK_TOKEN"}]}},
        ]}),
    )
    .await;
    run_sql(&db, "INSERT INTO burst VALUES (1)").await;
    hook.wait_for(1).await;
    let headers = hook.received.lock().unwrap()[0].0.clone();
    assert_eq!(headers["x-token"], "t0ken-s3cret");
    all_delivered(&db, 30).await;
    let logged = query_json(
        &db,
        "SELECT request->'headers' AS headers, request::text LIKE '%t0ken%' AS leaked
         FROM basalt_catalog.event_invocation_logs",
    )
    .await;
    assert_eq!(
        logged,
        json!([{"headers": [{"name": "X-Token", "value_from_env": "BURST_HOOK_TOKEN"}], "leaked": false}])
    );
}

/// A shutdown waits for deliveries in flight up to its grace period, then gives the events
/// back: pending at once, no attempt counted, no lease to wait for.
#[tokio::test]
async fn shutdown_gives_unfinished_events_back() {
    let db = burst_database().await;
    let s = TestServer::on(&db, |c| {
        c.events.fetch_interval_ms = 100;
        c.events.shutdown_grace_seconds = 1;
    })
    .await;
    let arrived = Arc::new(AtomicBool::new(false));
    let router = Router::new()
        .route(
            "/slow",
            post(|State(arrived): State<Arc<AtomicBool>>| async move {
                arrived.store(true, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(30)).await;
                StatusCode::OK
            }),
        )
        .with_state(arrived.clone());
    let url = format!("{}/slow", serve(router).await);
    s.ok(trigger(&url, json!({"timeout_sec": 60}))).await;
    run_sql(&db, "INSERT INTO burst VALUES (1)").await;
    for _ in 0..100 {
        if arrived.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(arrived.load(Ordering::SeqCst), "the delivery never started");
    let held = query_json(
        &db,
        "SELECT locked IS NOT NULL AS held FROM basalt_catalog.event_log",
    )
    .await;
    assert_eq!(held, json!([{"held": true}]));
    let started = std::time::Instant::now();
    let TestServer { running, .. } = s;
    running.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let after = query_json(
        &db,
        "SELECT locked IS NULL AS released, delivered, tries FROM basalt_catalog.event_log",
    )
    .await;
    assert_eq!(
        after,
        json!([{"released": true, "delivered": false, "tries": 0}])
    );
}

/// One-off scheduled events claimed by an engine killed with SIGKILL while their calls are in
/// flight: another engine delivers every one once their lease runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_events_of_a_killed_engine_are_delivered_after_the_lease() {
    let db = fresh_database().await;
    // A webhook that takes a second to answer, so calls are in flight when the engine dies.
    let seen: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let router = Router::new()
        .route(
            "/slow",
            post(
                |State(seen): State<Arc<Mutex<HashMap<String, usize>>>>,
                 Json(body): Json<Value>| async move {
                    let id = body["id"].as_str().unwrap_or_default().to_owned();
                    *seen.lock().unwrap().entry(id).or_default() += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    StatusCode::OK.into_response()
                },
            ),
        )
        .with_state(seen.clone());
    let url = format!("{}/slow", serve(router).await);
    let settings = [
        ("BASALT_EVENTS_LEASE_SECONDS", "2"),
        ("BASALT_SCHEDULED_EVENTS_FETCH_INTERVAL", "100"),
    ];
    let mut first = spawn_serve(&db, SECRET, &settings).await;
    let now = "2020-01-01T00:00:00Z";
    let events: Vec<Value> = (0..20)
        .map(|_| {
            json!({"type": "create_scheduled_event", "args": {"webhook": url, "schedule_at": now,
            "retry_conf": {"tolerance_seconds": 1000000000}}})
        })
        .collect();
    spawned_query(&first, SECRET, json!({"type": "bulk", "args": events})).await;
    for _ in 0..100 {
        if !seen.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    first.child.start_kill().unwrap();
    first.child.wait().await.unwrap();
    let locked = query_json(
        &db,
        "SELECT count(*) AS n FROM basalt_catalog.scheduled_events WHERE status = 'locked'",
    )
    .await;
    assert!(
        locked[0]["n"].as_i64().unwrap() > 0,
        "nothing was in flight: {locked}"
    );
    let _second = spawn_serve(&db, SECRET, &settings).await;
    let mut rows = Value::Null;
    for _ in 0..150 {
        rows = query_json(
            &db,
            "SELECT status, count(*) AS n FROM basalt_catalog.scheduled_events GROUP BY status",
        )
        .await;
        if rows == json!([{"status": "delivered", "n": 20}]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(rows, json!([{"status": "delivered", "n": 20}]));
    let ids = query_json(&db, "SELECT id FROM basalt_catalog.scheduled_events").await;
    let seen = seen.lock().unwrap().clone();
    for row in ids.as_array().unwrap() {
        let id = row["id"].as_str().unwrap();
        assert!(seen.contains_key(id), "event {id} was never called");
    }
    assert_eq!(seen.len(), 20);
}
