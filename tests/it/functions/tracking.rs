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
