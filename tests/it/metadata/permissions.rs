//! Permission operations and BoolExp/preset validation.

use crate::harness::TestServer;
use serde_json::{json, Value};

async fn tracked() -> TestServer {
    let s = TestServer::library().await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "args": {"table": "author"}},
        {"type": "track_table", "args": {"table": "article"}},
        {"type": "create_object_relationship", "args": {"table": "article", "name": "author", "using": {"foreign_key_constraint_on": "author_id"}}},
        {"type": "create_array_relationship", "args": {"table": "author", "name": "articles", "using": {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}}}},
        {"type": "add_computed_field", "args": {"table": "author", "name": "full_name", "definition": {"function": "author_full_name"}}}
    ]})).await;
    s
}

fn create(kind: &str, table: &str, role: &str, permission: Value) -> Value {
    json!({"type": format!("create_{kind}_permission"), "args": {"table": table, "role": role, "permission": permission}})
}

#[tokio::test]
async fn all_four_kinds_round_trip() {
    let s = tracked().await;
    s.ok(create("insert", "article", "user", json!({"check": {"author_id": "X-Svc-User-Id"}, "set": {"author_id": "x-svc-user-id"}, "columns": ["title", "body"], "backend_only": false}))).await;
    s.ok(create("select", "article", "user", json!({"columns": "*", "filter": {"_or": [{"published": {"_eq": true}}, {"author": {"id": {"_eq": "X-Svc-User-Id"}}}]}, "limit": 10, "allow_aggregations": true}))).await;
    s.ok(create("update", "article", "user", json!({"columns": ["title"], "filter": {"author_id": {"$eq": "X-Svc-User-Id"}}, "check": {"title": {"_ilike": "%x%"}}}))).await;
    s.ok(create("delete", "article", "user", json!({"filter": {"$exists": {"_table": "author", "_where": {"id": {"_eq": "X-Svc-User-Id"}}}}}))).await;
    s.ok(create("select", "author", "user", json!({"columns": ["id", "name"], "computed_fields": ["full_name"], "filter": {"articles": {"tags": {"_has_key": "x"}}}}))).await;
    s.ok(json!({"type": "set_permission_comment", "args": {"table": "article", "role": "user", "type": "delete", "comment": "own only"}})).await;
    let article = &s.export().await["tables"][1];
    assert_eq!(
        article["insert_permissions"],
        json!([{"role": "user", "permission": {"check": {"author_id": "X-Svc-User-Id"}, "set": {"author_id": "x-svc-user-id"}, "columns": ["title", "body"], "backend_only": false}}])
    );
    assert_eq!(
        article["update_permissions"][0]["permission"]["check"],
        json!({"title": {"_ilike": "%x%"}})
    );
    assert_eq!(article["delete_permissions"][0]["comment"], "own only");
    assert_eq!(article["select_permissions"][0]["permission"]["limit"], 10);
    s.ok(json!({"type": "drop_update_permission", "args": {"table": "article", "role": "user"}}))
        .await;
    assert!(s.export().await["tables"][1]
        .get("update_permissions")
        .is_none());
}

#[tokio::test]
async fn permission_errors() {
    let s = tracked().await;
    let r = s
        .fails(
            create(
                "select",
                "nope",
                "user",
                json!({"columns": "*", "filter": {}}),
            ),
            400,
            "not-exists",
            "$.args.table",
        )
        .await;
    assert_eq!(r["error"], "table \"nope\" does not exist");
    let r = s
        .fails(
            create(
                "select",
                "article",
                "admin",
                json!({"columns": "*", "filter": {}}),
            ),
            400,
            "constraint-violation",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "in table \"article\": in permission for role \"admin\": cannot define permission for admin role");
    s.ok(create(
        "select",
        "article",
        "user",
        json!({"columns": "*", "filter": {}}),
    ))
    .await;
    let r = s
        .fails(
            create(
                "select",
                "article",
                "user",
                json!({"columns": "*", "filter": {}}),
            ),
            400,
            "already-exists",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "select permission already defined on table \"article\" with role \"user\""
    );
    let r = s
        .fails(
            create(
                "select",
                "article",
                "u2",
                json!({"columns": ["id", "nope"], "filter": {}}),
            ),
            400,
            "not-exists",
            "$.args.permission.columns[1]",
        )
        .await;
    assert_eq!(r["error"], "column \"nope\" does not exist");
    s.fails(
        create(
            "select",
            "article",
            "u2",
            json!({"columns": "*", "filter": {"author": {"nope": {"_eq": 1}}}}),
        ),
        400,
        "not-exists",
        "$.args.permission.filter.author.nope",
    )
    .await;
    let r = s
        .fails(
            create(
                "select",
                "author",
                "u2",
                json!({"columns": "*", "filter": {"full_name": {"_eq": "x"}}}),
            ),
            400,
            "not-exists",
            "$.args.permission.filter.full_name",
        )
        .await;
    assert!(
        r["error"].as_str().unwrap().contains("is a computed field"),
        "{r}"
    );
    s.fails(
        create(
            "select",
            "article",
            "u2",
            json!({"columns": "*", "filter": {"id": {"_bogus": 1}}}),
        ),
        400,
        "parse-failed",
        "$.args.permission.filter.id._bogus",
    )
    .await;
    s.fails(
        create(
            "select",
            "article",
            "u2",
            json!({"columns": "*", "filter": {"id": {"_like": "1"}}}),
        ),
        400,
        "parse-failed",
        "$.args.permission.filter.id._like",
    )
    .await;
    s.fails(
        create(
            "select",
            "article",
            "u2",
            json!({"columns": "*", "filter": {"id": {"_in": 3}}}),
        ),
        400,
        "parse-failed",
        "$.args.permission.filter.id._in",
    )
    .await;
    s.fails(
        create(
            "select",
            "article",
            "u2",
            json!({"columns": "*", "filter": {"id": {"_ceq": "nope"}}}),
        ),
        400,
        "not-exists",
        "$.args.permission.filter.id._ceq",
    )
    .await;
    s.ok(create("select", "article", "u3", json!({"columns": "*", "filter": {"id": {"_ceq": ["$", "editor_id"]}, "_not": {"author_id": {"_is_null": true}}}}))).await;
    s.fails(
        create(
            "select",
            "article",
            "u2",
            json!({"columns": "*", "filter": {"$exists": {"_table": "ghost", "_where": {}}}}),
        ),
        400,
        "not-exists",
        "$.args.permission.filter['$exists']._table",
    )
    .await;
    s.fails(
        create(
            "select",
            "article",
            "u2",
            json!({"columns": "*", "filter": {}, "limit": -1}),
        ),
        400,
        "parse-failed",
        "$.args.permission.limit",
    )
    .await;
    s.fails(
        create("select", "article", "u2", json!({"columns": "*"})),
        400,
        "parse-failed",
        "$.args.permission",
    )
    .await;
    // An unknown or set-returning computed field: constraint-violation at the entry's path.
    let r = s
        .fails(
            create(
                "select",
                "author",
                "u2",
                json!({"columns": "*", "computed_fields": ["full_name", "nope"], "filter": {}}),
            ),
            400,
            "constraint-violation",
            "$.args.permission.computed_fields[1]",
        )
        .await;
    assert_eq!(r["error"], "computed field \"nope\" does not exist");
    s.ok(
        json!({"type": "add_computed_field", "args": {"table": "author", "name": "written",
        "definition": {"function": "author_articles"}}}),
    )
    .await;
    let r = s
        .fails(
            create(
                "select",
                "author",
                "u2",
                json!({"columns": "*", "computed_fields": ["written"], "filter": {}}),
            ),
            400,
            "constraint-violation",
            "$.args.permission.computed_fields[0]",
        )
        .await;
    assert_eq!(r["error"], "computed field \"written\" is not scalar");
    s.fails(
        create(
            "insert",
            "article",
            "u2",
            json!({"check": {}, "set": {"nope": 1}}),
        ),
        400,
        "not-exists",
        "$.args.permission.set.nope",
    )
    .await;
    let r = s
        .fails(
            json!({"type": "drop_update_permission", "args": {"table": "article", "role": "user"}}),
            400,
            "bad-request",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "update permission on \"article\" for role \"user\" does not exist"
    );
    s.fails(
        json!({"type": "drop_select_permission", "args": {"table": "nope", "role": "user"}}),
        400,
        "not-exists",
        "$.args.table",
    )
    .await;
    s.fails(json!({"type": "set_permission_comment", "args": {"table": "article", "role": "user", "type": "insert", "comment": "x"}}), 400, "not-exists", "$.args").await;
    s.fails(json!({"type": "set_permission_comment", "args": {"table": "article", "role": "user", "type": "upsert"}}), 400, "parse-failed", "$.args.type").await;
}

#[tokio::test]
async fn names_reserved_for_introspection_are_refused_and_never_served() {
    let s = TestServer::library().await;
    for table in ["author", "article"] {
        s.ok(json!({"type": "track_table", "args": {"table": table}}))
            .await;
    }
    let before = s.export().await;
    for (request, path) in [
        (
            json!({"type": "create_object_relationship", "args": {"table": "article", "name": "__author",
                   "using": {"foreign_key_constraint_on": "author_id"}}}),
            "$.args.name",
        ),
        (
            json!({"type": "add_computed_field", "args": {"table": "author", "name": "__full",
                   "definition": {"function": "author_full_name"}}}),
            "$.args.name",
        ),
        (
            json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "author",
                   "custom_column_names": {"name": "__name"}}}),
            "$.args.custom_column_names.name",
        ),
        (
            json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "author",
                   "custom_root_fields": {"select": "__authors"}}}),
            "$.args.custom_root_fields.select",
        ),
    ] {
        let (status, r) = s.query(request.clone()).await;
        assert_eq!(status, 400, "{request}: {r}");
        assert_eq!(r["code"], "not-supported", "{request}: {r}");
        assert_eq!(r["path"], path, "{request}: {r}");
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .contains("reserved for introspection"),
            "{r}"
        );
    }
    assert_eq!(s.export().await, before, "nothing stored");
    // A column whose name GraphQL reserves is left out, and the schema stays valid.
    s.sql("ALTER TABLE author ADD COLUMN __secret text").await;
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    let fields = s
        .gql("{ __type(name: \"author\") { fields { name } } }")
        .await;
    assert!(fields.get("errors").is_none(), "{fields}");
    assert!(!fields.to_string().contains("__secret"), "{fields}");
}

#[tokio::test]
async fn a_table_a_role_sees_no_field_of_is_left_out_of_its_schema() {
    let s = TestServer::library().await;
    for table in ["author", "article"] {
        s.ok(json!({"type": "track_table", "args": {"table": table}}))
            .await;
    }
    s.ok(
        json!({"type": "create_object_relationship", "args": {"table": "article", "name": "writer",
                "using": {"foreign_key_constraint_on": "author_id"}}}),
    )
    .await;
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "author", "role": "blind",
                "permission": {"columns": [], "filter": {}}}}),
    )
    .await;
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "article", "role": "blind",
                "permission": {"columns": ["id", "title"], "filter": {}}}}),
    )
    .await;
    let r = s
        .gql_role(
            "{ __schema { queryType { fields { name } } } }",
            "blind",
            &[],
        )
        .await;
    assert!(r.get("errors").is_none(), "the role's schema builds: {r}");
    let roots: Vec<&str> = r["data"]["__schema"]["queryType"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert!(
        roots.contains(&"article") && !roots.contains(&"author"),
        "{roots:?}"
    );
    let r = s
        .gql_role("{ article(limit: 1) { id writer { id } } }", "blind", &[])
        .await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "validation-failed",
        "{r}"
    );
    s.sql("INSERT INTO article (title) VALUES ('seen')").await;
    let r = s.gql_role("{ article { title } }", "blind", &[]).await;
    assert_eq!(r, json!({"data": {"article": [{"title": "seen"}]}}));
}
