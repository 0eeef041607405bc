//! Scheduled triggers through the HTTP API (`docs/scheduled-triggers.md`): cron triggers and
//! the events they generate, one-off events, delivery to a real local webhook under a clock
//! the test moves, tolerance, retries, and two engines sharing one catalog.

mod cron;
mod one_off;

use crate::harness::{fresh_database, query_json, TestServer};
use basalt::config::Clock;
use chrono::{DateTime, Duration as Span, Timelike, Utc};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A clock the test moves: the system's, shifted by an offset.
#[derive(Clone, Default)]
pub(crate) struct TestClock(Arc<AtomicI64>);

impl TestClock {
    pub(crate) fn clock(&self) -> Clock {
        let offset = self.0.clone();
        Clock::new(move || Utc::now() + Span::milliseconds(offset.load(Ordering::Relaxed)))
    }

    /// Moves the clock so that it reads `t` now.
    pub(crate) fn set(&self, t: DateTime<Utc>) {
        self.0
            .store((t - Utc::now()).num_milliseconds(), Ordering::Relaxed);
    }
}

/// The next whole minute after `t`.
pub(crate) fn next_minute(t: DateTime<Utc>) -> DateTime<Utc> {
    let floor = t.with_second(0).unwrap().with_nanosecond(0).unwrap();
    floor + Span::minutes(1)
}

/// An engine on a fresh database whose scheduled-event worker reads `clock` and looks every
/// 100 ms.
pub(crate) async fn server(clock: &TestClock) -> TestServer {
    on(&fresh_database().await, clock).await
}

pub(crate) async fn on(db: &str, clock: &TestClock) -> TestServer {
    let clock = clock.clock();
    TestServer::on(db, move |c| {
        c.scheduled.scheduled_poll_interval_ms = 100;
        c.scheduled.clock = clock;
    })
    .await
}

/// `create_cron_trigger` of `every_min` calling `url`, with `extra` arguments.
pub(crate) fn every_min(url: &str, extra: Value) -> Value {
    let mut args = json!({"name": "every_min", "webhook": url, "schedule": "* * * * *",
        "payload": {"a": 1}, "include_in_metadata": true});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    json!({"type": "create_cron_trigger", "args": args})
}

/// `get_scheduled_events` of `kind` (and `trigger`), with the count.
pub(crate) async fn events(s: &TestServer, kind: &str, trigger: Option<&str>) -> Value {
    let mut args = json!({"type": kind, "get_rows_count": true});
    if let Some(t) = trigger {
        args["trigger_name"] = json!(t);
    }
    s.ok(json!({"type": "get_scheduled_events", "args": args}))
        .await
}

/// Waits until `done` holds for the rows `sql` reads.
pub(crate) async fn settle(s: &TestServer, sql: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..300 {
        let rows = query_json(&s.db_url, sql).await;
        if done(&rows) {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not settled: {:#}", query_json(&s.db_url, sql).await);
}
