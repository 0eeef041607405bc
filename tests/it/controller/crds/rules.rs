//! Per kind, what the API server checks before the controller sees a resource: the printer
//! columns, status and secret references of Permission, EventTrigger and RemoteSchema, and
//! their client-side CEL rules (also a relationship's `using`).

use super::*;

fn permission(spec: Value) -> Permission {
    Permission {
        metadata: ObjectMeta {
            name: Some("p".into()),
            ..Default::default()
        },
        spec: serde_json::from_value(spec).unwrap(),
        status: None,
    }
}

#[test]
fn permission_cel_rules() {
    let ok = permission(
        json!({"table": {"name": "article"}, "role": "user", "operation": "select", "permission": {"columns": "*", "filter": {"author_id": {"_eq": "X-Svc-User-Id"}}}}),
    );
    ok.validate_cel().expect("valid");
    let cases = [
        (
            json!({"table": {"name": "a"}, "role": "admin", "operation": "delete", "permission": {"filter": {}}}),
            "cannot define permission for admin role",
        ),
        (
            json!({"table": {"name": "a"}, "role": "u", "operation": "select", "permission": {"columns": "*"}}),
            "select needs permission.columns and permission.filter",
        ),
        (
            json!({"table": {"name": "a"}, "role": "u", "operation": "insert", "permission": {"columns": "*"}}),
            "insert needs permission.check",
        ),
        (
            json!({"table": {"name": "a"}, "role": "u", "operation": "delete", "permission": {"filter": {}, "limit": 3}}),
            "computedFields, limit and allowAggregations are for select only",
        ),
        (
            json!({"table": {"name": "a"}, "role": "u", "operation": "select", "permission": {"columns": "*", "filter": {}, "backendOnly": true}}),
            "backendOnly is for insert only",
        ),
        (
            json!({"table": {"name": "a"}, "role": "u", "operation": "update", "permission": {"columns": "*", "filter": {}, "queryRootFields": ["select"]}}),
            "queryRootFields and subscriptionRootFields are for select only",
        ),
        (
            json!({"table": {"name": "a"}, "role": "u", "operation": "delete", "permission": {"filter": {}, "subscriptionRootFields": []}}),
            "queryRootFields and subscriptionRootFields are for select only",
        ),
    ];
    // The controller's check (each kind's rules compiled once) says what kube's does.
    basalt::controller::cel::validate(&ok).expect("valid");
    for (spec, message) in cases {
        let err = permission(spec.clone())
            .validate_cel()
            .expect_err("must fail");
        assert!(format!("{err:?}").contains(message), "{spec}: {err:?}");
        for _ in 0..2 {
            let cached = basalt::controller::cel::validate(&permission(spec.clone()))
                .expect_err("must fail");
            assert_eq!(format!("{cached:?}"), format!("{err:?}"), "{spec}");
        }
    }
    let moved = permission(
        json!({"table": {"name": "article"}, "role": "editor", "operation": "select", "permission": {"columns": "*", "filter": {}}}),
    );
    let err = moved
        .validate_cel_update(&ok)
        .expect_err("role is immutable");
    assert!(format!("{err:?}").contains("role is immutable"), "{err:?}");
    ok.validate_cel_update(&ok).expect("unchanged is fine");
}

#[test]
fn event_trigger_columns_and_identity() {
    let crd = crd_of("EventTrigger");
    let wanted = [
        ("Trigger", ".spec.name", 0),
        ("Table", ".spec.table.name", 0),
        ("Webhook", ".spec.webhook", 1),
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
    // `"*"`-or-list nodes are untyped, so both forms stay one-to-one with the metadata API.
    let schema = schema_of(&crd);
    let update = &schema["properties"]["spec"]["properties"]["update"]["properties"];
    for key in ["columns", "payload"] {
        assert_eq!(update[key]["x-kubernetes-preserve-unknown-fields"], true);
        assert!(update[key].get("type").is_none(), "{key}: {}", update[key]);
    }
    assert_eq!(
        schema["properties"]["spec"]["properties"]["table"]["properties"]["schema"]["default"],
        "public"
    );
}

fn event_trigger(spec: Value) -> EventTrigger {
    EventTrigger {
        metadata: ObjectMeta {
            name: Some("t".into()),
            ..Default::default()
        },
        spec: serde_json::from_value(spec).unwrap(),
        status: None,
    }
}

#[test]
fn event_trigger_cel_rules() {
    let ok = event_trigger(
        json!({"name": "article_published", "table": {"name": "article"},
        "webhookFromEnv": "ARTICLE_WEBHOOK_URL", "update": {"columns": ["published"]},
        "headers": [{"name": "X-Token", "valueFromEnv": "HOOK_TOKEN"}, {"name": "X-Source", "value": "basalt"}]}),
    );
    ok.validate_cel().expect("valid");
    event_trigger(json!({"name": "manual", "table": {"name": "article"}, "webhook": "http://h", "enableManual": true}))
        .validate_cel()
        .expect("manual only is enough");
    let cases = [
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h", "webhookFromEnv": "H", "insert": {"columns": "*"}}),
            "exactly one of webhook and webhookFromEnv",
        ),
        (
            json!({"name": "t", "table": {"name": "a"}, "insert": {"columns": "*"}}),
            "exactly one of webhook and webhookFromEnv",
        ),
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h", "insert": {"columns": "*"},
                "headers": [{"name": "X", "value": "v", "valueFromEnv": "V"}]}),
            "exactly one of value and valueFromEnv",
        ),
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h", "insert": {"columns": "*"},
                "headers": [{"name": "X"}]}),
            "exactly one of value and valueFromEnv",
        ),
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h"}),
            "at least one of insert, update, delete and enableManual",
        ),
    ];
    for (spec, message) in cases {
        let err = event_trigger(spec.clone())
            .validate_cel()
            .expect_err("must fail");
        assert!(format!("{err:?}").contains(message), "{spec}: {err:?}");
    }
    // Identity is immutable: a new name or table is a new resource.
    let renamed = event_trigger(
        json!({"name": "article_changed", "table": {"name": "article"},
        "webhookFromEnv": "ARTICLE_WEBHOOK_URL", "update": {"columns": ["published"]}}),
    );
    let err = renamed
        .validate_cel_update(&ok)
        .expect_err("name is immutable");
    assert!(format!("{err:?}").contains("name is immutable"), "{err:?}");
    let moved = event_trigger(
        json!({"name": "article_published", "table": {"name": "comment"},
        "webhookFromEnv": "ARTICLE_WEBHOOK_URL", "update": {"columns": ["published"]}}),
    );
    let err = moved
        .validate_cel_update(&ok)
        .expect_err("table is immutable");
    assert!(format!("{err:?}").contains("table is immutable"), "{err:?}");
    // Everything else may change.
    let edited = event_trigger(
        json!({"name": "article_published", "table": {"name": "article"},
        "webhook": "http://hooks/published", "update": {"columns": "*", "payload": ["id"]}, "retryConf": {"numRetries": 3}}),
    );
    edited
        .validate_cel_update(&ok)
        .expect("spec edits are fine");
}

#[test]
fn remote_schema_columns_status_and_secrets() {
    let crd = crd_of("RemoteSchema");
    let wanted = [
        ("Schema", ".spec.name", 0),
        ("URL", ".spec.definition.url", 1),
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
    // Spec fields are the metadata API's, camelCased one to one.
    let definition = &schema["properties"]["spec"]["properties"]["definition"];
    let mut fields: Vec<&str> = definition["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "forwardClientHeaders",
            "headers",
            "timeoutSeconds",
            "url",
            "urlFromEnv"
        ]
    );
    // Secrets are never in the spec: the descriptions send them to the environment.
    let header = &definition["properties"]["headers"]["items"]["properties"];
    assert!(header["valueFromEnv"]["description"]
        .as_str()
        .unwrap()
        .contains("controller"));
    assert!(definition["properties"]["url"]["description"]
        .as_str()
        .unwrap()
        .contains("urlFromEnv"));
    // The status every kind has, plus the remote server's state.
    let status = &schema["properties"]["status"]["properties"];
    for common in [
        "observedGeneration",
        "catalogResourceVersion",
        "objectKeys",
        "specHash",
        "lastAppliedTime",
        "lastSyncRequest",
        "conditions",
    ] {
        assert!(!status[common].is_null(), "status.{common}");
    }
    let remote = &status["remote"]["properties"];
    for field in [
        "reachable",
        "lastIntrospected",
        "lastError",
        "lastErrorTime",
    ] {
        assert!(!remote[field].is_null(), "status.remote.{field}");
    }
    assert_eq!(remote["reachable"]["type"], "boolean");
    // The common part is the same schema as every other kind's.
    let event_trigger = crd_of("EventTrigger");
    let theirs = &schema_of(&event_trigger)["properties"]["status"]["properties"];
    let mut ours = status.clone();
    ours.as_object_mut().unwrap().remove("remote");
    assert_eq!(&ours, theirs);
}

fn remote_schema(spec: Value) -> RemoteSchema {
    RemoteSchema {
        metadata: ObjectMeta {
            name: Some("r".into()),
            ..Default::default()
        },
        spec: serde_json::from_value(spec).unwrap(),
        status: None,
    }
}

#[test]
fn remote_schema_cel_rules() {
    let ok = remote_schema(json!({"name": "newsletter", "definition": {
        "urlFromEnv": "NEWSLETTER_GRAPHQL_URL",
        "headers": [{"name": "Authorization", "valueFromEnv": "NEWSLETTER_API_TOKEN"}, {"name": "X-Source", "value": "basalt"}],
        "forwardClientHeaders": true, "timeoutSeconds": 10}}));
    ok.validate_cel().expect("valid");
    remote_schema(json!({"name": "geo", "definition": {"url": "http://geo.internal/graphql"}}))
        .validate_cel()
        .expect("a URL alone is enough");
    let cases = [
        (
            json!({"name": "r", "definition": {"url": "http://h", "urlFromEnv": "H"}}),
            "exactly one of url and urlFromEnv",
        ),
        (
            json!({"name": "r", "definition": {"timeoutSeconds": 5}}),
            "exactly one of url and urlFromEnv",
        ),
        (
            json!({"name": "r", "definition": {"url": "http://h", "headers": [{"name": "X", "value": "v", "valueFromEnv": "V"}]}}),
            "exactly one of value and valueFromEnv",
        ),
        (
            json!({"name": "r", "definition": {"url": "http://h", "headers": [{"name": "X"}]}}),
            "exactly one of value and valueFromEnv",
        ),
        (
            json!({"name": "r", "definition": {"url": "http://h", "timeoutSeconds": 0}}),
            "timeoutSeconds must be greater than 0",
        ),
        (
            json!({"name": "r", "definition": {"url": "http://h", "timeoutSeconds": -3}}),
            "timeoutSeconds must be greater than 0",
        ),
    ];
    for (spec, message) in cases {
        let err = remote_schema(spec.clone())
            .validate_cel()
            .expect_err("must fail");
        assert!(format!("{err:?}").contains(message), "{spec}: {err:?}");
    }
    // The name is the identity: a new name is a new resource.
    let renamed = remote_schema(
        json!({"name": "mailing", "definition": {"urlFromEnv": "NEWSLETTER_GRAPHQL_URL"}}),
    );
    let err = renamed
        .validate_cel_update(&ok)
        .expect_err("name is immutable");
    assert!(format!("{err:?}").contains("name is immutable"), "{err:?}");
    // Everything else may change.
    let edited = remote_schema(
        json!({"name": "newsletter", "definition": {"url": "http://newsletter.blog.svc:8080/graphql"},
        "comment": "moved in-cluster"}),
    );
    edited
        .validate_cel_update(&ok)
        .expect("spec edits are fine");
}

#[test]
fn relationship_using_needs_exactly_one_key() {
    let table = |using: Value| -> TrackedTable {
        TrackedTable {
            metadata: ObjectMeta::default(),
            spec: serde_json::from_value(json!({"table": {"name": "article"}, "objectRelationships": [{"name": "author", "using": using}]})).unwrap(),
            status: None,
        }
    };
    table(json!({"foreignKeyConstraintOn": "author_id"}))
        .validate_cel()
        .expect("one key");
    for using in [
        json!({}),
        json!({"foreignKeyConstraintOn": "a", "manualConfiguration": {"remoteTable": {"name": "b"}, "columnMapping": {"a": "id"}}}),
    ] {
        let err = table(using).validate_cel().expect_err("both or neither");
        assert!(format!("{err:?}").contains("exactly one of"), "{err:?}");
    }
}

/// The root-field lists of a select Permission: enums of the metadata API's values (the API
/// server refuses any other), each list optional; `select_aggregate` without
/// `allowAggregations` is left to the controller, which answers the metadata API's error.
#[test]
fn permission_root_field_lists_are_enums() {
    let schema = schema_of(&crd_of("Permission"));
    let rules = &schema["properties"]["spec"]["properties"]["permission"]["properties"];
    for (key, values) in [
        (
            "queryRootFields",
            json!(["select", "select_by_pk", "select_aggregate"]),
        ),
        (
            "subscriptionRootFields",
            json!([
                "select",
                "select_by_pk",
                "select_aggregate",
                "select_stream"
            ]),
        ),
    ] {
        assert_eq!(rules[key]["type"], "array", "{key}");
        assert_eq!(rules[key]["nullable"], true, "{key}");
        assert_eq!(rules[key]["items"]["enum"], values, "{key}");
    }
    let spec = |lists: Value| {
        let mut permission = json!({"columns": "*", "filter": {}});
        permission
            .as_object_mut()
            .unwrap()
            .extend(lists.as_object().unwrap().clone());
        json!({"table": {"name": "a"}, "role": "u", "operation": "select", "permission": permission})
    };
    permission(spec(
        json!({"queryRootFields": [], "subscriptionRootFields": ["select_stream"]}),
    ))
    .validate_cel()
    .expect("valid");
    for wrong in [
        json!({"queryRootFields": ["select_stream"]}),
        json!({"subscriptionRootFields": ["selectStream"]}),
    ] {
        assert!(
            serde_json::from_value::<PermissionSpec>(spec(wrong.clone())).is_err(),
            "{wrong}"
        );
    }
    let table = schema_of(&crd_of("TrackedTable"));
    let roots = &table["properties"]["spec"]["properties"]["configuration"]["properties"]
        ["customRootFields"]["properties"];
    assert_eq!(roots["selectStream"]["type"], "string");
}
