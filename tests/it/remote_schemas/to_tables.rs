//! Remote schema → table relationships answered (`docs/remote-schemas.md`, "Relationships to
//! tables"): rows of a table under a remote's objects, read in one statement per answer with
//! the role's permission, at object, list, fragment and abstract positions, under query and
//! mutation roots, and nested under table → remote relationships; the join fields asked of
//! the remote never show; a key the column cannot hold fails the operation.

use super::relationships::{legacy, queries, refused, sender, setup, without_internal};
use super::{Geo, Mode};
use crate::harness::TestServer;
use serde_json::json;
use std::time::Duration;

fn statements(s: &TestServer) -> u64 {
    s.running.state.counters.snapshot().statements_run
}

#[tokio::test]
async fn remote_objects_reach_their_rows_in_one_statement() {
    let (s, remote) = setup().await;
    s.ok(sender()).await;
    s.sql("INSERT INTO profiles (name, msg_id) VALUES ('eve', 1)")
        .await;
    let before = (remote.bodies().len(), statements(&s));
    let answer = s.gql("{ message(id: 2) { msg sender { name } } }").await;
    assert_eq!(
        answer,
        json!({"data": {"message": {"msg": "You lose!", "sender": [{"name": "bob"}]}}})
    );
    let sent = queries(&remote, before.0);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(
        sent[0].contains("... on Message { __basalt_join_Message_id: id }"),
        "{}",
        sent[0]
    );
    assert_eq!(statements(&s) - before.1, 1);

    // Lists of objects, two occurrences (rows and an aggregate), fragments: one statement.
    let before = statements(&s);
    let answer = s
        .gql(
            "{ messages { id ...M total: sender_aggregate { aggregate { count } } } }
             fragment M on Message { sender(order_by: {id: desc}) { id } }",
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {"messages": [
            {"id": 1, "sender": [{"id": 5}, {"id": 1}], "total": {"aggregate": {"count": 2}}},
            {"id": 2, "sender": [{"id": 2}], "total": {"aggregate": {"count": 1}}},
            {"id": 3, "sender": [{"id": 3}], "total": {"aggregate": {"count": 1}}}]}})
    );
    assert_eq!(statements(&s) - before, 1);

    // A key no row matches gives [] and a count of 0.
    s.sql("UPDATE profiles SET msg_id = NULL WHERE id = 3")
        .await;
    let answer = s
        .gql("{ message(id: 3) { sender { id } sender_aggregate { aggregate { count } } } }")
        .await;
    assert_eq!(
        answer,
        json!({"data": {"message": {"sender": [],
            "sender_aggregate": {"aggregate": {"count": 0}}}}})
    );
    // The remote's own errors still come back as they are.
    let answer = s.gql("{ message(id: 2) { errorMsg sender { id } } }").await;
    assert_eq!(
        answer["errors"][0]["message"], "intentional-error",
        "{answer}"
    );
}

#[tokio::test]
async fn a_roles_permission_governs_the_rows() {
    let (s, _remote) = setup().await;
    s.ok(sender()).await;
    let user = |id: &'static str| [("X-Svc-Role", "user"), ("X-Svc-User-Id", id)];
    let query = json!({"query": "{ message(id: 2) { msg sender { name } } }"});
    assert_eq!(
        s.graphql_as(query.clone(), &user("2")).await,
        json!({"data": {"message": {"msg": "You lose!", "sender": [{"name": "bob"}]}}})
    );
    // Another user's row is filtered out.
    assert_eq!(
        s.graphql_as(query.clone(), &user("1")).await["data"]["message"]["sender"],
        json!([])
    );
    let aggregate =
        json!({"query": "{ message(id: 2) { sender_aggregate { aggregate { count } } } }"});
    let answer = s.graphql_as(aggregate, &user("2")).await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"],
        "validation-failed"
    );
    // A role that cannot select the table does not see the field.
    let answer = s.graphql_as(query, &[("X-Svc-Role", "stranger")]).await;
    assert_eq!(
        answer["errors"][0]["message"],
        "field \"sender\" not found in type: 'Message'"
    );
}

#[tokio::test]
async fn object_relationships_and_nesting_under_table_rows() {
    let (s, remote) = setup().await;
    s.ok(legacy()).await;
    let mut object = sender();
    object["args"]["definition"]["to_source"]["relationship_type"] = json!("object");
    s.ok(object).await;
    let before = (remote.bodies().len(), statements(&s));
    // table → remote → table: the remote's objects under rows, and rows under them.
    let answer = s
        .gql("{ profiles(order_by: {id: asc}) { id message { msg sender { id name } } } }")
        .await;
    assert_eq!(
        answer,
        json!({"data": {"profiles": [
            {"id": 1, "message": {"msg": "You win!", "sender": {"id": 1, "name": "alice"}}},
            {"id": 2, "message": {"msg": "You lose!", "sender": {"id": 2, "name": "bob"}}},
            {"id": 3, "message": {"msg": "Another alice", "sender": {"id": 3, "name": "alice"}}},
            {"id": 4, "message": null}]}})
    );
    assert_eq!(queries(&remote, before.0).len(), 1);
    assert_eq!(
        statements(&s) - before.1,
        2,
        "the rows, then the remote's objects' rows"
    );
    // A key the column cannot hold fails the operation.
    s.ok(
        json!({"type": "create_remote_schema_remote_relationship", "args": {
        "remote_schema": "msgs", "type_name": "Message", "name": "byName", "definition": {
        "to_source": {"table": "profiles", "relationship_type": "array",
        "field_mapping": {"name": "id"}}}}}),
    )
    .await;
    let answer = s.gql("{ message(id: 1) { byName { id } } }").await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "data-exception",
        "{answer}"
    );
    assert!(answer.get("data").is_none(), "{answer}");
}

/// The geography service with `visits(id, country_code)`, 100 rows, related both ways.
async fn geo_visits() -> (TestServer, Geo) {
    let geo = Geo::start().await;
    let s = TestServer::blog().await;
    s.sql(
        "CREATE TABLE visits (id int PRIMARY KEY, country_code text);
         INSERT INTO visits SELECT i, CASE WHEN i % 4 = 0 THEN 'JP' ELSE 'FR' END
         FROM generate_series(1, 100) AS i",
    )
    .await;
    s.ok(json!({"type": "track_table", "args": {"table": "visits"}}))
        .await;
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "visits",
        "role": "visitor", "permission": {"columns": ["id"], "filter": {}}}}),
    )
    .await;
    s.ok(json!({"type": "add_remote_schema", "args": {"name": "geo",
        "definition": {"url": geo.url, "timeout_seconds": 1}}}))
        .await;
    s.ok(
        json!({"type": "create_remote_relationship", "args": {"name": "country",
        "table": "visits", "definition": {"to_remote_schema": {"remote_schema": "geo",
        "lhs_fields": ["country_code"],
        "remote_field": {"country": {"arguments": {"code": "$country_code"}}}}}}}),
    )
    .await;
    s.ok(
        json!({"type": "create_remote_schema_remote_relationship", "args": {
        "remote_schema": "geo", "type_name": "Country", "name": "visits", "definition": {
        "to_source": {"table": "visits", "relationship_type": "array",
        "field_mapping": {"code": "country_code"}}}}}),
    )
    .await;
    (s, geo)
}

fn calls(geo: &Geo) -> usize {
    geo.received
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, body)| !body["query"].as_str().unwrap_or("").contains("__schema"))
        .count()
}

#[tokio::test]
async fn a_hundred_rows_make_one_call_and_abstract_positions_join() {
    let (s, geo) = geo_visits().await;
    let before = calls(&geo);
    let answer = s
        .gql("{ visits(order_by: {id: asc}) { id country { name } } }")
        .await;
    let rows = answer["data"]["visits"].as_array().expect("rows");
    assert_eq!(rows.len(), 100);
    assert_eq!(rows[3], json!({"id": 4, "country": {"name": "Japan"}}));
    assert_eq!(rows[4], json!({"id": 5, "country": {"name": "France"}}));
    assert_eq!(calls(&geo) - before, 1, "one call for every row");

    // Behind a union and an interface, objects of the type get their rows; others do not.
    let answer = s
        .gql(
            r#"{ search { __typename ... on Country { code n: visits_aggregate { aggregate { count } } }
                          ... on City { name } }
                 node(code: "JP") { code ... on Country { visits(limit: 2, order_by: {id: asc}) { id } } } }"#,
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {
            "search": [{"__typename": "Country", "code": "FR", "n": {"aggregate": {"count": 75}}},
                       {"__typename": "City", "name": "Osaka"}],
            "node": {"code": "JP", "visits": [{"id": 4}, {"id": 8}]}}})
    );
    // Under a mutation root.
    let answer = s
        .gql(r#"mutation { addCountry(code: "JP", name: "Nippon") { name visits(where: {id: {_lt: 10}}) { id } } }"#)
        .await;
    assert_eq!(
        answer,
        json!({"data": {"addCountry": {"name": "Nippon", "visits": [{"id": 4}, {"id": 8}]}}})
    );
}

#[tokio::test]
async fn a_remote_that_times_out_fails_at_the_rows_field() {
    let (s, geo) = geo_visits().await;
    geo.set(Mode::Slow(Duration::from_secs(3)));
    let query = "{ visits(where: {id: {_lt: 3}}) { id country { name } } }";
    let (answer, internals) = without_internal(s.gql(query).await);
    assert_eq!(
        internals,
        [json!({"remote_schema": "geo",
            "request": {"query": "query { f0: country(code: \"FR\") { name } }"}})]
    );
    // Other roles do not see what was sent.
    let visitor = s.gql_role(query, "visitor", &[]).await;
    assert!(
        visitor["errors"][0]["extensions"].get("internal").is_none(),
        "{visitor}"
    );
    assert_eq!(
        answer,
        json!({"errors": [{"message": format!("HTTP exception occurred while sending the request to {}", geo.url),
            "path": ["visits", 0, "country"],
            "extensions": {"path": "$", "code": "remote-schema-error"}}]})
    );
}

#[tokio::test]
async fn goldenfile_the_statement_of_an_answers_relationships() {
    use basalt::graphql::{model, plan, remote, remote_to_table, typegen};
    let (s, _remote) = setup().await;
    s.ok(sender()).await;
    let (client, conn) = tokio_postgres::connect(&s.db_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let snapshot = basalt::transaction::read(&client).await.unwrap();
    let resolved = &snapshot.resolution.resolved;
    let model = model::build(resolved, "user");
    let mut types = typegen::build(&model);
    for parsed in remote::parse_all(resolved) {
        remote::merge(&mut types, &parsed);
    }
    remote_to_table::add_fields(&mut types, &model);
    let query = "{ messages { sender(where: {name: {_eq: \"bob\"}}, limit: 2) { name } } }";
    let prepared = plan::prepare(query, None).unwrap();
    let limits = plan::Limits {
        max_depth: 64,
        max_root_fields: 100,
    };
    let planned = plan::plan(
        &model,
        &types,
        resolved,
        &prepared,
        &Default::default(),
        limits,
    )
    .unwrap();
    let parts: Vec<_> = planned.table_joins.iter().collect();
    let sql = basalt::translate::table_joins(&parts, &model.cells);
    let (pretty, params) = crate::graphql::sql_snapshots::pretty(&sql);
    insta::assert_snapshot!(
        "remote_to_table",
        format!("{pretty}\n\n-- params\n{params}"),
        query
    );
}

#[tokio::test]
async fn a_remote_schema_is_updated_in_place_with_its_relationships() {
    let (s, remote) = setup().await;
    s.ok(legacy()).await;
    s.ok(sender()).await;
    // Removing it is refused while a table relates to it; updating it is not.
    let update = json!({"type": "update_remote_schema", "args": {"name": "msgs",
        "definition": {"url": remote.url, "timeout_seconds": 5}, "comment": "messages"}});
    assert_eq!(s.ok(update.clone()).await, json!({"message": "success"}));
    let export = s.export().await;
    let entry = &export["remote_schemas"][0];
    assert_eq!(entry["definition"]["timeout_seconds"], 5);
    assert_eq!(entry["comment"], "messages");
    assert_eq!(
        entry["remote_relationships"][0]["relationships"][0]["name"],
        "sender"
    );
    assert_eq!(
        export["tables"][0]["remote_relationships"][0]["name"],
        "message"
    );
    let answer = s
        .gql("{ profiles(where: {id: {_eq: 2}}) { message { sender { name } } } }")
        .await;
    assert_eq!(
        answer,
        json!({"data": {"profiles": [{"message": {"sender": [{"name": "bob"}]}}]}})
    );
    let mut missing = update;
    missing["args"]["name"] = json!("nope");
    refused(
        &s,
        missing,
        "not-exists",
        "remote schema with name \"nope\" does not exist",
    )
    .await;
}

#[tokio::test]
async fn a_computed_field_can_carry_the_join_value() {
    let (s, remote) = setup().await;
    s.sql(
        "CREATE FUNCTION profiles_next_msg(p profiles) RETURNS int
         LANGUAGE sql STABLE AS $$ SELECT p.msg_id + 1 $$",
    )
    .await;
    s.ok(
        json!({"type": "add_computed_field", "args": {"table": "profiles", "name": "next_msg",
        "definition": {"function": "profiles_next_msg"}}}),
    )
    .await;
    s.ok(
        json!({"type": "create_remote_relationship", "args": {"name": "next", "table": "profiles",
        "definition": {"to_remote_schema": {"remote_schema": "msgs", "lhs_fields": ["next_msg"],
        "remote_field": {"message": {"arguments": {"id": "$next_msg"}}}}}}}),
    )
    .await;
    let before = remote.bodies().len();
    let answer = s
        .gql("{ profiles(order_by: {id: asc}) { id next { msg } } }")
        .await;
    assert_eq!(
        answer,
        json!({"data": {"profiles": [
            {"id": 1, "next": {"msg": "You lose!"}}, {"id": 2, "next": {"msg": "Another alice"}},
            {"id": 3, "next": null}, {"id": 4, "next": null}]}})
    );
    let sent = queries(&remote, before);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].contains("message(id: 4)"), "{}", sent[0]);
}

#[tokio::test]
async fn a_reload_that_breaks_a_relationship_is_refused() {
    let (s, geo) = geo_visits().await;
    let before = s.export().await;
    // The service drops the field the relationship calls, and the type the other relates.
    *geo.schema.lock().unwrap() = super::relationships::msgs_schema();
    refused(
        &s,
        json!({"type": "reload_remote_schema", "args": {"name": "geo"}}),
        "unexpected",
        "cannot continue due to new inconsistent metadata",
    )
    .await;
    assert_eq!(s.export().await, before);
    // The schema served is still the one last introspected.
    let answer = s
        .gql(r#"{ __type(name: "visits") { fields { name } } }"#)
        .await;
    let fields: Vec<&str> = answer["data"]["__type"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert!(fields.contains(&"country"), "{answer}");
}

#[tokio::test]
async fn positions_reached_twice_and_types_sharing_a_field_name() {
    let (s, remote) = setup().await;
    s.ok(sender()).await;
    // The same position twice (a repeated parent field): one occurrence, selections merged.
    let answer = s
        .gql("{ m: message(id: 2) { sender { name } } m: message(id: 2) { sender { id } } }")
        .await;
    assert_eq!(
        answer,
        json!({"data": {"m": {"sender": [{"name": "bob", "id": 2}]}}})
    );
    drop(remote);
    // Behind a union, two types' relationships on fields of one name stay apart.
    let (s, _geo) = geo_visits().await;
    s.ok(
        json!({"type": "create_remote_schema_remote_relationship", "args": {
        "remote_schema": "geo", "type_name": "City", "name": "stays", "definition": {
        "to_source": {"table": "visits", "relationship_type": "array",
        "field_mapping": {"code": "country_code"}}}}}),
    )
    .await;
    let answer = s
        .gql("{ search { ... on Country { code v: visits(limit: 1, order_by: {id: asc}) { id } } ... on City { code v: stays { id } } } }")
        .await;
    assert_eq!(
        answer,
        json!({"data": {"search": [{"code": "FR", "v": [{"id": 1}]}, {"code": "OSA", "v": []}]}})
    );
}
