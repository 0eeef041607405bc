//! run_sql: results, read-only, and keeping metadata consistent with the SQL.

use crate::harness::TestServer;
use serde_json::{json, Value};

fn sql(text: &str) -> Value {
    json!({"type": "run_sql", "args": {"sql": text}})
}

fn sql_with(text: &str, extra: Value) -> Value {
    let mut body = sql(text);
    for (k, v) in extra.as_object().unwrap() {
        body["args"][k] = v.clone();
    }
    body
}

/// author, article (object + array relationships), a permission through the relationship and
/// a computed field.
async fn tracked() -> TestServer {
    let s = TestServer::library().await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "args": {"table": "author"}},
        {"type": "track_table", "version": 2, "args": {"table": "article", "configuration": {"custom_column_names": {"body": "text"}}}},
        {"type": "create_object_relationship", "args": {"table": "article", "name": "author", "using": {"foreign_key_constraint_on": "author_id"}}},
        {"type": "create_array_relationship", "args": {"table": "author", "name": "articles", "using": {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}}}},
        {"type": "create_select_permission", "args": {"table": "article", "role": "user", "permission": {"columns": ["id", "title", "body"], "filter": {"author": {"id": {"_eq": "X-Svc-User-Id"}}}}}},
        {"type": "create_select_permission", "args": {"table": "author", "role": "user", "permission": {"columns": ["id", "name"], "filter": {"bio": {"_is_null": false}}}}},
        {"type": "add_computed_field", "args": {"table": "author", "name": "full_name", "definition": {"function": "author_full_name"}}}
    ]})).await;
    s
}

async fn columns_of(s: &TestServer, table: &str) -> Vec<String> {
    let r = s.ok(sql(&format!("SELECT column_name FROM information_schema.columns WHERE table_name = '{table}' ORDER BY ordinal_position"))).await;
    r["result"].as_array().unwrap()[1..]
        .iter()
        .map(|row| row[0].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn results_multi_statement_and_nulls() {
    let s = TestServer::library().await;
    let r = s.ok(sql("INSERT INTO author (name, bio) VALUES ('ann', NULL), ('bo', 'poet'); SELECT id, name, bio FROM author ORDER BY id")).await;
    assert_eq!(
        r,
        json!({"result_type": "TuplesOk", "result": [["id", "name", "bio"], ["1", "ann", "NULL"], ["2", "bo", "poet"]]})
    );
    let r = s.ok(sql("SELECT 1 AS a; CREATE TABLE extra (x int)")).await;
    assert_eq!(r, json!({"result_type": "CommandOk", "result": null}));
    let r = s.ok(sql("SELECT name FROM author WHERE false")).await;
    assert_eq!(r, json!({"result_type": "TuplesOk", "result": [["name"]]}));
    let r = s
        .ok(sql(
            "SELECT '{1,2}'::int[] AS arr, 1.50::numeric AS n, true AS b, '{\"a\":1}'::jsonb AS j",
        ))
        .await;
    assert_eq!(r["result"][1], json!(["{1,2}", "1.50", "t", "{\"a\": 1}"]));
    // A bulk can create a table and track it, since later operations see the new database.
    s.ok(json!({"type": "bulk", "args": [sql("CREATE TABLE fresh (id int PRIMARY KEY)"), {"type": "track_table", "args": {"table": "fresh"}}]})).await;
    assert_eq!(s.export().await["tables"][0]["table"]["name"], "fresh");
}

#[tokio::test]
async fn read_only_and_failures_leave_nothing_behind() {
    let s = TestServer::library().await;
    let r = s
        .ok(sql_with(
            "SELECT count(*) FROM author",
            json!({"read_only": true}),
        ))
        .await;
    assert_eq!(r["result"], json!([["count"], ["0"]]));
    let r = s
        .fails(
            sql_with(
                "INSERT INTO author (name) VALUES ('x')",
                json!({"read_only": true}),
            ),
            400,
            "postgres-error",
            "$.args",
        )
        .await;
    assert_eq!(r["internal"]["error"]["status_code"], "25006");
    let r = s
        .fails(
            sql("CREATE TABLE half (x int); ALTER TABLE author ADD COLUMN y int; SELECT 1/0"),
            400,
            "postgres-error",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "query execution failed");
    assert_eq!(r["internal"]["error"]["status_code"], "22012");
    assert_eq!(r["internal"]["error"]["message"], "division by zero");
    assert_eq!(r["internal"]["prepared"], false);
    let r = s
        .ok(sql("SELECT to_regclass('half') IS NULL AS gone"))
        .await;
    assert_eq!(r["result"][1], json!(["t"]));
    assert!(!columns_of(&s, "author").await.contains(&"y".to_owned()));
    s.fails(
        json!({"type": "run_sql", "args": {}}),
        400,
        "parse-failed",
        "$.args",
    )
    .await;
}

#[tokio::test]
async fn non_admin_is_rejected() {
    let s = TestServer::library().await;
    let r = s
        .http
        .post(format!("{}/v1/query", s.base))
        .header("X-Svc-Role", "user")
        .json(&sql("SELECT 1"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["code"], "access-denied");
}

#[tokio::test]
async fn dropping_a_column_under_a_permission_filter() {
    let s = tracked().await;
    let r = s
        .fails(
            sql("ALTER TABLE author DROP COLUMN bio"),
            400,
            "dependency-error",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "cannot drop due to the following dependent objects : permission author.user.select"
    );
    assert!(
        columns_of(&s, "author").await.contains(&"bio".to_owned()),
        "rolled back"
    );
    s.ok(sql_with(
        "ALTER TABLE author DROP COLUMN bio",
        json!({"cascade": true}),
    ))
    .await;
    assert!(!columns_of(&s, "author").await.contains(&"bio".to_owned()));
    let author = &s.export().await["tables"][0];
    assert!(author.get("select_permissions").is_none(), "{author}");
    assert_eq!(
        s.ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
            .await["is_consistent"],
        true
    );
}

#[tokio::test]
async fn dropping_a_column_under_a_relationship_mapping() {
    let s = tracked().await;
    let r = s
        .fails(
            sql("ALTER TABLE article DROP COLUMN author_id CASCADE"),
            400,
            "dependency-error",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "cannot drop due to the following dependent objects : permission article.user.select, relationship article.author, relationship author.articles"
    );
    s.ok(sql_with(
        "ALTER TABLE article DROP COLUMN author_id CASCADE",
        json!({"cascade": true}),
    ))
    .await;
    let exported = s.export().await;
    assert!(exported["tables"][0].get("array_relationships").is_none());
    assert!(exported["tables"][1].get("object_relationships").is_none());
    assert!(exported["tables"][1].get("select_permissions").is_none());
    // Dropping a column with a custom name takes the name with it.
    s.ok(sql("ALTER TABLE article DROP COLUMN body")).await;
    assert!(s.export().await["tables"][1].get("configuration").is_none());
}

#[tokio::test]
async fn dropping_a_column_used_by_a_computed_field_function() {
    let s = tracked().await;
    // A function with an SQL-standard body depends on the column in Postgres itself.
    s.ok(sql("CREATE FUNCTION author_bio_length(a author) RETURNS integer LANGUAGE sql STABLE BEGIN ATOMIC SELECT length(a.bio); END")).await;
    s.ok(json!({"type": "add_computed_field", "args": {"table": "author", "name": "bio_length", "definition": {"function": "author_bio_length"}}})).await;
    s.ok(json!({"type": "drop_select_permission", "args": {"table": "author", "role": "user"}}))
        .await;
    let r = s
        .fails(
            sql("ALTER TABLE author DROP COLUMN bio"),
            400,
            "postgres-error",
            "$.args",
        )
        .await;
    assert_eq!(r["internal"]["error"]["status_code"], "2BP01");
    // With CASCADE in SQL the function goes, and so does the computed field — no error.
    s.ok(sql("ALTER TABLE author DROP COLUMN bio CASCADE"))
        .await;
    let names: Vec<String> = s.export().await["tables"][0]["computed_fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["full_name"]);
}

#[tokio::test]
async fn dropping_a_foreign_key_behind_a_relationship() {
    let s = tracked().await;
    let r = s
        .fails(
            sql("ALTER TABLE article DROP CONSTRAINT article_author_id_fkey"),
            400,
            "dependency-error",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "cannot drop due to the following dependent objects : permission article.user.select, relationship article.author, relationship author.articles"
    );
    s.ok(sql_with(
        "ALTER TABLE article DROP CONSTRAINT article_author_id_fkey",
        json!({"cascade": true}),
    ))
    .await;
    let exported = s.export().await;
    assert!(exported["tables"][1].get("object_relationships").is_none());
    assert_eq!(
        exported["tables"][1]["configuration"]["custom_column_names"]["body"],
        "text"
    );
}

#[tokio::test]
async fn dropping_a_tracked_table() {
    let s = tracked().await;
    let r = s
        .fails(
            sql("DROP TABLE article CASCADE"),
            400,
            "dependency-error",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "cannot drop due to the following dependent objects : permission article.user.select, relationship article.author, relationship author.articles, table article"
    );
    s.ok(sql_with(
        "DROP TABLE article CASCADE",
        json!({"cascade": true}),
    ))
    .await;
    let exported = s.export().await;
    assert_eq!(exported["tables"].as_array().unwrap().len(), 1);
    assert!(exported["tables"][0].get("array_relationships").is_none());
}

#[tokio::test]
async fn renames_are_followed() {
    let s = tracked().await;
    s.ok(json!({"type": "create_select_permission", "args": {"table": "author", "role": "auditor", "permission": {"columns": "*",
        "filter": {"_exists": {"_table": "article", "_where": {"author_id": {"_ceq": ["$", "id"]}}}}}}})).await;
    s.ok(json!({"type": "create_insert_permission", "args": {"table": "article", "role": "user", "permission": {"check": {"author_id": "X-Svc-User-Id"}, "set": {"author_id": "X-Svc-User-Id"}, "columns": ["title", "author_id"]}}})).await;
    s.ok(sql("ALTER TABLE article RENAME COLUMN author_id TO writer_id; ALTER TABLE article RENAME COLUMN body TO content; ALTER TABLE article RENAME TO post; ALTER TABLE author RENAME COLUMN name TO display_name")).await;
    let exported = s.export().await;
    let author = &exported["tables"][0];
    let post = &exported["tables"][1];
    assert_eq!(post["table"], json!({"schema": "public", "name": "post"}));
    assert_eq!(
        post["configuration"]["custom_column_names"],
        json!({"content": "text"})
    );
    assert_eq!(
        post["object_relationships"][0]["using"],
        json!({"foreign_key_constraint_on": "writer_id"})
    );
    assert_eq!(
        author["array_relationships"][0]["using"],
        json!({"foreign_key_constraint_on": {"table": {"schema": "public", "name": "post"}, "column": "writer_id"}})
    );
    assert_eq!(
        post["select_permissions"][0]["permission"]["columns"],
        json!(["id", "title", "content"])
    );
    assert_eq!(
        post["insert_permissions"][0]["permission"],
        json!({"check": {"writer_id": "X-Svc-User-Id"}, "set": {"writer_id": "X-Svc-User-Id"}, "columns": ["title", "writer_id"]})
    );
    assert_eq!(
        author["select_permissions"][0]["permission"]["columns"],
        json!(["id", "display_name"])
    );
    assert_eq!(
        author["select_permissions"][1]["permission"]["filter"],
        json!({"_exists": {"_table": {"schema": "public", "name": "post"}, "_where": {"writer_id": {"_ceq": ["$", "id"]}}}})
    );
    assert_eq!(
        s.ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
            .await["is_consistent"],
        true
    );
    assert_eq!(
        s.running.state.snapshot().metadata.tables[1].table.name,
        "post"
    );
}

#[tokio::test]
async fn changing_a_column_type_under_a_permission() {
    let s = tracked().await;
    for cascade in [false, true] {
        let r = s
            .fails(
                sql_with(
                    "ALTER TABLE author ALTER COLUMN bio TYPE varchar(200)",
                    json!({"cascade": cascade}),
                ),
                400,
                "dependency-error",
                "$.args",
            )
            .await;
        assert_eq!(r["error"], "cannot change type of column \"bio\" in table \"author\" because of the following dependencies : permission author.user.select");
    }
    // Without dependents the type may change.
    s.ok(sql(
        "ALTER TABLE article ALTER COLUMN status TYPE varchar(20)",
    ))
    .await;
}

#[tokio::test]
async fn dropping_and_overloading_a_computed_field_function() {
    let s = tracked().await;
    let r = s.fails(sql("CREATE FUNCTION author_full_name(a author, suffix text) RETURNS text LANGUAGE sql STABLE AS $$ SELECT a.name || suffix $$"), 400, "not-supported", "$.args").await;
    assert!(
        r["error"].as_str().unwrap().contains("author_full_name"),
        "{r}"
    );
    // Replacing the body keeps the function: nothing happens.
    s.ok(sql("CREATE OR REPLACE FUNCTION author_full_name(a author) RETURNS text LANGUAGE sql STABLE AS $$ SELECT upper(a.name) $$")).await;
    assert_eq!(
        s.export().await["tables"][0]["computed_fields"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    s.ok(sql("DROP FUNCTION author_full_name(author)")).await;
    assert!(s.export().await["tables"][0]
        .get("computed_fields")
        .is_none());
}

#[tokio::test]
async fn other_new_inconsistency_rolls_back() {
    let s = TestServer::library().await;
    s.ok(json!({"type": "track_table", "args": {"table": "article_status", "is_enum": true}}))
        .await;
    let r = s
        .fails(
            sql_with(
                "DELETE FROM article_status",
                json!({"check_metadata_consistency": true}),
            ),
            400,
            "unexpected",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "cannot continue due to new inconsistent metadata"
    );
    assert_eq!(r["internal"][0]["type"], "table");
    let r = s.ok(sql("SELECT count(*) FROM article_status")).await;
    assert_eq!(r["result"][1][0], "2");
}

#[tokio::test]
async fn unchecked_sql_commits_and_breakage_shows_at_reload() {
    let s = tracked().await;
    let version = s.running.state.snapshot().version;
    s.ok(sql_with(
        "ALTER TABLE author DROP COLUMN bio",
        json!({"check_metadata_consistency": false}),
    ))
    .await;
    assert!(!columns_of(&s, "author").await.contains(&"bio".to_owned()));
    assert_eq!(
        s.running.state.snapshot().version,
        version,
        "metadata untouched"
    );
    assert_eq!(
        s.export().await["tables"][0]["select_permissions"][0]["role"],
        "user"
    );
    let r = s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    assert_eq!(r["is_consistent"], false);
    assert_eq!(r["inconsistent_objects"][0]["type"], "select_permission");
    // Inferred: no alter/drop/replace/create function/comment on → no check.
    let r = s.ok(sql("CREATE TABLE untouched (id int)")).await;
    assert_eq!(r["result_type"], "CommandOk");
}

/// The `(type, name)` of each inconsistent object, and whether every reason names `table`.
async fn inconsistent(s: &TestServer) -> (Vec<(String, String)>, Vec<Value>) {
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    let items = r["inconsistent_objects"].as_array().unwrap().clone();
    let named = items
        .iter()
        .map(|i| {
            let d = &i["definition"];
            let name = d["name"]
                .as_str()
                .or(d["role"].as_str())
                .or(d["configuration"]["name"].as_str())
                .unwrap_or_default();
            let table = d["table"]["name"].as_str().unwrap_or_default();
            (
                i["type"].as_str().unwrap().to_owned(),
                format!("{table}.{name}"),
            )
        })
        .collect();
    (named, items)
}

#[tokio::test]
async fn a_vanished_table_takes_everything_defined_on_it() {
    let s = TestServer::blog().await;
    s.ok(sql_with(
        "DROP TABLE author CASCADE",
        json!({"check_metadata_consistency": false}),
    ))
    .await;
    let (named, items) = inconsistent(&s).await;
    let on_author: Vec<(&str, &str)> = named
        .iter()
        .filter(|(_, n)| n.starts_with("author.") || n == ".author")
        .map(|(k, n)| (k.as_str(), n.as_str()))
        .collect();
    assert_eq!(
        on_author,
        [
            ("table", ".author"),
            ("array_relation", "author.articles"),
            ("array_relation", "author.comments"),
            ("computed_field", "author.full_name"),
            ("computed_field", "author.search_articles"),
            ("computed_field", "author.is_me"),
            ("insert_permission", "author.backend"),
            ("select_permission", "author.user"),
            ("select_permission", "author.guest"),
            ("select_permission", "author.backend"),
        ],
        "{named:?}"
    );
    // What points to it from other tables is inconsistent too.
    for other in ["article.author", "comment.author"] {
        assert!(
            named.contains(&("object_relation".to_owned(), other.to_owned())),
            "{other}: {named:?}"
        );
    }
    // Each object defined on it carries its definition and a reason naming the table.
    for item in items
        .iter()
        .filter(|i| i["definition"]["table"]["name"] == "author")
    {
        assert!(
            item["reason"].as_str().unwrap().contains("author"),
            "{item}"
        );
    }
    let full_name = items
        .iter()
        .find(|i| i["definition"]["name"] == "full_name")
        .unwrap();
    assert_eq!(
        full_name["definition"],
        json!({"table": {"schema": "public", "name": "author"}, "name": "full_name",
            "definition": {"function": {"schema": "public", "name": "author_full_name"}},
            "comment": null})
    );
    assert_eq!(
        full_name["reason"],
        "table \"author\" is inconsistent: no such table/view exists in postgres: \"author\""
    );
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(
        s.ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
            .await,
        json!({"is_consistent": true, "inconsistent_objects": []})
    );
    let export = s.export().await;
    let tables: Vec<&str> = export["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["table"]["name"].as_str().unwrap())
        .collect();
    assert!(!tables.contains(&"author"), "{tables:?}");
    let article = export["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"]["name"] == "article")
        .unwrap();
    assert!(article.get("object_relationships").is_none(), "{article}");
    // The rest keeps serving.
    let r = s.gql("{ articles(where: {id: {_eq: 1}}) { title } }").await;
    assert_eq!(
        r,
        json!({"data": {"articles": [{"title": "Rust in practice"}]}})
    );
}

#[tokio::test]
async fn a_dropped_column_takes_every_object_that_uses_it() {
    let s = TestServer::blog().await;
    s.ok(sql_with(
        "ALTER TABLE comment DROP COLUMN author_id",
        json!({"check_metadata_consistency": false}),
    ))
    .await;
    let (named, items) = inconsistent(&s).await;
    assert_eq!(
        named,
        [
            ("array_relation".to_owned(), "author.comments".to_owned()),
            ("object_relation".to_owned(), "comment.author".to_owned()),
            ("insert_permission".to_owned(), "comment.user".to_owned()),
        ],
        "{items:?}"
    );
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(
        s.ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
            .await["is_consistent"],
        true
    );
    let export = s.export().await;
    let comment = export["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"]["name"] == "comment")
        .unwrap();
    assert_eq!(comment["object_relationships"].as_array().unwrap().len(), 1);
    assert!(comment.get("insert_permissions").is_none(), "{comment}");
    assert_eq!(comment["select_permissions"][0]["role"], "user");
}

/// Renaming (or moving) a computed field's function is followed into the computed field, which
/// keeps its name, so the GraphQL API and the permissions that list it keep working.
#[tokio::test]
async fn renamed_computed_field_functions_are_followed() {
    let s = tracked().await;
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "author", "role": "reader",
        "permission": {"columns": ["id"], "computed_fields": ["full_name"], "filter": {}}}}),
    )
    .await;
    s.ok(sql(
        "INSERT INTO author (id, name, bio) VALUES (1, 'Ann', 'poet')",
    ))
    .await;
    let query = "{ author(where: {id: {_eq: 1}}) { full_name } }";
    let before = s.gql_role(query, "reader", &[]).await;
    assert_eq!(
        before,
        json!({"data": {"author": [{"full_name": "Ann (poet)"}]}})
    );
    s.ok(sql(
        "ALTER FUNCTION author_full_name(author) RENAME TO author_display_name",
    ))
    .await;
    let export = s.export().await;
    let author = &export["tables"][0];
    assert_eq!(
        author["computed_fields"][0]["definition"]["function"],
        json!({"schema": "public", "name": "author_display_name"}),
        "{author}"
    );
    assert_eq!(author["computed_fields"][0]["name"], "full_name");
    assert_eq!(
        author["select_permissions"][1]["permission"]["computed_fields"],
        json!(["full_name"])
    );
    assert_eq!(s.gql_role(query, "reader", &[]).await, before);
    // Moved to another schema: followed as well.
    s.ok(sql(
        "CREATE SCHEMA extra; ALTER FUNCTION author_display_name(author) SET SCHEMA extra",
    ))
    .await;
    assert_eq!(
        s.export().await["tables"][0]["computed_fields"][0]["definition"]["function"],
        json!({"schema": "extra", "name": "author_display_name"})
    );
    assert_eq!(s.gql_role(query, "reader", &[]).await, before);
    // Renamed onto an existing name (an overload there) is refused and rolled back.
    let r = s
        .fails(
            sql("CREATE FUNCTION extra.shown(a author, n int) RETURNS text LANGUAGE sql STABLE AS $$ SELECT a.name $$; ALTER FUNCTION extra.author_display_name(author) RENAME TO shown"),
            400,
            "not-supported",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "the function \"extra.shown\" is used by a computed field and cannot be overloaded"
    );
    assert_eq!(s.gql_role(query, "reader", &[]).await, before);
    assert_eq!(
        s.ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
            .await["is_consistent"],
        true
    );
}
