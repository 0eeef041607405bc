//! The contract's acceptance examples of tracking, permissions and calls.

use super::{as_reader, server, setup, FIXTURE};
use crate::harness::{fresh_database, run_sql, TestServer};
use serde_json::json;

#[tokio::test]
async fn a_search_function_is_tracked_once_and_read_under_the_select_filter() {
    let s = server().await;
    let track =
        json!({"type": "track_function", "args": {"schema": "public", "name": "search_articles"}});
    assert_eq!(s.ok(track.clone()).await, json!({"message": "success"}));
    let (status, body) = s.query(track).await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"path": "$.args", "error": "function already tracked: \"search_articles\"",
            "code": "already-tracked"})
    );
    let answer = as_reader(
        &s,
        r#"{ search_articles(args: {search: "graphql"}, order_by: {id: asc}) { id title } }"#,
    )
    .await;
    assert_eq!(
        answer,
        json!({"data": {"search_articles": [{"id": 1, "title": "GraphQL intro"}]}})
    );
    // The admin sees the unpublished row; the default of max_id applies when it is left out.
    let answer = s
        .gql(r#"{ search_articles(args: {search: "graphql"}, order_by: {id: desc}) { id } }"#)
        .await;
    assert_eq!(
        answer,
        json!({"data": {"search_articles": [{"id": 3}, {"id": 1}]}})
    );
    let answer = as_reader(&s, r#"{ search_articles(args: {max_id: 2}) { id } }"#).await;
    assert_eq!(
        answer,
        json!({"errors": [{"message": "Non default arguments cannot be omitted",
            "extensions": {"path": "$.selectionSet.search_articles.args.args", "code": "not-supported"}}]})
    );
}

#[tokio::test]
async fn the_session_argument_must_be_an_input_argument_of_type_json() {
    let s = server().await;
    let body = s
        .fails(
            json!({"type": "track_function", "version": 2, "args": {"function": "count_view",
                "configuration": {"session_argument": "session"}}}),
            400,
            "constraint-violation",
            "$.args",
        )
        .await;
    let reason = "in function \"count_view\": the function \"count_view\" cannot be tracked because given session argument \"session\" not the input argument of the function";
    assert_eq!(
        body,
        json!({"path": "$.args", "error": reason, "code": "constraint-violation",
            "internal": [{"definition": {"schema": "public", "name": "count_view"},
                "reason": reason, "type": "function"}]})
    );
}

#[tokio::test]
async fn a_mutation_function_needs_a_grant_and_its_rows_follow_the_select_permission() {
    let s = server().await;
    s.ok(
        json!({"type": "track_function", "version": 2, "args": {"function": "count_view",
        "configuration": {"session_argument": "basalt_session"}}}),
    )
    .await;
    let bump =
        |id: i64| format!("mutation {{ count_view(args: {{article_id: {id}}}) {{ id title }} }}");
    assert_eq!(
        as_reader(&s, &bump(1)).await,
        json!({"errors": [{"message": "no mutations exist",
            "extensions": {"path": "$", "code": "validation-failed"}}]})
    );
    let body = s
        .fails(
            json!({"type": "create_function_permission", "args": {"function": "count_view", "role": "guest"}}),
            400,
            "not-supported",
            "$.args",
        )
        .await;
    assert_eq!(body["error"], "function permission can only be added when the function's return table \"article\" has select permission configured for role: \"guest\"");
    s.ok(json!({"type": "create_function_permission", "args": {"function": "count_view", "role": "reader"}}))
        .await;
    assert_eq!(
        as_reader(&s, &bump(1)).await,
        json!({"data": {"count_view": {"id": 1, "title": "GraphQL intro"}}})
    );
    // Row 3 is not published: the write stays, the row is hidden.
    assert_eq!(
        as_reader(&s, &bump(3)).await,
        json!({"data": {"count_view": null}})
    );
    let views = s.gql("{ article(order_by: {id: asc}) { views } }").await;
    assert_eq!(
        views,
        json!({"data": {"article": [{"views": 1}, {"views": 0}, {"views": 1}]}})
    );
    // The grant is exported with the function, and dropped on request.
    let exported = s.export().await;
    assert_eq!(
        exported["functions"],
        json!([{"function": {"schema": "public", "name": "count_view"},
            "configuration": {"session_argument": "basalt_session"},
            "permissions": [{"role": "reader"}]}])
    );
    s.ok(json!({"type": "drop_function_permission", "args": {"function": "count_view", "role": "reader"}}))
        .await;
    let body = s
        .fails(
            json!({"type": "drop_function_permission", "args": {"function": "count_view", "role": "reader"}}),
            400,
            "not-exists",
            "$.args",
        )
        .await;
    assert_eq!(
        body["error"],
        "permission of role \"reader\" does not exist for function \"count_view\" in source: \"default\""
    );
}

#[tokio::test]
async fn without_inferred_permissions_a_query_function_needs_a_grant() {
    let db = fresh_database().await;
    run_sql(&db, FIXTURE).await;
    let s = TestServer::on(&db, |c| c.infer_function_permissions = false).await;
    setup(&s).await;
    s.ok(json!({"type": "track_function", "args": {"name": "search_articles"}}))
        .await;
    let query = r#"{ search_articles(args: {search: "x"}) { id } }"#;
    assert_eq!(
        as_reader(&s, query).await,
        json!({"errors": [{"message": "field \"search_articles\" not found in type: 'query_root'",
            "extensions": {"path": "$.selectionSet.search_articles", "code": "validation-failed"}}]})
    );
    s.ok(json!({"type": "create_function_permission", "args": {"function": "search_articles", "role": "reader"}}))
        .await;
    assert_eq!(
        as_reader(&s, query).await,
        json!({"data": {"search_articles": []}})
    );
}

#[tokio::test]
async fn names_sources_and_grants_are_checked_as_the_contract_says() {
    let s = server().await;
    s.sql("CREATE FUNCTION articles_again(search text) RETURNS SETOF article AS $$ SELECT * FROM article $$ LANGUAGE sql STABLE;
           CREATE FUNCTION twice(arg_1 int, int) RETURNS SETOF article AS $$ SELECT * FROM article $$ LANGUAGE sql STABLE;")
        .await;
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    // A source other than default is refused before anything else is looked at.
    let body = s
        .fails(
            json!({"type": "track_function", "args": {"function": "search_articles", "source": "other",
                "configuration": {"response": {}}}}),
            400,
            "not-exists",
            "$.args",
        )
        .await;
    assert_eq!(body["error"], "source with name \"other\" does not exist");
    s.fails(
        json!({"type": "track_function", "args": {"function": "search_articles",
            "configuration": {"response": {}}}}),
        400,
        "not-supported",
        "$.args.configuration.response",
    )
    .await;
    s.fails(
        json!({"type": "track_function", "args": {"function": "search_articles",
            "configuration": {"custom_root_fields": {"function": "a", "function_aggregate": "a"}}}}),
        400,
        "parse-failed",
        "$.args.configuration.custom_root_fields",
    )
    .await;
    // Two functions may not share their arguments type, nor a field name with a table.
    s.ok(json!({"type": "track_function", "args": {"function": "search_articles"}}))
        .await;
    let body = s
        .fails(
            json!({"type": "track_function", "version": 2, "args": {"function": "articles_again",
                "configuration": {"custom_name": "search_articles"}}}),
            400,
            "constraint-violation",
            "$.args",
        )
        .await;
    assert_eq!(
        body["error"],
        "function \"articles_again\" conflicts with existing field or type \"search_articles\""
    );
    let body = s
        .fails(
            json!({"type": "track_function", "version": 2, "args": {"function": "articles_again",
                "configuration": {"custom_root_fields": {"function": "article_aggregate"}}}}),
            400,
            "constraint-violation",
            "$.args",
        )
        .await;
    assert!(body["error"]
        .as_str()
        .unwrap()
        .contains("\"article_aggregate\""));
    let body = s
        .fails(
            json!({"type": "track_function", "args": {"function": "twice"}}),
            400,
            "constraint-violation",
            "$.args",
        )
        .await;
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("the function arguments arg_1 are named twice"),
        "{body}"
    );
    // A grant on a function that is inconsistent says why.
    s.ok(json!({"type": "run_sql", "args": {"sql": "DROP FUNCTION search_articles", "check_metadata_consistency": false}}))
        .await;
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    let body = s
        .fails(
            json!({"type": "create_function_permission", "args": {"function": "search_articles", "role": "reader"}}),
            400,
            "constraint-violation",
            "$.args",
        )
        .await;
    assert_eq!(
        body["error"],
        "in function \"search_articles\": no such function exists: \"search_articles\""
    );
}

#[tokio::test]
async fn a_single_row_function_returning_null_answers_null() {
    let s = server().await;
    s.ok(
        json!({"type": "track_function", "version": 2, "args": {"function": "count_view",
        "configuration": {"session_argument": "basalt_session"}}}),
    )
    .await;
    let answer = s
        .gql("mutation { count_view(args: {article_id: 99}) { id title } }")
        .await;
    assert_eq!(answer, json!({"data": {"count_view": null}}));
}

#[tokio::test]
async fn replace_metadata_checks_grants_as_create_function_permission_does() {
    let s = server().await;
    let mut document = s.export().await;
    document["functions"] = json!([{"function": "count_view",
        "configuration": {"session_argument": "basalt_session"}, "permissions": [{"role": "guest"}]}]);
    let body = s
        .fails(
            json!({"type": "replace_metadata", "args": document.clone()}),
            400,
            "not-supported",
            "$.args.functions[0].permissions[0]",
        )
        .await;
    assert!(body["error"].as_str().unwrap().contains("role: \"guest\""));
    document["functions"][0]["configuration"] = json!({"response": {}});
    s.fails(
        json!({"type": "replace_metadata", "args": document}),
        400,
        "not-supported",
        "$.args.functions[0].configuration.response",
    )
    .await;
}
