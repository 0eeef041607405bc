//! The EventTrigger kind: applied with its capture triggers in Postgres, replaced on a spec
//! change, reported when its table is missing or an environment variable it names is unset,
//! and removed with its resource.

use super::*;

/// The capture triggers Basalt installed in Postgres.
async fn captures(db_url: &str) -> Value {
    query_json(
        db_url,
        "SELECT tgname FROM pg_trigger WHERE tgname LIKE 'notify\\_basalt\\_%' ORDER BY tgname",
    )
    .await
}

/// The event log of trigger `name`, oldest first.
async fn event_log(db_url: &str, name: &str) -> Value {
    query_json(
        db_url,
        &format!(
            "SELECT id, delivered, archived FROM basalt_catalog.event_log \
             WHERE trigger_name = '{name}' ORDER BY created_at, id"
        ),
    )
    .await
}

#[tokio::test]
async fn event_trigger_is_applied_replaced_reported_and_removed() {
    let s = setup(false).await;
    s.apply_tables().await;
    let db = s.server.db_url.clone();
    // Port 9 refuses connections: events stay undelivered, retried a minute later.
    let trigger: EventTrigger = resource(
        "article-status",
        json!({"name": "article_status", "table": {"name": "article"},
            "webhook": "http://127.0.0.1:9/status",
            "update": {"columns": ["status"], "payload": ["id", "status"]},
            "headers": [{"name": "X-Source", "value": "basalt"}],
            "retryConf": {"numRetries": 5, "intervalSec": 60}}),
    );
    let calls = s.apply(&trigger).await;
    assert_eq!(events(&calls), vec!["Applied"], "{calls:#?}");
    assert_eq!(
        calls[0].line(),
        format!(
            "PATCH /apis/basalt.dev/v1alpha1/namespaces/shop/eventtriggers/article-status{SSA}"
        )
    );
    assert_eq!(s.condition(&trigger, "Ready").1, "Applied");
    assert_eq!(s.condition(&trigger, "Consistent").0, "True");
    assert_eq!(
        s.status(&trigger).object_keys,
        vec!["event_trigger:article_status"]
    );
    assert_eq!(
        captures(&db).await,
        json!([{"tgname": "notify_basalt_article_status_UPDATE"}])
    );

    // In the catalog as declared, owned by the resource.
    let r = s
        .server
        .ok(json!({"type": "export_metadata", "args": {"include_owners": true}}))
        .await;
    assert_eq!(
        r["owners"]["event_trigger:article_status"],
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "EventTrigger", "namespace": NS, "name": "article-status"}),
        "{r}"
    );
    assert_eq!(
        exported_table(&r, "article")["event_triggers"],
        json!([{"name": "article_status",
            "definition": {"enable_manual": false,
                "update": {"columns": ["status"], "payload": ["id", "status"]}},
            "retry_conf": {"num_retries": 5, "interval_sec": 60, "timeout_sec": 60},
            "webhook": "http://127.0.0.1:9/status",
            "headers": [{"name": "X-Source", "value": "basalt"}]}])
    );

    // A row change waits in the event log.
    s.server
        .sql("UPDATE article SET status = 'draft' WHERE id = 1")
        .await;
    let log = event_log(&db, "article_status").await;
    assert_eq!(log.as_array().unwrap().len(), 1, "{log}");
    let event_id = log[0]["id"].clone();

    // A spec edit replaces the trigger in place: its undelivered event stays in the log.
    let mut edited = s.fake.get(&trigger);
    edited.metadata.generation = Some(2);
    edited.spec.webhook = Some("http://127.0.0.1:9/v2".into());
    edited.spec.insert = Some(serde_json::from_value(json!({"columns": "*"})).unwrap());
    s.fake.put(&edited);
    s.reconcile(&edited).await.unwrap();
    s.fake.take();
    assert_eq!(s.condition(&edited, "Ready").1, "Applied");
    assert_eq!(s.status(&edited).observed_generation, Some(2));
    let exported = exported_table(&s.server.export().await, "article");
    assert_eq!(
        exported["event_triggers"][0]["webhook"],
        "http://127.0.0.1:9/v2"
    );
    assert_eq!(
        exported["event_triggers"][0]["definition"]["insert"],
        json!({"columns": "*"})
    );
    assert_eq!(
        captures(&db).await,
        json!([{"tgname": "notify_basalt_article_status_INSERT"},
               {"tgname": "notify_basalt_article_status_UPDATE"}])
    );
    let log = event_log(&db, "article_status").await;
    assert_eq!(
        (&log[0]["id"], &log[0]["archived"], &log[0]["delivered"]),
        (&event_id, &json!(false), &json!(false)),
        "{log}"
    );

    // A capture dropped in Postgres makes the trigger inconsistent, and the report names
    // the resource to look at.
    s.server
        .sql("DROP TRIGGER \"notify_basalt_article_status_INSERT\" ON article")
        .await;
    let broken: Vec<Value> = s
        .inconsistent()
        .await
        .into_iter()
        .filter(|i| i["type"] == "event_trigger")
        .collect();
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert_eq!(
        broken[0]["owner"],
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "EventTrigger", "namespace": NS, "name": "article-status"})
    );
    s.server
        .ok(json!({"type": "reload_metadata", "args": {}}))
        .await;
    assert_eq!(captures(&db).await.as_array().unwrap().len(), 2);

    // Changed through /v1/query behind the resource's back: drift, reported only.
    s.server
        .ok(
            json!({"type": "create_event_trigger", "args": {"name": "article_status",
            "table": "article", "webhook": "http://127.0.0.1:9/elsewhere",
            "update": {"columns": "*"}, "replace": true}}),
        )
        .await;
    let drift = s.drift_items().await;
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(
        drift[0]["definition"]["object"],
        "event_trigger:article_status"
    );
    assert_eq!(drift[0]["definition"]["drift"], "modified");
    assert_eq!(drift[0]["definition"]["owner"]["kind"], "EventTrigger");
    assert_eq!(
        drift[0]["definition"]["fields"],
        json!([
            "configuration.definition",
            "configuration.headers",
            "configuration.retry_conf",
            "configuration.webhook"
        ])
    );
    s.reconcile(&edited).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftDetected"]);
    let (status, reason, _) = s.condition(&edited, "Drifted");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Modified"));
    assert_eq!(s.condition(&edited, "Ready").1, "Drifted");
    // A sync request puts the declared trigger back (replaced again, events kept).
    let mut requested = s.fake.get(&edited);
    requested.metadata.annotations =
        Some([("basalt.dev/sync-requested-at".to_owned(), "now".to_owned())].into());
    s.fake.put(&requested);
    s.reconcile(&requested).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftCorrected"]);
    assert!(s.drift_items().await.is_empty());
    assert_eq!(
        exported_table(&s.server.export().await, "article")["event_triggers"][0]["webhook"],
        "http://127.0.0.1:9/v2"
    );
    assert_eq!(event_log(&db, "article_status").await[0]["archived"], false);

    // Deleting the resource deletes the trigger: captures gone, pending events archived.
    s.delete(&requested);
    s.reconcile(&requested).await.unwrap();
    let calls = s.fake.take();
    assert_eq!(events(&calls), vec!["Deleted"], "{calls:#?}");
    assert!(calls
        .iter()
        .any(|c| c.body.to_string().contains("/metadata/finalizers/0")));
    let exported = exported_table(&s.server.export().await, "article");
    assert_eq!(exported["table"]["name"], "article", "the table stays");
    assert!(exported.get("event_triggers").is_none(), "{exported}");
    assert_eq!(captures(&db).await, json!([]));
    let log = event_log(&db, "article_status").await;
    assert_eq!(
        (&log[0]["archived"], &log[0]["delivered"]),
        (&json!(true), &json!(false)),
        "{log}"
    );
    let client = s.ctx.pool.get().await.unwrap();
    let rows = managed::load(&**client).await.unwrap();
    assert!(rows.iter().all(|r| r.owner.kind != "EventTrigger"));
}

#[tokio::test]
async fn event_trigger_waits_for_its_table_and_reports_a_missing_environment_variable() {
    let s = setup(false).await;
    let waiting: EventTrigger = resource(
        "comment-created",
        json!({"name": "comment_created", "table": {"name": "comment"},
            "webhook": "http://127.0.0.1:9/comments", "insert": {"columns": "*"}}),
    );
    let calls = s.apply(&waiting).await;
    assert_eq!(events(&calls), vec!["ApplyFailed"]);
    let (_, reason, message) = s.condition(&waiting, "Ready");
    assert_eq!(reason, "DependencyNotReady", "{message}");
    s.apply(&tracked("comment", json!({"table": {"name": "comment"}})))
        .await;
    s.reconcile(&waiting).await.unwrap();
    assert_eq!(s.condition(&waiting, "Ready").1, "Applied");

    // The controller resolves environment variables as the engine does: one it lacks is an
    // apply failure naming the variable, retried with backoff.
    let unset = "BASALT_TEST_UNSET_EVENT_WEBHOOK_URL";
    assert!(std::env::var_os(unset).is_none());
    let from_env: EventTrigger = resource(
        "comment-deleted",
        json!({"name": "comment_deleted", "table": {"name": "comment"},
            "webhookFromEnv": unset, "delete": {"columns": "*"}}),
    );
    s.apply(&from_env).await;
    let (_, reason, message) = s.condition(&from_env, "Ready");
    assert_eq!(reason, "ApplyFailed");
    assert!(
        message.contains("not-found") && message.contains(unset),
        "{message}"
    );
    assert!(
        !s.server
            .export()
            .await
            .to_string()
            .contains("comment_deleted"),
        "nothing written"
    );
}
