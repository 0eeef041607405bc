//! The Action CRD: printer columns, fields and status, the CEL rules, and its mapping to the
//! `create_action` and `create_action_permission` arguments.

use super::*;
use basalt::controller::kinds::Action as ActionResource;

fn action_crd() -> Crd {
    crd_of("Action")
}

#[test]
fn action_columns_fields_and_status() {
    let crd = action_crd();
    let wanted = [
        ("Action", ".spec.name", 0),
        ("Type", ".spec.definition.type", 0),
        ("Kind", ".spec.definition.kind", 0),
        (
            "Ready",
            ".status.conditions[?(@.type==\"Ready\")].status",
            0,
        ),
        (
            "Reason",
            ".status.conditions[?(@.type==\"Ready\")].reason",
            1,
        ),
        (
            "Drifted",
            ".status.conditions[?(@.type==\"Drifted\")].status",
            0,
        ),
        ("Age", ".metadata.creationTimestamp", 0),
    ];
    assert_columns(&crd, &wanted);
    let schema = schema_of(&crd);
    let spec = &schema["properties"]["spec"];
    let keys = |node: &Value| {
        let mut keys: Vec<String> = node["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(keys(spec), ["comment", "definition", "name", "permissions"]);
    assert_eq!(spec["required"], json!(["definition", "name"]));
    // The definition's fields are create_action's, camelCased one to one.
    let definition = &spec["properties"]["definition"];
    assert_eq!(
        keys(definition),
        [
            "arguments",
            "forwardClientHeaders",
            "handler",
            "headers",
            "kind",
            "outputType",
            "timeout",
            "type"
        ]
    );
    assert_eq!(definition["required"], json!(["handler", "outputType"]));
    let fields = &definition["properties"];
    assert_eq!(fields["type"]["enum"], json!(["query", "mutation"]));
    assert_eq!(fields["type"]["default"], "mutation");
    assert_eq!(
        fields["kind"]["enum"],
        json!(["synchronous", "asynchronous"])
    );
    assert_eq!(
        keys(&fields["arguments"]["items"]),
        ["description", "name", "type"]
    );
    // The shared header: a literal value or an environment variable's, never both.
    assert_eq!(
        fields["headers"]["items"]["x-kubernetes-validations"][0]["message"],
        "exactly one of value and valueFromEnv"
    );
    assert!(fields["handler"]["description"]
        .as_str()
        .unwrap()
        .contains("controller"));
    // Permissions are a map keyed by role: the API server keeps each role once.
    let permissions = &spec["properties"]["permissions"];
    assert_eq!(permissions["x-kubernetes-list-type"], "map");
    assert_eq!(permissions["x-kubernetes-list-map-keys"], json!(["role"]));
    assert_eq!(permissions["items"]["required"], json!(["role"]));
    // The status every kind has.
    let event_trigger = crd_of("EventTrigger");
    assert_eq!(
        schema["properties"]["status"]["properties"],
        schema_of(&event_trigger)["properties"]["status"]["properties"]
    );
}

fn action(spec: Value) -> ActionResource {
    ActionResource {
        metadata: ObjectMeta {
            name: Some("a".into()),
            ..Default::default()
        },
        spec: serde_json::from_value(spec).unwrap(),
        status: None,
    }
}

#[test]
fn action_cel_rules() {
    let ok = action(json!({"name": "archiveArticle", "definition": {
        "type": "mutation", "kind": "asynchronous", "outputType": "ArchiveResult",
        "handler": "{{BLOG_ACTIONS_URL}}/archive",
        "arguments": [{"name": "id", "type": "Int!"}],
        "headers": [{"name": "X-Secret", "valueFromEnv": "BLOG_ACTIONS_SECRET"}, {"name": "X-Source", "value": "basalt"}],
        "forwardClientHeaders": true, "timeout": 10},
        "permissions": [{"role": "user", "comment": "own articles"}]}));
    ok.validate_cel().expect("valid");
    action(json!({"name": "stats", "definition": {"type": "query", "outputType": "Stats", "handler": "http://stats/"}}))
        .validate_cel()
        .expect("a query without a kind");
    action(json!({"name": "archive", "definition": {"kind": "synchronous", "outputType": "R", "handler": "http://h/"}}))
        .validate_cel()
        .expect("a kind without a type: a mutation");
    let cases = [
        (
            json!({"name": "a", "definition": {"type": "query", "kind": "synchronous", "outputType": "R", "handler": "http://h/"}}),
            "kind is for mutations only",
        ),
        (
            json!({"name": "a", "definition": {"outputType": "R", "handler": "http://h/", "timeout": 0}}),
            "timeout must be greater than 0",
        ),
        (
            json!({"name": "a", "definition": {"outputType": "R", "handler": "http://h/", "timeout": -5}}),
            "timeout must be greater than 0",
        ),
        (
            json!({"name": "a", "definition": {"outputType": "R", "handler": "http://h/",
                "headers": [{"name": "X", "value": "v", "valueFromEnv": "V"}]}}),
            "exactly one of value and valueFromEnv",
        ),
        (
            json!({"name": "a", "definition": {"outputType": "R", "handler": "http://h/",
                "headers": [{"name": "X"}]}}),
            "exactly one of value and valueFromEnv",
        ),
        (
            json!({"name": "a", "definition": {"outputType": "R", "handler": "http://h/"},
                "permissions": [{"role": "admin"}]}),
            "the admin role can always run every action",
        ),
    ];
    for (spec, message) in cases {
        let err = action(spec.clone()).validate_cel().expect_err("must fail");
        assert!(format!("{err:?}").contains(message), "{spec}: {err:?}");
    }
    // The name is the identity; everything else may change.
    let renamed = action(
        json!({"name": "archivePost", "definition": {"outputType": "ArchiveResult", "handler": "http://h/"}}),
    );
    let err = renamed
        .validate_cel_update(&ok)
        .expect_err("name is immutable");
    assert!(format!("{err:?}").contains("name is immutable"), "{err:?}");
    let edited = action(
        json!({"name": "archiveArticle", "definition": {"type": "query", "outputType": "[ArchiveResult!]!",
            "handler": "http://actions.blog.svc/archive"}, "comment": "now a query"}),
    );
    edited
        .validate_cel_update(&ok)
        .expect("spec edits are fine");
}

#[test]
fn action_maps_to_create_action_and_its_permissions() {
    let spec: ActionSpec = serde_json::from_value(json!({
        "name": "archiveArticle",
        "definition": {
            "type": "mutation", "kind": "asynchronous",
            "arguments": [{"name": "id", "type": "Int!", "description": "the article"}, {"name": "reason", "type": "String"}],
            "outputType": "ArchiveResult",
            "handler": "{{BLOG_ACTIONS_URL}}/archive",
            "headers": [{"name": "X-Secret", "valueFromEnv": "BLOG_ACTIONS_SECRET"}, {"name": "X-Source", "value": "basalt"}],
            "forwardClientHeaders": true,
            "timeout": 20
        },
        "comment": "soft delete",
        "permissions": [{"role": "user", "comment": "own articles"}, {"role": "editor"}]
    }))
    .unwrap();
    let args = json!({"name": "archiveArticle", "comment": "soft delete", "definition": {
        "handler": "{{BLOG_ACTIONS_URL}}/archive", "output_type": "ArchiveResult",
        "forward_client_headers": true,
        "headers": [{"name": "X-Secret", "value_from_env": "BLOG_ACTIONS_SECRET"}, {"name": "X-Source", "value": "basalt"}],
        "arguments": [{"name": "id", "type": "Int!", "description": "the article"}, {"name": "reason", "type": "String"}],
        "type": "mutation", "kind": "asynchronous", "timeout": 20}});
    assert_eq!(spec.to_json(), args);
    // The entry is what the catalog keeps (without permissions), and the request the
    // controller sends for it.
    let entry = spec.entry().unwrap();
    assert_eq!(serde_json::to_value(&entry).unwrap(), args);
    assert!(entry.permissions.is_empty());
    assert_eq!(
        basalt::controller::kinds::action::permission_json("archiveArticle", &spec.permissions[0]),
        json!({"action": "archiveArticle", "role": "user", "comment": "own articles"})
    );
    let objects = spec.objects().unwrap();
    let keys: Vec<String> = objects.iter().map(|o| o.key()).collect();
    assert_eq!(
        keys,
        [
            "action:archiveArticle",
            "action_permission:archiveArticle.user",
            "action_permission:archiveArticle.editor"
        ]
    );
    assert_eq!(objects[0].canonical(), args);
    assert_eq!(
        objects[1].canonical(),
        json!({"action": "archiveArticle", "role": "user", "comment": "own articles"})
    );
    assert_eq!(
        objects[2].canonical(),
        json!({"action": "archiveArticle", "role": "editor"})
    );

    // Defaults stay the metadata API's: a mutation, no kind, timeout or headers.
    let spec: ActionSpec = serde_json::from_value(
        json!({"name": "stats", "definition": {"outputType": "Stats", "handler": "http://stats/"}}),
    )
    .unwrap();
    assert_eq!(
        serde_json::to_value(spec.entry().unwrap()).unwrap(),
        json!({"name": "stats", "definition": {"handler": "http://stats/", "output_type": "Stats", "type": "mutation"}})
    );
    assert_eq!(spec.objects().unwrap().len(), 1);

    // The operation's own checks decide validity, with the path of the field.
    let invalid = [
        (
            json!({"name": "archive-article", "definition": {"outputType": "R", "handler": "http://h/"}}),
            "$.spec.name",
        ),
        (
            json!({"name": "a", "definition": {"type": "query", "kind": "synchronous", "outputType": "R", "handler": "http://h/"}}),
            "$.spec.definition.kind",
        ),
        (
            json!({"name": "a", "definition": {"outputType": "R", "handler": "http://h/", "timeout": 0}}),
            "$.spec.definition.timeout",
        ),
        (
            json!({"name": "a", "definition": {"outputType": "R", "handler": "http://h/", "timeout": 4294967296_i64}}),
            "$.spec.definition.timeout",
        ),
        (
            json!({"name": "a", "definition": {"outputType": "R", "handler": "http://h/"},
                "permissions": [{"role": ""}]}),
            "$.spec.permissions[0].role",
        ),
        (
            json!({"name": "a", "definition": {"outputType": "R", "handler": "http://h/"},
                "permissions": [{"role": "user"}, {"role": "user", "comment": "twice"}]}),
            "$.spec.permissions[1].role",
        ),
    ];
    for (spec, path) in invalid {
        let typed: ActionSpec = serde_json::from_value(spec.clone()).unwrap();
        let err = typed.objects().unwrap_err();
        assert_eq!(err.code.as_str(), "parse-failed", "{spec}: {err:?}");
        assert_eq!(err.path.as_str(), path, "{spec}: {err:?}");
    }
}
