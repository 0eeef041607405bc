//! Which root fields a table offers: `custom_root_fields.select_stream` (the name of
//! `<t>_stream`), and a select permission's `query_root_fields` / `subscription_root_fields`
//! (`docs/metadata-api.md`, "Permissions"): accepted, exported as given, and refused with the
//! exact bodies of the API, through the operations and through `replace_metadata`.

use crate::harness::TestServer;
use serde_json::{json, Value};

/// The library fixture with author, article and `reporting.daily` tracked.
async fn tracked() -> TestServer {
    let s = TestServer::library().await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "args": {"table": "author"}},
        {"type": "track_table", "args": {"table": "article"}},
        {"type": "track_table", "args": {"table": {"schema": "reporting", "name": "daily"}}}
    ]}))
    .await;
    s
}

fn select(table: Value, role: &str, permission: Value) -> Value {
    json!({"type": "create_select_permission", "args": {"table": table, "role": role, "permission": permission}})
}

/// The select permissions of table `i` of the export.
async fn selects(s: &TestServer, i: usize) -> Value {
    s.export().await["tables"][i]["select_permissions"].clone()
}

#[tokio::test]
async fn root_field_lists_are_stored_and_exported_as_given() {
    let s = tracked().await;
    s.ok(select(
        json!("article"),
        "user",
        json!({"columns": ["id", "title"], "filter": {}, "query_root_fields": ["select", "select_by_pk"],
            "subscription_root_fields": []}),
    ))
    .await;
    s.ok(select(
        json!("article"),
        "guest",
        json!({"columns": ["id"], "filter": {}, "allow_aggregations": true, "query_root_fields": null,
            "subscription_root_fields": ["select", "select_aggregate", "select_stream"]}),
    ))
    .await;
    // `null` is left out, `[]` is kept, and both keys come after the others.
    let exported = selects(&s, 1).await;
    assert_eq!(
        exported,
        json!([
            {"role": "user", "permission": {"columns": ["id", "title"], "filter": {},
                "query_root_fields": ["select", "select_by_pk"], "subscription_root_fields": []}},
            {"role": "guest", "permission": {"columns": ["id"], "filter": {}, "allow_aggregations": true,
                "subscription_root_fields": ["select", "select_aggregate", "select_stream"]}}
        ])
    );
    let keys: Vec<String> = exported[1]["permission"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        keys,
        [
            "columns",
            "filter",
            "allow_aggregations",
            "subscription_root_fields"
        ]
    );

    // The export replaces as it is, and comes back the same.
    let before = s.export().await;
    s.ok(json!({"type": "replace_metadata", "args": before.clone()}))
        .await;
    assert_eq!(s.export().await, before);
}

#[tokio::test]
async fn a_root_field_outside_the_list_is_a_parse_error_at_its_index() {
    let s = tracked().await;
    let (status, body) = s
        .query(select(
            json!("article"),
            "user",
            json!({"columns": "*", "filter": {}, "query_root_fields": ["select", "select_stream"]}),
        ))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"path": "$.args.permission.query_root_fields[1]",
            "error": "unknown variant `select_stream`, expected one of `select`, `select_by_pk`, `select_aggregate`",
            "code": "parse-failed"})
    );
    let (status, body) = s
        .query(select(
            json!("article"),
            "user",
            json!({"columns": "*", "filter": {}, "subscription_root_fields": ["selects"]}),
        ))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"path": "$.args.permission.subscription_root_fields[0]",
            "error": "unknown variant `selects`, expected one of `select`, `select_by_pk`, `select_aggregate`, `select_stream`",
            "code": "parse-failed"})
    );
    // In a bulk, under the element's path.
    s.fails(
        json!({"type": "bulk", "args": [
            {"type": "create_select_permission", "args": {"table": "author", "role": "user", "permission": {"columns": "*", "filter": {}}}},
            select(json!("article"), "user", json!({"columns": "*", "filter": {}, "subscription_root_fields": ["select", 3]}))
        ]}),
        400,
        "parse-failed",
        "$.args[1].args.permission.subscription_root_fields[1]",
    )
    .await;

    // In a metadata document, at the value's place in the document.
    let mut document = s.export().await;
    document["tables"][1]["select_permissions"] = json!([{"role": "user",
        "permission": {"columns": "*", "filter": {}, "query_root_fields": ["select", "select_by_pk", "select_stream"]}}]);
    s.fails(
        json!({"type": "replace_metadata", "args": document.clone()}),
        400,
        "parse-failed",
        "$.args.tables[1].select_permissions[0].permission.query_root_fields[2]",
    )
    .await;
    s.fails(
        json!({"type": "replace_metadata", "version": 2, "args": {"metadata": document}}),
        400,
        "parse-failed",
        "$.args.metadata.tables[1].select_permissions[0].permission.query_root_fields[2]",
    )
    .await;
    assert_eq!(selects(&s, 1).await, Value::Null, "nothing was stored");
}

#[tokio::test]
async fn select_aggregate_is_listed_only_with_allow_aggregations() {
    let s = tracked().await;
    let daily = json!({"schema": "reporting", "name": "daily"});
    let (status, body) = s
        .query(select(
            daily.clone(),
            "user",
            json!({"columns": "*", "filter": {}, "query_root_fields": ["select_aggregate"]}),
        ))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"path": "$.args",
            "error": "in table \"reporting.daily\": in permission for role \"user\": \"select_aggregate\" can only be listed when \"allow_aggregations\" is true",
            "code": "invalid-params"})
    );
    let (status, body) = s
        .query(select(
            json!("article"),
            "user",
            json!({"columns": "*", "filter": {}, "allow_aggregations": false,
                "query_root_fields": ["select"], "subscription_root_fields": ["select_stream", "select_aggregate"]}),
        ))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"path": "$.args",
            "error": "in table \"article\": in permission for role \"user\": \"select_aggregate\" can only be listed when \"allow_aggregations\" is true",
            "code": "invalid-params"})
    );
    s.fails(
        json!({"type": "bulk", "args": [select(json!("article"), "user",
            json!({"columns": "*", "filter": {}, "subscription_root_fields": ["select_aggregate"]}))]}),
        400,
        "invalid-params",
        "$.args[0].args",
    )
    .await;
    assert_eq!(selects(&s, 1).await, Value::Null, "nothing was stored");
    // With aggregates allowed, either list may name it.
    s.ok(select(
        daily,
        "user",
        json!({"columns": "*", "filter": {}, "allow_aggregations": true,
            "query_root_fields": ["select_aggregate"], "subscription_root_fields": ["select_aggregate"]}),
    ))
    .await;

    // The same rule in a metadata document, at the permission's entry.
    let before = s.export().await;
    let mut document = before.clone();
    document["tables"][1]["select_permissions"] = json!([{"role": "user",
        "permission": {"columns": "*", "filter": {}, "subscription_root_fields": ["select", "select_aggregate"]}}]);
    let (status, body) = s
        .query(json!({"type": "replace_metadata", "args": document.clone()}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"path": "$.args.tables[1].select_permissions[0]",
            "error": "in table \"article\": in permission for role \"user\": \"select_aggregate\" can only be listed when \"allow_aggregations\" is true",
            "code": "invalid-params"})
    );
    s.fails(
        json!({"type": "replace_metadata", "version": 2,
            "args": {"allow_inconsistent_metadata": true, "metadata": document}}),
        400,
        "invalid-params",
        "$.args.metadata.tables[1].select_permissions[0]",
    )
    .await;
    assert_eq!(s.export().await, before);
}

#[tokio::test]
async fn select_stream_renames_the_stream_and_is_checked_for_clashes() {
    let s = tracked().await;
    s.ok(
        json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "article",
        "custom_root_fields": {"select_stream": "articleFeed"}}}),
    )
    .await;
    assert_eq!(
        s.export().await["tables"][1]["configuration"],
        json!({"custom_root_fields": {"select_stream": "articleFeed"}, "custom_column_names": {}})
    );
    // Sent in any order, exported in the documented order: after `select_aggregate`.
    s.ok(
        json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "article",
        "custom_root_fields": {"insert": "addArticles", "select_stream": "articleFeed",
            "select_aggregate": "articleStats", "select": "articles"}}}),
    )
    .await;
    let roots = &s.export().await["tables"][1]["configuration"]["custom_root_fields"];
    assert_eq!(
        roots.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["select", "select_aggregate", "select_stream", "insert"],
        "{roots}"
    );

    // track_table v2 takes it too; the export writes it back.
    s.ok(json!({"type": "untrack_table", "args": {"table": "author"}}))
        .await;
    s.ok(
        json!({"type": "track_table", "version": 2, "args": {"table": "author",
        "configuration": {"custom_root_fields": {"select_stream": "authorFeed"}}}}),
    )
    .await;
    let author = &s.export().await["tables"][2];
    assert_eq!(author["table"]["name"], "author");
    assert_eq!(
        author["configuration"]["custom_root_fields"],
        json!({"select_stream": "authorFeed"})
    );

    // Refused like the other keys, leaving the configuration as it was.
    let r = s
        .fails(
            json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "author",
            "custom_root_fields": {"select": "authorFeed", "select_stream": "authorFeed"}}}),
            400,
            "constraint-violation",
            "$.args.custom_root_fields.select_stream",
        )
        .await;
    assert_eq!(
        r["error"],
        "the custom root fields \"select\" and \"select_stream\" of table \"author\" have the same name \"authorFeed\""
    );
    let r = s
        .fails(
            json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "author",
            "custom_root_fields": {"select_stream": "articleFeed"}}}),
            400,
            "constraint-violation",
            "$.args.custom_root_fields.select_stream",
        )
        .await;
    assert_eq!(
        r["error"],
        "the root field \"articleFeed\" of table \"author\" conflicts with a root field of table \"article\""
    );
    // Another table's default `<t>_stream` counts too.
    let r = s
        .fails(
            json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "author",
            "custom_root_fields": {"select_stream": "reporting_daily_stream"}}}),
            400,
            "constraint-violation",
            "$.args.custom_root_fields.select_stream",
        )
        .await;
    assert_eq!(
        r["error"],
        "the root field \"reporting_daily_stream\" of table \"author\" conflicts with a root field of table \"reporting.daily\""
    );
    s.fails(
        json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "author",
            "custom_root_fields": {"select_stream": "__feed"}}}),
        400,
        "not-supported",
        "$.args.custom_root_fields.select_stream",
    )
    .await;
    assert_eq!(
        s.export().await["tables"][2]["configuration"]["custom_root_fields"],
        json!({"select_stream": "authorFeed"})
    );
}
