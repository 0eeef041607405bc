//! Cron triggers: the operations and their errors, generation ahead, delivery when the clock
//! reaches an event, tolerance, deletion, and the document.

use super::*;
use crate::events::Webhook;
use chrono::DateTime;

fn times(events: &Value) -> Vec<DateTime<Utc>> {
    events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            DateTime::parse_from_rfc3339(e["scheduled_time"].as_str().unwrap())
                .unwrap()
                .with_timezone(&Utc)
        })
        .collect()
}

#[tokio::test]
async fn cron_triggers_generate_a_hundred_events_and_are_replaced_and_deleted() {
    let clock = TestClock::default();
    let s = server(&clock).await;
    let created = Utc::now();
    assert_eq!(
        s.ok(every_min("http://127.0.0.1:9/cron", json!({}))).await,
        json!({"message": "success"})
    );
    let listed = events(&s, "cron", Some("every_min")).await;
    assert_eq!(listed["count"], 100);
    let at = times(&listed);
    assert_eq!(at.len(), 100);
    // The next whole minute after the request (the one after, if it crossed a minute).
    let next = next_minute(created);
    assert!(
        at[0] == next || at[0] == next + Span::minutes(1),
        "{}",
        at[0]
    );
    assert!(at.windows(2).all(|w| w[1] - w[0] == Span::minutes(1)));
    assert!(listed["events"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["status"] == "scheduled"
            && e["tries"] == 0
            && e["trigger_name"] == "every_min"));

    let body = s
        .fails(
            every_min("http://127.0.0.1:9/cron", json!({})),
            400,
            "already-exists",
            "$.args",
        )
        .await;
    assert_eq!(
        body["error"],
        "cron trigger with name: every_min already exists"
    );
    s.ok(every_min(
        "http://127.0.0.1:9/cron",
        json!({"replace": true, "headers": [{"name": "X-Token", "value": "t"}]}),
    ))
    .await;
    let exported = s.export().await;
    assert_eq!(
        exported["cron_triggers"],
        json!([{"name": "every_min", "webhook": "http://127.0.0.1:9/cron", "schedule": "* * * * *",
            "payload": {"a": 1}, "headers": [{"name": "X-Token", "value": "t"}],
            "include_in_metadata": true}])
    );
    let listed = events(&s, "cron", Some("every_min")).await;
    assert_eq!(listed["count"], 100);
    assert!(listed["events"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["tries"] == 0));
    // Listing: pages, statuses, and the shape of `get_cron_triggers`.
    let page = s
        .ok(
            json!({"type": "get_scheduled_events", "args": {"type": "cron",
            "trigger_name": "every_min", "limit": 2, "offset": 98, "status": ["scheduled"]}}),
        )
        .await;
    assert_eq!(page["events"].as_array().unwrap().len(), 2);
    assert!(page.get("count").is_none());
    assert_eq!(
        s.ok(json!({"type": "get_cron_triggers", "args": {}})).await,
        json!({"cron_triggers": [{"name": "every_min", "webhook": "http://127.0.0.1:9/cron",
            "schedule": "* * * * *", "payload": {"a": 1}, "headers": [{"name": "X-Token", "value": "t"}],
            "retry_conf": {"num_retries": 0, "retry_interval_seconds": 10, "timeout_seconds": 60,
                "tolerance_seconds": 21600},
            "include_in_metadata": true}]})
    );

    // A deleted event is not planned again: topping up (here by a reload) continues after it.
    let listed = events(&s, "cron", Some("every_min")).await;
    let last = listed["events"][99].clone();
    s.ok(
        json!({"type": "delete_scheduled_event", "args": {"type": "cron", "event_id": last["id"]}}),
    )
    .await;
    assert_eq!(events(&s, "cron", Some("every_min")).await["count"], 99);
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    let after = times(&events(&s, "cron", Some("every_min")).await);
    let deleted = DateTime::parse_from_rfc3339(last["scheduled_time"].as_str().unwrap()).unwrap();
    assert_eq!(after.len(), 100);
    assert!(!after.contains(&deleted.with_timezone(&Utc)));
    assert_eq!(after[99], deleted.with_timezone(&Utc) + Span::minutes(1));

    s.ok(json!({"type": "delete_cron_trigger", "args": {"name": "every_min"}}))
        .await;
    let body = s
        .fails(
            json!({"type": "get_scheduled_events", "args": {"type": "cron", "trigger_name": "every_min"}}),
            400,
            "not-exists",
            "$.args",
        )
        .await;
    assert_eq!(
        body["error"],
        "cron trigger with name: every_min does not exist"
    );
    let left = query_json(
        &s.db_url,
        "SELECT count(*) AS n FROM basalt_catalog.cron_events",
    )
    .await;
    assert_eq!(left, json!([{"n": 0}]));
    s.fails(
        json!({"type": "delete_cron_trigger", "args": {"name": "every_min"}}),
        400,
        "not-exists",
        "$.args",
    )
    .await;
}

#[tokio::test]
async fn bad_definitions_are_refused_with_their_paths() {
    let clock = TestClock::default();
    let s = server(&clock).await;
    let cases = [
        (
            json!({"schedule": "* * * *"}),
            "parse-failed",
            "$.args.schedule",
        ),
        (
            json!({"schedule": "* * * JAN *"}),
            "parse-failed",
            "$.args.schedule",
        ),
        (
            json!({"retry_conf": {"num_retries": -1}}),
            "parse-failed",
            "$.args.retry_conf",
        ),
        (
            json!({"retry_conf": {"timeout_seconds": -2}}),
            "parse-failed",
            "$.args.retry_conf",
        ),
        (
            json!({"request_transform": {"url": "x"}}),
            "not-supported",
            "$.args",
        ),
        (
            json!({"webhook": "{{BASALT_TEST_UNSET_URL}}/x"}),
            "not-found",
            "$.args.webhook",
        ),
        (
            json!({"headers": [{"name": "X", "value_from_env": "BASALT_TEST_UNSET_TOKEN"}]}),
            "not-found",
            "$.args.headers[0]",
        ),
    ];
    for (extra, code, path) in cases {
        s.fails(
            every_min("http://127.0.0.1:9/cron", extra.clone()),
            400,
            code,
            path,
        )
        .await;
    }
    let body = s
        .fails(
            json!({"type": "create_cron_trigger", "args": {"name": "x", "webhook": "http://h", "schedule": "* * * * *"}}),
            400,
            "parse-failed",
            "$.args",
        )
        .await;
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("include_in_metadata"),
        "{body}"
    );
    let body = s
        .fails(
            json!({"type": "create_cron_trigger", "args": {"name": "x", "webhook": "{{BASALT_TEST_UNSET_URL}}",
                "schedule": "* * * * *", "include_in_metadata": true}}),
            400,
            "not-found",
            "$.args.webhook",
        )
        .await;
    assert_eq!(
        body["error"],
        "environment variable 'BASALT_TEST_UNSET_URL' not set"
    );
    s.fails(
        json!({"type": "get_scheduled_events", "args": {"type": "cron"}}),
        400,
        "parse-failed",
        "$.args",
    )
    .await;
    let body = s
        .fails(
            json!({"type": "get_scheduled_events", "args": {"type": "one_off", "status": ["sent"]}}),
            400,
            "parse-failed",
            "$.args.status[0]",
        )
        .await;
    assert_eq!(body["error"], "unexpected status: sent");
    // Nothing was stored.
    assert!(s.export().await.get("cron_triggers").is_none());
}

#[tokio::test]
async fn a_cron_event_is_delivered_when_the_clock_reaches_it_and_late_ones_die() {
    let clock = TestClock::default();
    let s = server(&clock).await;
    let hook = Webhook::default();
    let url = hook.start().await;
    s.ok(every_min(
        &url,
        json!({"comment": "each minute",
        "retry_conf": {"tolerance_seconds": 120, "num_retries": 3, "retry_interval_seconds": 0.2}}),
    ))
    .await;
    let first = times(&events(&s, "cron", Some("every_min")).await)[0];
    clock.set(first + Span::seconds(1));
    let bodies = hook.wait_for(1).await;
    let body = &bodies[0];
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["id", "name", "scheduled_time", "payload", "comment"]);
    assert_eq!(body["name"], "every_min");
    assert_eq!(body["payload"], json!({"a": 1}));
    assert_eq!(body["comment"], "each minute");
    let scheduled = body["scheduled_time"].as_str().unwrap();
    assert_eq!(
        scheduled,
        first.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    let id = body["id"].as_str().unwrap().to_owned();
    let rows = settle(
        &s,
        &format!("SELECT status, tries FROM basalt_catalog.cron_events WHERE id = '{id}'"),
        |r| r[0]["status"] == "delivered",
    )
    .await;
    assert_eq!(rows, json!([{"status": "delivered", "tries": 1}]));
    let invocations = s
        .ok(json!({"type": "get_scheduled_event_invocations", "args": {"type": "cron", "event_id": id,
            "get_rows_count": true}}))
        .await;
    assert_eq!(invocations["count"], 1);
    assert_eq!(invocations["invocations"][0]["status"], 200);
    assert_eq!(invocations["invocations"][0]["request"]["payload"], *body);

    // Ten minutes on, past the tolerance of two: the events in between die unsent, the
    // recent ones are sent.
    clock.set(first + Span::minutes(10) + Span::seconds(1));
    let rows = settle(
        &s,
        "SELECT status, count(*) AS n FROM basalt_catalog.cron_events
         WHERE status <> 'scheduled' GROUP BY status ORDER BY status",
        // Eleven events in final states (claims in flight show as `locked` until recorded).
        |r| {
            let rows = r.as_array().unwrap();
            rows.iter().all(|x| x["status"] != "locked")
                && rows.iter().map(|x| x["n"].as_i64().unwrap()).sum::<i64>() == 11
        },
    )
    .await;
    assert_eq!(
        rows,
        json!([{"status": "dead", "n": 8}, {"status": "delivered", "n": 3}])
    );
    assert_eq!(hook.bodies().len(), 3);
    let dead = query_json(
        &s.db_url,
        "SELECT count(*) AS n FROM basalt_catalog.cron_events e
         JOIN basalt_catalog.cron_event_invocation_logs l ON l.event_id = e.id WHERE e.status = 'dead'",
    )
    .await;
    assert_eq!(dead, json!([{"n": 0}]));

    // Deleted: its waiting events go, what happened to the others stays.
    s.ok(json!({"type": "delete_cron_trigger", "args": {"name": "every_min"}}))
        .await;
    let left = query_json(
        &s.db_url,
        "SELECT status, count(*) AS n FROM basalt_catalog.cron_events GROUP BY status ORDER BY status",
    )
    .await;
    assert_eq!(
        left,
        json!([{"status": "dead", "n": 8}, {"status": "delivered", "n": 3}])
    );
}

#[tokio::test]
async fn triggers_left_out_of_metadata_survive_replacement() {
    let clock = TestClock::default();
    let s = server(&clock).await;
    s.ok(every_min(
        "http://127.0.0.1:9/cron",
        json!({"include_in_metadata": false}),
    ))
    .await;
    s.ok(json!({"type": "create_cron_trigger", "args": {"name": "nightly", "webhook": "http://127.0.0.1:9/n",
        "schedule": "0 22 * * 1-5", "include_in_metadata": true,
        "retry_conf": {"num_retries": 2, "retry_interval_seconds": 30}}}))
        .await;
    let listed = s.ok(json!({"type": "get_cron_triggers", "args": {}})).await;
    assert_eq!(listed["cron_triggers"].as_array().unwrap().len(), 2);
    let exported = s.export().await;
    assert_eq!(
        exported["cron_triggers"],
        json!([{"name": "nightly", "webhook": "http://127.0.0.1:9/n", "schedule": "0 22 * * 1-5",
            "retry_conf": {"num_retries": 2, "retry_interval_seconds": 30, "timeout_seconds": 60,
                "tolerance_seconds": 21600},
            "include_in_metadata": true}])
    );
    let ids =
        "SELECT trigger_name, count(*) AS n FROM basalt_catalog.cron_events GROUP BY 1 ORDER BY 1";
    let before = query_json(&s.db_url, ids).await;
    s.ok(json!({"type": "replace_metadata", "args": exported.clone()}))
        .await;
    assert_eq!(query_json(&s.db_url, ids).await, before);
    assert_eq!(
        s.ok(json!({"type": "get_cron_triggers", "args": {}})).await,
        listed
    );
    let mut clash = exported.clone();
    clash["cron_triggers"][0]["name"] = json!("every_min");
    let body = s
        .fails(
            json!({"type": "replace_metadata", "args": clash}),
            400,
            "already-exists",
            "$.args.cron_triggers[0]",
        )
        .await;
    assert_eq!(
        body["error"],
        "cron trigger with name \"every_min\" already exists as a cron trigger with \"included_in_metadata\" as false"
    );
    // Left out of a replacement, an included trigger goes with its waiting events.
    s.ok(json!({"type": "replace_metadata", "args": {"version": 2, "tables": []}}))
        .await;
    assert_eq!(
        query_json(&s.db_url, ids).await,
        json!([{"trigger_name": "every_min", "n": 100}])
    );
}

#[tokio::test]
async fn a_trigger_whose_variable_goes_is_inconsistent_and_plans_nothing() {
    let clock = TestClock::default();
    let s = server(&clock).await;
    std::env::set_var("BASALT_TEST_CRON_BASE", "http://127.0.0.1:9");
    s.ok(json!({"type": "create_cron_trigger", "args": {"name": "env_bound",
        "webhook": "{{BASALT_TEST_CRON_BASE}}/x", "schedule": "*/5 * * * *", "include_in_metadata": true}}))
        .await;
    std::env::remove_var("BASALT_TEST_CRON_BASE");
    let reloaded = s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    assert_eq!(reloaded["is_consistent"], false);
    let inconsistent = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(
        inconsistent["inconsistent_objects"],
        json!([{"type": "cron_trigger", "owner": "api",
            "definition": {"name": "env_bound", "webhook": "{{BASALT_TEST_CRON_BASE}}/x",
                "schedule": "*/5 * * * *", "include_in_metadata": true},
            "reason": "environment variable 'BASALT_TEST_CRON_BASE' not set"}])
    );
    // Its due events wait unclaimed.
    let first = times(&events(&s, "cron", Some("env_bound")).await)[0];
    clock.set(first + Span::seconds(30));
    tokio::time::sleep(Duration::from_millis(400)).await;
    let waiting = query_json(
        &s.db_url,
        "SELECT count(*) AS n FROM basalt_catalog.cron_events WHERE status <> 'scheduled'",
    )
    .await;
    assert_eq!(waiting, json!([{"n": 0}]));
}

/// The planner's transaction: with the catalog at the version it planned against, the waiting
/// events of triggers that are gone are deleted; with the catalog moved on, nothing is done.
#[tokio::test]
async fn planning_clears_what_deleted_triggers_left_only_at_its_own_version() {
    let clock = TestClock::default();
    let s = server(&clock).await;
    s.ok(every_min("http://127.0.0.1:9/cron", json!({}))).await;
    crate::harness::run_sql(
        &s.db_url,
        "INSERT INTO basalt_catalog.cron_events (trigger_name, scheduled_time)
         VALUES ('gone', now() + interval '1 hour')",
    )
    .await;
    let version = query_json(
        &s.db_url,
        "SELECT resource_version FROM basalt_catalog.metadata",
    )
    .await[0]["resource_version"]
        .as_i64()
        .unwrap();
    let mut client = basalt::pool::pool_for(&s.db_url, 1)
        .unwrap()
        .0
        .get()
        .await
        .unwrap();
    let known = ["every_min".to_owned()];
    let gone = "SELECT count(*) AS n FROM basalt_catalog.cron_events WHERE trigger_name = 'gone'";
    let tx = (**client).transaction().await.unwrap();
    let planned = basalt::scheduled::store::planning(&tx, version - 1, &known, None, 60.0)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(planned, None);
    assert_eq!(query_json(&s.db_url, gone).await, json!([{"n": 1}]));
    let tx = (**client).transaction().await.unwrap();
    let planned = basalt::scheduled::store::planning(&tx, version, &known, None, 60.0)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(planned.is_some());
    assert_eq!(query_json(&s.db_url, gone).await, json!([{"n": 0}]));
    let kept =
        "SELECT count(*) AS n FROM basalt_catalog.cron_events WHERE trigger_name = 'every_min'";
    assert_eq!(query_json(&s.db_url, kept).await, json!([{"n": 100}]));
}
