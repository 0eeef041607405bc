//! Nested updates on shapes the blog does not have: relationships over two columns, a table
//! related to itself, a check that reads the checked table, and inserts with rows of their own
//! under each parent row.

use crate::harness::TestServer;
use serde_json::{json, Value};

const FIXTURE: &str = r#"
CREATE TABLE shelf (site text, code integer, label text NOT NULL, PRIMARY KEY (site, code));
CREATE TABLE book (
  id serial PRIMARY KEY,
  site text NOT NULL,
  shelf_code integer NOT NULL,
  title text NOT NULL,
  FOREIGN KEY (site, shelf_code) REFERENCES shelf (site, code)
);
CREATE TABLE note (id serial PRIMARY KEY, book_id integer NOT NULL REFERENCES book (id), body text NOT NULL);
CREATE TABLE node (id integer PRIMARY KEY, parent_id integer REFERENCES node (id), name text NOT NULL,
                   depth integer NOT NULL DEFAULT 0);
INSERT INTO shelf VALUES ('a', 1, 'a1'), ('a', 2, 'a2'), ('b', 1, 'b1');
INSERT INTO book (site, shelf_code, title) VALUES ('a', 1, 'x'), ('a', 2, 'y'), ('b', 1, 'z'), ('a', 1, 'w');
INSERT INTO node VALUES (1, NULL, 'root', 0), (2, 1, 'left', 1), (3, 1, 'right', 1), (4, 2, 'leaf', 2);
SELECT setval('book_id_seq', 100);
"#;

async fn server() -> TestServer {
    let s = TestServer::with_fixture(FIXTURE).await;
    let table = |name: &str| json!({"schema": "public", "name": name});
    let fk =
        |name: &str, on: Value| json!({"name": name, "using": {"foreign_key_constraint_on": on}});
    let manual = |name: &str, to: &str, mapping: Value| json!({"name": name, "using": {"manual_configuration": {"remote_table": table(to), "column_mapping": mapping}}});
    let mut args = Vec::new();
    for name in ["shelf", "book", "note", "node"] {
        args.push(json!({"type": "track_table", "args": {"table": table(name)}}));
    }
    let relationships = [
        (
            "create_object_relationship",
            "book",
            manual(
                "shelf",
                "shelf",
                json!({"site": "site", "shelf_code": "code"}),
            ),
        ),
        (
            "create_array_relationship",
            "shelf",
            manual(
                "books",
                "book",
                json!({"site": "site", "code": "shelf_code"}),
            ),
        ),
        (
            "create_array_relationship",
            "book",
            fk(
                "notes",
                json!({"table": table("note"), "column": "book_id"}),
            ),
        ),
        (
            "create_object_relationship",
            "node",
            fk("parent", json!("parent_id")),
        ),
        (
            "create_array_relationship",
            "node",
            fk(
                "children",
                json!({"table": table("node"), "column": "parent_id"}),
            ),
        ),
    ];
    for (op, on, rel) in relationships {
        let mut args_of = rel.as_object().cloned().unwrap_or_default();
        args_of.insert("table".into(), table(on));
        args.push(json!({"type": op, "args": args_of}));
    }
    // `editor` may rename nodes whose parent is not locked.
    let check = json!({"_or": [{"parent_id": {"_is_null": true}}, {"parent": {"name": {"_neq": "locked"}}}]});
    args.push(json!({"type": "create_select_permission", "args": {"table": table("node"), "role": "editor",
        "permission": {"columns": "*", "filter": {}}}}));
    args.push(json!({"type": "create_update_permission", "args": {"table": table("node"), "role": "editor",
        "permission": {"columns": ["name"], "filter": {}, "check": check}}}));
    s.ok(json!({"type": "bulk", "args": args})).await;
    s
}

async fn data(s: &TestServer, q: &str) -> Value {
    let r = s.gql(q).await;
    assert!(r.get("errors").is_none(), "{q}: {r}");
    r["data"].clone()
}

async fn books(s: &TestServer) -> Value {
    data(
        s,
        "{ book(order_by: {id: asc}) { id site shelf_code title } }",
    )
    .await["book"]
        .clone()
}

#[tokio::test]
async fn a_two_column_relationship_reaches_exactly_the_related_rows() {
    let s = server().await;
    let d = data(
        &s,
        r#"mutation { update_shelf_by_pk(pk_columns: {site: "a", code: 1}, _set: {label: "A1"},
            _nested: {books: [{_set: {title: "on a1"}}]}) { label books(order_by: {id: asc}) { id title } } }"#,
    )
    .await;
    assert_eq!(
        d,
        json!({"update_shelf_by_pk": {"label": "A1", "books": [{"id": 1, "title": "on a1"}, {"id": 4, "title": "on a1"}]}})
    );
    // Shelf (a, 2) and shelf (b, 1) share one column each with (a, 1): their books stay.
    assert_eq!(
        books(&s).await,
        json!([
            {"id": 1, "site": "a", "shelf_code": 1, "title": "on a1"},
            {"id": 2, "site": "a", "shelf_code": 2, "title": "y"},
            {"id": 3, "site": "b", "shelf_code": 1, "title": "z"},
            {"id": 4, "site": "a", "shelf_code": 1, "title": "on a1"}
        ])
    );
    // The other direction: the book's shelf, found by both columns.
    let d = data(
        &s,
        r#"mutation { update_book_by_pk(pk_columns: {id: 3}, _nested: {shelf: {_set: {label: "B-one"}}}) { id shelf { site code label } } }"#,
    )
    .await;
    assert_eq!(
        d,
        json!({"update_book_by_pk": {"id": 3, "shelf": {"site": "b", "code": 1, "label": "B-one"}}})
    );
    let labels = data(
        &s,
        "{ shelf(order_by: [{site: asc}, {code: asc}]) { label } }",
    )
    .await;
    assert_eq!(
        labels,
        json!({"shelf": [{"label": "A1"}, {"label": "a2"}, {"label": "B-one"}]})
    );
}

#[tokio::test]
async fn a_table_related_to_itself_is_updated_level_by_level() {
    let s = server().await;
    let d = data(
        &s,
        r#"mutation { update_node_by_pk(pk_columns: {id: 1}, _set: {name: "top"},
            _nested: {children: [{_inc: {depth: 10}, _nested: {children: [{_inc: {depth: 100}}]}}]}) {
            name children(order_by: {id: asc}) { id depth children { id depth } } } }"#,
    )
    .await;
    assert_eq!(
        d,
        json!({"update_node_by_pk": {"name": "top", "children": [
            {"id": 2, "depth": 11, "children": [{"id": 4, "depth": 102}]},
            {"id": 3, "depth": 11, "children": []}
        ]}})
    );
    // Back to the same row through its parent: node 2 is written twice, by two statements,
    // and the answer shows the last write.
    let d = data(
        &s,
        r#"mutation { update_node_by_pk(pk_columns: {id: 2}, _set: {name: "first"},
            _nested: {parent: {_nested: {children: [{where: {id: {_eq: 2}}, _set: {name: "second"}}]}}}) {
            id name } }"#,
    )
    .await;
    assert_eq!(d, json!({"update_node_by_pk": {"id": 2, "name": "second"}}));
}

#[tokio::test]
async fn a_check_that_reads_the_checked_table_sees_the_rows_as_written() {
    let s = server().await;
    let editor = [("X-Svc-Role", "editor")];
    // Nodes 1 and 2 are renamed by one statement; node 2's check reads its parent, node 1,
    // which that same statement locked: the check must see it locked. (The nested entry
    // reaches no row: the check of the root's own statement is what fails.)
    let r = s
        .graphql_as(
            json!({"query": r#"mutation { update_node(where: {id: {_in: [1, 2]}}, _set: {name: "locked"},
                _nested: {children: [{where: {id: {_gt: 100}}, _set: {name: "child"}}]}) { affected_rows } }"#}),
            &editor,
        )
        .await;
    assert_eq!(
        r,
        json!({"errors": [{"message": "check constraint of an update permission has failed",
            "extensions": {"path": "$", "code": "permission-error"}}]})
    );
    let names = data(&s, "{ node(order_by: {id: asc}) { name } }").await;
    assert_eq!(
        names,
        json!({"node": [{"name": "root"}, {"name": "left"}, {"name": "right"}, {"name": "leaf"}]})
    );
    // A parent that stays unlocked lets its children be renamed.
    let r = s
        .graphql_as(
            json!({"query": r#"mutation { update_node(where: {id: {_eq: 1}}, _set: {name: "open"},
                _nested: {children: [{_set: {name: "child"}}]}) { affected_rows } }"#}),
            &editor,
        )
        .await;
    assert_eq!(r, json!({"data": {"update_node": {"affected_rows": 3}}}));
}

#[tokio::test]
async fn inserts_run_once_per_parent_row_with_their_own_nested_rows() {
    let s = server().await;
    let d = data(
        &s,
        r#"mutation { update_shelf(where: {site: {_eq: "a"}}, _nested: {books: [{_insert: {data: [
            {title: "new", notes: {data: [{body: "n1"}, {body: "n2"}]}}]}}]}) { affected_rows } }"#,
    )
    .await;
    // Both shelves of site a were only selected: one book and its two notes each.
    assert_eq!(d, json!({"update_shelf": {"affected_rows": 6}}));
    let made = data(
        &s,
        r#"{ book(where: {title: {_eq: "new"}}, order_by: {shelf_code: asc}) { site shelf_code notes(order_by: {body: asc}) { body } } }"#,
    )
    .await;
    assert_eq!(
        made,
        json!({"book": [
            {"site": "a", "shelf_code": 1, "notes": [{"body": "n1"}, {"body": "n2"}]},
            {"site": "a", "shelf_code": 2, "notes": [{"body": "n1"}, {"body": "n2"}]}
        ]})
    );
    // The mapped columns come from the parent: giving one is refused, nothing is written.
    let r = s
        .gql(r#"mutation { update_shelf_by_pk(pk_columns: {site: "b", code: 1}, _nested: {books: [{_insert: {data: [{title: "t", site: "a"}]}}]}) { label } }"#)
        .await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "validation-failed",
        "{r}"
    );
    assert_eq!(
        r["errors"][0]["extensions"]["path"],
        "$.selectionSet.update_shelf_by_pk.args._nested.books[0]._insert.data[0].site"
    );
    assert_eq!(books(&s).await.as_array().map(Vec::len), Some(6));
}

#[tokio::test]
async fn schemas_with_nested_inputs_in_cycles_pass_graphql_js() {
    use super::introspection::{full_introspection, node};
    let s = server().await;
    for role in [None, Some("editor")] {
        let data = full_introspection(&s, role).await;
        let (ok, out, err) = node(&[], Some(&data.to_string()));
        assert!(ok, "role {role:?}: {err}");
        let summary: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(summary["ok"], true, "role {role:?}");
    }
    // A table related to itself: its nested input refers to its own update inputs.
    let t = s
        .gql_role(
            r#"{ __type(name: "node_nested_update_input") { inputFields { name type { name ofType { ofType { name } } } } } }"#,
            "editor",
            &[],
        )
        .await;
    assert_eq!(
        t,
        json!({"data": {"__type": {"inputFields": [
            {"name": "children", "type": {"name": null, "ofType": {"ofType": {"name": "node_arr_rel_update_input"}}}},
            {"name": "parent", "type": {"name": "node_obj_rel_update_input", "ofType": null}}
        ]}}})
    );
}

#[tokio::test]
async fn an_inherited_role_updates_nested_rows_with_its_derived_permissions() {
    let s = server().await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "create_select_permission", "args": {"table": {"schema": "public", "name": "node"},
            "role": "reader", "permission": {"columns": ["id", "name"], "filter": {}}}},
        {"type": "add_inherited_role", "args": {"role_name": "staff", "role_set": ["editor", "reader"]}}
    ]}))
    .await;
    let staff = [("X-Svc-Role", "staff")];
    let r = s
        .graphql_as(
            json!({"query": r#"mutation { update_node_by_pk(pk_columns: {id: 1}, _set: {name: "top"},
                _nested: {children: [{where: {id: {_eq: 2}}, _set: {name: "kid"}}]}) {
                name children(order_by: {id: asc}) { id name } } }"#}),
            &staff,
        )
        .await;
    assert_eq!(
        r,
        json!({"data": {"update_node_by_pk": {"name": "top", "children": [
            {"id": 2, "name": "kid"}, {"id": 3, "name": "right"}]}}})
    );
    // The check `staff` derives from `editor` holds at the nested level too.
    let r = s
        .graphql_as(
            json!({"query": r#"mutation { update_node_by_pk(pk_columns: {id: 1}, _set: {name: "locked"},
                _nested: {children: [{_set: {name: "kid2"}}]}) { name } }"#}),
            &staff,
        )
        .await;
    assert_eq!(
        r["errors"][0]["extensions"],
        json!({"path": "$", "code": "permission-error"}),
        "{r}"
    );
    let names = data(&s, "{ node(order_by: {id: asc}) { name } }").await;
    assert_eq!(
        names,
        json!({"node": [{"name": "top"}, {"name": "kid"}, {"name": "right"}, {"name": "leaf"}]})
    );
}
