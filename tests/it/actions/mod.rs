//! Actions through the HTTP API, against a real local handler server (axum): the metadata
//! operations and their errors, synchronous query and mutation actions with the handler
//! protocol checked end to end (body, headers, forwarded client headers), outputs shaped and
//! joined to tables with the caller's permissions, handler failures as the spec words them,
//! asynchronous actions (log, workers, result by id and by subscription, session
//! visibility), and an engine killed while an asynchronous call is in flight.

use crate::auth::{blog_server, serve};
use crate::harness::{fresh_database, query_json, run_sql, spawn_serve, spawned_query, TestServer};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A handler server: each path answers one way; every request is kept.
#[derive(Clone, Default)]
struct Handler {
    received: Arc<Mutex<Vec<(String, HeaderMap, Value)>>>,
}

impl Handler {
    async fn start() -> (Handler, String) {
        let handler = Handler::default();
        let router = Router::new()
            .route("/{kind}", post(answer))
            .with_state(handler.clone());
        let base = serve(router).await;
        (handler, base)
    }

    /// Requests to `kind`, in arrival order.
    fn calls(&self, kind: &str) -> Vec<(HeaderMap, Value)> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _, _)| k == kind)
            .map(|(_, h, b)| (h.clone(), b.clone()))
            .collect()
    }
}

fn header(headers: &HeaderMap, name: &str) -> Value {
    headers
        .get(name)
        .map(|v| json!(v.to_str().unwrap()))
        .unwrap_or(Value::Null)
}

async fn answer(
    State(handler): State<Handler>,
    Path(kind): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    handler
        .received
        .lock()
        .unwrap()
        .push((kind.clone(), headers.clone(), body.clone()));
    let input = &body["input"];
    let ok = |v: Value| Json(v).into_response();
    let status =
        |code: u16, v: Value| (StatusCode::from_u16(code).unwrap(), Json(v)).into_response();
    match kind.as_str() {
        // Echoes what it saw, joined to author `author_id`.
        "card" => ok(json!({
            "ok": true,
            "author_id": input["author_id"],
            "note": "card",
            "seen": {
                "role": body["session_variables"]["x-svc-role"],
                "secret": header(&headers, "x-action-secret"),
                "forwarded": header(&headers, "x-client-thing"),
                "query": body["request_query"],
                "input": input,
            },
        })),
        "archive" => ok(json!([
            {"ok": true, "author_id": 1, "note": input["input"]["reason"], "extra": "ignored"},
            {"ok": false, "author_id": 2, "note": null},
        ])),
        "extensions" => status(
            400,
            json!({"message": "member 7 is already archived", "code": "ignored",
                   "extensions": {"code": "already-archived", "member": 7}}),
        ),
        "code" => status(
            422,
            json!({"message": "no such member", "code": "no-member"}),
        ),
        "message" => status(400, json!({"message": "just no"})),
        "nomessage" => status(400, json!({"error": "no message here"})),
        "crash" => status(500, json!({"trace": "boom"})),
        "array" => ok(json!([{"ok": true}])),
        "missing" => ok(json!({"author_id": 1})),
        "wrongtype" => ok(json!({"ok": "yes"})),
        "text" => "plain text".into_response(),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            ok(json!({"ok": true}))
        }
        "hang" => {
            tokio::time::sleep(Duration::from_secs(120)).await;
            ok(json!({"ok": true}))
        }
        "later" => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            ok(json!({"ok": true, "author_id": input["author_id"], "note": "done"}))
        }
        "refuse" => status(
            400,
            json!({"message": "cannot archive", "extensions": {"code": "nope"}}),
        ),
        _ => status(404, json!({"message": "unknown handler"})),
    }
}

/// The custom types of these tests: an output object with relationships to `author` and
/// `article`, a nested object, an input object and an enum.
fn custom_types() -> Value {
    json!({"type": "set_custom_types", "args": {
        "objects": [
            {"name": "Card", "description": "what a handler answers", "fields": [
                {"name": "ok", "type": "Boolean!"},
                {"name": "author_id", "type": "Int"},
                {"name": "note", "type": "String"},
                {"name": "seen", "type": "Seen"}
            ], "relationships": [
                {"name": "author", "type": "object", "remote_table": "author", "field_mapping": {"author_id": "id"}},
                {"name": "articles", "type": "array", "remote_table": "article", "field_mapping": {"author_id": "author_id"}}
            ]},
            {"name": "Seen", "fields": [
                {"name": "role", "type": "String"}, {"name": "secret", "type": "String"},
                {"name": "forwarded", "type": "String"}, {"name": "query", "type": "String"},
                {"name": "input", "type": "jsonb"}
            ]}
        ],
        "input_objects": [{"name": "ArchiveInput", "fields": [
            {"name": "reason", "type": "String"}, {"name": "mood", "type": "Mood"}
        ]}],
        "enums": [{"name": "Mood", "values": [{"value": "calm"}, {"value": "angry"}]}]
    }})
}

fn create(name: &str, definition: Value) -> Value {
    json!({"type": "create_action", "args": {"name": name, "definition": definition}})
}

fn allow(action: &str, role: &str) -> Value {
    json!({"type": "create_action_permission", "args": {"action": action, "role": role}})
}

/// A blog server with the custom types, the handler server, and fast asynchronous workers.
async fn blog_with_handler() -> (TestServer, Handler, String) {
    let (handler, base) = Handler::start().await;
    let s = blog_server(|c| c.actions.poll_interval_ms = 50).await;
    s.ok(custom_types()).await;
    (s, handler, base)
}

/// The data of a response that must have no errors.
fn data(r: Value) -> Value {
    assert!(r.get("errors").is_none(), "{r}");
    r["data"].clone()
}

/// The one error of a response that must fail.
fn error(r: Value) -> Value {
    assert!(r.get("data").is_none(), "no partial data: {r}");
    let errors = r["errors"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert_eq!(errors.len(), 1, "{r}");
    errors[0].clone()
}

#[tokio::test]
async fn query_actions_call_the_handler_and_shape_the_output_with_relationships() {
    let (s, handler, base) = blog_with_handler().await;
    std::env::set_var("BASALT_TEST_ACTION_SECRET", "s3cret");
    std::env::set_var("BASALT_TEST_ACTIONS_BASE", &base);
    s.ok(create(
        "authorCard",
        json!({"type": "query", "handler": "{{BASALT_TEST_ACTIONS_BASE}}/card", "output_type": "Card",
               "arguments": [{"name": "author_id", "type": "Int!"}, {"name": "note", "type": "String"}],
               "headers": [{"name": "X-Action-Secret", "value_from_env": "BASALT_TEST_ACTION_SECRET"}]}),
    ))
    .await;
    s.ok(allow("authorCard", "user")).await;
    let query = r#"query Card($id: Int!) {
        card: authorCard(author_id: $id) {
            __typename note ok
            seen { role secret forwarded }
            who: author { name }
            articles(order_by: {id: desc}, limit: 2) { id title }
        }
        author(where: {id: {_eq: 1}}) { name }
    }"#;
    let r = s
        .graphql_as(json!({"query": query, "variables": {"id": 1}}), &[])
        .await;
    assert_eq!(
        data(r),
        json!({
            "card": {"__typename": "Card", "note": "card", "ok": true,
                     "seen": {"role": "admin", "secret": "s3cret", "forwarded": null},
                     "who": {"name": "Ann"},
                     "articles": [{"id": 2, "title": "Poems"}, {"id": 1, "title": "Rust in practice"}]},
            "author": [{"name": "Ann"}]
        })
    );
    let calls = handler.calls("card");
    assert_eq!(calls.len(), 1);
    let (headers, body) = &calls[0];
    assert_eq!(
        body,
        &json!({"action": {"name": "authorCard"}, "input": {"author_id": 1},
                "session_variables": {"x-svc-role": "admin"}, "request_query": query})
    );
    assert_eq!(header(headers, "x-action-secret"), "s3cret");
    assert_eq!(header(headers, "content-type"), "application/json");
    assert!(header(headers, "user-agent")
        .as_str()
        .unwrap()
        .starts_with("basalt/"));
    // A role with the action permission: the table permissions apply to the relationships
    // (only author 1's published article for user 2).
    let r = s
        .gql_role(
            "{ authorCard(author_id: 1, note: \"x\") { seen { role } articles { id } } }",
            "user",
            &[("X-Svc-User-Id", "2")],
        )
        .await;
    assert_eq!(
        data(r),
        json!({"authorCard": {"seen": {"role": "user"}, "articles": [{"id": 1}]}})
    );
    assert_eq!(
        handler.calls("card")[1].1["input"],
        json!({"author_id": 1, "note": "x"})
    );
    // Without the permission the field does not exist.
    let e = error(
        s.gql_role("{ authorCard(author_id: 1) { ok } }", "guest", &[])
            .await,
    );
    assert_eq!(e["extensions"]["code"], "validation-failed");
    assert_eq!(
        e["message"],
        "field \"authorCard\" not found in type: 'query_root'"
    );
    assert_eq!(
        handler.calls("card").len(),
        2,
        "nothing was sent for the guest"
    );
}

#[tokio::test]
async fn mutation_actions_forward_headers_and_roll_back_with_the_operation() {
    let (s, handler, base) = blog_with_handler().await;
    s.ok(create(
        "archive",
        json!({"handler": format!("{base}/archive"), "output_type": "[Card!]!",
               "arguments": [{"name": "input", "type": "ArchiveInput!"}],
               "forward_client_headers": true,
               "headers": [{"name": "X-Action-Secret", "value": "configured"}]}),
    ))
    .await;
    s.ok(create(
        "refuse",
        json!({"handler": format!("{base}/refuse"), "output_type": "Card"}),
    ))
    .await;
    let r = s
        .graphql_as(
            json!({"query": "mutation { archive(input: {reason: \"left\", mood: angry}) { ok note author { name } } }"}),
            &[("X-Client-Thing", "hello"), ("X-Action-Secret", "from-client"), ("Authorization", "Bearer t")],
        )
        .await;
    assert_eq!(
        data(r),
        json!({"archive": [
            {"ok": true, "note": "left", "author": {"name": "Ann"}},
            {"ok": false, "note": null, "author": {"name": "Bo"}}
        ]})
    );
    let (headers, body) = handler.calls("archive").remove(0);
    assert_eq!(
        body["input"],
        json!({"input": {"reason": "left", "mood": "angry"}})
    );
    assert_eq!(header(&headers, "x-client-thing"), "hello");
    assert_eq!(header(&headers, "authorization"), "Bearer t");
    assert_eq!(
        header(&headers, "x-action-secret"),
        "configured",
        "configured headers win"
    );
    assert_eq!(
        header(&headers, "x-svc-admin-secret"),
        Value::Null,
        "credentials stay"
    );
    // An action failing after a database write in the same mutation undoes the write.
    let r = s
        .gql(
            "mutation { a: insert_article_status_one(object: {value: \"gone\", comment: \"x\"}) { value } refuse { ok } }",
        )
        .await;
    let e = error(r);
    assert_eq!(
        e,
        json!({"message": "cannot archive", "extensions": {"code": "nope"}})
    );
    let left = query_json(
        &s.db_url,
        "SELECT value FROM article_status WHERE value = 'gone'",
    )
    .await;
    assert_eq!(left, json!([]));
}

#[tokio::test]
async fn handler_failures_are_answered_as_the_spec_says() {
    let (s, _handler, base) = blog_with_handler().await;
    let kinds = [
        "extensions",
        "code",
        "message",
        "nomessage",
        "crash",
        "array",
        "missing",
        "wrongtype",
        "text",
        "slow",
    ];
    let mut ops = Vec::new();
    for kind in kinds {
        ops.push(create(
            kind,
            json!({"handler": format!("{base}/{kind}"), "output_type": "Card", "timeout": 1}),
        ));
        ops.push(allow(kind, "user"));
    }
    s.ok(json!({"type": "bulk", "args": ops})).await;
    let run = |kind: &str| format!("mutation {{ {kind} {{ ok }} }}");
    let e = error(s.gql(&run("extensions")).await);
    assert_eq!(
        e,
        json!({"message": "member 7 is already archived",
               "extensions": {"code": "already-archived", "member": 7}})
    );
    let e = error(s.gql(&run("code")).await);
    assert_eq!(
        e,
        json!({"message": "no such member", "extensions": {"path": "$", "code": "no-member"}})
    );
    let e = error(s.gql(&run("message")).await);
    assert_eq!(
        e,
        json!({"message": "just no", "extensions": {"path": "$", "code": "unexpected"}})
    );
    let expectations = [
        (
            "nomessage",
            "unexpected",
            "the action handler answered with an error that has no \"message\"",
        ),
        ("crash", "unexpected", "internal error"),
        (
            "array",
            "unexpected",
            "expecting object for action webhook response",
        ),
        (
            "missing",
            "unexpected",
            "expecting not null value for field \"ok\"",
        ),
        (
            "wrongtype",
            "unexpected",
            "expecting a Boolean for field \"ok\"",
        ),
        (
            "text",
            "parse-failed",
            "expecting object or array of objects for action webhook response",
        ),
        ("slow", "unexpected", "http exception when calling webhook"),
    ];
    for (kind, code, message) in expectations {
        let e = error(s.gql(&run(kind)).await);
        assert_eq!(e["message"], message, "{kind}: {e}");
        assert_eq!(e["extensions"]["code"], code, "{kind}: {e}");
        assert_eq!(e["extensions"]["path"], "$", "{kind}: {e}");
        assert!(
            e["extensions"]["internal"].is_object(),
            "admins see the exchange: {e}"
        );
    }
    let e = error(s.gql(&run("crash")).await);
    assert_eq!(
        e["extensions"]["internal"]["webhook_response"],
        json!({"trace": "boom"})
    );
    assert_eq!(
        e["extensions"]["internal"]["request"]["body"]["action"]["name"],
        "crash"
    );
    // Other roles do not see the exchange.
    let e = error(
        s.gql_role(&run("crash"), "user", &[("X-Svc-User-Id", "1")])
            .await,
    );
    assert_eq!(
        e,
        json!({"message": "internal error", "extensions": {"path": "$", "code": "unexpected"}})
    );
}

/// Polls the result of an asynchronous call until it has an output or errors.
async fn settled(s: &TestServer, query: &str, role: &str, user: &str) -> Value {
    for _ in 0..100 {
        let r = data(s.gql_role(query, role, &[("X-Svc-User-Id", user)]).await);
        let result = r.as_object().unwrap().values().next().unwrap().clone();
        if !result["output"].is_null() || !result["errors"].is_null() {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the asynchronous call did not settle");
}

#[tokio::test]
async fn asynchronous_actions_log_the_call_and_answer_by_id_to_the_same_session() {
    let (s, handler, base) = blog_with_handler().await;
    for (name, kind) in [("archiveLater", "later"), ("refuseLater", "refuse")] {
        s.ok(create(
            name,
            json!({"handler": format!("{base}/{kind}"), "output_type": "Card", "kind": "asynchronous",
                   "arguments": [{"name": "author_id", "type": "Int!"}]}),
        ))
        .await;
        s.ok(allow(name, "user")).await;
    }
    let mutation = "mutation { archiveLater(author_id: 2) }";
    let r = data(
        s.gql_role(mutation, "user", &[("X-Svc-User-Id", "2")])
            .await,
    );
    let id = r["archiveLater"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 36, "a uuid: {id}");
    let query = format!(
        "{{ archiveLater(id: \"{id}\") {{ __typename id errors output {{ ok note author {{ name }} }} }} }}"
    );
    let result = settled(&s, &query, "user", "2").await;
    assert_eq!(
        result,
        json!({"__typename": "archiveLater", "id": id, "errors": null,
               "output": {"ok": true, "note": "done", "author": {"name": "Bo"}}})
    );
    let (_, body) = handler.calls("later").remove(0);
    assert_eq!(
        body,
        json!({"action": {"name": "archiveLater"}, "input": {"author_id": 2},
               "session_variables": {"x-svc-role": "user", "x-svc-user-id": "2"},
               "request_query": mutation})
    );
    // Another session sees nothing; the admin sees every call.
    let other = data(s.gql_role(&query, "user", &[("X-Svc-User-Id", "3")]).await);
    assert_eq!(other, json!({"archiveLater": null}));
    let admin = data(s.gql(&query).await);
    assert_eq!(admin["archiveLater"]["output"]["note"], "done");
    let unknown = data(
        s.gql("{ archiveLater(id: \"00000000-0000-0000-0000-000000000000\") { id } }")
            .await,
    );
    assert_eq!(unknown, json!({"archiveLater": null}));
    // A failed call stores the error in the metadata error shape; it is not sent again.
    let r = data(
        s.gql_role(
            "mutation { refuseLater(author_id: 1) }",
            "user",
            &[("X-Svc-User-Id", "2")],
        )
        .await,
    );
    let failed = r["refuseLater"].as_str().unwrap().to_owned();
    let result = settled(
        &s,
        &format!("{{ refuseLater(id: \"{failed}\") {{ errors output {{ ok }} }} }}"),
        "user",
        "2",
    )
    .await;
    assert_eq!(
        result,
        json!({"errors": {"path": "$", "error": "cannot archive", "code": "nope"}, "output": null})
    );
    let rows = query_json(
        &s.db_url,
        "SELECT action_name, status FROM basalt_catalog.action_log ORDER BY created_at",
    )
    .await;
    assert_eq!(
        rows,
        json!([{"action_name": "archiveLater", "status": "completed"},
               {"action_name": "refuseLater", "status": "error"}])
    );
    assert_eq!(handler.calls("refuse").len(), 1);
    // drop_action clears the log unless told otherwise.
    s.ok(json!({"type": "drop_action", "args": {"name": "refuseLater", "clear_data": false}}))
        .await;
    s.ok(json!({"type": "drop_action", "args": {"name": "archiveLater"}}))
        .await;
    let rows = query_json(
        &s.db_url,
        "SELECT action_name FROM basalt_catalog.action_log",
    )
    .await;
    assert_eq!(rows, json!([{"action_name": "refuseLater"}]));
}

#[tokio::test]
async fn asynchronous_results_are_pushed_to_subscribers() {
    use crate::graphql::subscriptions::{connect, init, message, send, TRANSPORT};
    let (handler, base) = Handler::start().await;
    let s = blog_server(|c| {
        c.actions.poll_interval_ms = 50;
        c.live.refetch_interval_ms = 100;
    })
    .await;
    s.ok(custom_types()).await;
    s.ok(create(
        "archiveLater",
        json!({"handler": format!("{base}/later"), "output_type": "Card", "kind": "asynchronous",
               "arguments": [{"name": "author_id", "type": "Int!"}]}),
    ))
    .await;
    let r = data(s.gql("mutation { archiveLater(author_id: 1) }").await);
    let id = r["archiveLater"].as_str().unwrap().to_owned();
    let secret = s.admin_secret.clone().unwrap_or_default();
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    let ack = init(&mut ws, json!({"headers": {"X-Svc-Admin-Secret": secret}})).await;
    assert_eq!(ack["type"], "connection_ack");
    send(
        &mut ws,
        json!({"id": "1", "type": "subscribe", "payload": {"query":
            format!("subscription {{ archiveLater(id: \"{id}\") {{ output {{ note author {{ name }} }} }} }}")}}),
    )
    .await;
    let mut last = Value::Null;
    for _ in 0..20 {
        let m = message(&mut ws).await;
        assert_eq!(m["type"], "next", "{m}");
        last = m["payload"]["data"]["archiveLater"]["output"].clone();
        if !last.is_null() {
            break;
        }
    }
    assert_eq!(last, json!({"note": "done", "author": {"name": "Ann"}}));
    assert_eq!(handler.calls("later").len(), 1);
}

#[tokio::test]
async fn action_operations_check_their_arguments_and_keep_metadata_consistent() {
    let (s, _handler, base) = blog_with_handler().await;
    let handler = format!("{base}/card");
    let def = |extra: Value| {
        let mut d = json!({"handler": handler, "output_type": "Card"});
        d.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        d
    };
    s.ok(create("card", def(json!({"type": "query"})))).await;
    let r = s
        .fails(
            create("card", def(json!({}))),
            400,
            "already-exists",
            "$.args.name",
        )
        .await;
    assert_eq!(r["error"], "action with name \"card\" already exists");
    let r = s
        .fails(
            create(
                "x",
                def(json!({"arguments": [{"name": "a", "type": "Card"}]})),
            ),
            400,
            "invalid-params",
            "$.args.definition.arguments[0].type",
        )
        .await;
    assert_eq!(
        r["error"],
        "the type: \"Card\" is not defined in custom types or it is not a scalar/enum/input_object"
    );
    // An input object argument and a list output are fine.
    s.ok(create("listy", json!({"handler": handler, "output_type": "[Seen!]!", "arguments": [{"name": "a", "type": "ArchiveInput"}]})))
        .await;
    s.ok(json!({"type": "drop_action", "args": {"name": "listy"}}))
        .await;
    let r = s
        .fails(
            create("y", def(json!({"output_type": "Mood"}))),
            400,
            "not-exists",
            "$.args.definition.output_type",
        )
        .await;
    assert_eq!(
        r["error"],
        "the type: \"Mood\" is not an object type defined in custom types"
    );
    s.fails(
        create("y", def(json!({"type": "query", "kind": "synchronous"}))),
        400,
        "parse-failed",
        "$.args.definition.kind",
    )
    .await;
    let r = s
        .fails(
            create(
                "y",
                json!({"handler": "{{BASALT_TEST_NO_SUCH_URL}}/a", "output_type": "Card"}),
            ),
            400,
            "not-found",
            "$.args.definition.handler",
        )
        .await;
    assert_eq!(
        r["error"],
        "cannot find environment variable BASALT_TEST_NO_SUCH_URL for the action handler"
    );
    let r = s
        .fails(
            create("author", def(json!({}))),
            400,
            "constraint-violation",
            "$.args.name",
        )
        .await;
    assert_eq!(
        r["error"],
        "the action \"author\" conflicts with the root field \"author\" of table \"author\""
    );
    // Permissions, updates and drops.
    s.ok(allow("card", "user")).await;
    let r = s
        .fails(allow("card", "user"), 400, "already-exists", "$.args")
        .await;
    assert_eq!(
        r["error"],
        "permission for role \"user\" is already defined on \"card\""
    );
    s.fails(allow("nope", "user"), 400, "not-exists", "$.args.action")
        .await;
    s.ok(json!({"type": "update_action", "args": {"name": "card", "definition": def(json!({"type": "query", "timeout": 5})), "comment": "cards"}}))
        .await;
    let exported = s.export().await;
    assert_eq!(
        exported["actions"],
        json!([{"name": "card", "definition": {"handler": handler, "output_type": "Card", "type": "query", "timeout": 5},
                "comment": "cards", "permissions": [{"role": "user"}]}])
    );
    // The custom types an action uses cannot go.
    let r = s
        .fails(
            json!({"type": "set_custom_types", "args": {"objects": [{"name": "Other", "fields": [{"name": "a", "type": "Int"}]}]}}),
            400,
            "dependency-error",
            "$.args",
        )
        .await;
    assert!(
        r["error"].as_str().unwrap().contains("action \"card\""),
        "{r}"
    );
    let r = s
        .fails(
            json!({"type": "drop_action_permission", "args": {"action": "card", "role": "guest"}}),
            400,
            "not-exists",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "permission for role: \"guest\" is not defined on \"card\""
    );
    s.ok(json!({"type": "drop_action_permission", "args": {"action": "card", "role": "user"}}))
        .await;
    s.fails(
        json!({"type": "drop_action", "args": {"name": "nope"}}),
        400,
        "not-exists",
        "$.args.name",
    )
    .await;
    // Export, clear, replace: the same document, consistent.
    let before = s.export().await;
    s.ok(json!({"type": "clear_metadata", "args": {}})).await;
    let r = s
        .ok(json!({"type": "replace_metadata", "version": 2, "args": {"metadata": before.clone()}}))
        .await;
    assert_eq!(r["is_consistent"], true, "{r}");
    assert_eq!(s.export().await, before);
}

#[tokio::test]
async fn a_call_in_flight_when_its_engine_dies_is_closed_as_interrupted_never_sent_twice() {
    let (handler, base) = Handler::start().await;
    let db = fresh_database().await;
    run_sql(&db, crate::harness::BLOG).await;
    let first = spawn_serve(
        &db,
        "secret",
        &[("BASALT_ASYNC_ACTIONS_FETCH_INTERVAL", "50")],
    )
    .await;
    spawned_query(&first, "secret", json!({"type": "replace_metadata", "args": serde_json::from_str::<Value>(crate::harness::BLOG_METADATA).unwrap()})).await;
    spawned_query(&first, "secret", custom_types()).await;
    spawned_query(
        &first,
        "secret",
        create(
            "hang",
            json!({"handler": format!("{base}/hang"), "output_type": "Card", "kind": "asynchronous", "timeout": 1}),
        ),
    )
    .await;
    let r: Value = reqwest::Client::new()
        .post(format!("{}/v1/graphql", first.base))
        .header("X-Svc-Admin-Secret", "secret")
        .json(&json!({"query": "mutation { hang }"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = data(r)["hang"].as_str().unwrap().to_owned();
    // Wait for the call to be made, then kill the engine while the handler still works on it.
    for _ in 0..100 {
        if !handler.calls("hang").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(handler.calls("hang").len(), 1);
    let mut first = first;
    first.child.kill().await.unwrap();
    let status = query_json(&db, "SELECT status FROM basalt_catalog.action_log").await;
    assert_eq!(status, json!([{"status": "processing"}]));
    let second = spawn_serve(
        &db,
        "secret",
        &[("BASALT_ASYNC_ACTIONS_FETCH_INTERVAL", "50")],
    )
    .await;
    // The action goes away with its calls kept: the interrupted call is still closed, by an
    // engine whose metadata has no asynchronous action left.
    spawned_query(
        &second,
        "secret",
        json!({"type": "drop_action", "args": {"name": "hang", "clear_data": false}}),
    )
    .await;
    // Never closed before its deadline (the handler's timeout plus a margin).
    let early = query_json(
        &db,
        &format!(
            "SELECT status, deadline > now() AS pending FROM basalt_catalog.action_log \
             WHERE id = '{id}'"
        ),
    )
    .await;
    if early[0]["pending"] == true {
        assert_eq!(
            early[0]["status"], "processing",
            "swept before its deadline"
        );
    }
    let mut errors = Value::Null;
    for _ in 0..200 {
        let rows = query_json(
            &db,
            &format!("SELECT status, errors FROM basalt_catalog.action_log WHERE id = '{id}'"),
        )
        .await;
        if rows[0]["status"] == "error" {
            errors = rows[0]["errors"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        errors,
        json!({"path": "$", "error": "the action was interrupted; it may or may not have run", "code": "unexpected"})
    );
    assert_eq!(handler.calls("hang").len(), 1, "never sent twice");
    drop(second);
}

#[tokio::test]
async fn custom_types_named_like_table_types_cannot_serve_an_action() {
    let (s, _handler, base) = blog_with_handler().await;
    s.ok(json!({"type": "set_custom_types", "args": {"objects": [
        {"name": "author", "fields": [{"name": "name", "type": "String"}]},
        {"name": "Fine", "fields": [{"name": "name", "type": "String"}]}]}}))
        .await;
    let r = s
        .fails(
            create(
                "who",
                json!({"handler": format!("{base}/card"), "output_type": "author"}),
            ),
            400,
            "constraint-violation",
            "$.args.definition",
        )
        .await;
    assert_eq!(
        r["error"],
        "the type \"author\" of action \"who\" has the name of a type the tracked tables generate"
    );
    // An asynchronous action's result type is named after it.
    let r = s
        .fails(
            create(
                "article_bool_exp",
                json!({"handler": format!("{base}/card"), "output_type": "Fine", "kind": "asynchronous"}),
            ),
            400,
            "constraint-violation",
            "$.args.definition",
        )
        .await;
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("\"article_bool_exp\""),
        "{r}"
    );
    s.ok(create(
        "who",
        json!({"handler": format!("{base}/card"), "output_type": "Fine", "type": "query"}),
    ))
    .await;
}

#[tokio::test]
async fn the_schema_of_each_role_shows_its_actions_and_graphql_js_accepts_it() {
    let (s, _handler, base) = blog_with_handler().await;
    let ops = vec![
        create(
            "authorCard",
            json!({"type": "query", "handler": format!("{base}/card"), "output_type": "Card",
                   "arguments": [{"name": "author_id", "type": "Int!", "description": "whose card"}]}),
        ),
        create(
            "archive",
            json!({"handler": format!("{base}/archive"), "output_type": "[Card!]!",
                   "arguments": [{"name": "input", "type": "ArchiveInput!"}]}),
        ),
        create(
            "archiveLater",
            json!({"handler": format!("{base}/later"), "output_type": "Card", "kind": "asynchronous"}),
        ),
        allow("authorCard", "guest"),
        allow("archiveLater", "guest"),
        allow("authorCard", "backend"),
    ];
    s.ok(json!({"type": "bulk", "args": ops})).await;
    let fields = |data: &Value, root: &str| -> Vec<String> {
        data["__schema"]["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == root)
            .map(|t| {
                t["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["name"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    for role in [None, Some("guest"), Some("nobody")] {
        let data = crate::graphql::introspection::full_introspection(&s, role).await;
        let (ok, out, err) = crate::graphql::introspection::node(&[], Some(&data.to_string()));
        assert!(ok, "graphql-js rejects the schema of {role:?}: {err}");
        assert!(out.contains("\"ok\":true"), "{out}");
        let query = fields(&data, "query_root");
        let mutation = fields(&data, "mutation_root");
        let subscription = fields(&data, "subscription_root");
        let has = |list: &[String], f: &str| list.iter().any(|x| x == f);
        match role {
            None => {
                assert!(has(&query, "authorCard") && has(&query, "archiveLater"));
                assert!(has(&mutation, "archive") && has(&mutation, "archiveLater"));
                assert!(has(&subscription, "archiveLater"));
                assert!(!has(&subscription, "authorCard"));
            }
            Some("guest") => {
                assert!(has(&query, "authorCard") && has(&query, "archiveLater"));
                assert!(!has(&mutation, "archive"), "{mutation:?}");
                assert!(has(&mutation, "archiveLater"));
                assert!(has(&subscription, "archiveLater"));
            }
            _ => {
                assert!(!has(&query, "authorCard") && !has(&mutation, "archiveLater"));
            }
        }
        let types: Vec<&str> = data["__schema"]["types"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(types.contains(&"Card"), role != Some("nobody"), "{role:?}");
        assert_eq!(
            types.contains(&"ArchiveInput"),
            role.is_none(),
            "only the admin calls archive: {role:?}"
        );
    }
    // `backend` selects authors but not articles: Card has `author` but no `articles` for it.
    let data = crate::graphql::introspection::full_introspection(&s, Some("backend")).await;
    let card = fields(&data, "Card");
    assert!(
        card.contains(&"author".to_owned()) && !card.contains(&"articles".to_owned()),
        "{card:?}"
    );
}
