//! track_table, untrack_table, set_table_is_enum, set_table_custom_fields.

use crate::harness::TestServer;
use serde_json::json;

#[tokio::test]
async fn track_table_all_forms_and_export() {
    let s = TestServer::library().await;
    assert_eq!(
        s.ok(json!({"type": "track_table", "args": {"table": "author"}}))
            .await,
        json!({"message": "success"})
    );
    s.ok(json!({"type": "track_table", "args": {"schema": "public", "name": "article"}}))
        .await;
    s.ok(json!({"type": "track_table", "version": 2, "args": {"table": {"schema": "reporting", "name": "daily"},
        "configuration": {"custom_root_fields": {"select": "dailyStats"}, "custom_column_names": {"views": "viewCount"}}}}))
        .await;
    s.ok(json!({"type": "track_table", "args": {"table": {"name": "published_article"}}}))
        .await;
    let exported = s.export().await;
    assert_eq!(
        exported,
        json!({"version": 2, "tables": [
            {"table": {"schema": "public", "name": "author"}},
            {"table": {"schema": "public", "name": "article"}},
            {"table": {"schema": "reporting", "name": "daily"},
             "configuration": {"custom_root_fields": {"select": "dailyStats"}, "custom_column_names": {"views": "viewCount"}}},
            {"table": {"schema": "public", "name": "published_article"}}
        ]})
    );
}

#[tokio::test]
async fn track_table_errors() {
    let s = TestServer::library().await;
    let r = s
        .fails(
            json!({"type": "track_table", "args": {"table": "nope"}}),
            400,
            "not-exists",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "no such table/view exists in postgres: \"nope\""
    );
    s.ok(json!({"type": "track_table", "args": {"table": "author"}}))
        .await;
    let r = s
        .fails(
            json!({"type": "track_table", "args": {"table": "author"}}),
            400,
            "already-tracked",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "view/table already tracked: \"author\"");
    let r = s
        .fails(
            json!({"type": "track_table", "args": {}}),
            400,
            "parse-failed",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "the key 'table' was not present");
    s.fails(
        json!({"type": "track_table", "args": {"table": 7}}),
        400,
        "parse-failed",
        "$.args.table",
    )
    .await;
    let r = s
        .fails(
            json!({"type": "track_table", "args": {"table": "Weird Name"}}),
            400,
            "not-supported",
            "$.args",
        )
        .await;
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("not a valid GraphQL identifier"),
        "{r}"
    );
    // Custom names: invalid GraphQL name, unknown column, clashes.
    s.fails(
        json!({"type": "track_table", "version": 2, "args": {"table": "article",
        "configuration": {"custom_root_fields": {"select": "not valid"}}}}),
        400,
        "parse-failed",
        "$.args.configuration.custom_root_fields.select",
    )
    .await;
    let r = s
        .fails(
            json!({"type": "track_table", "version": 2, "args": {"table": "article",
        "configuration": {"custom_column_names": {"nope": "x"}}}}),
            400,
            "not-exists",
            "$.args.configuration.custom_column_names.nope",
        )
        .await;
    assert_eq!(r["error"], "column \"nope\" does not exist");
    s.fails(
        json!({"type": "track_table", "version": 2, "args": {"table": "article",
        "configuration": {"custom_column_names": {"title": "body"}}}}),
        400,
        "constraint-violation",
        "$.args.configuration.custom_column_names.title",
    )
    .await;
    s.fails(
        json!({"type": "track_table", "version": 2, "args": {"table": "article",
        "configuration": {"custom_root_fields": {"select": "a", "select_aggregate": "a"}}}}),
        400,
        "constraint-violation",
        "$.args.configuration.custom_root_fields.select_aggregate",
    )
    .await;
    let r = s
        .fails(
            json!({"type": "track_table", "version": 2, "args": {"table": "article",
        "configuration": {"custom_root_fields": {"select": "author"}}}}),
            400,
            "constraint-violation",
            "$.args.configuration.custom_root_fields.select",
        )
        .await;
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("conflicts with a root field of table \"author\""),
        "{r}"
    );
    // Nothing above was stored.
    assert_eq!(s.export().await["tables"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn enum_tables() {
    let s = TestServer::library().await;
    s.ok(json!({"type": "track_table", "args": {"table": "article_status", "is_enum": true}}))
        .await;
    for (table, reason) in [
        ("bad_enum", "not valid GraphQL enum values"),
        ("empty_enum", "it has no rows"),
        ("author", "not of type text"),
    ] {
        s.ok(json!({"type": "track_table", "args": {"table": table}}))
            .await;
        let r = s
            .fails(
                json!({"type": "set_table_is_enum", "args": {"table": table, "is_enum": true}}),
                400,
                "constraint-violation",
                "$.args",
            )
            .await;
        let message = r["error"].as_str().unwrap();
        assert!(
            message.starts_with(&format!(
                "the table \"{table}\" cannot be used as an enum because"
            )),
            "{message}"
        );
        assert!(message.contains(reason), "{message}");
    }
    s.fails(
        json!({"type": "set_table_is_enum", "args": {"table": "article_status"}}),
        400,
        "parse-failed",
        "$.args",
    )
    .await;
    s.fails(
        json!({"type": "set_table_is_enum", "args": {"table": "article", "is_enum": true}}),
        400,
        "not-exists",
        "$.args.table",
    )
    .await;
    s.ok(
        json!({"type": "set_table_is_enum", "args": {"table": "article_status", "is_enum": false}}),
    )
    .await;
    assert_eq!(
        s.export().await["tables"][0],
        json!({"table": {"schema": "public", "name": "article_status"}})
    );
    s.ok(
        json!({"type": "set_table_is_enum", "args": {"table": "article_status", "is_enum": true}}),
    )
    .await;
    assert_eq!(s.export().await["tables"][0]["is_enum"], true);
    // A row change that breaks the rules shows up as an inconsistency after a reload.
    s.sql("INSERT INTO article_status VALUES ('has space', NULL)")
        .await;
    let r = s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    assert_eq!(r["is_consistent"], false);
    assert_eq!(r["inconsistent_objects"][0]["type"], "table");
}

#[tokio::test]
async fn set_table_custom_fields_replaces_configuration() {
    let s = TestServer::library().await;
    s.ok(json!({"type": "track_table", "version": 2, "args": {"table": "author",
        "configuration": {"custom_root_fields": {"select": "writers"}, "custom_column_names": {"bio": "about"}}}})).await;
    s.ok(
        json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "author",
        "custom_root_fields": {"select_by_pk": "writer"}}}),
    )
    .await;
    assert_eq!(
        s.export().await["tables"][0]["configuration"],
        json!({"custom_root_fields": {"select_by_pk": "writer"}, "custom_column_names": {}})
    );
    s.fails(
        json!({"type": "set_table_custom_fields", "args": {"table": "author"}}),
        400,
        "parse-failed",
        "$.version",
    )
    .await;
    s.fails(
        json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "article"}}),
        400,
        "not-exists",
        "$.args.table",
    )
    .await;
    s.fails(
        json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "author",
        "custom_column_names": {"missing": "m"}}}),
        400,
        "not-exists",
        "$.args.custom_column_names.missing",
    )
    .await;
    s.ok(json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "author"}}))
        .await;
    assert_eq!(
        s.export().await["tables"][0],
        json!({"table": {"schema": "public", "name": "author"}})
    );
}

/// `update_many` names `update_<t>_many`: accepted by both operations, exported in its place
/// among the keys, and checked against the table's other names and other tables' root fields,
/// whose own `update_<t>_many` defaults count too.
#[tokio::test]
async fn custom_update_many_is_set_exported_and_checked_for_clashes() {
    let s = TestServer::library().await;
    s.ok(json!({"type": "track_table", "version": 2, "args": {"table": "author",
        "configuration": {"custom_root_fields": {"select": "writers", "update_many": "editWriters"}}}}))
        .await;
    s.ok(json!({"type": "track_table", "args": {"table": "article"}}))
        .await;
    // Sent in any order, exported in the documented order.
    s.ok(
        json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "article",
        "custom_root_fields": {"delete": "dropArticles", "update_many": "editArticles",
            "update_by_pk": "editArticle", "select": "articles"}}}),
    )
    .await;
    let export = s.export().await;
    assert_eq!(
        export["tables"][0]["configuration"]["custom_root_fields"],
        json!({"select": "writers", "update_many": "editWriters"})
    );
    let roots = &export["tables"][1]["configuration"]["custom_root_fields"];
    assert_eq!(
        roots.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["select", "update_by_pk", "update_many", "delete"],
        "{roots}"
    );
    assert_eq!(roots["update_many"], "editArticles");

    // Each refused request leaves the configuration as it was.
    s.fails(
        json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "article",
        "custom_root_fields": {"update_many": "edit articles"}}}),
        400,
        "parse-failed",
        "$.args.custom_root_fields.update_many",
    )
    .await;
    let r = s
        .fails(
            json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "article",
        "custom_root_fields": {"update": "editArticles", "update_many": "editArticles"}}}),
            400,
            "constraint-violation",
            "$.args.custom_root_fields.update_many",
        )
        .await;
    assert_eq!(
        r["error"],
        "the custom root fields \"update\" and \"update_many\" of table \"article\" have the same name \"editArticles\""
    );
    // Other tables' custom names.
    for name in ["editWriters", "writers", "editArticles"] {
        let r = s
            .fails(
                json!({"type": "track_table", "version": 2, "args": {"table": {"schema": "reporting", "name": "daily"},
                "configuration": {"custom_root_fields": {"update_many": name}}}}),
                400,
                "constraint-violation",
                "$.args.configuration.custom_root_fields.update_many",
            )
            .await;
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .starts_with(&format!("the root field \"{name}\" of table \"reporting.daily\" conflicts with a root field of table")),
            "{r}"
        );
    }
    // Another table's default `update_<t>_many`, once article no longer renames it.
    s.ok(
        json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "article",
        "custom_root_fields": {}}}),
    )
    .await;
    let r = s
        .fails(
            json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "author",
        "custom_root_fields": {"update_many": "update_article_many"}}}),
            400,
            "constraint-violation",
            "$.args.custom_root_fields.update_many",
        )
        .await;
    assert_eq!(
        r["error"],
        "the root field \"update_article_many\" of table \"author\" conflicts with a root field of table \"article\""
    );
    assert_eq!(
        s.export().await["tables"][0]["configuration"]["custom_root_fields"],
        json!({"select": "writers", "update_many": "editWriters"})
    );
}

#[tokio::test]
async fn untrack_table_with_dependents() {
    let s = TestServer::library().await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "args": {"table": "author"}},
        {"type": "track_table", "args": {"table": "article"}},
        {"type": "create_object_relationship", "args": {"table": "article", "name": "author", "using": {"foreign_key_constraint_on": "author_id"}}},
        {"type": "create_array_relationship", "args": {"table": "author", "name": "articles", "using": {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}}}},
        {"type": "create_select_permission", "args": {"table": "article", "role": "user", "permission": {"columns": "*", "filter": {"author": {"name": {"_eq": "X-Svc-User-Name"}}}}}}
    ]})).await;
    let r = s
        .fails(
            json!({"type": "untrack_table", "args": {"table": "author"}}),
            400,
            "dependency-error",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "cannot drop due to the following dependent objects : permission article.user.select, relationship article.author");
    s.fails(
        json!({"type": "untrack_table", "args": {"table": "nope"}}),
        400,
        "already-untracked",
        "$.args",
    )
    .await;
    s.ok(json!({"type": "untrack_table", "args": {"table": "author", "cascade": true}}))
        .await;
    assert_eq!(
        s.export().await,
        json!({"version": 2, "tables": [{"table": {"schema": "public", "name": "article"}}]})
    );
    // Untracking a table with only its own objects needs no cascade.
    s.ok(json!({"type": "untrack_table", "args": {"table": "article"}}))
        .await;
    let r = s
        .fails(
            json!({"type": "untrack_table", "args": {"table": "article"}}),
            400,
            "already-untracked",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "view/table already untracked: \"article\"");
}
