//! Hostile identifiers that exist: tables, a schema, columns, a constraint and a function made
//! through `run_sql`, then tracked, named with `custom_column_names`, queried, written, related,
//! used in permissions, renamed and captured by event triggers through the public APIs.

use super::*;

/// The hostile columns of `hostile` and the GraphQL names `custom_column_names` gives them.
const COLUMNS: [(&str, &str); 10] = [
    ("label'; DROP TABLE canary; --", "c_label"),
    ("a\"b", "c_quote"),
    ("x y", "c_space"),
    ("$$", "c_dollar"),
    ("$tag$", "c_tag"),
    ("/* */", "c_comment"),
    ("\\", "c_backslash"),
    ("\u{02BC}", "c_apostrophe"),
    ("%s {}", "c_format"),
    ("line\nbreak", "c_newline"),
];

/// An identifier quoted as a user would write it in `run_sql`.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The SQL a user runs through `run_sql`: tables, a schema, a constraint and a function with
/// hostile names.
fn hostile_objects_sql() -> String {
    let columns: Vec<String> = COLUMNS
        .iter()
        .map(|(c, _)| format!("{} text", ident(c)))
        .collect();
    format!(
        r#"CREATE TABLE "a""b; drop table canary--" (id int PRIMARY KEY, "col ""q"" ; --" text);
        CREATE SCHEMA "s'; drop table canary; --";
        CREATE TABLE "s'; drop table canary; --".plain (id int PRIMARY KEY);
        CREATE TABLE hostile (id serial PRIMARY KEY, {},
            CONSTRAINT "uq'; DROP TABLE canary; --" UNIQUE ("x y"));
        CREATE TABLE buddy (id serial PRIMARY KEY,
            "ref'; --" int CONSTRAINT "fk""; DROP TABLE canary; --" REFERENCES hostile (id));
        CREATE FUNCTION "shout'; DROP TABLE canary; --"(h hostile) RETURNS text
            LANGUAGE sql STABLE AS $$ SELECT h."label'; DROP TABLE canary; --" || '!' $$"#,
        columns.join(", ")
    )
}

/// Runs a GraphQL request as admin that must succeed; returns `data`.
async fn data(s: &TestServer, query: &str, variables: Value) -> Value {
    match admin(s, query, variables).await {
        Outcome::Data(data) => data,
        other => panic!("{query}: {other:?}"),
    }
}

/// A row of `hostile` by GraphQL name: every hostile column holds `<prefix>: <its name>`.
fn hostile_row(prefix: &str) -> Value {
    COLUMNS
        .iter()
        .map(|(column, field)| ((*field).to_owned(), json!(format!("{prefix}: {column}"))))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The same row keyed by Postgres column names, as `row_to_json` (and the capture) gives it.
fn stored_row(id: i64, prefix: &str) -> Value {
    let mut row = serde_json::Map::new();
    row.insert("id".to_owned(), json!(id));
    for (column, _) in COLUMNS {
        row.insert(column.to_owned(), json!(format!("{prefix}: {column}")));
    }
    row.into()
}

/// The events of the trigger `hostile_capture` (op and data), in capture order.
async fn captured(s: &TestServer) -> Vec<Value> {
    let events = query_json(
        &s.db_url,
        "SELECT payload->>'op' AS op, payload->'data' AS data FROM basalt_catalog.event_log
         WHERE trigger_name = 'hostile_capture' AND payload->>'op' <> 'MANUAL'
         ORDER BY created_at, id",
    )
    .await;
    events.as_array().unwrap().clone()
}

const SELECT_HOSTILE: &str = "id c_label c_quote c_space c_dollar c_tag c_comment c_backslash c_apostrophe c_format c_newline";

#[tokio::test]
async fn hostile_identifiers_from_run_sql() {
    let (s, canary) = server(false).await;
    let created = [
        "public.a\"b; drop table canary--",
        "s'; drop table canary; --.plain",
        "public.hostile",
        "public.buddy",
    ];
    assert_eq!(
        s.ok(json!({"type": "run_sql", "args": {"sql": hostile_objects_sql()}}))
            .await,
        json!({"result_type": "CommandOk", "result": null})
    );

    // A table whose GraphQL name would be invalid cannot be tracked, custom root fields or not:
    // its type names derive from the table name.
    let roots: serde_json::Map<String, Value> = [
        "select",
        "select_by_pk",
        "select_aggregate",
        "insert",
        "insert_one",
        "update",
        "update_by_pk",
        "update_many",
        "delete",
        "delete_by_pk",
    ]
    .iter()
    .map(|k| ((*k).to_owned(), json!(format!("ab_{k}"))))
    .collect();
    for args in [
        json!({"table": "a\"b; drop table canary--"}),
        json!({"table": "a\"b; drop table canary--", "configuration": {"custom_root_fields": roots, "custom_column_names": {"col \"q\" ; --": "q"}}}),
        json!({"table": {"schema": "s'; drop table canary; --", "name": "plain"}}),
    ] {
        let r = s
            .fails(
                json!({"type": "track_table", "version": 2, "args": args}),
                400,
                "not-supported",
                "$.args",
            )
            .await;
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .ends_with("in the GraphQL schema because it is not a valid GraphQL identifier"),
            "{r}"
        );
    }

    // A table with hostile column names is tracked; those columns stay out of the schema until
    // `custom_column_names` names them (as constraints without GraphQL names stay out of
    // `<t>_constraint`).
    s.ok(json!({"type": "track_table", "args": {"table": "hostile"}}))
        .await;
    let fields = "{ __type(name: \"hostile\") { fields { name } } c: __type(name: \"hostile_constraint\") { enumValues { name } } }";
    assert_eq!(
        data(&s, fields, json!({})).await,
        json!({"__type": {"fields": [{"name": "id"}]}, "c": {"enumValues": [{"name": "hostile_pkey"}]}})
    );
    let custom: serde_json::Map<String, Value> = COLUMNS
        .iter()
        .map(|(c, f)| ((*c).to_owned(), json!(f)))
        .collect();
    s.ok(json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "hostile", "custom_root_fields": {}, "custom_column_names": custom}}))
        .await;
    let mut names: Vec<&str> = COLUMNS.iter().map(|(_, f)| *f).collect();
    names.push("id");
    names.sort_unstable();
    let expected: Vec<Value> = names.iter().map(|n| json!({ "name": n })).collect();
    assert_eq!(
        data(&s, fields, json!({})).await["__type"]["fields"],
        json!(expected)
    );

    // An event trigger on the hostile columns: the capture triggers quote them.
    s.ok(json!({"type": "create_event_trigger", "args": {
        "name": "hostile_capture", "table": "hostile", "webhook": "http://127.0.0.1:9/hook",
        "insert": {"columns": "*"},
        "update": {"columns": ["x y"], "payload": ["id", "x y", "a\"b"]},
        "delete": {"columns": "*", "payload": ["$$"]},
        "enable_manual": true}}))
        .await;

    // Inserts, reads, filters, ordering, aggregates and updates through the custom names.
    let insert = format!(
        "mutation($o: hostile_insert_input!) {{ insert_hostile_one(object: $o) {{ {SELECT_HOSTILE} }} }}"
    );
    let mut ids = Vec::new();
    for prefix in ["a", "b"] {
        let row = data(&s, &insert, json!({ "o": hostile_row(prefix) })).await
            ["insert_hostile_one"]
            .clone();
        let id = row["id"].as_i64().unwrap();
        let mut expected = hostile_row(prefix);
        expected["id"] = json!(id);
        assert_eq!(row, expected);
        ids.push(id);
    }
    assert_eq!(
        query_json(
            &s.db_url,
            "SELECT row_to_json(h) AS row FROM hostile h ORDER BY id"
        )
        .await,
        json!([{"row": stored_row(ids[0], "a")}, {"row": stored_row(ids[1], "b")}])
    );
    let d = data(
        &s,
        "query($v: String!) {
            f: hostile(where: {c_space: {_eq: $v}}) { id }
            o: hostile(order_by: {c_dollar: desc}) { id }
            d: hostile(distinct_on: [c_newline], order_by: {c_newline: asc}) { c_newline }
            a: hostile_aggregate { aggregate { max { c_label } count(columns: [c_quote], distinct: true) } } }",
        json!({"v": "b: x y"}),
    )
    .await;
    assert_eq!(
        d,
        json!({"f": [{"id": ids[1]}], "o": [{"id": ids[1]}, {"id": ids[0]}],
               "d": [{"c_newline": "a: line\nbreak"}, {"c_newline": "b: line\nbreak"}],
               "a": {"aggregate": {"max": {"c_label": "b: label'; DROP TABLE canary; --"}, "count": 2}}})
    );
    let d = data(
        &s,
        "mutation($id: Int!) {
            s: update_hostile(where: {c_backslash: {_eq: \"a: \\\\\"}}, _set: {c_space: \"a2: x y\"}) { affected_rows }
            d: update_hostile_by_pk(pk_columns: {id: $id}, _set: {c_dollar: \"b2: $$\"}) { c_dollar }
            c: insert_hostile_one(object: {id: $id, c_tag: \"b2: $tag$\"},
                on_conflict: {constraint: hostile_pkey, update_columns: [c_tag]}) { c_tag } }",
        json!({"id": ids[1]}),
    )
    .await;
    assert_eq!(
        d,
        json!({"s": {"affected_rows": 1}, "d": {"c_dollar": "b2: $$"}, "c": {"c_tag": "b2: $tag$"}})
    );

    // Captured with the Postgres column names as keys; only `x y` fires updates.
    let mut after_update = stored_row(ids[0], "a");
    after_update["x y"] = json!("a2: x y");
    let update_payload =
        |row: &Value| json!({"id": row["id"], "x y": row["x y"], "a\"b": row["a\"b"]});
    assert_eq!(
        captured(&s).await,
        [
            json!({"op": "INSERT", "data": {"old": null, "new": stored_row(ids[0], "a")}}),
            json!({"op": "INSERT", "data": {"old": null, "new": stored_row(ids[1], "b")}}),
            json!({"op": "UPDATE", "data": {"old": update_payload(&stored_row(ids[0], "a")), "new": update_payload(&after_update)}}),
        ]
    );

    // Deleting captures only the payload column `$$`.
    let d = data(
        &s,
        "mutation($id: Int!) { delete_hostile_by_pk(id: $id) { id } }",
        json!({"id": ids[0]}),
    )
    .await;
    assert_eq!(d, json!({"delete_hostile_by_pk": {"id": ids[0]}}));
    assert_eq!(
        captured(&s).await.last(),
        Some(&json!({"op": "DELETE", "data": {"old": {"$$": "a: $$"}, "new": null}}))
    );

    // Manual events carry any payload verbatim; `\u0000` cannot be stored in `jsonb`.
    for h in &corpus() {
        let invoke = json!({"type": "invoke_event_trigger", "args": {"name": "hostile_capture", "payload": {"v": h.text, h.text.clone(): 1}}});
        if h.has_nul() {
            s.fails(invoke, 400, "parse-failed", "$.args.payload").await;
        } else {
            let id = s.ok(invoke).await["event_id"].as_str().unwrap().to_owned();
            let stored = query_json(
                &s.db_url,
                &format!("SELECT payload->'data' AS data FROM basalt_catalog.event_log WHERE id = '{id}'"),
            )
            .await;
            assert_eq!(
                stored,
                json!([{"data": {"v": h.text, h.text.clone(): 1}}]),
                "{}",
                h.name
            );
        }
        let r = s
            .fails(
                json!({"type": "redeliver_event", "args": {"event_id": h.text}}),
                400,
                "not-exists",
                "$.args.event_id",
            )
            .await;
        assert_eq!(r["error"], "event not found", "{}", h.name);
    }

    // Relationships over a hostile foreign-key column and constraint.
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "version": 2, "args": {"table": "buddy", "configuration": {"custom_column_names": {"ref'; --": "ref"}}}},
        {"type": "create_object_relationship", "args": {"table": "buddy", "name": "host", "using": {"foreign_key_constraint_on": "ref'; --"}}},
        {"type": "create_array_relationship", "args": {"table": "hostile", "name": "buddies", "using": {"foreign_key_constraint_on": {"table": "buddy", "column": "ref'; --"}}}},
        {"type": "create_array_relationship", "args": {"table": "hostile", "name": "twins", "using": {"manual_configuration": {"remote_table": "hostile", "column_mapping": {"x y": "x y"}}}}},
        {"type": "add_computed_field", "args": {"table": "hostile", "name": "shout", "definition": {"function": "shout'; DROP TABLE canary; --"}}}
    ]}))
    .await;
    let d = data(
        &s,
        "mutation($id: Int!) { insert_buddy_one(object: {ref: $id}) { ref host { c_label shout twins { id } buddies { ref } } } }",
        json!({"id": ids[1]}),
    )
    .await;
    let label = "b: label'; DROP TABLE canary; --";
    assert_eq!(
        d,
        json!({"insert_buddy_one": {"ref": ids[1], "host": {"c_label": label, "shout": format!("{label}!"),
            "twins": [{"id": ids[1]}], "buddies": [{"ref": ids[1]}]}}})
    );
    let d = data(
        &s,
        "{ hostile(where: {buddies: {ref: {_is_null: false}}}, order_by: {c_label: asc}) { id } }",
        json!({}),
    )
    .await;
    assert_eq!(d, json!({"hostile": [{"id": ids[1]}]}));

    // Permissions that list, filter on and preset hostile columns, with a session variable.
    let all: Vec<&str> = COLUMNS.iter().map(|(c, _)| *c).chain(["id"]).collect();
    s.ok(json!({"type": "bulk", "args": [
        {"type": "create_select_permission", "args": {"table": "hostile", "role": "reader", "permission": {
            "columns": all, "computed_fields": ["shout"],
            "filter": {"label'; DROP TABLE canary; --": {"_eq": "X-Svc-User-Id"}}}}},
        {"type": "create_insert_permission", "args": {"table": "hostile", "role": "reader", "permission": {
            "check": {"a\"b": {"_like": "%'%"}}, "set": {"x y": "x-svc-user-id"},
            "columns": ["label'; DROP TABLE canary; --", "a\"b"]}}}
    ]}))
    .await;
    let reader = [
        ("X-Svc-Role", HeaderValue::from_static("reader")),
        (
            "X-Svc-User-Id",
            HeaderValue::from_static("b: label'; DROP TABLE canary; --"),
        ),
    ];
    let (status, body) = post(
        &s,
        None,
        "{ hostile { id c_label shout } }",
        json!({}),
        &reader,
    )
    .await;
    assert_eq!(
        outcome(status, &body),
        Outcome::Data(
            json!({"hostile": [{"id": ids[1], "c_label": label, "shout": format!("{label}!")}]})
        )
    );
    let write = "mutation($l: String!, $q: String!) { insert_hostile_one(object: {c_label: $l, c_quote: $q}) { c_space c_quote } }";
    let (status, body) = post(&s, None, write, json!({"l": label, "q": "it's"}), &reader).await;
    assert_eq!(
        outcome(status, &body),
        Outcome::Data(json!({"insert_hostile_one": {"c_space": label, "c_quote": "it's"}}))
    );
    let other = [
        ("X-Svc-Role", HeaderValue::from_static("reader")),
        ("X-Svc-User-Id", HeaderValue::from_static("c: '--")),
    ];
    let (status, body) = post(
        &s,
        None,
        write,
        json!({"l": "c: '--", "q": "no quote"}),
        &other,
    )
    .await;
    assert_eq!(outcome(status, &body), refused("permission-error"));

    // Renaming a hostile column to another one is followed, capture triggers included.
    s.ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE hostile RENAME COLUMN \"x y\" TO \"y x'; --\""}}))
        .await;
    let d = data(
        &s,
        "mutation($id: Int!) { update_hostile_by_pk(pk_columns: {id: $id}, _set: {c_space: \"b3\"}) { c_space } }",
        json!({"id": ids[1]}),
    )
    .await;
    assert_eq!(d, json!({"update_hostile_by_pk": {"c_space": "b3"}}));
    assert_eq!(
        captured(&s).await.last().map(|e| &e["data"]["new"]),
        Some(&json!({"id": ids[1], "y x'; --": "b3", "a\"b": "b: a\"b"}))
    );

    // Deleting the trigger removes its capture triggers; the live-query change trigger (the
    // table is tracked) stays.
    let triggers = "SELECT tgname FROM pg_trigger WHERE tgrelid = 'hostile'::regclass AND NOT tgisinternal ORDER BY 1";
    assert_eq!(
        query_json(&s.db_url, triggers).await,
        json!([{"tgname": "basalt_live_change"}, {"tgname": "notify_basalt_hostile_capture_DELETE"}, {"tgname": "notify_basalt_hostile_capture_INSERT"}, {"tgname": "notify_basalt_hostile_capture_UPDATE"}])
    );
    s.ok(json!({"type": "delete_event_trigger", "args": {"name": "hostile_capture"}}))
        .await;
    assert_eq!(
        query_json(&s.db_url, triggers).await,
        json!([{"tgname": "basalt_live_change"}])
    );
    canary.check(&created).await;
}
