//! Inherited roles through HTTP (`docs/auth.md`, "Inherited roles"): the operations and their
//! errors, the derived select rule with cells a parent hides read as `null` in every clause,
//! nested roles, conflicts between parents' write rules and their resolution, selection
//! through a JWT, and a one-parent role seeing exactly what its parent sees.

use super::{
    blog_server, claims, error_code, hook_server, hs_token, ids, jwt_server, raw_gql, with_token,
    Hook, HS_KEY, SECRET,
};
use crate::harness::TestServer;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

const EMPLOYEES: &str = "
CREATE TABLE employee (
    id int PRIMARY KEY, name text NOT NULL, salary int, manager_remarks text,
    manager_id int REFERENCES employee(id));
INSERT INTO employee VALUES
    (1, 'e1', 10000, 'good', 1), (2, 'e2', 20000, 'fine', 2), (3, 'e3', 30000, 'ok', 2);
";

/// The acceptance fixture: `employee` tracked with its `manager` relationship, role
/// `employee` (own row, salary) and role `manager` (managed rows, remarks, aggregates).
async fn employees() -> TestServer {
    let s = TestServer::with_fixture(EMPLOYEES).await;
    for request in [
        json!({"type": "track_table", "args": {"table": "employee"}}),
        json!({"type": "create_object_relationship", "args": {"table": "employee",
            "name": "manager", "using": {"foreign_key_constraint_on": "manager_id"}}}),
        json!({"type": "create_select_permission", "args": {"table": "employee",
            "role": "employee", "permission": {"columns": ["id", "name", "salary"],
            "filter": {"id": "X-Svc-User-Id"}, "limit": 10}}}),
        json!({"type": "create_select_permission", "args": {"table": "employee",
            "role": "manager", "permission": {"columns": ["id", "name", "manager_remarks"],
            "filter": {"manager_id": "X-Svc-Manager-Id"}, "limit": 2,
            "allow_aggregations": true}}}),
    ] {
        s.ok(request).await;
    }
    s
}

const BOTH: [(&str, &str); 2] = [("X-Svc-User-Id", "1"), ("X-Svc-Manager-Id", "2")];

fn add(role: &str, parents: &[&str]) -> Value {
    json!({"type": "add_inherited_role", "args": {"role_name": role, "role_set": parents}})
}

#[tokio::test]
async fn the_operations_check_their_arguments_in_order() {
    let s = employees().await;
    // 1: defined, and exported in creation order with the given parent order.
    assert_eq!(
        s.ok(add("manager_employee", &["manager", "employee"]))
            .await,
        json!({"message": "success"})
    );
    assert_eq!(
        s.export().await["inherited_roles"],
        json!([{"role_name": "manager_employee", "role_set": ["manager", "employee"]}])
    );
    // 2
    let r = s
        .fails(
            add("x", &["x", "manager"]),
            400,
            "invalid-params",
            "$.args.role_set",
        )
        .await;
    assert_eq!(
        r["error"],
        "an inherited role name cannot be in the role combination"
    );
    // 3
    let r = s
        .fails(
            add("x", &["manager", "ghost"]),
            400,
            "not-exists",
            "$.args.role_set",
        )
        .await;
    assert_eq!(
        r["error"],
        "the following parent role(s) are not found: ghost which are required to construct the inherited role: \"x\""
    );
    // 4
    let r = s
        .fails(
            add("manager", &["manager_employee"]),
            400,
            "cyclic-dependency",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        r#"found cycle(s) in roles: ["manager","manager_employee","manager"]"#
    );
    // 5
    let r = s
        .fails(
            json!({"type": "drop_inherited_role", "args": {"role_name": "ghost"}}),
            400,
            "not-exists",
            "$.args.role_name",
        )
        .await;
    assert_eq!(r["error"], "\"ghost\" inherited role doesn't exist");
    // Basalt's own rules: an empty set, and the name `admin`.
    let r = s
        .fails(add("x", &[]), 400, "parse-failed", "$.args.role_set")
        .await;
    assert_eq!(r["error"], "role_set must not be empty");
    s.fails(
        add("admin", &["manager"]),
        400,
        "constraint-violation",
        "$.args.role_name",
    )
    .await;
    s.fails(add("x", &["admin"]), 400, "not-exists", "$.args.role_set")
        .await;
    // A cycle in a replacement document is an error even when inconsistency is allowed.
    let mut document = s.export().await;
    document["inherited_roles"] = json!([
        {"role_name": "a", "role_set": ["b"]}, {"role_name": "b", "role_set": ["a", "manager"]}]);
    let r = s
        .fails(
            json!({"type": "replace_metadata", "version": 2,
                "args": {"metadata": document, "allow_inconsistent_metadata": true}}),
            400,
            "cyclic-dependency",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], r#"found cycle(s) in roles: ["a","b","a"]"#);
    // A replacement document meets each definition's own rules too.
    document["inherited_roles"] = json!([{"role_name": "admin", "role_set": ["manager"]}]);
    s.fails(
        json!({"type": "replace_metadata", "args": document.clone()}),
        400,
        "constraint-violation",
        "$.args.inherited_roles[0].role_name",
    )
    .await;
    document["inherited_roles"] = json!([{"role_name": "x", "role_set": ["manager", "x"]}]);
    s.fails(
        json!({"type": "replace_metadata", "version": 2, "args": {"metadata": document}}),
        400,
        "invalid-params",
        "$.args.metadata.inherited_roles[0].role_set",
    )
    .await;
    // Adding again replaces; duplicates collapse to their first occurrence.
    s.ok(add(
        "manager_employee",
        &["employee", "manager", "employee"],
    ))
    .await;
    assert_eq!(
        s.export().await["inherited_roles"],
        json!([{"role_name": "manager_employee", "role_set": ["employee", "manager"]}])
    );
    // Dropping a parent's last permission would leave the child without parents.
    let r = s
        .fails(
            json!({"type": "drop_select_permission", "args": {"table": "employee", "role": "manager"}}),
            400,
            "unexpected",
            "$.args",
        )
        .await;
    assert_eq!(r["internal"][0]["type"], "inherited_role", "{r}");
    s.ok(json!({"type": "drop_inherited_role", "args": {"role_name": "manager_employee"}}))
        .await;
    assert!(s.export().await.get("inherited_roles").is_none());
    s.ok(
        json!({"type": "drop_select_permission", "args": {"table": "employee", "role": "manager"}}),
    )
    .await;
}

#[tokio::test]
async fn cells_a_parent_hides_read_as_null_everywhere() {
    let s = employees().await;
    s.ok(add("manager_employee", &["manager", "employee"]))
        .await;
    let q = |query: &'static str| s.gql_role(query, "manager_employee", &BOTH);
    // 6: each row shows the cells of the parents whose filter admits it; the larger limit wins.
    assert_eq!(
        q("{ employee(order_by:{id:asc}) { id name salary manager_remarks } }").await,
        json!({"data": {"employee": [
            {"id": 1, "name": "e1", "salary": 10000, "manager_remarks": null},
            {"id": 2, "name": "e2", "salary": null, "manager_remarks": "fine"},
            {"id": 3, "name": "e3", "salary": null, "manager_remarks": "ok"}]}})
    );
    // 7: aggregates come through `manager`, and see only the visible salaries.
    assert_eq!(
        q("{ employee_aggregate { aggregate { count sum { salary } } } }").await,
        json!({"data": {"employee_aggregate": {"aggregate": {"count": 3, "sum": {"salary": 10000}}}}})
    );
    // 8: filtering on a hidden cell cannot reveal it.
    assert_eq!(
        q("{ employee(where:{salary:{_gt:15000}}) { id } }").await,
        json!({"data": {"employee": []}})
    );
    // Nor can ordering, distinct_on, or counting a column.
    let r = q("{ employee(order_by:[{salary:desc_nulls_last},{id:asc}]) { id } }").await;
    assert_eq!(
        r["data"]["employee"],
        json!([{"id": 1}, {"id": 2}, {"id": 3}])
    );
    let r = q("{ employee(distinct_on:[manager_remarks], order_by:[{manager_remarks:asc},{id:asc}]) { id } }").await;
    assert_eq!(
        r["data"]["employee"],
        json!([{"id": 2}, {"id": 3}, {"id": 1}]),
        "{r}"
    );
    // With an offset too (the rows are then not paged in a subquery of their own).
    let r = q("{ employee(distinct_on:[manager_remarks], order_by:[{manager_remarks:asc},{id:asc}], offset: 1) { id name } }").await;
    assert_eq!(
        r["data"]["employee"],
        json!([{"id": 3, "name": "e3"}, {"id": 1, "name": "e1"}]),
        "{r}"
    );
    let r =
        q("{ employee_aggregate { aggregate { count(columns:[salary]) max { salary } } } }").await;
    assert_eq!(
        r["data"]["employee_aggregate"]["aggregate"],
        json!({"count": 1, "max": {"salary": 10000}})
    );
    // The by-pk field exists (the key is in the union) and keeps the same rule.
    let r = q("{ employee_by_pk(id: 3) { id salary manager_remarks } }").await;
    assert_eq!(
        r["data"]["employee_by_pk"],
        json!({"id": 3, "salary": null, "manager_remarks": "ok"})
    );
    // Every session variable a parent's rule reads is required.
    let r = s
        .gql_role("{ employee { id } }", "manager_employee", &BOTH[..1])
        .await;
    assert_eq!(
        r["errors"][0]["message"],
        "missing session variable: \"x-svc-manager-id\""
    );
    // Introspection: a redacted column is nullable, a shared one keeps its type.
    let r = q(r#"{ __type(name: "employee") { fields { name type { kind name } } } }"#).await;
    let fields = r["data"]["__type"]["fields"].as_array().unwrap().clone();
    let kind = |name: &str| {
        fields
            .iter()
            .find(|f| f["name"] == name)
            .map(|f| f["type"]["kind"].clone())
            .unwrap()
    };
    assert_eq!(kind("name"), "NON_NULL");
    assert_eq!(kind("salary"), "SCALAR");
    assert_eq!(kind("manager_remarks"), "SCALAR");
    // The rule is in the statement itself.
    let explained = s
        .http
        .post(format!("{}/v1/graphql/explain", s.base))
        .json(
            &json!({"query": {"query": "{ employee { id salary } }"}, "user": {
            "x-svc-role": "manager_employee", "x-svc-user-id": "1", "x-svc-manager-id": "2"}}),
        )
        .send()
        .await
        .unwrap();
    let text = explained.text().await.unwrap();
    assert!(text.contains("CASE WHEN"), "{text}");
}

#[tokio::test]
async fn nested_roles_compose_their_parents_rules() {
    let s = employees().await;
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "employee",
        "role": "auditor", "permission": {"columns": ["id", "salary"],
        "filter": {"id": {"_eq": 3}}}}}),
    )
    .await;
    s.ok(add("manager_employee", &["manager", "employee"]))
        .await;
    s.ok(add("everyone", &["manager_employee", "auditor"]))
        .await;
    let r = s
        .gql_role(
            "{ employee(order_by:{id:asc}) { id name salary manager_remarks } }",
            "everyone",
            &BOTH,
        )
        .await;
    // Row 3 now shows its salary through `auditor`; `name` is hidden there (auditor lacks it),
    // but row 3 is also a manager's row, so it shows.
    assert_eq!(
        r,
        json!({"data": {"employee": [
            {"id": 1, "name": "e1", "salary": 10000, "manager_remarks": null},
            {"id": 2, "name": "e2", "salary": null, "manager_remarks": "fine"},
            {"id": 3, "name": "e3", "salary": 30000, "manager_remarks": "ok"}]}})
    );
    // With the manager seeing no rows, row 3 comes only through `auditor`, which hides
    // `name`: a column a grandparent shows only on its rows.
    let r = s
        .gql_role(
            "{ employee(order_by:{id:asc}) { id name salary } }",
            "everyone",
            &[("X-Svc-User-Id", "1"), ("X-Svc-Manager-Id", "9")],
        )
        .await;
    assert_eq!(
        r["data"]["employee"],
        json!([{"id": 1, "name": "e1", "salary": 10000}, {"id": 3, "name": null, "salary": 30000}])
    );
}

#[tokio::test]
async fn disagreeing_parents_are_a_conflict_until_the_role_has_its_own_rule() {
    let s = employees().await;
    s.ok(add("manager_employee", &["manager", "employee"]))
        .await;
    // 9
    s.ok(
        json!({"type": "create_insert_permission", "args": {"table": "employee",
        "role": "employee", "permission": {"check": {"id": "X-Svc-User-Id"}, "columns": "*"}}}),
    )
    .await;
    s.ok(json!({"type": "create_insert_permission", "args": {"table": "employee",
        "role": "manager", "permission": {"check": {"manager_id": "X-Svc-Manager-Id"}, "columns": "*"}}}))
        .await;
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(
        r,
        json!({"is_consistent": false, "inconsistent_objects": [{
            "type": "inherited role permission inconsistency", "name": "manager_employee",
            "entity": {"table": "employee", "source": "default", "permission_type": "insert"},
            "definition": {"role_name": "manager_employee", "role_set": ["manager", "employee"]},
            "reason": "Could not inherit permission for the role 'manager_employee' for the entity: 'insert permission, table: employee, source: 'default''",
            "owner": "api"}]})
    );
    let insert = "mutation { insert_employee(objects:[{id:9,name:\"n\"}]) { affected_rows } }";
    assert_eq!(
        s.gql_role(insert, "manager_employee", &BOTH).await,
        json!({"errors": [{"message": "no mutations exist",
            "extensions": {"path": "$", "code": "validation-failed"}}]})
    );
    // A conflict blocks nothing, and health ignores it.
    let health = s
        .http
        .get(format!("{}/healthz", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    // Parents agreeing in substance (a shorthand and `_eq` form of the same rule) inherit.
    s.ok(
        json!({"type": "create_delete_permission", "args": {"table": "employee",
        "role": "employee", "permission": {"filter": {"id": "X-Svc-User-Id"}}}}),
    )
    .await;
    s.ok(json!({"type": "create_delete_permission", "args": {"table": "employee",
        "role": "manager", "permission": {"filter": {"_and": [{"id": {"$eq": "x-svc-user-id"}}]}}}}))
        .await;
    let r = s
        .gql_role(
            "mutation { delete_employee(where: {id: {_eq: 1}}) { affected_rows } }",
            "manager_employee",
            &[("X-Svc-User-Id", "2"), ("X-Svc-Manager-Id", "2")],
        )
        .await;
    assert_eq!(r["data"]["delete_employee"]["affected_rows"], 0, "{r}");
    // An explicit permission resolves the conflict.
    s.ok(
        json!({"type": "create_insert_permission", "args": {"table": "employee",
        "role": "manager_employee", "permission": {"check": {}, "columns": ["id", "name"]}}}),
    )
    .await;
    let r = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(
        r,
        json!({"is_consistent": true, "inconsistent_objects": []})
    );
    let r = s.gql_role(insert, "manager_employee", &BOTH).await;
    assert_eq!(r["data"]["insert_employee"]["affected_rows"], 1, "{r}");
}

#[tokio::test]
async fn a_jwt_selects_the_inherited_role_itself() {
    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY})).await;
    s.ok(add("user_guest", &["user", "guest"])).await;
    let own = hs_token(&claims(json!({"https://basalt.dev/jwt/claims": {
        "x-svc-allowed-roles": ["user_guest"], "x-svc-default-role": "user_guest",
        "x-svc-user-id": "1"}})));
    // The union of the parents' rows: what `user` 1 sees, since `guest` sees fewer.
    let r = with_token(&s, &own, &[]).await;
    assert_eq!(ids(&r), [1, 2, 3, 5], "{r}");
    // Listing the parents is not enough to be the child.
    let parents = hs_token(&claims(json!({})));
    let r = with_token(&s, &parents, &[("X-Svc-Role", "user_guest")]).await;
    assert_eq!(error_code(&r), "access-denied", "{r}");
}

/// Queries over `employee` a property test draws: filters, orders and limits on `columns`,
/// selecting them all.
fn queries(columns: &'static [&'static str]) -> impl Strategy<Value = String> {
    let column = prop::sample::select(columns.to_vec());
    let selection = columns.join(" ");
    let op = prop::sample::select(vec!["_gt", "_lte", "_eq", "_neq"]);
    let value = 0..35_000i64;
    (column.clone(), op, value, column, any::<bool>(), 0..4u32).prop_map(
        move |(c, op, v, order, desc, limit)| {
            let literal = match c {
                "name" | "manager_remarks" => format!("\"e{}\"", v % 4),
                _ => (v % 4 * 10000).to_string(),
            };
            let direction = if desc { "desc" } else { "asc" };
            format!(
                "{{ employee(where: {{{c}: {{{op}: {literal}}}}}, order_by: [{{{order}: {direction}}}, {{id: asc}}], limit: {limit}) {{ {selection} }} }}"
            )
        },
    )
}

#[tokio::test]
async fn a_role_of_one_parent_sees_what_the_parent_sees() {
    let s = employees().await;
    s.ok(add("just_employee", &["employee"])).await;
    s.ok(add("just_manager", &["manager"])).await;
    let mut runner = TestRunner::new(Config {
        failure_persistence: None,
        ..Config::default()
    });
    let mut compared = 0;
    for (parent, child, user, columns) in [
        ("employee", "just_employee", "2", &["id", "name", "salary"]),
        (
            "manager",
            "just_manager",
            "1",
            &["id", "name", "manager_remarks"],
        ),
    ] {
        let strategy = queries(columns);
        for _ in 0..24 {
            let q = strategy.new_tree(&mut runner).unwrap().current();
            let vars = [("X-Svc-User-Id", user), ("X-Svc-Manager-Id", "2")];
            let expected = s.gql_role(&q, parent, &vars).await;
            let got = s.gql_role(&q, child, &vars).await;
            assert_eq!(got, expected, "{q} as {child}");
            assert!(
                expected.get("data").is_some(),
                "{q} as {parent}: {expected}"
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 48);
}

#[tokio::test]
async fn a_subscription_sees_the_derived_rule() {
    use crate::graphql::subscriptions::{connect, init, message, send, TRANSPORT};
    let s = employees().await;
    s.ok(add("manager_employee", &["manager", "employee"]))
        .await;
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    let headers = json!({"X-Svc-Role": "manager_employee", "X-Svc-User-Id": "1",
        "X-Svc-Manager-Id": "2"});
    assert_eq!(
        init(&mut ws, json!({"headers": headers})).await["type"],
        "connection_ack"
    );
    send(
        &mut ws,
        json!({"type": "subscribe", "id": "1", "payload": {
            "query": "subscription { employee(order_by: {id: asc}) { id salary } }"}}),
    )
    .await;
    assert_eq!(
        message(&mut ws).await["payload"]["data"]["employee"],
        json!([{"id": 1, "salary": 10000}, {"id": 2, "salary": null}, {"id": 3, "salary": null}])
    );
    // A hidden cell's change is not seen; a visible one's is.
    s.sql("UPDATE employee SET salary = 21000 WHERE id = 2; UPDATE employee SET salary = 11000 WHERE id = 1")
        .await;
    assert_eq!(
        message(&mut ws).await["payload"]["data"]["employee"],
        json!([{"id": 1, "salary": 11000}, {"id": 2, "salary": null}, {"id": 3, "salary": null}])
    );
}

#[tokio::test]
async fn an_imported_role_without_its_parents_is_inconsistent_until_dropped() {
    let s = employees().await;
    let mut document = s.export().await;
    document["inherited_roles"] = json!([{"role_name": "orphan", "role_set": ["ghost"]}]);
    // Strict: refused, with the item.
    let r = s
        .fails(
            json!({"type": "replace_metadata", "args": document.clone()}),
            400,
            "unexpected",
            "$.args",
        )
        .await;
    assert_eq!(r["internal"][0]["type"], "inherited_role", "{r}");
    let r = s
        .ok(json!({"type": "replace_metadata", "version": 2,
            "args": {"metadata": document, "allow_inconsistent_metadata": true}}))
        .await;
    assert_eq!(
        r["inconsistent_objects"],
        json!([{"type": "inherited_role",
            "definition": {"role_name": "orphan", "role_set": ["ghost"]},
            "reason": "the following parent role(s) are not found: ghost which are required to construct the inherited role: \"orphan\"",
            "owner": "api"}])
    );
    // The role is served nothing derived.
    let r = s.gql_role("{ employee { id } }", "orphan", &BOTH).await;
    assert!(r.get("errors").is_some(), "{r}");
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    assert!(s.export().await.get("inherited_roles").is_none());
}

#[tokio::test]
async fn the_hook_selects_it_and_the_allow_list_holds_it() {
    let base = hook_server(Hook::default()).await;
    let s = blog_server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.auth_hook = Some(format!("{base}/get"));
        c.enable_allowlist = true;
    })
    .await;
    s.ok(add("user_guest", &["user", "guest"])).await;
    let staff = [("Authorization", "Bearer staff")];
    let listed = "query mine { articles(order_by: {id: asc}) { id } }";
    let r = raw_gql(&s, listed, &staff).await;
    assert_eq!(r["errors"][0]["message"], "query is not allowed", "{r}");
    s.ok(
        json!({"type": "create_query_collection", "args": {"name": "app",
        "definition": {"queries": [{"name": "mine", "query": listed}]}}}),
    )
    .await;
    s.ok(json!({"type": "add_collection_to_allowlist", "args": {"collection": "app"}}))
        .await;
    // The hook's role is the inherited one, which reads the union of its parents' rows.
    let r = raw_gql(&s, listed, &staff).await;
    assert_eq!(ids(&r), [1, 2, 3, 5], "{r}");
}
