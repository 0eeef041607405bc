//! Remote relationships from a table to a remote schema through the metadata API
//! (`docs/metadata-api.md`, "Remote relationships"): both argument forms, export, every
//! validation error, update and delete, inconsistency after the remote changes, and the
//! dependency of `remove_remote_schema` on them. The remote is the messages service of the
//! API's examples, served live.

use super::prop;
use super::remote_server::RemoteServer;
use crate::harness::{fresh_database, run_sql, TestServer};
use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputObject, InputValue, Object, Schema, TypeRef,
};
use serde_json::{json, Value};

fn messages() -> Vec<Value> {
    vec![
        json!({"id": 1, "name": "alice", "msg": "You win!"}),
        json!({"id": 2, "name": "bob", "msg": "You lose!"}),
        json!({"id": 3, "name": "alice", "msg": "Another alice"}),
    ]
}

/// The messages service: `message(id)`, `messages(where, limit)`, and an `errorMsg` that fails.
pub(crate) fn msgs_schema() -> Schema {
    let message = Object::new("Message")
        .field(prop("id", TypeRef::named_nn(TypeRef::INT)))
        .field(prop("name", TypeRef::named_nn(TypeRef::STRING)))
        .field(prop("msg", TypeRef::named_nn(TypeRef::STRING)))
        .field(Field::new(
            "errorMsg",
            TypeRef::named(TypeRef::STRING),
            |_| {
                FieldFuture::new(async move {
                    Err::<Option<FieldValue>, _>(async_graphql::Error::new("intentional-error"))
                })
            },
        ));
    let compare = |name: &str, ty: &str| {
        InputObject::new(name).field(InputValue::new("eq", TypeRef::named(ty)))
    };
    let filter = InputObject::new("MessageWhere")
        .field(InputValue::new("id", TypeRef::named("IntCompare")))
        .field(InputValue::new("name", TypeRef::named("StringCompare")));
    let query = Object::new("Query")
        .field(
            Field::new("message", TypeRef::named("Message"), |ctx| {
                FieldFuture::new(async move {
                    let id = ctx.args.try_get("id")?.i64()?;
                    Ok(messages()
                        .into_iter()
                        .find(|m| m["id"] == id)
                        .map(FieldValue::owned_any))
                })
            })
            .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::INT))),
        )
        .field(
            Field::new("messages", TypeRef::named_nn_list_nn("Message"), |ctx| {
                FieldFuture::new(async move {
                    let filter = ctx
                        .args
                        .get("where")
                        .map(|w| w.deserialize::<Value>())
                        .transpose()?
                        .unwrap_or(Value::Null);
                    let limit = ctx.args.get("limit").map(|l| l.i64()).transpose()?;
                    let list: Vec<FieldValue> = messages()
                        .into_iter()
                        .filter(|m| {
                            ["id", "name"]
                                .iter()
                                .all(|k| filter[k]["eq"].is_null() || filter[k]["eq"] == m[*k])
                        })
                        .take(limit.unwrap_or(100) as usize)
                        .map(FieldValue::owned_any)
                        .collect();
                    Ok(Some(FieldValue::list(list)))
                })
            })
            .argument(InputValue::new("where", TypeRef::named("MessageWhere")))
            .argument(InputValue::new("limit", TypeRef::named(TypeRef::INT))),
        );
    Schema::build("Query", None, None)
        .register(message)
        .register(compare("IntCompare", TypeRef::INT))
        .register(compare("StringCompare", TypeRef::STRING))
        .register(filter)
        .register(query)
        .finish()
        .unwrap()
}

/// The examples' setup: `profiles` tracked, the `msgs` remote added, role `user` reading
/// `name` of its own row.
pub(super) async fn setup() -> (TestServer, RemoteServer) {
    let remote = RemoteServer::start(msgs_schema()).await;
    let db = fresh_database().await;
    run_sql(
        &db,
        "CREATE TABLE profiles (id serial PRIMARY KEY, name text, msg_id int);
         INSERT INTO profiles (name, msg_id) VALUES ('alice', 1), ('bob', 2), ('alice', 3), ('dave', NULL)",
    )
    .await;
    let s = TestServer::on(&db, |_| {}).await;
    s.ok(json!({"type": "track_table", "args": {"table": "profiles"}}))
        .await;
    s.ok(json!({"type": "add_remote_schema", "args": {"name": "msgs",
        "definition": {"url": remote.url}}}))
        .await;
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "profiles", "role": "user",
        "permission": {"columns": ["name"], "filter": {"id": {"_eq": "X-Svc-User-Id"}}}}}),
    )
    .await;
    (s, remote)
}

/// A request that must be refused with 400; returns the body.
pub(super) async fn fail(s: &TestServer, body: Value) -> Value {
    let (status, response) = s.query(body.clone()).await;
    assert_eq!(status, 400, "request {body}: {response}");
    response
}

/// A request refused with 400, `code` and the message `error`; returns the body.
pub(super) async fn refused(s: &TestServer, body: Value, code: &str, error: &str) -> Value {
    let err = fail(s, body.clone()).await;
    assert_eq!(
        (err["code"].as_str(), err["error"].as_str()),
        (Some(code), Some(error)),
        "{body}"
    );
    err
}

/// A request refused with `dependency-error` because of `dependent`.
async fn refused_for(s: &TestServer, body: Value, dependent: &str) {
    let err = fail(s, body).await;
    assert_eq!(err["code"], "dependency-error");
    let message = err["error"].as_str().unwrap_or_default();
    assert!(message.contains(dependent), "{err}");
}

pub(super) fn legacy() -> Value {
    json!({"type": "create_remote_relationship", "args": {"name": "message", "table": "profiles",
        "basalt_fields": ["msg_id"], "remote_schema": "msgs",
        "remote_field": {"message": {"arguments": {"id": "$msg_id"}}}}})
}

pub(super) fn current() -> Value {
    json!({"type": "create_remote_relationship", "args": {"name": "sameName", "table": "profiles",
        "definition": {"to_remote_schema": {"remote_schema": "msgs", "lhs_fields": ["name"],
        "remote_field": {"messages": {"arguments": {"where": {"name": {"eq": "$name"}}}}}}}}})
}

#[tokio::test]
async fn both_forms_are_created_exported_updated_and_deleted() {
    let (s, _remote) = setup().await;
    assert_eq!(s.ok(legacy()).await, json!({"message": "success"}));
    s.ok(current()).await;
    let exported = s.export().await;
    let profiles = &exported["tables"][0];
    assert_eq!(
        profiles["remote_relationships"],
        json!([
            {"name": "message", "definition": {"remote_schema": "msgs", "basalt_fields": ["msg_id"],
                "remote_field": {"message": {"arguments": {"id": "$msg_id"}}}}},
            {"name": "sameName", "definition": {"to_remote_schema": {"remote_schema": "msgs",
                "lhs_fields": ["name"],
                "remote_field": {"messages": {"arguments": {"where": {"name": {"eq": "$name"}}}}}}}}
        ])
    );
    let keys: Vec<&String> = profiles.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["table", "remote_relationships", "select_permissions"]
    );
    // The export imports back as it is.
    s.ok(json!({"type": "replace_metadata", "args": exported.clone()}))
        .await;
    assert_eq!(s.export().await, exported);
    // Update switches the form; delete removes.
    s.ok(json!({"type": "update_remote_relationship", "args": {"name": "message", "table": "profiles",
        "definition": {"to_remote_schema": {"remote_schema": "msgs", "lhs_fields": ["msg_id"],
        "remote_field": {"message": {"arguments": {"id": "$msg_id"}, "field": {"msg": {"arguments": {}}}}}}}}}))
        .await;
    assert_eq!(
        s.export().await["tables"][0]["remote_relationships"][0]["definition"]["to_remote_schema"]
            ["remote_field"]["message"]["field"],
        json!({"msg": {"arguments": {}}})
    );
    s.ok(json!({"type": "delete_remote_relationship", "args": {"table": "profiles", "name": "sameName"}}))
        .await;
    assert_eq!(
        s.export().await["tables"][0]["remote_relationships"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let missing = fail(&s, json!({"type": "delete_remote_relationship", "args": {"table": "profiles", "name": "sameName"}}))
        .await;
    assert_eq!(
        missing,
        json!({"path": "$.args", "code": "not-exists",
            "error": "remote relationship \"sameName\" does not exist on table \"profiles\""})
    );
}

#[tokio::test]
async fn every_validation_error_has_its_message_and_code() {
    let (s, _remote) = setup().await;
    let with = |change: &dyn Fn(&mut Value)| {
        let mut request = legacy();
        change(&mut request["args"]);
        request
    };
    let cases = [
        (
            with(&|a| a["basalt_fields"] = json!(["nope"])),
            "remote-schema-error",
            "field with name \"nope\" is not provided by the lhs entity \"profiles\" for defining a join condition",
        ),
        (
            with(&|a| a["remote_field"] = json!({"message": {"arguments": {"id_wrong": "$msg_id"}}})),
            "remote-schema-error",
            "argument with name \"id_wrong\" not found in remote schema",
        ),
        (
            with(&|a| {
                a["basalt_fields"] = json!(["name"]);
                a["remote_field"] = json!({"message": {"arguments": {"id": "$name"}}});
            }),
            "remote-schema-error",
            "expected type \"Int\" but got \"String\"",
        ),
        (
            with(&|a| a["remote_schema"] = json!("nope")),
            "not-exists",
            "remote schema with name \"nope\" not found",
        ),
        (
            with(&|a| a["definition"] = json!({})),
            "parse-failed",
            "create_remote_relationship expects exactly one of: remote_schema, definition",
        ),
        (
            with(&|a| a["table"] = json!("nowhere")),
            "not-exists",
            "table \"nowhere\" does not exist",
        ),
        (
            with(&|a| a["name"] = json!("msg_id")),
            "already-exists",
            "column/relationship \"msg_id\" of table \"profiles\" already exists",
        ),
        (
            with(&|a| a["source"] = json!("other")),
            "not-exists",
            "source with name \"other\" does not exist",
        ),
        (
            with(&|a| a["remote_field"] = json!({"message": {"arguments": {"id": "$"}}})),
            "parse-failed",
            "Empty variable name",
        ),
        (
            with(&|a| a["remote_field"] = json!({})),
            "parse-failed",
            "Expecting one single mapping, received none.",
        ),
    ];
    for (request, code, message) in cases {
        let err = fail(&s, request.clone()).await;
        assert_eq!(err["code"], code, "{request}: {err}");
        assert_eq!(err["error"], message, "{request}: {err}");
    }
    let to_source = json!({"type": "create_remote_relationship", "args": {"name": "x", "table": "profiles",
        "definition": {"to_source": {"table": "profiles", "relationship_type": "object", "field_mapping": {}}}}});
    refused(
        &s,
        to_source,
        "not-supported",
        "remote relationships to database sources are not supported",
    )
    .await;
    let strict = json!({"type": "create_remote_relationship", "args": {"name": "x", "table": "profiles",
        "definition": {"remote_schema": "msgs"}}});
    let err = fail(&s, strict).await;
    assert_eq!(err["path"], "$.args.definition");
    assert_eq!(err["code"], "parse-failed");
    assert_eq!(err["error"], STRICT_FORM);
    // Nothing was stored.
    assert!(s.export().await["tables"][0]
        .get("remote_relationships")
        .is_none());
}

const STRICT_FORM: &str =
    "remote relationship definition (strict format) expects exactly one of: to_source, to_remote_schema";

#[tokio::test]
async fn a_remote_schema_in_use_cannot_be_removed() {
    let (s, _remote) = setup().await;
    s.ok(legacy()).await;
    s.ok(current()).await;
    let err = fail(
        &s,
        json!({"type": "remove_remote_schema", "args": {"name": "msgs"}}),
    )
    .await;
    assert_eq!(
        err,
        json!({"path": "$.args", "code": "dependency-error",
            "error": "cannot drop due to the following dependent objects : remote relationship profiles.message, remote relationship profiles.sameName"})
    );
    for name in ["message", "sameName"] {
        s.ok(json!({"type": "delete_remote_relationship", "args": {"table": "profiles", "name": name}}))
            .await;
    }
    s.ok(json!({"type": "remove_remote_schema", "args": {"name": "msgs"}}))
        .await;
    // Untracking the table takes its relationships with it.
    s.ok(json!({"type": "add_remote_schema", "args": {"name": "msgs",
        "definition": {"url": _remote.url}}}))
        .await;
    s.ok(legacy()).await;
    s.ok(json!({"type": "untrack_table", "args": {"table": "profiles"}}))
        .await;
    s.ok(json!({"type": "remove_remote_schema", "args": {"name": "msgs"}}))
        .await;
}

#[tokio::test]
async fn a_relationship_the_remote_no_longer_fits_is_inconsistent() {
    let (s, remote) = setup().await;
    s.ok(legacy()).await;
    // The table loses the join column outside Basalt: the relationship no longer resolves.
    run_sql(
        &s.db_url,
        "ALTER TABLE profiles RENAME COLUMN msg_id TO message_id",
    )
    .await;
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    let inconsistent = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(
        inconsistent["inconsistent_objects"],
        json!([{"type": "remote_relationship",
            "definition": {"name": "message", "table": {"schema": "public", "name": "profiles"},
                "remote_schema": "msgs", "basalt_fields": ["msg_id"],
                "remote_field": {"message": {"arguments": {"id": "$msg_id"}}}},
            "reason": "field with name \"msg_id\" is not provided by the lhs entity \"profiles\" for defining a join condition",
            "owner": "api"}])
    );
    drop(remote);
}

#[tokio::test]
async fn run_sql_renames_and_drops_of_join_columns_carry_over() {
    let (s, _remote) = setup().await;
    s.ok(legacy()).await;
    s.ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE profiles RENAME COLUMN msg_id TO message_id"}}))
        .await;
    assert_eq!(
        s.export().await["tables"][0]["remote_relationships"][0]["definition"],
        json!({"remote_schema": "msgs", "basalt_fields": ["message_id"],
            "remote_field": {"message": {"arguments": {"id": "$message_id"}}}})
    );
    refused_for(
        &s,
        json!({"type": "run_sql", "args": {"sql": "ALTER TABLE profiles DROP COLUMN message_id"}}),
        "remote relationship profiles.message",
    )
    .await;
    s.ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE profiles DROP COLUMN message_id", "cascade": true}}))
        .await;
    assert!(s.export().await["tables"][0]
        .get("remote_relationships")
        .is_none());
}

#[tokio::test]
async fn an_inconsistent_relationship_can_be_dropped() {
    let (s, _remote) = setup().await;
    s.ok(legacy()).await;
    run_sql(&s.db_url, "ALTER TABLE profiles DROP COLUMN msg_id").await;
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    let exported = s.export().await;
    assert!(exported["tables"][0].get("remote_relationships").is_none());
    assert_eq!(
        s.ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
            .await["is_consistent"],
        true
    );
}

pub(super) fn sender() -> Value {
    json!({"type": "create_remote_schema_remote_relationship", "args": {"remote_schema": "msgs",
        "type_name": "Message", "name": "sender", "definition": {"to_source": {"source": "default",
        "table": "profiles", "relationship_type": "array", "field_mapping": {"id": "msg_id"}}}}})
}

#[tokio::test]
async fn a_remote_type_relates_to_a_table() {
    let (s, _remote) = setup().await;
    assert_eq!(s.ok(sender()).await, json!({"message": "success"}));
    assert_eq!(
        s.export().await["remote_schemas"][0]["remote_relationships"],
        json!([{"type_name": "Message", "relationships": [{"name": "sender", "definition": {
            "to_source": {"source": "default", "table": {"schema": "public", "name": "profiles"},
                "relationship_type": "array", "field_mapping": {"id": "msg_id"}}}}]}])
    );
    // The export imports back as it is.
    let exported = s.export().await;
    s.ok(json!({"type": "replace_metadata", "args": exported.clone()}))
        .await;
    assert_eq!(s.export().await, exported);
    // Update replaces it; delete removes it (and its type's group).
    let mut update = sender();
    update["type"] = json!("update_remote_schema_remote_relationship");
    update["args"]["definition"]["to_source"]["relationship_type"] = json!("object");
    s.ok(update).await;
    assert_eq!(
        s.export().await["remote_schemas"][0]["remote_relationships"][0]["relationships"][0]
            ["definition"]["to_source"]["relationship_type"],
        "object"
    );
    let delete = json!({"type": "delete_remote_schema_remote_relationship", "args": {
        "remote_schema": "msgs", "type_name": "Message", "name": "sender"}});
    s.ok(delete.clone()).await;
    assert!(s.export().await["remote_schemas"][0]
        .get("remote_relationships")
        .is_none());
    refused(
        &s,
        delete,
        "not-exists",
        "no relationship defined on remote schema \"msgs\" with name \"sender\"",
    )
    .await;
}

#[tokio::test]
async fn a_remote_types_relationship_is_checked() {
    let (s, _remote) = setup().await;
    let with = |change: &dyn Fn(&mut Value)| {
        let mut request = sender();
        change(&mut request["args"]);
        request
    };
    let cases = [
        (
            with(&|a| a["remote_schema"] = json!("nope")),
            "not-exists",
            "remote schema with name \"nope\" does not exist",
        ),
        (
            with(&|a| a["type_name"] = json!("Nope")),
            "not-found",
            "no type named \"Nope\" defined in remote schema \"msgs\"",
        ),
        (
            with(&|a| a["type_name"] = json!("MessageWhere")),
            "not-supported",
            "remote relationships on a remote schema can only be defined on object types",
        ),
        (
            with(&|a| a["definition"]["to_source"]["field_mapping"] = json!({"nope": "msg_id"})),
            "not-exists",
            "field \"nope\" does not exist in type \"Message\"",
        ),
        (
            with(&|a| a["definition"]["to_source"]["table"] = json!("nowhere")),
            "not-exists",
            "table \"nowhere\" does not exist",
        ),
        (
            with(&|a| a["definition"]["to_source"]["field_mapping"] = json!({"id": "nope"})),
            "not-exists",
            "column \"nope\" does not exist",
        ),
        (
            with(&|a| a["name"] = json!("msg")),
            "already-exists",
            "field \"msg\" already exists in type \"Message\"",
        ),
        (
            with(&|a| a["definition"] = json!({"to_remote_schema": {}})),
            "not-supported",
            "remote schema to remote schema relationships are not supported",
        ),
        (
            with(&|a| a["definition"] = json!({})),
            "parse-failed",
            STRICT_FORM,
        ),
        (
            with(&|a| a["definition"]["to_source"]["relationship_type"] = json!("many")),
            "parse-failed",
            "",
        ),
        (
            with(&|a| a["definition"]["to_source"]["field_mapping"] = json!({})),
            "parse-failed",
            "field_mapping must map at least one field",
        ),
    ];
    for (request, code, message) in cases {
        let err = fail(&s, request.clone()).await;
        assert_eq!(err["code"], code, "{request}: {err}");
        if !message.is_empty() {
            assert_eq!(err["error"], message, "{request}: {err}");
        }
    }
    assert!(s.export().await["remote_schemas"][0]
        .get("remote_relationships")
        .is_none());
}

#[tokio::test]
async fn untracking_a_table_a_remote_type_relates_to_needs_cascade() {
    let (s, _remote) = setup().await;
    s.ok(sender()).await;
    refused_for(
        &s,
        json!({"type": "untrack_table", "args": {"table": "profiles"}}),
        "remote schema relationship msgs.Message.sender",
    )
    .await;
    s.ok(json!({"type": "untrack_table", "args": {"table": "profiles", "cascade": true}}))
        .await;
    let exported = s.export().await;
    assert!(exported["remote_schemas"][0]
        .get("remote_relationships")
        .is_none());
    assert!(exported.get("tables").is_none() || exported["tables"] == json!([]));
}

#[tokio::test]
async fn the_table_type_gets_the_relationship_fields() {
    let (s, _remote) = setup().await;
    s.ok(legacy()).await;
    s.ok(current()).await;
    let shape = s
        .gql(r#"{ t: __type(name: "profiles") { fields { name type { kind name ofType { kind name ofType { kind name } } } args { name type { name kind } } } }
                  w: __type(name: "MessageWhere_remote_rel_profilessameName") { inputFields { name } } }"#)
        .await;
    let fields = shape["data"]["t"]["fields"].as_array().unwrap();
    let field = |n: &str| fields.iter().find(|f| f["name"] == n).unwrap().clone();
    assert_eq!(
        field("sameName")["args"],
        json!([{"name": "where", "type": {"name": "MessageWhere_remote_rel_profilessameName", "kind": "INPUT_OBJECT"}},
               {"name": "limit", "type": {"name": "Int", "kind": "SCALAR"}}])
    );
    assert_eq!(
        field("sameName")["type"],
        json!({"kind": "LIST", "name": null, "ofType": {"kind": "NON_NULL", "name": null,
            "ofType": {"kind": "OBJECT", "name": "Message"}}}),
        "the list is nullable"
    );
    assert_eq!(field("message")["args"], json!([]), "the template fills id");
    assert_eq!(shape["data"]["w"]["inputFields"], json!([{"name": "id"}]));
    // A role that cannot read the join column still has the field; not the column.
    let user = s
        .graphql_as(
            json!({"query": r#"{ __type(name: "profiles") { fields { name } } }"#}),
            &[("X-Svc-Role", "user"), ("X-Svc-User-Id", "2")],
        )
        .await;
    let names: Vec<&str> = user["data"]["__type"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["name", "message", "sameName"]);
}

#[tokio::test]
async fn subscriptions_refuse_remote_relationships() {
    let (s, _remote) = setup().await;
    s.ok(legacy()).await;
    let mut ws = crate::graphql::subscriptions::open_transport(&s).await;
    crate::graphql::subscriptions::send(
        &mut ws,
        json!({"type": "subscribe", "id": "r", "payload": {"query": "subscription { profiles { message { msg } } }"}}),
    )
    .await;
    let answer = crate::graphql::subscriptions::message(&mut ws).await;
    assert_eq!(answer["type"], "error");
    assert_eq!(
        answer["payload"],
        json!([{"message": "Remote relationships are not allowed in subscriptions",
            "extensions": {"path": "$", "code": "not-supported"}}])
    );
}

/// The POSTs the remote received after `since` of them, introspection left out.
pub(super) fn queries(remote: &RemoteServer, since: usize) -> Vec<String> {
    remote.bodies()[since..]
        .iter()
        .filter_map(|b| b["query"].as_str().map(str::to_owned))
        .filter(|q| !q.contains("__schema"))
        .collect()
}

#[tokio::test]
async fn rows_are_joined_with_one_call_per_occurrence() {
    let (s, remote) = setup().await;
    s.ok(legacy()).await;
    s.ok(current()).await;
    let before = remote.bodies().len();
    let answer = s
        .gql("{ profiles(order_by: {id: asc}) { id message { msg } } }")
        .await;
    assert_eq!(
        answer,
        json!({"data": {"profiles": [
            {"id": 1, "message": {"msg": "You win!"}}, {"id": 2, "message": {"msg": "You lose!"}},
            {"id": 3, "message": {"msg": "Another alice"}}, {"id": 4, "message": null}]}})
    );
    let sent = queries(&remote, before);
    assert_eq!(sent.len(), 1, "{sent:?}");
    for (alias, id) in [("f0", 1), ("f1", 2), ("f2", 3)] {
        assert!(
            sent[0].contains(&format!("{alias}: message(id: {id})")),
            "{}",
            sent[0]
        );
    }
    // Identical argument sets share an alias; the client's arguments join the template's.
    let before = remote.bodies().len();
    let answer = s
        .gql("{ profiles(order_by: {id: asc}) { id sameName(limit: 5) { id } } }")
        .await;
    assert_eq!(
        answer["data"]["profiles"],
        json!([{"id": 1, "sameName": [{"id": 1}, {"id": 3}]}, {"id": 2, "sameName": [{"id": 2}]},
               {"id": 3, "sameName": [{"id": 1}, {"id": 3}]}, {"id": 4, "sameName": []}])
    );
    let sent = queries(&remote, before);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].contains("f2:"), "three aliases: {}", sent[0]);
    assert!(!sent[0].contains("f3:"), "three aliases: {}", sent[0]);
    assert!(sent[0].contains("limit: 5"), "{}", sent[0]);
    // Two occurrences: two calls, whatever the number of rows.
    let before = remote.bodies().len();
    let answer = s
        .gql("{ a: profiles { message { id } } b: profiles(limit: 2) { m: message { name } } }")
        .await;
    assert!(answer.get("errors").is_none(), "{answer}");
    assert_eq!(queries(&remote, before).len(), 2);
}

#[tokio::test]
async fn a_role_joins_on_a_column_it_cannot_read() {
    let (s, _remote) = setup().await;
    s.ok(legacy()).await;
    let user = [("X-Svc-Role", "user"), ("X-Svc-User-Id", "2")];
    let answer = s
        .graphql_as(
            json!({"query": "{ profiles { name message { msg } } }"}),
            &user,
        )
        .await;
    assert_eq!(
        answer,
        json!({"data": {"profiles": [{"name": "bob", "message": {"msg": "You lose!"}}]}})
    );
    let answer = s
        .graphql_as(json!({"query": "{ profiles { msg_id } }"}), &user)
        .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"],
        "validation-failed"
    );
}

/// `answer` with `extensions.internal` taken out of its errors, and what was taken.
pub(super) fn without_internal(mut answer: Value) -> (Value, Vec<Value>) {
    let mut taken = Vec::new();
    for error in answer["errors"].as_array_mut().into_iter().flatten() {
        if let Some(internal) = error["extensions"]
            .as_object_mut()
            .and_then(|e| e.remove("internal"))
        {
            taken.push(internal);
        }
    }
    (answer, taken)
}

#[tokio::test]
async fn remote_errors_come_back_at_each_rows_path() {
    let (s, mut remote) = setup().await;
    s.ok(legacy()).await;
    let answer = s
        .gql("{ profiles(order_by: {id: asc}, limit: 2) { id message { errorMsg } } }")
        .await;
    // The admin also sees the remote schema and the document sent.
    let (answer, internals) = without_internal(answer);
    assert_eq!(
        internals,
        vec![
            json!({"remote_schema": "msgs", "request": {"query":
            "query { f0: message(id: 1) { errorMsg } f1: message(id: 2) { errorMsg } }"}});
            2
        ]
    );
    assert_eq!(
        answer,
        json!({"errors": [
            {"message": "intentional-error", "path": ["profiles", 0, "message", "errorMsg"],
             "extensions": {"path": "$", "code": "remote-schema-error"}},
            {"message": "intentional-error", "path": ["profiles", 1, "message", "errorMsg"],
             "extensions": {"path": "$", "code": "remote-schema-error"}}]})
    );
    let url = remote.url.clone();
    remote.stop().await;
    let answer = s
        .gql("{ profiles(order_by: {id: asc}) { id message { msg } } }")
        .await;
    assert_eq!(
        without_internal(answer).0,
        json!({"errors": [{"message": format!("HTTP exception occurred while sending the request to {url}"),
            "path": ["profiles", 0, "message"],
            "extensions": {"path": "$", "code": "remote-schema-error"}}]})
    );
}

#[tokio::test]
async fn mutation_results_are_joined_after_the_commit() {
    let (s, remote) = setup().await;
    s.ok(legacy()).await;
    let before = remote.bodies().len();
    let answer = s
        .gql(r#"mutation { insert_profiles_one(object: {name: "erin", msg_id: 2}) { name message { msg } }
                          update_profiles(where: {id: {_eq: 1}}, _set: {msg_id: 3}) { returning { message { msg } } } }"#)
        .await;
    assert_eq!(
        answer,
        json!({"data": {"insert_profiles_one": {"name": "erin", "message": {"msg": "You lose!"}},
            "update_profiles": {"returning": [{"message": {"msg": "Another alice"}}]}}})
    );
    assert_eq!(queries(&remote, before).len(), 2, "one call per occurrence");
    // A single-statement mutation too.
    let answer = s
        .gql(r#"mutation { delete_profiles_by_pk(id: 2) { message { msg } } }"#)
        .await;
    assert_eq!(
        answer,
        json!({"data": {"delete_profiles_by_pk": {"message": {"msg": "You lose!"}}}})
    );
}
