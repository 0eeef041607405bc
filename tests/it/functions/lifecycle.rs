//! Tracked functions through `run_sql`, DDL Basalt did not run, and the metadata operations
//! that remove them.

use super::{as_reader, server};
use serde_json::json;

fn run_sql(sql: &str) -> serde_json::Value {
    json!({"type": "run_sql", "args": {"sql": sql}})
}

#[tokio::test]
async fn overloading_a_tracked_function_is_refused_and_dropping_one_takes_its_grants() {
    let s = server().await;
    s.ok(
        json!({"type": "track_function", "args": {"schema": "public", "name": "search_articles"}}),
    )
    .await;
    s.ok(
        json!({"type": "track_function", "version": 2, "args": {"function": "count_view",
        "configuration": {"session_argument": "basalt_session"}}}),
    )
    .await;
    s.ok(json!({"type": "create_function_permission", "args": {"function": "count_view", "role": "reader"}}))
        .await;
    let (status, body) = s
        .query(run_sql("CREATE FUNCTION search_articles(search text, flag boolean) RETURNS SETOF article AS $$ SELECT * FROM article $$ LANGUAGE sql STABLE"))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"path": "$", "error": "the following tracked function(s) cannot be overloaded: search_articles",
            "code": "not-supported"})
    );
    let overloads = s
        .ok(run_sql(
            "SELECT count(*) FROM pg_proc WHERE proname = 'search_articles'",
        ))
        .await;
    assert_eq!(overloads["result"][1][0], "1", "nothing created");
    assert_eq!(
        s.ok(run_sql("DROP FUNCTION count_view")).await,
        json!({"result_type": "CommandOk", "result": null})
    );
    assert_eq!(
        s.export().await["functions"],
        json!([{"function": {"schema": "public", "name": "search_articles"}}])
    );
}

#[tokio::test]
async fn a_function_is_a_dependent_of_its_table_and_keeps_to_its_volatility() {
    let s = server().await;
    s.ok(json!({"type": "track_function", "args": {"name": "search_articles"}}))
        .await;
    let (status, body) = s
        .query(run_sql("CREATE OR REPLACE FUNCTION search_articles(search text, max_id int DEFAULT 1000) RETURNS SETOF article AS $$ SELECT * FROM article $$ LANGUAGE sql VOLATILE"))
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "not-supported");
    assert_eq!(
        body["error"],
        "type of function \"search_articles\" is altered to \"VOLATILE\" which is not supported now"
    );
    // A return type no table has breaks a rule: refused as a new inconsistency.
    let (status, body) = s
        .query(run_sql("DROP FUNCTION search_articles(text, int); CREATE FUNCTION search_articles(search text) RETURNS SETOF int AS $$ SELECT 1 $$ LANGUAGE sql STABLE"))
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "unexpected");
    assert_eq!(
        body["error"],
        "cannot continue due to new inconsistent metadata"
    );
    assert_eq!(body["internal"][0]["type"], "function");
    let (status, body) = s.query(run_sql("DROP TABLE article CASCADE")).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "dependency-error");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("function search_articles"),
        "{body}"
    );
    let body = s
        .fails(
            json!({"type": "untrack_table", "args": {"table": "article"}}),
            400,
            "dependency-error",
            "$.args",
        )
        .await;
    assert!(body["error"]
        .as_str()
        .unwrap()
        .contains("function search_articles"));
    s.ok(json!({"type": "untrack_table", "args": {"table": "article", "cascade": true}}))
        .await;
    assert_eq!(s.export().await.get("functions"), None);
}

#[tokio::test]
async fn a_function_broken_outside_basalt_is_reported_and_can_be_untracked() {
    let s = server().await;
    s.ok(json!({"type": "track_function", "args": {"name": "search_articles"}}))
        .await;
    s.sql("DROP FUNCTION search_articles").await;
    let reload = s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    assert_eq!(reload["is_consistent"], false);
    let listed = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(
        listed["inconsistent_objects"],
        json!([{"type": "function", "definition": {"schema": "public", "name": "search_articles"},
            "reason": "in function \"search_articles\": no such function exists: \"search_articles\"",
            "owner": "api"}])
    );
    let answer = as_reader(&s, r#"{ search_articles(args: {search: "x"}) { id } }"#).await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"],
        "validation-failed"
    );
    s.ok(json!({"type": "untrack_function", "args": {"function": "search_articles"}}))
        .await;
    let body = s
        .fails(
            json!({"type": "untrack_function", "args": {"function": "search_articles"}}),
            400,
            "not-exists",
            "$.args",
        )
        .await;
    assert_eq!(
        body["error"],
        "function \"search_articles\" does not exist in source: default"
    );
    // Tracked again, broken again, then dropped with the rest of the inconsistent metadata.
    s.sql("CREATE FUNCTION search_articles(search text) RETURNS SETOF article AS $$ SELECT * FROM article $$ LANGUAGE sql STABLE").await;
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    s.ok(json!({"type": "track_function", "args": {"name": "search_articles"}}))
        .await;
    s.sql("DROP FUNCTION search_articles").await;
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(s.export().await.get("functions"), None);
}

#[tokio::test]
async fn replace_metadata_reads_both_forms_and_clear_metadata_removes_functions() {
    let s = server().await;
    let mut document = s.export().await;
    document["version"] = json!(1);
    document["functions"] = json!(["search_articles"]);
    s.ok(json!({"type": "replace_metadata", "args": document.clone()}))
        .await;
    assert_eq!(
        s.export().await["functions"],
        json!([{"function": {"schema": "public", "name": "search_articles"}}])
    );
    document["functions"] = json!([{"function": "count_view",
        "configuration": {"session_argument": "basalt_session", "exposed_as": "query",
            "custom_root_fields": {"function": "countView"}},
        "permissions": [{"role": "reader"}, {"role": "reader"}]}]);
    let body = s
        .fails(
            json!({"type": "replace_metadata", "args": document.clone()}),
            400,
            "parse-failed",
            "$.args.functions[0].permissions[1].role",
        )
        .await;
    assert_eq!(body["error"], "duplicate permission for role \"reader\"");
    // A query-exposed VOLATILE function with a custom field name.
    document["functions"][0]["permissions"] = json!([{"role": "reader"}]);
    s.ok(json!({"type": "replace_metadata", "args": document}))
        .await;
    let answer = as_reader(&s, "{ countView(args: {article_id: 2}) { id } }").await;
    assert_eq!(answer, json!({"data": {"countView": {"id": 2}}}));
    s.ok(json!({"type": "clear_metadata", "args": {}})).await;
    assert_eq!(s.export().await.get("functions"), None);
}
