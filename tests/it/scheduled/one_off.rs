//! One-off scheduled events: their outcomes (delivered, dead past their tolerance, in error
//! after their retries), the listing and deletion, and two engines delivering each event once.

use super::*;
use crate::events::Webhook;
use chrono::DateTime;
use std::collections::BTreeSet;

fn event(url: &str, at: &str, extra: Value) -> Value {
    let mut args = json!({"webhook": url, "schedule_at": at, "payload": {"n": 1}});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    json!({"type": "create_scheduled_event", "args": args})
}

#[tokio::test]
async fn one_off_events_end_delivered_dead_or_in_error() {
    let clock = TestClock::default();
    let s = server(&clock).await;
    let ok = Webhook::default();
    let ok_url = ok.start().await;
    let failing = Webhook::default();
    *failing.script.lock().unwrap() = vec![(500, None), (500, None)];
    let failing_url = failing.start().await;
    let now = Utc::now().to_rfc3339();
    let answers = s
        .ok(json!({"type": "bulk", "args": [
            event(&ok_url, &now, json!({"comment": "hello"})),
            event(&ok_url, "2020-01-01T00:00:00Z", json!({})),
            event(&failing_url, &now, json!({"retry_conf": {"num_retries": 1, "retry_interval_seconds": 1}})),
        ]}))
        .await;
    let ids: Vec<String> = answers
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            assert_eq!(a["message"], "success");
            a["event_id"].as_str().unwrap().to_owned()
        })
        .collect();
    let sql = format!(
        "SELECT id, status, tries FROM basalt_catalog.scheduled_events
         WHERE id IN ('{}', '{}', '{}')",
        ids[0], ids[1], ids[2]
    );
    let rows = settle(&s, &sql, |r| {
        r.as_array()
            .unwrap()
            .iter()
            .all(|e| ["delivered", "dead", "error"].contains(&e["status"].as_str().unwrap()))
    })
    .await;
    let state = |id: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| (r["status"].clone(), r["tries"].clone()))
            .unwrap()
    };
    assert_eq!(state(&ids[0]), (json!("delivered"), json!(1)));
    assert_eq!(state(&ids[1]), (json!("dead"), json!(0)));
    assert_eq!(state(&ids[2]), (json!("error"), json!(2)));
    // The 200 endpoint got one call (the dead event never went out), with `created_at`.
    let bodies = ok.bodies();
    assert_eq!(bodies.len(), 1);
    let body = &bodies[0];
    assert_eq!(body["id"], ids[0].as_str());
    assert_eq!(body["comment"], "hello");
    assert!(body.get("name").is_none());
    let listed = events(&s, "one_off", None).await;
    assert_eq!(listed["count"], 3);
    let row = listed["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == ids[0].as_str())
        .unwrap()
        .clone();
    let instant = |v: &Value| DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    assert_eq!(instant(&body["created_at"]), instant(&row["created_at"]));
    let keys: BTreeSet<&str> = row
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "comment",
            "created_at",
            "header_conf",
            "id",
            "next_retry_at",
            "payload",
            "retry_conf",
            "scheduled_time",
            "status",
            "tries",
            "webhook_conf"
        ])
    );
    assert_eq!(row["webhook_conf"], ok_url.as_str());
    let invocations = s
        .ok(
            json!({"type": "get_scheduled_event_invocations", "args": {"type": "one_off",
            "event_id": ids[2]}}),
        )
        .await;
    let statuses: Vec<&Value> = invocations["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["status"])
        .collect();
    assert_eq!(statuses, [&json!(500), &json!(500)]);
    assert_eq!(failing.bodies().len(), 2);
    let metrics = s
        .http
        .get(format!("{}/metrics", s.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for (outcome, n) in [("delivered", 1), ("retry", 1), ("error", 1), ("dead", 1)] {
        let line = format!(
            "basalt_scheduled_events_processed_total{{type=\"one_off\",outcome=\"{outcome}\"}} {n}"
        );
        assert!(metrics.contains(&line), "{line} not in {metrics}");
    }
    assert!(
        metrics.contains("basalt_scheduled_events_due{type=\"one_off\"} 0"),
        "{metrics}"
    );

    // Deleted, with its logs; then gone.
    s.ok(
        json!({"type": "delete_scheduled_event", "args": {"type": "one_off", "event_id": ids[2]}}),
    )
    .await;
    let body = s
        .fails(
            json!({"type": "delete_scheduled_event", "args": {"type": "one_off", "event_id": ids[2]}}),
            400,
            "not-exists",
            "$.args.event_id",
        )
        .await;
    assert_eq!(
        body["error"],
        format!("scheduled event with id \"{}\" does not exist", ids[2])
    );
    let logs = query_json(
        &s.db_url,
        "SELECT count(*) AS n FROM basalt_catalog.scheduled_event_invocation_logs",
    )
    .await;
    assert_eq!(logs, json!([{"n": 1}]));
    s.fails(
        json!({"type": "delete_scheduled_event", "args": {"type": "weekly", "event_id": "x"}}),
        400,
        "parse-failed",
        "$.args.type",
    )
    .await;
    s.fails(
        event(&ok_url, "next tuesday", json!({})),
        400,
        "parse-failed",
        "$.args.schedule_at",
    )
    .await;
    // One-off events are data: a replacement of the metadata keeps them.
    s.ok(json!({"type": "replace_metadata", "args": {"version": 2, "tables": []}}))
        .await;
    assert_eq!(events(&s, "one_off", None).await["count"], 2);
}

#[tokio::test]
async fn two_engines_deliver_each_of_five_hundred_events_once() {
    let clock = TestClock::default();
    let db = fresh_database().await;
    let a = on(&db, &clock).await;
    let b = on(&db, &clock).await;
    let hook = Webhook::default();
    let url = hook.start().await;
    let now = Utc::now().to_rfc3339();
    for engine in [&a, &b].repeat(5) {
        let batch: Vec<Value> = (0..50).map(|_| event(&url, &now, json!({}))).collect();
        engine.ok(json!({"type": "bulk", "args": batch})).await;
    }
    hook.wait_for(500).await;
    // A moment more for a second delivery, if any, to arrive.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ids: Vec<String> = hook
        .bodies()
        .iter()
        .map(|b| b["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 500);
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 500);
    let rows = settle(
        &a,
        "SELECT status, count(*) AS n FROM basalt_catalog.scheduled_events GROUP BY status",
        |r| r.as_array().unwrap().len() == 1 && r[0]["status"] == "delivered",
    )
    .await;
    assert_eq!(rows, json!([{"status": "delivered", "n": 500}]));
}

#[tokio::test]
async fn retry_after_is_followed_and_finished_events_are_cleaned_up_after_the_retention() {
    let clock = TestClock::default();
    let db = fresh_database().await;
    let worker_clock = clock.clock();
    let s = TestServer::on(&db, move |c| {
        c.scheduled.scheduled_poll_interval_ms = 100;
        c.scheduled.clock = worker_clock;
        c.events.retention_hours = 1;
        c.events.cleanup_interval_seconds = 1;
    })
    .await;
    let hook = Webhook::default();
    // Busy: come back in a second. No retries are configured, yet it is tried again.
    *hook.script.lock().unwrap() = vec![(503, Some(1))];
    let url = hook.start().await;
    let answer = s.ok(event(&url, &Utc::now().to_rfc3339(), json!({}))).await;
    let id = answer["event_id"].as_str().unwrap().to_owned();
    let sql = format!(
        "SELECT status, tries, (SELECT count(*) FROM basalt_catalog.scheduled_event_invocation_logs l
                                WHERE l.event_id = e.id) AS logs
         FROM basalt_catalog.scheduled_events e WHERE id = '{id}'"
    );
    let rows = settle(&s, &sql, |r| r[0]["status"] == "delivered").await;
    assert_eq!(
        rows,
        json!([{"status": "delivered", "tries": 2, "logs": 2}])
    );
    assert_eq!(hook.bodies().len(), 2);
    // Two hours on, past the retention of one: the event and its logs are gone.
    clock.set(Utc::now() + Span::hours(2));
    let rows = settle(
        &s,
        "SELECT (SELECT count(*) FROM basalt_catalog.scheduled_events) AS events,
                (SELECT count(*) FROM basalt_catalog.scheduled_event_invocation_logs) AS logs",
        |r| r[0]["events"] == 0,
    )
    .await;
    assert_eq!(rows, json!([{"events": 0, "logs": 0}]));
}

/// A worker whose lease ran out records nothing over the claim that took its event over, nor
/// renews or gives back that claim.
#[tokio::test]
async fn a_stale_claim_cannot_overwrite_the_next_one() {
    use basalt::catalog::scheduled::EventTable;
    use basalt::scheduled::store::{self, Next, Outcome};
    let clock = TestClock::default();
    // Created far ahead, so no worker of the server claims it; the statements are run here.
    let s = server(&clock).await;
    let answer = s
        .ok(event(
            "http://127.0.0.1:9/x",
            "2100-01-01T00:00:00Z",
            json!({}),
        ))
        .await;
    let id = answer["event_id"].as_str().unwrap().to_owned();
    let mut client = basalt::pool::pool_for(&s.db_url, 1)
        .unwrap()
        .0
        .get()
        .await
        .unwrap();
    let at = |t: &str| Some(DateTime::parse_from_rfc3339(t).unwrap().with_timezone(&Utc));
    let first = store::claim_one_off(&**client, at("2100-01-01T00:00:01Z"), 60.0, 10)
        .await
        .unwrap();
    assert_eq!(first.len(), 1);
    // Nobody else takes it while the lease holds; after it ran out, the next claim does.
    let none = store::claim_one_off(&**client, at("2100-01-01T00:00:30Z"), 60.0, 10)
        .await
        .unwrap();
    assert!(none.is_empty());
    let second = store::claim_one_off(&**client, at("2100-01-01T00:02:00Z"), 60.0, 10)
        .await
        .unwrap();
    assert_eq!(second.len(), 1);
    assert_ne!(first[0].lease, second[0].lease);
    let outcome = |lease: &str, next: Next| Outcome {
        id: id.clone(),
        table: EventTable::OneOff,
        lease: lease.to_owned(),
        trigger: None,
        next,
        status: 200,
        request: json!({}),
        response: json!({}),
    };
    let stale = outcome(&first[0].lease, Next::Failed);
    store::record(
        &mut client,
        EventTable::OneOff,
        &[&stale],
        at("2100-01-01T00:02:01Z"),
    )
    .await
    .unwrap();
    let held = [(id.clone(), first[0].lease.clone())];
    assert_eq!(
        store::renew(&**client, EventTable::OneOff, &held, None)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store::release(&**client, EventTable::OneOff, &held)
            .await
            .unwrap(),
        0
    );
    let row = |s: &TestServer| {
        let sql = format!(
            "SELECT status, tries, lease_id IS NOT NULL AS held FROM basalt_catalog.scheduled_events WHERE id = '{id}'"
        );
        let db = s.db_url.clone();
        async move { query_json(&db, &sql).await }
    };
    assert_eq!(
        row(&s).await,
        json!([{"status": "locked", "tries": 0, "held": true}])
    );
    let current = outcome(&second[0].lease, Next::Delivered);
    store::record(
        &mut client,
        EventTable::OneOff,
        &[&current],
        at("2100-01-01T00:02:02Z"),
    )
    .await
    .unwrap();
    assert_eq!(
        row(&s).await,
        json!([{"status": "delivered", "tries": 1, "held": false}])
    );
}
