//! Event triggers through the HTTP API (`docs/events.md`): the operations and their errors,
//! capture in Postgres (from GraphQL and from outside), delivery to a real local webhook
//! ([`Webhook`], shared with other areas), retries, manual events, redelivery, clean-up, and the
//! lifecycle of triggers and their events. At-least-once delivery across engines killed or
//! webhooks down is in the slow tier (`slow/events_delivery.rs`).

mod cleanup;
mod delivery;
mod triggers;

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
