//! Synchronous query and mutation actions: the handler protocol checked end to end (body,
//! headers, forwarded client headers), outputs shaped and joined to tables with the caller's
//! permissions, a mutation rolled back with its operation, and handler failures answered as
//! `docs/actions.md` lists them.

use super::*;

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
