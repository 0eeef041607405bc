//! The actions' metadata operations and their errors, custom types that clash with table
//! types, and each role's schema with its actions, checked by graphql-js.

use super::*;

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
