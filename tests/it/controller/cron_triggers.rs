//! The CronTrigger kind: the example applied with its events generated, the CEL rule on the
//! schedule's shape, drift when the trigger is deleted behind the resource's back, a changed
//! schedule replacing the upcoming events, export, and removal.

use super::*;

#[tokio::test]
async fn scheduled_example_applies() {
    std::env::set_var("REPORTS_URL", "http://127.0.0.1:9");
    std::env::set_var("REPORTS_TOKEN", "t0ken");
    let (_, manifests) = example_manifests("scheduled");
    let s = setup(false).await;
    let trigger: CronTrigger = serde_json::from_value(manifests[0].clone()).unwrap();
    trigger.validate_cel().unwrap();
    s.apply(&trigger).await;
    let (_, reason, message) = s.condition(&trigger, "Ready");
    assert_eq!(reason, "Applied", "{message}");
    assert_eq!(
        s.status(&trigger).object_keys,
        vec!["cron_trigger:nightly_report"]
    );
    let upcoming = query_json(
        &s.server.db_url,
        "SELECT count(*) AS n, bool_and(extract(hour FROM scheduled_time AT TIME ZONE 'UTC') = 22
                AND extract(isodow FROM scheduled_time AT TIME ZONE 'UTC') <= 5) AS weekdays_at_22
         FROM basalt_catalog.cron_events WHERE trigger_name = 'nightly_report' AND status = 'scheduled'",
    )
    .await;
    assert_eq!(upcoming, json!([{"n": 100, "weekdays_at_22": true}]));
    let exported = s.server.export().await;
    assert_eq!(
        exported["cron_triggers"][0]["headers"],
        json!([{"name": "X-Token", "value_from_env": "REPORTS_TOKEN"}])
    );

    // The schedule's shape is checked by the API server.
    let mut bad = trigger.clone();
    bad.spec.schedule = "* * * *".into();
    let err = bad.validate_cel().unwrap_err().to_string();
    assert!(err.contains("schedule must be five cron fields"), "{err}");

    // Deleted through /v1/query: drift, missing.
    s.server
        .ok(json!({"type": "delete_cron_trigger", "args": {"name": "nightly_report"}}))
        .await;
    s.reconcile(&trigger).await.unwrap();
    let (_, reason, message) = s.condition(&trigger, "Drifted");
    assert_eq!(reason, "Missing", "{message}");

    // A new schedule replaces the trigger in place: its upcoming events follow it.
    let mut changed = s.fake.get(&trigger);
    changed.metadata.generation = Some(2);
    changed.spec.schedule = "30 6 * * *".into();
    s.fake.put(&changed);
    s.reconcile(&changed).await.unwrap();
    assert_eq!(s.condition(&changed, "Ready").1, "Applied");
    let upcoming = query_json(
        &s.server.db_url,
        "SELECT count(*) AS n, bool_and(extract(minute FROM scheduled_time) = 30) AS at_half_past
         FROM basalt_catalog.cron_events WHERE trigger_name = 'nightly_report' AND status = 'scheduled'",
    )
    .await;
    assert_eq!(upcoming, json!([{"n": 100, "at_half_past": true}]));

    // Exported as a resource.
    let metadata = serde_json::from_value(s.server.export().await).unwrap();
    let export = basalt::controller::export::resources(&metadata, NS).unwrap();
    let manifest = &export
        .resources
        .iter()
        .find(|r| r.kind == "CronTrigger")
        .unwrap()
        .manifest;
    assert_eq!(manifest["spec"]["schedule"], "30 6 * * *");
    assert_eq!(
        manifest["spec"]["retryConf"],
        json!({"numRetries": 2, "retryIntervalSeconds": 30, "timeoutSeconds": 60, "toleranceSeconds": 21600})
    );
    assert_eq!(manifest["spec"]["includeInMetadata"], true);

    // Deleting the resource deletes the trigger and its waiting events.
    s.delete(&changed);
    s.reconcile(&changed).await.unwrap();
    let left = query_json(
        &s.server.db_url,
        "SELECT count(*) AS n FROM basalt_catalog.cron_events WHERE status = 'scheduled'",
    )
    .await;
    assert_eq!(left, json!([{"n": 0}]));
    assert!(s.server.export().await.get("cron_triggers").is_none());
}
