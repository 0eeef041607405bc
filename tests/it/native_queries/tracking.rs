//! The contract's acceptance examples of the operations.

use super::{excerpt_model, excerpt_query, server};
use serde_json::json;

#[tokio::test]
async fn models_and_queries_are_tracked_and_checked_by_postgres() {
    let s = server().await;
    assert_eq!(s.ok(excerpt_model()).await, json!({"message": "success"}));
    assert_eq!(s.ok(excerpt_query()).await, json!({"message": "success"}));
    let (status, body) = s
        .query(json!({"type": "track_native_query", "args": {"root_field_name": "recent",
            "returns": "article_excerpt",
            "code": "SELECT id, title, content AS excerpt, published FROM article WHERE id > {{min_id}}"}}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"path": "$.args", "error": "The following columns are used in the query, but are not declared as arguments: \"min_id\"",
            "code": "validation-failed"})
    );
    s.ok(
        json!({"type": "track_logical_model", "args": {"name": "article_count",
        "fields": [{"name": "n", "type": {"scalar": "integer"}}]}}),
    )
    .await;
    let (status, body) = s
        .query(
            json!({"type": "track_native_query", "args": {"root_field_name": "count_articles",
            "returns": "article_count", "code": "SELECT count(*) AS n FROM article"}}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"path": "$.args", "error": "Failed to validate query", "code": "validation-failed",
            "internal": {"error": {"message": "Return column 'n' has a type mismatch. The expected type is 'integer', but the actual type is 'bigint'."}}})
    );
    let (status, body) = s
        .query(json!({"type": "track_native_query", "args": {"root_field_name": "like_q",
            "returns": "article_excerpt", "arguments": {"q": {"type": "text"}},
            "code": "SELECT id, title, content AS excerpt, published FROM article WHERE title LIKE '%{{q}}%'"}}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"path": "$.args", "error": "argument placeholder {{q}} is inside a quoted string or comment",
            "code": "validation-failed"})
    );
    s.ok(json!({"type": "track_native_query", "args": {"root_field_name": "article_search",
        "returns": "article_excerpt", "arguments": {"q": {"type": "text"}},
        "code": "SELECT id, title, content AS excerpt, published FROM article WHERE title ILIKE '%' || {{q}} || '%'"}}))
        .await;
    let (status, body) = s
        .query(json!({"type": "untrack_logical_model", "args": {"name": "article_excerpt"}}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"path": "$.args", "error": "cannot drop due to the following dependent objects : native query article_search, native query article_with_excerpt",
            "code": "dependency-error"})
    );
    let (status, body) = s
        .query(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE article RENAME COLUMN content TO body"}}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "unexpected");
    assert_eq!(
        body["error"],
        "cannot continue due to new inconsistent metadata"
    );
    let reasons: Vec<(&str, &str)> = body["internal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["definition"]["root_field_name"].as_str().unwrap(),
                i["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            (
                "article_with_excerpt",
                "Failed to validate query: column \"content\" does not exist"
            ),
            (
                "article_search",
                "Failed to validate query: column \"content\" does not exist"
            ),
        ]
    );
    // Nothing renamed.
    let columns = s
        .ok(json!({"type": "run_sql", "args": {"sql": "SELECT count(*) FROM information_schema.columns WHERE table_name = 'article' AND column_name = 'content'"}}))
        .await;
    assert_eq!(columns["result"][1][0], "1");
}

#[tokio::test]
async fn native_queries_answer_with_bound_arguments_under_the_models_permission() {
    let s = server().await;
    s.ok(excerpt_model()).await;
    s.ok(excerpt_query()).await;
    let answer = s
        .gql(r#"{ article_with_excerpt(args: {max_length: 5}, where: {published: {_gte: "2023-03-01"}}) { id excerpt } }"#)
        .await;
    assert_eq!(
        answer,
        json!({"data": {"article_with_excerpt": [{"id": 2, "excerpt": "Sed u"}]}})
    );
    s.ok(json!({"type": "track_native_query", "args": {"root_field_name": "article_search",
        "returns": "article_excerpt", "arguments": {"q": {"type": "text"}},
        "code": "SELECT id, title, content AS excerpt, published FROM article WHERE title ILIKE '%' || {{q}} || '%'"}}))
        .await;
    let answer = s
        .gql(r#"{ article_search(args: {q: "x'; DROP TABLE article; --"}) { id } }"#)
        .await;
    assert_eq!(answer, json!({"data": {"article_search": []}}));
    let rows = s
        .ok(json!({"type": "run_sql", "args": {"sql": "SELECT count(*) FROM article"}}))
        .await;
    assert_eq!(rows["result"][1][0], "3");
    s.ok(
        json!({"type": "create_logical_model_select_permission", "args": {"name": "article_excerpt",
        "role": "reader", "permission": {"columns": ["id", "title", "excerpt"],
            "filter": {"published": {"_is_null": false}}, "limit": 20}}}),
    )
    .await;
    let answer = s
        .gql_role(
            "{ article_with_excerpt(args: {max_length: 3}, order_by: {id: asc}) { id title } }",
            "reader",
            &[],
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {"article_with_excerpt": [{"id": 1, "title": "Hello"}, {"id": 2, "title": "Later"}]}})
    );
    let answer = s
        .gql_role(
            "{ article_with_excerpt(args: {max_length: 3}) { published } }",
            "reader",
            &[],
        )
        .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"],
        "validation-failed"
    );
    assert_eq!(
        answer["errors"][0]["message"],
        "field \"published\" not found in type: 'article_excerpt'"
    );
}

#[tokio::test]
async fn native_queries_run_read_only() {
    let s = server().await;
    s.sql("CREATE FUNCTION touch() RETURNS int LANGUAGE sql VOLATILE AS $$ UPDATE article SET title = title || '!' RETURNING 1 $$")
        .await;
    s.ok(excerpt_model()).await;
    s.ok(
        json!({"type": "track_native_query", "args": {"root_field_name": "touching",
        "returns": "article_excerpt",
        "code": "SELECT id, title, content AS excerpt, published FROM article WHERE touch() = 1"}}),
    )
    .await;
    let answer = s.gql("{ touching { id } }").await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "unexpected",
        "{answer}"
    );
    assert_eq!(
        answer["errors"][0]["message"], "database query error",
        "{answer}"
    );
    let titles = s
        .ok(json!({"type": "run_sql", "args": {"sql": "SELECT count(*) FROM article WHERE title LIKE '%!'"}}))
        .await;
    assert_eq!(titles["result"][1][0], "0", "nothing was written");
}

/// The statement of a native query read as a role: its code a subquery of the one statement,
/// the argument a parameter cast to its type, the model's permission and the client's `where`
/// over its rows.
#[tokio::test]
async fn the_code_is_a_subquery_of_the_one_statement() {
    let s = server().await;
    s.ok(excerpt_model()).await;
    s.ok(excerpt_query()).await;
    s.ok(json!({"type": "create_logical_model_select_permission", "args": {"name": "article_excerpt",
        "role": "reader", "permission": {"columns": "*", "filter": {"id": {"_eq": "X-Svc-User-Id"}}}}}))
        .await;
    let body = json!({"query": {"query": "{ article_with_excerpt(args: {max_length: 3}, where: {title: {_like: \"H%\"}}) { id } }"},
        "user": {"X-Svc-Role": "reader", "X-Svc-User-Id": "1"}});
    let explained: serde_json::Value = s
        .http
        .post(format!("{}/v1/graphql/explain", s.base))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let sql = explained[0]["sql"].as_str().unwrap();
    let expected = "SELECT json_build_object('article_with_excerpt', (SELECT coalesce(json_agg(_t2.\"__j\"), '[]'::json) \
        FROM (SELECT json_build_object('id', _t1.\"id\") AS \"__j\" \
        FROM (SELECT id, title, substring(content, 1, $2::integer) AS excerpt, published FROM article\n) AS _t1 \
        WHERE (_t1.\"id\" = $3::integer) AND (_t1.\"title\" LIKE $4::text)) AS _t2)) AS data \
        FROM (SELECT set_config('basalt.user', $1, true)) AS _session";
    assert_eq!(sql, expected);
}

#[tokio::test]
async fn names_arrays_and_filters_are_refused_with_their_own_errors() {
    let s = server().await;
    // The table author's type is taken.
    let body = s
        .fails(
            json!({"type": "track_logical_model", "args": {"name": "author",
                "fields": [{"name": "id", "type": {"scalar": "integer"}}]}}),
            400,
            "constraint-violation",
            "$.args",
        )
        .await;
    assert_eq!(
        body["error"],
        "logical model \"author\" conflicts with existing field or type \"author\""
    );
    s.fails(
        json!({"type": "track_logical_model", "args": {"name": "m",
            "fields": [{"name": "tags", "type": {"array": {"scalar": "text"}}}]}}),
        400,
        "not-supported",
        "$.args.fields[0].type.array",
    )
    .await;
    s.fails(
        json!({"type": "track_logical_model", "args": {"name": "m",
            "fields": [{"name": "a", "type": {"scalar": "text"}}, {"name": "a", "type": {"scalar": "text"}}]}}),
        400,
        "parse-failed",
        "$.args.fields[1].name",
    )
    .await;
    let body = s
        .fails(
            json!({"type": "track_logical_model", "args": {"name": "m",
                "fields": [{"name": "a", "type": {"scalar": "no_such_type"}}]}}),
            400,
            "not-exists",
            "$.args",
        )
        .await;
    assert_eq!(body["error"], "type \"no_such_type\" does not exist");
    s.ok(excerpt_model()).await;
    let body = s
        .fails(
            json!({"type": "create_logical_model_select_permission", "args": {"name": "article_excerpt",
                "role": "reader", "permission": {"columns": "*", "filter": {"nope": {"_eq": 1}}}}}),
            400,
            "not-exists",
            "$.args.permission.filter.nope",
        )
        .await;
    assert!(body["error"].as_str().unwrap().contains("nope"), "{body}");
    // A missing model, in a bulk: the error of the operation that named it, at its path.
    let body = s
        .fails(
            json!({"type": "bulk", "args": [
                {"type": "track_native_query", "args": {"root_field_name": "q1", "returns": "article_excerpt",
                    "code": "SELECT id, title, content AS excerpt, published FROM article"}},
                {"type": "track_native_query", "args": {"root_field_name": "q2", "returns": "nothing",
                    "code": "SELECT 1"}}]}),
            400,
            "not-found",
            "$.args[1].args",
        )
        .await;
    assert_eq!(body["error"], "Logical model \"nothing\" not found.");
    // Untracked and tracked again in one bulk: a replacement its query survives.
    s.ok(json!({"type": "track_native_query", "args": {"root_field_name": "q1", "returns": "article_excerpt",
        "code": "SELECT id, title, content AS excerpt, published FROM article"}}))
        .await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "untrack_logical_model", "args": {"name": "article_excerpt"}},
        excerpt_model()]}))
        .await;
}
