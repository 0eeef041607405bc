//! set_custom_types, query collections and the allow-list.

use crate::harness::TestServer;
use serde_json::json;

#[tokio::test]
async fn custom_types() {
    let s = TestServer::library().await;
    s.ok(json!({"type": "track_table", "args": {"table": "author"}}))
        .await;
    let types = json!({
        "scalars": [{"name": "Email", "description": "an address"}],
        "enums": [{"name": "Level", "values": [{"value": "LOW"}, {"value": "HIGH", "is_deprecated": true}]}],
        "input_objects": [{"name": "SignupInput", "fields": [{"name": "email", "type": "Email!"}, {"name": "level", "type": "Level"}, {"name": "at", "type": "timestamptz"}]}],
        "objects": [{"name": "SignupResult", "fields": [{"name": "author_id", "type": "Int!"}, {"name": "tags", "type": "[String!]"}],
                     "relationships": [{"name": "author", "type": "object", "remote_table": "author", "field_mapping": {"author_id": "id"}}]}]
    });
    s.ok(json!({"type": "set_custom_types", "args": types}))
        .await;
    let exported = s.export().await["custom_types"].clone();
    assert_eq!(
        exported["objects"][0]["relationships"][0]["remote_table"],
        json!({"schema": "public", "name": "author"})
    );
    assert_eq!(exported["enums"], types["enums"]);

    let r = s.fails(json!({"type": "set_custom_types", "args": {"objects": [{"name": "A", "fields": [{"name": "x", "type": "Nope"}]}]}}), 400, "invalid-custom-types", "$.args").await;
    assert_eq!(r["error"], "validation for the given custom types failed because the type \"Nope\" of field \"A.x\" does not exist");
    let r = s.fails(json!({"type": "set_custom_types", "args": {
        "scalars": [{"name": "A"}], "enums": [{"name": "A", "values": [{"value": "X"}, {"value": "X"}]}],
        "input_objects": [{"name": "I", "fields": [{"name": "o", "type": "O"}]}],
        "objects": [{"name": "O", "fields": [{"name": "i", "type": "I"}, {"name": "i", "type": "Int"}]}]}}), 400, "invalid-custom-types", "$.args").await;
    let message = r["error"].as_str().unwrap();
    assert!(
        message.starts_with(
            "validation for the given custom types failed for the following reasons:\n  • "
        ),
        "{message}"
    );
    for reason in [
        "defined more than once",
        "duplicate value \"X\"",
        "refers to the object type \"O\"",
        "refers to the input object type \"I\"",
        "duplicate field \"i\"",
    ] {
        assert!(message.contains(reason), "{reason} missing in {message}");
    }
    s.fails(json!({"type": "set_custom_types", "args": {"objects": [{"name": "O", "fields": [{"name": "a", "type": "Int"}],
        "relationships": [{"name": "r", "type": "object", "remote_table": "article", "field_mapping": {"a": "id"}}]}]}}), 400, "not-exists", "$.args.objects[0].relationships[0].remote_table").await;
    s.fails(json!({"type": "set_custom_types", "args": {"objects": [{"name": "O", "fields": [{"name": "a", "type": "Int"}],
        "relationships": [{"name": "a", "type": "object", "remote_table": "author", "field_mapping": {"a": "nope"}}]}]}}), 400, "invalid-custom-types", "$.args").await;
    s.fails(json!({"type": "set_custom_types", "args": {"enums": [{"name": "bad name", "values": []}]}}), 400, "parse-failed", "$.args.enums[0].name").await;
    // Only scalar-valued fields can be mapped: not lists, not objects.
    let before = s.export().await;
    for (ty, problem) in [
        ("[Int!]", "has the list type \"[Int!]\""),
        ("[Int]!", "has the list type \"[Int]!\""),
        ("Inner", "has the non-scalar type \"Inner\""),
    ] {
        let r = s.fails(json!({"type": "set_custom_types", "args": {"objects": [
            {"name": "Inner", "fields": [{"name": "v", "type": "Int"}]},
            {"name": "O", "fields": [{"name": "ids", "type": ty}],
             "relationships": [{"name": "authors", "type": "array", "remote_table": "author", "field_mapping": {"ids": "id"}}]}]}}),
            400, "invalid-custom-types", "$.args").await;
        assert_eq!(
            r["error"],
            format!("validation for the given custom types failed because the field \"ids\" in the mapping of relationship \"authors\" {problem}; only scalar fields of \"O\" can be mapped")
        );
        assert_eq!(s.export().await, before, "metadata unchanged");
    }
    // Untracking the related table needs cascade, which removes the relationship only.
    let r = s
        .fails(
            json!({"type": "untrack_table", "args": {"table": "author"}}),
            400,
            "dependency-error",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "cannot drop due to the following dependent objects : custom type relationship SignupResult.author");
    s.ok(json!({"type": "untrack_table", "args": {"table": "author", "cascade": true}}))
        .await;
    let exported = s.export().await["custom_types"].clone();
    assert!(
        exported["objects"][0].get("relationships").is_none(),
        "{exported}"
    );
    assert_eq!(exported["scalars"][0]["name"], "Email");
    // Replacing with nothing clears them.
    s.ok(json!({"type": "set_custom_types", "args": {}})).await;
    assert!(s.export().await.get("custom_types").is_none());
}

#[tokio::test]
async fn collections_and_allowlist() {
    let s = TestServer::library().await;
    s.ok(
        json!({"type": "create_query_collection", "args": {"name": "app", "comment": "mobile",
        "definition": {"queries": [{"name": "q1", "query": "query q1 { author { id } }"}]}}}),
    )
    .await;
    let r = s.fails(json!({"type": "create_query_collection", "args": {"name": "app", "definition": {"queries": []}}}), 400, "already-exists", "$.args.name").await;
    assert_eq!(
        r["error"],
        "query collection with name \"app\" already exists"
    );
    let r = s.fails(json!({"type": "create_query_collection", "args": {"name": "dup", "definition": {"queries": [
        {"name": "a", "query": "{ x }"}, {"name": "a", "query": "{ y }"}]}}}), 400, "not-supported", "$.args.definition.queries").await;
    assert_eq!(r["error"], "found duplicate query names \"a\"");
    s.fails(json!({"type": "create_query_collection", "args": {"name": "bad", "definition": {"queries": [
        {"name": "a", "query": "query {"}]}}}), 400, "parse-failed", "$.args.definition.queries[0].query").await;
    s.ok(json!({"type": "add_query_to_collection", "args": {"collection_name": "app", "query_name": "q2", "query": "{ article { id } }"}})).await;
    let r = s.fails(json!({"type": "add_query_to_collection", "args": {"collection_name": "app", "query_name": "q2", "query": "{ a }"}}), 400, "already-exists", "$.args").await;
    assert_eq!(
        r["error"],
        "query with name \"q2\" already exists in collection \"app\""
    );
    s.fails(json!({"type": "add_query_to_collection", "args": {"collection_name": "app", "query_name": "q3", "query": "{"}}), 400, "parse-failed", "$.args.query").await;
    s.fails(json!({"type": "add_query_to_collection", "args": {"collection_name": "none", "query_name": "q", "query": "{ a }"}}), 400, "not-exists", "$.args.collection_name").await;
    let r = s.fails(json!({"type": "drop_query_from_collection", "args": {"collection_name": "app", "query_name": "zz"}}), 400, "not-found", "$.args").await;
    assert_eq!(
        r["error"],
        "query with name \"zz\" not found in collection \"app\""
    );
    s.ok(json!({"type": "drop_query_from_collection", "args": {"collection_name": "app", "query_name": "q1"}})).await;
    s.fails(
        json!({"type": "add_collection_to_allowlist", "args": {"collection": "none"}}),
        400,
        "not-exists",
        "$.args.collection",
    )
    .await;
    s.ok(json!({"type": "add_collection_to_allowlist", "args": {"collection": "app"}}))
        .await;
    s.ok(json!({"type": "add_collection_to_allowlist", "args": {"collection": "app"}}))
        .await;
    let exported = s.export().await;
    assert_eq!(exported["allowlist"], json!([{"collection": "app"}]));
    assert_eq!(
        exported["query_collections"],
        json!([{"name": "app", "definition": {"queries": [{"name": "q2", "query": "{ article { id } }"}]}, "comment": "mobile"}])
    );
    let r = s.fails(json!({"type": "drop_query_collection", "args": {"collection": "app", "cascade": false}}), 400, "dependency-error", "$.args").await;
    assert_eq!(
        r["error"],
        "query collection with name \"app\" is present in allowlist; cannot proceed to drop"
    );
    s.fails(
        json!({"type": "drop_query_collection", "args": {"collection": "app"}}),
        400,
        "parse-failed",
        "$.args",
    )
    .await;
    let r = s.fails(json!({"type": "drop_query_collection", "args": {"collection": "none", "cascade": true}}), 400, "not-exists", "$.args.collection").await;
    assert_eq!(
        r["error"],
        "query collection with name \"none\" does not exists"
    );
    s.ok(json!({"type": "drop_collection_from_allowlist", "args": {"collection": "app"}}))
        .await;
    s.ok(json!({"type": "drop_collection_from_allowlist", "args": {"collection": "app"}}))
        .await;
    s.fails(
        json!({"type": "drop_collection_from_allowlist", "args": {"collection": "none"}}),
        400,
        "not-exists",
        "$.args.collection",
    )
    .await;
    s.ok(json!({"type": "add_collection_to_allowlist", "args": {"collection": "app"}}))
        .await;
    s.ok(json!({"type": "drop_query_collection", "args": {"collection": "app", "cascade": true}}))
        .await;
    assert_eq!(s.export().await, json!({"version": 2, "tables": []}));
}
