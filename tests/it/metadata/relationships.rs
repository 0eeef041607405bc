//! Relationship and computed-field operations.

use crate::harness::TestServer;
use serde_json::{json, Value};

async fn tracked() -> TestServer {
    let s = TestServer::library().await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "args": {"table": "author"}},
        {"type": "track_table", "args": {"table": "article"}},
        {"type": "track_table", "args": {"table": "published_article"}}
    ]}))
    .await;
    s
}

fn obj_rel(name: &str, using: Value) -> Value {
    json!({"type": "create_object_relationship", "args": {"table": "article", "name": name, "using": using}})
}

#[tokio::test]
async fn relationships_create_and_validate() {
    let s = tracked().await;
    s.ok(obj_rel(
        "author",
        json!({"foreign_key_constraint_on": "author_id"}),
    ))
    .await;
    s.ok(json!({"type": "create_array_relationship", "args": {"table": "author", "name": "articles", "comment": "all",
        "using": {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}}}})).await;
    s.ok(json!({"type": "create_object_relationship", "args": {"table": "published_article", "name": "author",
        "using": {"manual_configuration": {"remote_table": "author", "column_mapping": {"author_id": "id"}}}}})).await;
    let exported = s.export().await;
    assert_eq!(
        exported["tables"][0]["array_relationships"],
        json!([{"name": "articles",
        "using": {"foreign_key_constraint_on": {"table": {"schema": "public", "name": "article"}, "column": "author_id"}}, "comment": "all"}])
    );
    assert_eq!(
        exported["tables"][2]["object_relationships"][0]["using"]["manual_configuration"]
            ["remote_table"],
        json!({"schema": "public", "name": "author"})
    );

    let r = s
        .fails(
            obj_rel(
                "x",
                json!({"foreign_key_constraint_on": "author_id", "manual_configuration": {}}),
            ),
            400,
            "parse-failed",
            "$.args.using",
        )
        .await;
    assert_eq!(
        r["error"],
        "only one of foreign_key_constraint_on/manual_configuration should be present"
    );
    let r = s
        .fails(obj_rel("x", json!({})), 400, "parse-failed", "$.args.using")
        .await;
    assert_eq!(
        r["error"],
        "atleast one of foreign_key_constraint_on/manual_configuration should be present"
    );
    let r = s
        .fails(
            obj_rel("author", json!({"foreign_key_constraint_on": "editor_id"})),
            400,
            "already-exists",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "column/relationship \"author\" of table \"article\" already exists"
    );
    s.fails(
        obj_rel("title", json!({"foreign_key_constraint_on": "editor_id"})),
        400,
        "already-exists",
        "$.args",
    )
    .await;
    let r = s
        .fails(
            obj_rel("x", json!({"foreign_key_constraint_on": "nope"})),
            400,
            "not-exists",
            "$.args.using",
        )
        .await;
    assert_eq!(r["error"], "column \"nope\" does not exist");
    let r = s
        .fails(
            obj_rel("x", json!({"foreign_key_constraint_on": "title"})),
            400,
            "constraint-error",
            "$.args.using",
        )
        .await;
    assert_eq!(
        r["error"],
        "no foreign constraint exists on the given column"
    );
    let r = s
        .fails(
            obj_rel("x", json!({"foreign_key_constraint_on": "reviewer_id"})),
            400,
            "constraint-error",
            "$.args.using",
        )
        .await;
    assert_eq!(
        r["error"],
        "more than one foreign key constraint exists on the given column"
    );
    let r = s
        .fails(
            json!({"type": "create_object_relationship", "args": {"table": "nope", "name": "x",
        "using": {"foreign_key_constraint_on": "a"}}}),
            400,
            "not-exists",
            "$.args.table",
        )
        .await;
    assert_eq!(r["error"], "table \"nope\" does not exist");
    s.fails(json!({"type": "create_object_relationship", "args": {"table": "published_article", "name": "x",
        "using": {"manual_configuration": {"remote_table": "article_status", "column_mapping": {"id": "value"}}}}}), 400, "not-exists", "$.args.using").await;
    s.fails(
        obj_rel(
            "not a name",
            json!({"foreign_key_constraint_on": "editor_id"}),
        ),
        400,
        "parse-failed",
        "$.args.name",
    )
    .await;
}

#[tokio::test]
async fn drop_rename_and_comment_relationships() {
    let s = tracked().await;
    s.ok(obj_rel(
        "author",
        json!({"foreign_key_constraint_on": "author_id"}),
    ))
    .await;
    s.ok(json!({"type": "create_select_permission", "args": {"table": "article", "role": "user",
        "permission": {"columns": ["id"], "filter": {"$or": [{"author": {"id": {"$eq": "X-Svc-User-Id"}}}, {"published": true}]}}}})).await;
    // Comment, with the seed's `name` alias.
    s.ok(json!({"type": "set_relationship_comment", "args": {"table": "article", "name": "author", "comment": "who wrote it"}})).await;
    assert_eq!(
        s.export().await["tables"][1]["object_relationships"][0]["comment"],
        "who wrote it"
    );
    s.ok(json!({"type": "set_relationship_comment", "args": {"table": "article", "relationship": "author", "comment": null}})).await;
    assert!(s.export().await["tables"][1]["object_relationships"][0]
        .get("comment")
        .is_none());
    s.fails(json!({"type": "set_relationship_comment", "args": {"table": "article", "relationship": "nope"}}), 400, "not-exists", "$.args.relationship").await;
    // Rename rewrites permission expressions, keeping the `$` spelling.
    s.ok(json!({"type": "rename_relationship", "args": {"table": "article", "name": "author", "new_name": "writer"}})).await;
    let exported = s.export().await;
    assert_eq!(
        exported["tables"][1]["object_relationships"][0]["name"],
        "writer"
    );
    assert_eq!(
        exported["tables"][1]["select_permissions"][0]["permission"]["filter"],
        json!({"$or": [{"writer": {"id": {"$eq": "X-Svc-User-Id"}}}, {"published": true}]})
    );
    s.fails(json!({"type": "rename_relationship", "args": {"table": "article", "name": "writer", "new_name": "title"}}), 400, "already-exists", "$.args.new_name").await;
    s.fails(json!({"type": "rename_relationship", "args": {"table": "article", "name": "nope", "new_name": "x"}}), 400, "not-exists", "$.args.relationship").await;
    // Drop with dependents.
    let r = s.fails(json!({"type": "drop_relationship", "args": {"table": "article", "relationship": "writer"}}), 400, "dependency-error", "$.args").await;
    assert_eq!(
        r["error"],
        "cannot drop due to the following dependent objects : permission article.user.select"
    );
    s.fails(
        json!({"type": "drop_relationship", "args": {"table": "article", "relationship": "nope"}}),
        400,
        "not-exists",
        "$.args.relationship",
    )
    .await;
    s.ok(json!({"type": "drop_relationship", "args": {"table": "article", "relationship": "writer", "cascade": true}})).await;
    assert_eq!(
        s.export().await["tables"][1],
        json!({"table": {"schema": "public", "name": "article"}})
    );
}

#[tokio::test]
async fn computed_fields() {
    let s = tracked().await;
    s.ok(
        json!({"type": "add_computed_field", "args": {"table": "author", "name": "full_name",
        "definition": {"function": "author_full_name"}, "comment": "name and bio"}}),
    )
    .await;
    s.ok(json!({"type": "add_computed_field", "args": {"table": "author", "name": "is_me",
        "definition": {"function": {"schema": "public", "name": "author_is_me"}, "table_argument": "a", "session_argument": "session"}}})).await;
    s.ok(
        json!({"type": "add_computed_field", "args": {"table": "author", "name": "written",
        "definition": {"function": "author_articles"}}}),
    )
    .await;
    assert_eq!(
        s.export().await["tables"][0]["computed_fields"][0],
        json!({"name": "full_name", "definition": {"function": {"schema": "public", "name": "author_full_name"}}, "comment": "name and bio"})
    );

    let add = |name: &str, def: Value| json!({"type": "add_computed_field", "args": {"table": "author", "name": name, "definition": def}});
    let r = s
        .fails(
            add("name", json!({"function": "author_full_name"})),
            400,
            "constraint-violation",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "field definition conflicts with postgres column"
    );
    s.fails(
        add("full_name", json!({"function": "author_full_name"})),
        400,
        "already-exists",
        "$.args",
    )
    .await;
    s.fails(json!({"type": "add_computed_field", "args": {"table": "nope", "name": "x", "definition": {"function": "f"}}}), 400, "not-exists", "$.args.table").await;
    let r = s
        .fails(
            add("x", json!({"function": "missing_fn"})),
            400,
            "constraint-violation",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "in table \"author\": in computed field \"x\": no such function exists in postgres : \"missing_fn\"");
    assert_eq!(r["internal"][0]["type"], "computed_field");
    for (function, reason) in [
        ("author_random", "VOLATILE"),
        ("author_overloaded", "overloaded"),
        ("article_word_count", "is not of type \"author\""),
    ] {
        let r = s
            .fails(
                add("x", json!({"function": function})),
                400,
                "constraint-violation",
                "$.args",
            )
            .await;
        let message = r["error"].as_str().unwrap();
        assert!(message.starts_with("in table \"author\": in computed field \"x\": the computed field \"x\" cannot be added to table \"author\" because"), "{message}");
        assert!(message.contains(reason), "{message}");
    }
    let r = s
        .fails(
            add(
                "x",
                json!({"function": "author_random", "session_argument": "nope"}),
            ),
            400,
            "constraint-violation",
            "$.args",
        )
        .await;
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("for the following reasons:\n  • "),
        "{r}"
    );

    // Dependents: a select permission listing the field.
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "author", "role": "user",
        "permission": {"columns": ["id"], "computed_fields": ["full_name"], "filter": {}}}}),
    )
    .await;
    s.fails(
        json!({"type": "create_select_permission", "args": {"table": "author", "role": "guest",
        "permission": {"columns": ["id"], "computed_fields": ["written"], "filter": {}}}}),
        400,
        "constraint-violation",
        "$.args.permission.computed_fields[0]",
    )
    .await;
    let r = s.fails(json!({"type": "drop_computed_field", "args": {"table": "author", "name": "full_name"}}), 400, "dependency-error", "$.args").await;
    assert_eq!(
        r["error"],
        "cannot drop due to the following dependent objects : permission author.user.select"
    );
    s.fails(
        json!({"type": "drop_computed_field", "args": {"table": "author", "name": "nope"}}),
        400,
        "not-exists",
        "$.args.name",
    )
    .await;
    s.ok(json!({"type": "drop_computed_field", "args": {"table": "author", "name": "full_name", "cascade": true}})).await;
    s.ok(json!({"type": "drop_computed_field", "args": {"table": "author", "name": "is_me"}}))
        .await;
    let exported = s.export().await;
    assert_eq!(
        exported["tables"][0]["computed_fields"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(exported["tables"][0].get("select_permissions").is_none());
}
