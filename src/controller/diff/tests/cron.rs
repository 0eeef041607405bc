//! Plans for cron triggers: created, replaced in place (`replace: true`, so events already
//! due or in flight stay), compared in their listed form, and deleted.

use super::*;

fn with(schedule: &str, retry: Value) -> Metadata {
    metadata(json!({"version": 2, "tables": [],
        "cron_triggers": [{"name": "nightly", "webhook": "http://h/n", "schedule": schedule,
            "retry_conf": retry, "include_in_metadata": true}]}))
}

#[test]
fn cron_triggers_are_created_replaced_in_place_and_deleted() {
    let key = "cron_trigger:nightly";
    let want = object(&with("0 22 * * 1-5", json!({"num_retries": 2})), key);
    let bare = metadata(json!({"version": 2, "tables": []}));
    let created = plan_for(std::slice::from_ref(&want), &bare, &[], Policy::default());
    assert_eq!(types(&created), vec!["create_cron_trigger"]);
    assert_eq!(created.ops[0].request["args"]["replace"], Value::Null);
    // The defaults written out or left implicit: the same trigger, nothing to do.
    let same = with(
        "0 22 * * 1-5",
        json!({"num_retries": 2, "retry_interval_seconds": 10.0, "tolerance_seconds": 21600}),
    );
    let noop = plan_for(
        std::slice::from_ref(&want),
        &same,
        &[row(&want, "me")],
        Policy::default(),
    );
    assert!(noop.ops.is_empty(), "{noop:?}");
    let old = object(&with("0 6 * * *", json!({})), key);
    let update = plan_for(
        std::slice::from_ref(&want),
        &with("0 6 * * *", json!({})),
        &[row(&old, "me")],
        Policy::default(),
    );
    assert_eq!(types(&update), vec!["create_cron_trigger"]);
    assert_eq!(update.ops[0].request["args"]["replace"], true);
    assert_eq!(update.ops[0].request["args"]["schedule"], "0 22 * * 1-5");
    let gone = cleanup(
        &owner("me"),
        &with("0 22 * * 1-5", json!({"num_retries": 2})),
        &[row(&want, "me")],
        removal(),
    );
    assert_eq!(types(&gone), vec!["delete_cron_trigger"]);
    assert_eq!(gone.ops[0].request["args"], json!({"name": "nightly"}));
}
