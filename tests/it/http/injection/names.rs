//! Hostile names in every metadata operation where a table, schema, column, relationship,
//! computed field, function, operator, trigger, event or query goes: each refused with its code
//! and the path of the offending key.

use super::*;

/// `base` with the key `key`, printed as error paths print it (`docs/metadata-api.md`).
fn key_path(base: &str, key: &str) -> String {
    let mut chars = key.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{base}.{key}")
    } else {
        format!(
            "{base}['{}']",
            key.replace('\\', "\\\\").replace('\'', "\\'")
        )
    }
}

/// Metadata operations naming `v` where a table, schema, column, relationship, computed
/// field, function, operator, trigger, event or query goes, each with the code and path of its
/// refusal.
fn refused_names(v: &str) -> Vec<(Value, &'static str, String)> {
    let hook = "http://127.0.0.1:9/";
    vec![
        (
            json!({"type": "track_table", "args": {"table": v}}),
            "not-exists",
            "$.args".into(),
        ),
        (
            json!({"type": "track_table", "args": {"table": {"schema": v, "name": "spare"}}}),
            "not-exists",
            "$.args".into(),
        ),
        (
            json!({"type": "untrack_table", "args": {"table": v}}),
            "already-untracked",
            "$.args".into(),
        ),
        (
            json!({"type": "track_table", "version": 2, "args": {"table": "spare", "configuration": {"custom_root_fields": {"select": v}}}}),
            "parse-failed",
            "$.args.configuration.custom_root_fields.select".into(),
        ),
        (
            json!({"type": "track_table", "version": 2, "args": {"table": "spare", "configuration": {"custom_column_names": {"note": v}}}}),
            "parse-failed",
            "$.args.configuration.custom_column_names.note".into(),
        ),
        (
            json!({"type": "track_table", "version": 2, "args": {"table": "spare", "configuration": {"custom_column_names": {v: "x"}}}}),
            "not-exists",
            key_path("$.args.configuration.custom_column_names", v),
        ),
        (
            json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "item", "custom_root_fields": {"insert_one": v}, "custom_column_names": {}}}),
            "parse-failed",
            "$.args.custom_root_fields.insert_one".into(),
        ),
        (
            json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "item", "custom_root_fields": {}, "custom_column_names": {"label": v}}}),
            "parse-failed",
            "$.args.custom_column_names.label".into(),
        ),
        (
            json!({"type": "create_object_relationship", "args": {"table": "item", "name": v, "using": {"foreign_key_constraint_on": "owner"}}}),
            "parse-failed",
            "$.args.name".into(),
        ),
        (
            json!({"type": "create_object_relationship", "args": {"table": "item", "name": "rel", "using": {"foreign_key_constraint_on": v}}}),
            "not-exists",
            "$.args.using".into(),
        ),
        (
            json!({"type": "create_array_relationship", "args": {"table": "item", "name": "rel", "using": {"manual_configuration": {"remote_table": v, "column_mapping": {"id": "id"}}}}}),
            "not-exists",
            "$.args.using".into(),
        ),
        (
            json!({"type": "drop_relationship", "args": {"table": "item", "relationship": v}}),
            "not-exists",
            "$.args.relationship".into(),
        ),
        (
            json!({"type": "add_computed_field", "args": {"table": "item", "name": v, "definition": {"function": "f"}}}),
            "parse-failed",
            "$.args.name".into(),
        ),
        (
            json!({"type": "add_computed_field", "args": {"table": "item", "name": "cf", "definition": {"function": {"schema": v, "name": v}}}}),
            "constraint-violation",
            "$.args".into(),
        ),
        (
            json!({"type": "create_select_permission", "args": {"table": v, "role": "r", "permission": {"columns": "*", "filter": {}}}}),
            "not-exists",
            "$.args.table".into(),
        ),
        (
            json!({"type": "create_select_permission", "args": {"table": "item", "role": "r", "permission": {"columns": [v], "filter": {}}}}),
            "not-exists",
            "$.args.permission.columns[0]".into(),
        ),
        (
            json!({"type": "create_select_permission", "args": {"table": "item", "role": "r", "permission": {"columns": "*", "filter": {v: {"_eq": 1}}}}}),
            "not-exists",
            key_path("$.args.permission.filter", v),
        ),
        (
            json!({"type": "create_select_permission", "args": {"table": "item", "role": "r", "permission": {"columns": "*", "filter": {"label": {v: 1}}}}}),
            "parse-failed",
            key_path("$.args.permission.filter.label", v),
        ),
        (
            json!({"type": "create_insert_permission", "args": {"table": "item", "role": "r", "permission": {"check": {}, "set": {v: "x"}}}}),
            "not-exists",
            key_path("$.args.permission.set", v),
        ),
        (
            json!({"type": "create_event_trigger", "args": {"name": v, "table": "item", "webhook": hook, "insert": {"columns": "*"}}}),
            "parse-failed",
            "$.args.name".into(),
        ),
        (
            json!({"type": "create_event_trigger", "args": {"name": "t", "table": "item", "webhook": hook, "update": {"columns": [v]}}}),
            "not-exists",
            "$.args.update.columns[0]".into(),
        ),
        (
            json!({"type": "invoke_event_trigger", "args": {"name": v, "payload": {}}}),
            "not-exists",
            "$.args.name".into(),
        ),
        (
            json!({"type": "create_query_collection", "args": {"name": "c", "definition": {"queries": [{"name": "q", "query": v}]}}}),
            "parse-failed",
            "$.args.definition.queries[0].query".into(),
        ),
    ]
}

#[tokio::test]
async fn metadata_names() {
    let (s, canary) = server(false).await;
    let corpus = corpus();
    for h in &corpus {
        // Refusals do not depend on each other: sent together.
        let cases = refused_names(&h.text);
        let answers = join_all(cases.iter().map(|(op, _, _)| s.query(op.clone()))).await;
        for ((op, code, path), (status, body)) in cases.iter().zip(answers) {
            assert_eq!(
                (status, body["code"].as_str(), body["path"].as_str()),
                (400, Some(*code), Some(path.as_str())),
                "{} {}: {}",
                h.name,
                op["type"],
                brief(&body.to_string())
            );
            assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()));
        }
        // Role, collection and query names are any non-empty strings, kept as given.
        let v = h.text.as_str();
        let accepted = [
            json!({"type": "create_select_permission", "args": {"table": "item", "role": v, "permission": {"columns": "*", "filter": {"label": {"_eq": v}}}}}),
            json!({"type": "create_query_collection", "args": {"name": v, "definition": {"queries": [{"name": v, "query": "{ item { id } }"}]}}}),
            json!({"type": "add_collection_to_allowlist", "args": {"collection": v}}),
        ];
        if v.is_empty() {
            let paths = ["$.args.role", "$.args.name", "$.args.collection"];
            for (op, path) in accepted.into_iter().zip(paths) {
                s.fails(
                    op,
                    400,
                    if path == "$.args.collection" {
                        "not-exists"
                    } else {
                        "parse-failed"
                    },
                    path,
                )
                .await;
            }
            continue;
        }
        s.ok(json!({"type": "bulk", "args": accepted})).await;
    }
    let export = s.export().await;
    let names = |items: &Value, key: &str| -> BTreeSet<String> {
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i[key].as_str().unwrap().to_owned())
            .collect()
    };
    let expected: BTreeSet<String> = corpus
        .iter()
        .filter(|h| !h.text.is_empty())
        .map(|h| h.text.clone())
        .collect();
    assert_eq!(
        names(&export["tables"][0]["select_permissions"], "role"),
        expected
    );
    assert_eq!(names(&export["query_collections"], "name"), expected);
    assert_eq!(names(&export["allowlist"], "collection"), expected);
    // And they go away by the same names.
    let drops: Vec<Value> = expected
        .iter()
        .flat_map(|v| {
            [
                json!({"type": "drop_select_permission", "args": {"table": "item", "role": v}}),
                json!({"type": "drop_query_collection", "args": {"collection": v, "cascade": true}}),
            ]
        })
        .collect();
    s.ok(json!({"type": "bulk", "args": drops})).await;
    let export = s.export().await;
    assert!(
        export["tables"][0].get("select_permissions").is_none(),
        "{export}"
    );
    assert!(export.get("query_collections").is_none(), "{export}");
    canary.check(&[]).await;
}
