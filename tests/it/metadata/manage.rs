//! export, replace (v1, v2), reload, clear, get/drop inconsistent metadata.

use crate::harness::TestServer;
use serde_json::{json, Value};

/// A document using every section, including features whose operations arrive later.
fn full_document() -> Value {
    json!({
        "version": 2,
        "tables": [
            {"table": {"schema": "public", "name": "article_status"}, "is_enum": true},
            {"table": {"schema": "public", "name": "author"},
             "configuration": {"custom_root_fields": {"select": "writers"}, "custom_column_names": {"bio": "about"}},
             "array_relationships": [{"name": "articles", "using": {"foreign_key_constraint_on": {"table": {"schema": "public", "name": "article"}, "column": "author_id"}}}],
             "computed_fields": [{"name": "full_name", "definition": {"function": {"schema": "public", "name": "author_full_name"}}, "comment": "derived"}],
             "select_permissions": [{"role": "reader", "permission": {"columns": ["id", "name"], "computed_fields": ["full_name"], "filter": {}, "limit": 50, "allow_aggregations": true}}],
             "event_triggers": [{"name": "author_changed", "definition": {"enable_manual": true, "insert": {"columns": "*"}},
                                 "retry_conf": {"num_retries": 3, "interval_sec": 15, "timeout_sec": 30}, "webhook": "http://hooks.example/author",
                                 "headers": [{"name": "X-Token", "value_from_env": "CARGO_PKG_NAME"}]}]},
            {"table": {"schema": "public", "name": "article"},
             "object_relationships": [{"name": "author", "using": {"foreign_key_constraint_on": "author_id"}}],
             "insert_permissions": [{"role": "reader", "permission": {"check": {"author_id": {"_eq": "X-Svc-User-Id"}}, "set": {"author_id": "x-svc-user-id"}, "columns": ["title"], "backend_only": false}}],
             "select_permissions": [{"role": "reader", "permission": {"columns": "*", "filter": {"author": {"id": {"_eq": "X-Svc-User-Id"}}}}}],
             "update_permissions": [{"role": "reader", "permission": {"columns": ["title"], "filter": {"author_id": {"_eq": "X-Svc-User-Id"}}, "check": null}}],
             "delete_permissions": [{"role": "reader", "permission": {"filter": {"author_id": {"_eq": "X-Svc-User-Id"}}}, "comment": "own only"}]}
        ],
        "remote_schemas": [{"name": "newsletter", "definition": {"url_from_env": "NEWSLETTER_GRAPHQL_URL", "timeout_seconds": 20, "forward_client_headers": true}}],
        "query_collections": [{"name": "app", "definition": {"queries": [{"name": "q", "query": "query q { writers { id } }"}]}}],
        "allowlist": [{"collection": "app"}],
        "actions": [{"name": "archive", "definition": {"handler": "{{ACTIONS_URL}}/archive", "output_type": "ArchiveResult",
                     "arguments": [{"name": "id", "type": "Int!"}], "type": "mutation", "kind": "asynchronous", "timeout": 10},
                     "permissions": [{"role": "reader"}]}],
        "custom_types": {"objects": [{"name": "ArchiveResult", "fields": [{"name": "ok", "type": "Boolean!"}]}]}
    })
}

#[tokio::test]
async fn round_trip_export_clear_replace_export() {
    crate::remote_schemas::remote_server::blog_newsletter();
    // The action's handler URL comes from the environment (nothing is called here).
    std::env::set_var("ACTIONS_URL", "http://127.0.0.1:9");
    let s = TestServer::library().await;
    // The v1 form takes the document itself.
    s.ok(json!({"type": "replace_metadata", "args": full_document()}))
        .await;
    let first = s.export().await;
    assert_eq!(first, full_document());
    s.ok(json!({"type": "clear_metadata", "args": {}})).await;
    assert_eq!(s.export().await, json!({"version": 2, "tables": []}));
    let r = s
        .ok(json!({"type": "replace_metadata", "version": 2, "args": {"metadata": first.clone()}}))
        .await;
    assert_eq!(r["is_consistent"], true, "{r}");
    assert_eq!(s.export().await, first);
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(s.export().await, first);
}

#[tokio::test]
async fn replace_metadata_validation_and_inconsistency() {
    let s = TestServer::library().await;
    let ghost = json!({"version": 2, "tables": [{"table": {"schema": "public", "name": "ghost"}}]});
    let r = s
        .fails(
            json!({"type": "replace_metadata", "args": ghost.clone()}),
            400,
            "unexpected",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "cannot continue due to inconsistent metadata");
    assert_eq!(r["internal"][0]["type"], "table");
    s.fails(
        json!({"type": "replace_metadata", "version": 2, "args": {"metadata": ghost.clone()}}),
        400,
        "unexpected",
        "$.args",
    )
    .await;
    let r = s.ok(json!({"type": "replace_metadata", "version": 2, "args": {"allow_inconsistent_metadata": true, "metadata": ghost}})).await;
    assert_eq!(
        r,
        json!({"is_consistent": false, "inconsistent_objects": [{"type": "table",
        "definition": {"schema": "public", "name": "ghost"}, "reason": "no such table/view exists in postgres: \"ghost\"",
        "owner": "api"}]})
    );
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(r["is_consistent"], false);
    assert_eq!(r["inconsistent_objects"][0]["definition"]["name"], "ghost");
    let health = reqwest::get(format!("{}/healthz", s.base)).await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(
        health.text().await.unwrap(),
        "WARN: inconsistent objects in schema"
    );
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(
        s.ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
            .await,
        json!({"is_consistent": true, "inconsistent_objects": []})
    );

    // Shape errors.
    let r = s
        .fails(
            json!({"type": "replace_metadata", "args": {"version": 3, "tables": []}}),
            400,
            "parse-failed",
            "$.args.version",
        )
        .await;
    assert_eq!(r["error"], "expected 1 or 2, encountered 3");
    s.fails(json!({"type": "replace_metadata", "version": 2, "args": {"metadata": {"version": 3, "tables": []}}}), 400, "parse-failed", "$.args.metadata.version").await;
    // A function Postgres does not have is inconsistent, like any object.
    let r = s
        .fails(
            json!({"type": "replace_metadata", "args": {"tables": [], "functions": ["f"]}}),
            400,
            "unexpected",
            "$.args",
        )
        .await;
    assert_eq!(r["internal"][0]["type"], "function");
    s.ok(
        json!({"type": "replace_metadata", "args": {"version": 1, "tables": [], "functions": []}}),
    )
    .await;
    let r = s.fails(json!({"type": "replace_metadata", "args": {"tables": [{"table": "author", "colour": 1}]}}), 400, "parse-failed", "$.args.tables[0]").await;
    assert_eq!(
        r["error"],
        "unexpected keys when parsing TableMetadata : [colour]"
    );
    s.fails(
        json!({"type": "replace_metadata", "args": {}}),
        400,
        "parse-failed",
        "$.args",
    )
    .await;
    s.fails(json!({"type": "replace_metadata", "args": {"tables": [{"table": "author", "is_enum": "yes"}]}}), 400, "parse-failed", "$.args.tables[0].is_enum").await;
    s.fails(json!({"type": "replace_metadata", "args": {"tables": [], "allowlist": [{"collection": "none"}]}}), 400, "not-exists", "$.args.allowlist[0].collection").await;
    // A relationship to an untracked table is reported with the table's reason.
    let r = s.ok(json!({"type": "replace_metadata", "version": 2, "args": {"allow_inconsistent_metadata": true, "metadata": {"tables": [
        {"table": "author", "array_relationships": [{"name": "articles", "using": {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}}}]}]}}})).await;
    assert_eq!(r["inconsistent_objects"][0]["type"], "array_relation");
    assert_eq!(
        r["inconsistent_objects"][0]["reason"],
        "table \"article\" does not exist"
    );
    assert_eq!(
        r["inconsistent_objects"][0]["definition"]["name"],
        "articles"
    );
}

#[tokio::test]
async fn reload_sees_database_changes_and_new_inconsistency_is_refused() {
    let s = TestServer::library().await;
    s.ok(json!({"type": "track_table", "args": {"table": "author"}}))
        .await;
    s.ok(json!({"type": "create_select_permission", "args": {"table": "author", "role": "user", "permission": {"columns": ["bio"], "filter": {}}}})).await;
    assert_eq!(
        s.ok(json!({"type": "reload_metadata", "args": {"reload_remote_schemas": true}}))
            .await,
        json!({"message": "success", "is_consistent": true})
    );
    s.sql("ALTER TABLE author DROP COLUMN bio").await;
    let r = s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    assert_eq!(r["is_consistent"], false);
    assert_eq!(r["inconsistent_objects"][0]["type"], "select_permission");
    assert_eq!(
        r["inconsistent_objects"][0]["reason"],
        "column \"bio\" does not exist"
    );
    // Existing inconsistencies do not block unrelated work…
    s.ok(json!({"type": "track_table", "args": {"table": "article"}}))
        .await;
    // …but an operation whose result makes another object inconsistent is refused.
    s.ok(json!({"type": "create_object_relationship", "args": {"table": "article", "name": "author", "using": {"foreign_key_constraint_on": "author_id"}}})).await;
    s.ok(json!({"type": "create_select_permission", "args": {"table": "author", "role": "guest", "permission": {"columns": ["id"], "filter": {}}}})).await;
    s.ok(json!({"type": "create_select_permission", "args": {"table": "article", "role": "guest", "permission": {"columns": ["id"], "filter": {"author": {"id": {"_gt": 0}}}}}})).await;
    s.sql("ALTER TABLE author RENAME TO writer").await;
    let r = s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    let types: Vec<&str> = r["inconsistent_objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["type"].as_str().unwrap())
        .collect();
    // The table, the two permissions defined on it, and what pointed at it.
    assert_eq!(
        types,
        [
            "table",
            "select_permission",
            "select_permission",
            "object_relation",
            "select_permission"
        ],
        "{r}"
    );
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    let exported = s.export().await;
    assert_eq!(
        exported,
        json!({"version": 2, "tables": [{"table": {"schema": "public", "name": "article"}}]})
    );
}

#[tokio::test]
async fn new_inconsistency_gate_rolls_back() {
    let s = TestServer::library().await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "args": {"table": "author"}},
        {"type": "track_table", "args": {"table": "article"}},
        {"type": "create_object_relationship", "args": {"table": "article", "name": "author", "using": {"foreign_key_constraint_on": "author_id"}}}
    ]})).await;
    // Renaming a table's custom root field onto another's is caught; nothing changes.
    let before = s.export().await;
    let r = s.fails(json!({"type": "replace_metadata", "args": {"tables": [{"table": "article"}, {"table": "author", "configuration": {"custom_root_fields": {"select": "article"}}}]}}), 400, "unexpected", "$.args").await;
    assert!(
        r["internal"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("conflicts"),
        "{r}"
    );
    assert_eq!(s.export().await, before);
}

#[tokio::test]
async fn later_feature_sections_are_shape_checked() {
    let s = TestServer::library().await;
    let with_trigger = |trigger: Value| json!({"type": "replace_metadata", "args": {"tables": [{"table": "author", "event_triggers": [trigger]}]}});
    let r = s.fails(with_trigger(json!({"name": "t", "definition": {"insert": {"columns": "*"}}, "webhook": "http://a", "webhook_from_env": "B"})),
        400, "parse-failed", "$.args.tables[0].event_triggers[0]").await;
    assert_eq!(
        r["error"],
        "only one of webhook or webhook_from_env should be given"
    );
    let r = s
        .fails(
            with_trigger(json!({"name": "t", "definition": {"insert": {"columns": "*"}}})),
            400,
            "parse-failed",
            "$.args.tables[0].event_triggers[0]",
        )
        .await;
    assert_eq!(r["error"], "must provide webhook or webhook_from_env");
    s.fails(
        with_trigger(json!({"name": "t", "definition": {}, "webhook": "http://a"})),
        400,
        "parse-failed",
        "$.args.tables[0].event_triggers[0].definition",
    )
    .await;
    s.fails(with_trigger(json!({"name": "bad name!", "definition": {"enable_manual": true}, "webhook": "http://a"})), 400, "parse-failed", "$.args.tables[0].event_triggers[0].name").await;
    s.fails(with_trigger(json!({"name": "t", "definition": {"update": {"columns": "*", "payload": []}}, "webhook": "http://a"})), 400, "parse-failed", "$.args.tables[0].event_triggers[0].definition.update.payload").await;
    s.fails(
        with_trigger(json!({"name": "t", "definition": {"update": {}}, "webhook": "http://a"})),
        400,
        "parse-failed",
        "$.args.tables[0].event_triggers[0].definition.update",
    )
    .await;
    s.fails(json!({"type": "replace_metadata", "args": {"tables": [], "remote_schemas": [{"name": "r", "definition": {}}]}}), 400, "invalid-params", "$.args.remote_schemas[0].definition").await;
    s.fails(json!({"type": "replace_metadata", "args": {"tables": [], "actions": [{"name": "a", "definition": {"handler": "http://h", "output_type": "O", "type": "query", "kind": "asynchronous"}}]}}), 400, "parse-failed", "$.args.actions[0].definition.kind").await;
    s.fails(json!({"type": "replace_metadata", "args": {"tables": [], "actions": [{"name": "a", "definition": {"output_type": "O"}}]}}), 400, "parse-failed", "$.args.actions[0].definition").await;
    // Defaults are filled in on export.
    s.ok(json!({"type": "track_table", "args": {"table": "author"}}))
        .await;
    s.ok(with_trigger(
        json!({"name": "t", "definition": {"insert": {"columns": "*"}}, "webhook": "http://a"}),
    ))
    .await;
    assert_eq!(
        s.export().await["tables"][0]["event_triggers"][0]["retry_conf"],
        json!({"num_retries": 0, "interval_sec": 10, "timeout_sec": 60})
    );
}

/// `dry_run` runs a write as it would run and rolls it back: the answer lists what would be
/// added, changed and removed, and the inconsistencies it would cause; nothing is stored, no
/// schema is rebuilt, no peer is notified.
#[tokio::test]
async fn dry_run_reports_and_changes_nothing() {
    let s = TestServer::library().await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "args": {"table": "author"}},
        {"type": "create_select_permission", "args": {"table": "author", "role": "user", "permission": {"columns": ["id"], "filter": {}}}}
    ]}))
    .await;
    let before = s.export().await;
    let version = s.running.state.snapshot().version;
    let builds = s.running.state.counters.snapshot().schema_builds;
    let config: tokio_postgres::Config = s.db_url.parse().unwrap();
    let mut listener = basalt::catalog::listen(&config, None).await.unwrap();
    let r = s
        .ok(json!({"type": "bulk", "dry_run": true, "args": [
            {"type": "run_sql", "args": {"sql": "CREATE TABLE scratch (id int PRIMARY KEY)"}},
            {"type": "track_table", "args": {"table": "scratch"}},
            {"type": "drop_select_permission", "args": {"table": "author", "role": "user"}},
            {"type": "create_select_permission", "args": {"table": "author", "role": "user", "permission": {"columns": ["id", "name"], "filter": {}}}},
            {"type": "track_table", "args": {"table": "article"}}
        ]}))
        .await;
    assert_eq!(r["dry_run"], true);
    let types = |key: &str| -> Vec<String> {
        r[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                format!(
                    "{} {}",
                    i["type"].as_str().unwrap(),
                    i["definition"]["table"]["name"]
                        .as_str()
                        .or(i["definition"]["table"].as_str())
                        .unwrap_or_default()
                )
            })
            .collect()
    };
    assert_eq!(types("added"), ["table article", "table scratch"], "{r}");
    assert_eq!(types("changed"), ["select_permission author"], "{r}");
    assert_eq!(
        r["changed"][0]["definition"]["permission"]["columns"],
        json!(["id", "name"])
    );
    assert_eq!(
        r["changed"][0]["previous"]["permission"]["columns"],
        json!(["id"])
    );
    assert_eq!(r["removed"], json!([]));
    assert_eq!(r["inconsistent_objects"], json!([]));
    // Nothing happened.
    assert_eq!(s.export().await, before);
    assert_eq!(s.running.state.snapshot().version, version);
    assert_eq!(s.running.state.counters.snapshot().schema_builds, builds);
    let exists = s
        .ok(json!({"type": "run_sql", "args": {"sql": "SELECT to_regclass('scratch') IS NULL"}}))
        .await;
    assert_eq!(exists["result"][1][0], "t", "the SQL was rolled back");
    let notified = tokio::time::timeout(
        std::time::Duration::from_millis(500),
        listener.payloads.recv(),
    )
    .await;
    assert!(notified.is_err(), "no NOTIFY: {notified:?}");
    // Removals, and the inconsistencies a change would leave behind (allowed by this operation).
    let r = s
        .ok(json!({"type": "replace_metadata", "version": 2, "dry_run": true, "args": {
            "allow_inconsistent_metadata": true,
            "metadata": {"version": 2, "tables": [{"table": {"schema": "public", "name": "ghost"}}]}}}))
        .await;
    assert_eq!(
        r["removed"].as_array().unwrap().len(),
        2,
        "the table and its permission: {r}"
    );
    assert_eq!(r["added"][0]["definition"]["table"]["name"], "ghost");
    assert_eq!(r["inconsistent_objects"][0]["type"], "table");
    assert_eq!(r["inconsistent_objects"][0]["definition"]["name"], "ghost");
    assert_eq!(s.export().await, before);
    // A request that would fail fails the same way, and a wrong flag is refused.
    s.fails(
        json!({"type": "track_table", "dry_run": true, "args": {"table": "author"}}),
        400,
        "already-tracked",
        "$.args",
    )
    .await;
    s.fails(
        json!({"type": "track_table", "dry_run": "yes", "args": {"table": "article"}}),
        400,
        "parse-failed",
        "$.dry_run",
    )
    .await;
    assert_eq!(s.export().await, before);
}
