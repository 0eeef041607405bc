//! Relationships of native queries (`docs/native-queries.md`, "Relationships"): to tables and
//! to other native queries, their checks, who sees them, and what untracking their targets does.

use super::server;
use serde_json::{json, Value};

/// Two models that point at each other: a writer with their posts, a post with its writer.
fn models() -> Vec<Value> {
    vec![
        json!({"type": "track_logical_model", "args": {"name": "writer_row",
            "description": "someone who writes", "fields": [{"name": "id", "type": {"scalar": "integer"}},
                {"name": "name", "type": {"scalar": "text", "nullable": true}, "description": "as signed"},
                {"name": "posts", "type": {"array": {"logical_model": "post_row"}, "nullable": true}}]}}),
        json!({"type": "track_logical_model", "args": {"name": "post_row",
            "fields": [{"name": "id", "type": {"scalar": "integer"}},
                {"name": "title", "type": {"scalar": "text"}},
                {"name": "author_id", "type": {"scalar": "integer", "nullable": true}},
                {"name": "writer", "type": {"logical_model": "writer_row", "nullable": true}}]}}),
    ]
}

/// `posts` (with an argument) and `writers`, each with a relationship to the other, and
/// `posts` with one to the `author` table.
fn queries() -> Vec<Value> {
    vec![
        json!({"type": "track_native_query", "args": {"root_field_name": "writers",
            "returns": "writer_row", "code": "SELECT id, name FROM author",
            "array_relationships": [{"name": "posts",
                "using": {"column_mapping": {"id": "author_id"}, "remote_native_query": "posts"}}]}}),
        json!({"type": "track_native_query", "args": {"root_field_name": "posts",
            "returns": "post_row", "arguments": {"min_id": {"type": "integer"}},
            "code": "SELECT id, title, author_id FROM article WHERE id >= {{min_id}}",
            "object_relationships": [
                {"name": "writer", "using": {"column_mapping": {"author_id": "id"}, "remote_native_query": "writers"}},
                {"name": "author", "using": {"column_mapping": {"author_id": "id"},
                    "remote_table": {"schema": "public", "name": "author"}}}]}}),
    ]
}

/// A server with both models and both queries, tracked in one bulk in an order where each
/// query names the other before it exists.
async fn related() -> crate::harness::TestServer {
    let s = server().await;
    let mut ops = queries();
    ops.extend(models());
    s.ok(json!({"type": "bulk", "args": ops})).await;
    s
}

#[tokio::test]
async fn relationships_join_tables_and_native_queries_in_the_one_statement() {
    let s = related().await;
    let data = s
        .gql(
            r#"{ posts(args: {min_id: 2}, order_by: {id: asc}) { id title writer { name } author { name } }
                 writers { name posts(args: {min_id: 1}, order_by: {id: desc}, limit: 2) { id writer { id } } } }"#,
        )
        .await;
    assert_eq!(
        data,
        json!({"data": {
            "posts": [{"id": 2, "title": "Later", "writer": {"name": "Ann"}, "author": {"name": "Ann"}},
                {"id": 3, "title": "Draft", "writer": {"name": "Ann"}, "author": {"name": "Ann"}}],
            "writers": [{"name": "Ann", "posts": [{"id": 3, "writer": {"id": 1}}, {"id": 2, "writer": {"id": 1}}]}]}})
    );
    // One statement, each query's code a subquery of it with its argument bound.
    let body = json!({"query": {"query": "{ writers { posts(args: {min_id: 2}) { id writer { name } author { name } } } }"}});
    let explained: Value = s
        .http
        .post(format!("{}/v1/graphql/explain", s.base))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(explained.as_array().map(Vec::len), Some(1), "{explained}");
    let sql = explained[0]["sql"].as_str().unwrap();
    assert_eq!(
        sql.matches("(SELECT id, name FROM author\n)").count(),
        2,
        "{sql}"
    );
    assert!(
        sql.contains("FROM article WHERE id >= $2::integer\n)"),
        "{sql}"
    );
    assert!(sql.contains("FROM \"public\".\"author\""), "{sql}");
    // The rows' types: named after the queries, the model fields with the relationships.
    let types = s
        .gql(
            r#"{ posts: __type(name: "posts") { fields { name type { kind name ofType { kind name } }
                   args { name type { kind name ofType { name } } } } }
                 writers: __type(name: "writers") { fields { name type { kind ofType { kind ofType { name } } }
                   args { name } } } }"#,
        )
        .await;
    let posts = &types["data"]["posts"]["fields"];
    let field = |fields: &Value, name: &str| {
        fields
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no field {name} in {fields}"))
    };
    assert_eq!(
        field(posts, "writer")["type"],
        json!({"kind": "OBJECT", "name": "writers", "ofType": null})
    );
    assert_eq!(
        field(posts, "author")["type"],
        json!({"kind": "OBJECT", "name": "author", "ofType": null})
    );
    assert_eq!(field(posts, "writer")["args"], json!([]));
    let names: Vec<&str> = posts
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["author", "author_id", "id", "title", "writer"]);
    // An array relationship to a native query: a nullable list, with the target's `args`.
    let to_posts = field(&types["data"]["writers"]["fields"], "posts");
    assert_eq!(
        to_posts["type"],
        json!({"kind": "LIST", "ofType": {"kind": "NON_NULL", "ofType": {"name": "posts"}}})
    );
    let args: Vec<&str> = to_posts["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        args,
        [
            "args",
            "distinct_on",
            "limit",
            "offset",
            "order_by",
            "where"
        ]
    );
    // The model's descriptions are its rows' type's and its fields'.
    let body = s
        .gql(r#"{ __type(name: "writers") { description fields { name description } } }"#)
        .await;
    assert_eq!(
        body,
        json!({"data": {"__type": {"description": "someone who writes", "fields": [
            {"name": "id", "description": null}, {"name": "name", "description": "as signed"},
            {"name": "posts", "description": "An array relationship"}]}}})
    );
    // Relationships are not part of `where`.
    let body = s
        .gql(r#"{ posts(args: {min_id: 1}, where: {writer: {name: {_eq: "Ann"}}}) { id } }"#)
        .await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "validation-failed",
        "{body}"
    );
}

#[tokio::test]
async fn a_role_sees_the_relationships_whose_targets_it_may_read() {
    let s = related().await;
    s.ok(json!({"type": "create_logical_model_select_permission", "args": {"name": "post_row",
        "role": "reader", "permission": {"columns": "*", "filter": {"author_id": {"_eq": "X-Svc-Author"}}}}}))
        .await;
    let fields = |body: Value| -> Vec<String> {
        body["data"]["__type"]["fields"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let introspect = r#"{ __type(name: "posts") { fields { name } } }"#;
    let body = s
        .gql_role(introspect, "reader", &[("X-Svc-Author", "1")])
        .await;
    assert_eq!(fields(body), ["author_id", "id", "title"]);
    // Each target the role may read adds its field.
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "author", "role": "reader",
        "permission": {"columns": ["name"], "filter": {}}}}),
    )
    .await;
    s.ok(
        json!({"type": "create_logical_model_select_permission", "args": {"name": "writer_row",
        "role": "reader", "permission": {"columns": ["id"], "filter": {}}}}),
    )
    .await;
    let body = s
        .gql_role(introspect, "reader", &[("X-Svc-Author", "1")])
        .await;
    assert_eq!(
        fields(body),
        ["author", "author_id", "id", "title", "writer"]
    );
    let body = s
        .gql_role(
            "{ posts(args: {min_id: 3}) { id author { name } writer { id } } }",
            "reader",
            &[("X-Svc-Author", "1")],
        )
        .await;
    assert_eq!(
        body,
        json!({"data": {"posts": [{"id": 3, "author": {"name": "Ann"}, "writer": {"id": 1}}]}})
    );
    // The target's permission applies to the related rows.
    s.ok(
        json!({"type": "drop_logical_model_select_permission", "args": {"name": "writer_row",
        "role": "reader"}}),
    )
    .await;
    s.ok(
        json!({"type": "create_logical_model_select_permission", "args": {"name": "writer_row",
        "role": "reader", "permission": {"columns": ["id"], "filter": {"id": {"_gt": 1}}}}}),
    )
    .await;
    let body = s
        .gql_role(
            "{ posts(args: {min_id: 3}) { id writer { id } } }",
            "reader",
            &[("X-Svc-Author", "1")],
        )
        .await;
    assert_eq!(
        body,
        json!({"data": {"posts": [{"id": 3, "writer": null}]}})
    );
}

/// `track_native_query` of `q` over `post_row` with one relationship list.
fn with_relationships(list: &str, relationships: Value) -> Value {
    json!({"type": "track_native_query", "args": {"root_field_name": "q", "returns": "post_row",
        "code": "SELECT id, title, author_id FROM article", list: relationships}})
}

#[tokio::test]
async fn relationships_are_checked_with_the_errors_of_the_contract() {
    let s = related().await;
    let to_writers =
        json!({"column_mapping": {"author_id": "id"}, "remote_native_query": "writers"});
    let cases = [
        (
            with_relationships("object_relationships", json!([{"name": "w",
                "using": {"column_mapping": {"author_id": "id"}, "remote_native_query": "writers",
                    "remote_table": "author"}}])),
            "parse-failed",
            "$.args.object_relationships[0].using",
            None,
        ),
        (
            json!({"type": "track_native_query", "args": {"root_field_name": "q", "returns": "post_row",
                "code": "SELECT id, title, author_id FROM article",
                "object_relationships": [{"name": "w", "using": to_writers}],
                "array_relationships": [{"name": "w", "using": to_writers}]}}),
            "already-exists",
            "$.args",
            Some("The native query 'q' has duplicate relationships: w"),
        ),
        (
            with_relationships("object_relationships", json!([{"name": "title", "using": to_writers}])),
            "already-exists",
            "$.args",
            Some("field \"title\" of native query \"q\" already exists"),
        ),
        (
            with_relationships("object_relationships", json!([{"name": "w",
                "using": {"column_mapping": {"author_id": "id"}, "remote_native_query": "nobody"}}])),
            "not-found",
            "$.args",
            Some("Native query \"nobody\" not found in source \"default\"."),
        ),
        (
            with_relationships("object_relationships", json!([{"name": "w",
                "using": {"column_mapping": {"author_id": "id"}, "remote_table": "article"}}])),
            "not-exists",
            "$.args",
            Some("table \"article\" does not exist"),
        ),
        (
            with_relationships("object_relationships", json!([{"name": "w",
                "using": {"column_mapping": {"nope": "id"}, "remote_native_query": "writers"}}])),
            "not-exists",
            "$.args",
            Some("column \"nope\" does not exist"),
        ),
        (
            with_relationships("object_relationships", json!([{"name": "w",
                "using": {"column_mapping": {"author_id": "name_x"}, "remote_table": "author"}}])),
            "not-exists",
            "$.args",
            Some("column \"name_x\" does not exist"),
        ),
        // `writer` is the model's object field: an array relationship, or one to a table,
        // does not fit it.
        (
            with_relationships("array_relationships", json!([{"name": "writer", "using": to_writers}])),
            "validation-failed",
            "$.args",
            Some("relationship \"writer\" does not match field \"writer\" of logical model \"post_row\""),
        ),
        (
            with_relationships("object_relationships", json!([{"name": "writer",
                "using": {"column_mapping": {"author_id": "id"}, "remote_table": "author"}}])),
            "validation-failed",
            "$.args",
            Some("relationship \"writer\" does not match field \"writer\" of logical model \"post_row\""),
        ),
    ];
    for (request, code, path, message) in cases {
        let body = s.fails(request.clone(), 400, code, path).await;
        if let Some(message) = message {
            assert_eq!(body["error"], message, "{request}");
        }
    }
    // A model's nested field that a relationship of the same name and kind fills is served.
    s.ok(with_relationships(
        "object_relationships",
        json!([{"name": "writer", "using": to_writers}]),
    ))
    .await;
    let body = s
        .gql("{ q(where: {id: {_eq: 1}}) { writer { name } } }")
        .await;
    assert_eq!(body, json!({"data": {"q": [{"writer": {"name": "Ann"}}]}}));
}

#[tokio::test]
async fn untracking_a_target_lists_or_removes_the_relationships_to_it() {
    let s = related().await;
    // The export replaces to itself.
    let before = s.export().await;
    s.ok(json!({"type": "replace_metadata", "args": before.clone()}))
        .await;
    assert_eq!(s.export().await, before);
    s.ok(json!({"type": "create_logical_model_select_permission", "args": {"name": "writer_row",
        "role": "reader", "permission": {"columns": "*",
            "filter": {"_exists": {"_table": {"schema": "public", "name": "author"}, "_where": {"id": {"_eq": 1}}}}}}}))
        .await;
    let body = s
        .fails(
            json!({"type": "untrack_native_query", "args": {"root_field_name": "writers"}}),
            400,
            "dependency-error",
            "$.args",
        )
        .await;
    assert_eq!(
        body["error"],
        "cannot drop due to the following dependent objects : native query relationship posts.writer"
    );
    let body = s
        .fails(
            json!({"type": "untrack_table", "args": {"table": "author"}}),
            400,
            "dependency-error",
            "$.args",
        )
        .await;
    assert_eq!(
        body["error"],
        "cannot drop due to the following dependent objects : logical model permission writer_row.reader, native query relationship posts.author"
    );
    s.ok(json!({"type": "untrack_table", "args": {"table": "author", "cascade": true}}))
        .await;
    let exported = s.export().await;
    let posts = exported["native_queries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["root_field_name"] == "posts")
        .cloned()
        .unwrap();
    assert_eq!(
        posts["object_relationships"],
        json!([{"name": "writer", "using": {"column_mapping": {"author_id": "id"}, "remote_native_query": "writers"}}])
    );
    let writer_row = exported["logical_models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "writer_row")
        .cloned()
        .unwrap();
    assert!(
        writer_row.get("select_permissions").is_none(),
        "{writer_row}"
    );
    // Untracked and tracked again in one bulk: a replacement the relationship survives.
    s.ok(json!({"type": "bulk", "args": [
        {"type": "untrack_native_query", "args": {"root_field_name": "writers"}},
        queries()[0].clone()]}))
        .await;
    let body = s
        .gql("{ posts(args: {min_id: 3}) { writer { name } } }")
        .await;
    assert_eq!(
        body,
        json!({"data": {"posts": [{"writer": {"name": "Ann"}}]}})
    );
}

#[tokio::test]
async fn a_broken_target_leaves_the_relationship_out_and_drop_inconsistent_removes_it() {
    let s = related().await;
    // `writers` breaks outside Basalt; the next build finds it.
    s.sql("ALTER TABLE author RENAME COLUMN name TO full_name")
        .await;
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    let inconsistent = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    let objects: Vec<&str> = inconsistent["inconsistent_objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            o["definition"]["root_field_name"]
                .as_str()
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(objects, ["writers"], "{inconsistent}");
    let body = s
        .gql("{ posts(args: {min_id: 3}) { id writer { name } } }")
        .await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "validation-failed",
        "{body}"
    );
    let body = s.gql("{ posts(args: {min_id: 3}) { id } }").await;
    assert_eq!(body, json!({"data": {"posts": [{"id": 3}]}}));
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    let exported = s.export().await;
    let queries: Vec<Value> = exported["native_queries"].as_array().unwrap().clone();
    assert_eq!(queries.len(), 1, "{exported}");
    assert_eq!(queries[0]["root_field_name"], "posts");
    assert_eq!(
        queries[0]["object_relationships"],
        json!([{"name": "author", "using": {"column_mapping": {"author_id": "id"},
            "remote_table": {"schema": "public", "name": "author"}}}])
    );
}

#[tokio::test]
async fn array_relationships_to_tables_and_object_ones_to_queries_with_arguments() {
    let s = related().await;
    s.ok(json!({"type": "track_table", "args": {"table": "article"}}))
        .await;
    s.ok(
        json!({"type": "track_native_query", "args": {"root_field_name": "authors_nq",
        "returns": "writer_row", "code": "SELECT id, name FROM author",
        "object_relationships": [{"name": "first_post",
            "using": {"column_mapping": {"id": "author_id"}, "remote_native_query": "posts"}}],
        "array_relationships": [{"name": "articles",
            "using": {"column_mapping": {"id": "author_id"}, "remote_table": "article"}}]}}),
    )
    .await;
    let types = s
        .gql(
            r#"{ __type(name: "authors_nq") { fields { name type { kind name ofType { kind name ofType { kind name } } }
                 args { name type { kind name ofType { name } } } } } }"#,
        )
        .await;
    let fields = types["data"]["__type"]["fields"].as_array().unwrap();
    let field = |name: &str| fields.iter().find(|f| f["name"] == name).unwrap().clone();
    assert_eq!(
        field("articles")["type"],
        json!({"kind": "NON_NULL", "name": null, "ofType": {"kind": "LIST", "name": null,
            "ofType": {"kind": "NON_NULL", "name": null}}})
    );
    let names = |f: Value| -> Vec<String> {
        f["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names(field("articles")),
        ["distinct_on", "limit", "offset", "order_by", "where"]
    );
    assert_eq!(
        field("first_post")["type"],
        json!({"kind": "OBJECT", "name": "posts", "ofType": null})
    );
    assert_eq!(
        field("first_post")["args"],
        json!([{"name": "args", "type": {"kind": "NON_NULL", "name": null, "ofType": {"name": "posts_arguments"}}}])
    );
    let body = s
        .gql(
            r#"{ authors_nq { first_post(args: {min_id: 3}) { id } articles(order_by: {id: desc}, limit: 1) { title } } }"#,
        )
        .await;
    assert_eq!(
        body,
        json!({"data": {"authors_nq": [{"first_post": {"id": 3}, "articles": [{"title": "Draft"}]}]}})
    );
    // A query with relationships has a type of its own: not named like another type.
    for taken in ["post_row_bool_exp", "order_by", "posts_arguments"] {
        let body = s
            .fails(
                json!({"type": "track_native_query", "args": {"root_field_name": taken,
                    "returns": "writer_row", "code": "SELECT id, name FROM author",
                    "array_relationships": [{"name": "p",
                        "using": {"column_mapping": {"id": "author_id"}, "remote_native_query": "posts"}}]}}),
                400,
                "constraint-violation",
                "$.args",
            )
            .await;
        assert_eq!(
            body["error"],
            format!("native query \"{taken}\" conflicts with existing field or type \"{taken}\"")
        );
    }
}
