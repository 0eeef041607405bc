//! The CustomResourceDefinitions: generated files up to date, structural schemas, printer
//! columns, client-side CEL rules, and the mapping of resources to metadata. The Action kind's
//! are in `crds/actions.rs`.

mod actions;

use basalt::controller::crd::*;
use basalt::controller::{crd_files, crds, mapping};
use kube::core::ObjectMeta;
use serde_json::{json, Value};
use std::collections::BTreeMap;

#[test]
fn committed_crds_are_up_to_date() {
    let generated: BTreeMap<String, String> = crd_files().unwrap().into_iter().collect();
    // crds/ for kubectl, and the chart's copy Helm installs from.
    for folder in ["crds", "charts/basalt/crds"] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
        let mut committed = BTreeMap::new();
        for entry in std::fs::read_dir(&dir).expect("the folder exists") {
            let path = entry.unwrap().path();
            committed.insert(
                path.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&path).unwrap(),
            );
        }
        let fix = format!("run `cargo run -- crds --out {folder}`");
        assert_eq!(
            committed.keys().collect::<Vec<_>>(),
            generated.keys().collect::<Vec<_>>(),
            "{folder}/ is stale: {fix}"
        );
        for (name, yaml) in &generated {
            assert_eq!(&committed[name], yaml, "{folder}/{name} is stale: {fix}");
        }
    }
}

/// The HTTP fake API server (`crates/fake-kube`) of the failover test and the benchmark
/// serves every kind under the plural, kind and status subresource its CRD declares.
#[test]
fn the_fake_api_server_serves_every_kind_as_its_crd_declares() {
    let crds = crds();
    for crd in &crds {
        let version = &crd.spec.versions[0];
        let api_version = format!("{}/{}", crd.spec.group, version.name);
        let served = fake_kube::ResourceType::by_plural(&api_version, &crd.spec.names.plural)
            .unwrap_or_else(|| panic!("fake-kube does not serve {}", crd.spec.names.plural));
        assert_eq!(served.kind, crd.spec.names.kind);
        let status = version
            .subresources
            .as_ref()
            .is_some_and(|s| s.status.is_some());
        assert_eq!(served.status_subresource, status, "{}", served.kind);
    }
    let custom = fake_kube::RESOURCE_TYPES
        .iter()
        .filter(|t| t.custom)
        .count();
    assert_eq!(custom, crds.len(), "and no kind Basalt does not have");
}

/// The apiserver's structural-schema rules, checked on every node.
fn lint(node: &Value, path: &str, in_combinator: bool, problems: &mut Vec<String>) {
    let Value::Object(map) = node else { return };
    if map.is_empty() {
        problems.push(format!("{path}: empty schema"));
        return;
    }
    if map.contains_key("$ref") {
        problems.push(format!("{path}: $ref"));
    }
    let preserve = map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    let int_or_string = map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    if in_combinator {
        for forbidden in ["type", "default", "nullable", "description"] {
            if map.contains_key(forbidden) {
                problems.push(format!("{path}: {forbidden} inside anyOf/oneOf/allOf/not"));
            }
        }
    } else if !map.contains_key("type") && !preserve && !int_or_string {
        problems.push(format!(
            "{path}: no type and no x-kubernetes-preserve-unknown-fields"
        ));
    }
    if map.contains_key("additionalProperties") && map.contains_key("properties") {
        problems.push(format!("{path}: additionalProperties with properties"));
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        for (k, v) in props {
            lint(v, &format!("{path}.{k}"), false, problems);
        }
    }
    if let Some(items) = map.get("items") {
        lint(items, &format!("{path}[]"), false, problems);
    }
    if let Some(extra @ Value::Object(_)) = map.get("additionalProperties") {
        lint(extra, &format!("{path}.*"), false, problems);
    }
    for combinator in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(options)) = map.get(combinator) {
            for (i, o) in options.iter().enumerate() {
                lint(o, &format!("{path}.{combinator}[{i}]"), true, problems);
            }
        }
    }
    if let Some(not) = map.get("not") {
        lint(not, &format!("{path}.not"), true, problems);
    }
}

type Crd =
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The CRD of `kind`.
fn crd_of(kind: &str) -> Crd {
    crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap_or_else(|| panic!("no CRD for {kind}"))
}

/// The CRD's printer columns are exactly `wanted` (name, JSON path, priority), in order.
fn assert_columns(crd: &Crd, wanted: &[(&str, &str, i32)]) {
    let columns: Vec<(String, String, i32)> = crd.spec.versions[0]
        .additional_printer_columns
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| (c.name.clone(), c.json_path.clone(), c.priority.unwrap_or(0)))
        .collect();
    let wanted: Vec<(String, String, i32)> = wanted
        .iter()
        .map(|(n, p, prio)| (n.to_string(), p.to_string(), *prio))
        .collect();
    assert_eq!(columns, wanted);
}

fn schema_of(
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> Value {
    let version = &crd.spec.versions[0];
    serde_json::to_value(&version.schema.as_ref().unwrap().open_api_v3_schema).unwrap()
}

#[test]
fn every_schema_is_structural() {
    for crd in crds() {
        let mut problems = Vec::new();
        let schema = schema_of(&crd);
        lint(
            &schema,
            crd.metadata.name.as_deref().unwrap(),
            false,
            &mut problems,
        );
        assert!(problems.is_empty(), "{problems:#?}");
        // Kinds carrying user data (BoolExps, presets, column maps) keep every key of it.
        let opaque = [
            "trackedtables.basalt.dev",
            "permissions.basalt.dev",
            "eventtriggers.basalt.dev",
            "customtypesets.basalt.dev",
        ];
        if opaque.contains(&crd.metadata.name.as_deref().unwrap()) {
            assert!(serde_json::to_string(&schema)
                .unwrap()
                .contains("x-kubernetes-preserve-unknown-fields"));
        }
    }
}

#[test]
fn kinds_names_and_printer_columns() {
    let expected = [
        ("TrackedTable", "trackedtables", "btable"),
        ("Permission", "permissions", "bperm"),
        ("ComputedField", "computedfields", "bcf"),
        ("EventTrigger", "eventtriggers", "btrigger"),
        ("RemoteSchema", "remoteschemas", "brs"),
        ("Action", "actions", "baction"),
        ("CustomTypeSet", "customtypesets", "bct"),
        ("QueryCollection", "querycollections", "bqc"),
        ("AllowListEntry", "allowlistentries", "ballow"),
    ];
    assert_eq!(crds().len(), expected.len());
    for (crd, (kind, plural, short)) in crds().iter().zip(expected) {
        assert_eq!(crd.spec.group, "basalt.dev");
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.kind, kind);
        assert_eq!(crd.spec.names.plural, plural);
        assert_eq!(
            crd.spec.names.short_names.as_deref(),
            Some(&[short.to_owned()][..])
        );
        assert_eq!(
            crd.spec.names.categories.as_deref(),
            Some(&["basalt".to_owned()][..])
        );
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        assert!(
            version
                .subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some(),
            "{kind} has a status subresource"
        );
        let schema = schema_of(crd);
        let columns = version.additional_printer_columns.as_ref().unwrap();
        for name in ["Ready", "Drifted", "Age"] {
            assert!(
                columns.iter().any(|c| c.name == name),
                "{kind} lacks {name}"
            );
        }
        for column in columns {
            // Each JSONPath names fields that exist in the schema (or metadata).
            let path = column
                .json_path
                .split('[')
                .next()
                .unwrap()
                .trim_start_matches('.');
            let mut node = &schema;
            let parts: Vec<&str> = path.split('.').collect();
            if parts[0] == "metadata" {
                continue;
            }
            for part in parts {
                node = &node["properties"][part];
                assert!(
                    !node.is_null(),
                    "{kind}: column {} path {} not in schema",
                    column.name,
                    column.json_path
                );
                if node["type"] == "array" {
                    node = &node["items"];
                }
            }
        }
    }
}

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

#[test]
fn resources_map_to_metadata_field_by_field() {
    let spec: TrackedTableSpec = serde_json::from_value(json!({
        "table": {"name": "article"}, "isEnum": false,
        "configuration": {"customRootFields": {"select": "articles", "selectByPk": "articleById"}, "customColumnNames": {"author_id": "authorId"}},
        "objectRelationships": [{"name": "author", "using": {"foreignKeyConstraintOn": "author_id"}, "comment": "who"}],
        "arrayRelationships": [{"name": "comments", "using": {"manualConfiguration": {"remoteTable": {"schema": "public", "name": "comment"}, "columnMapping": {"id": "article_id"}}}}]
    }))
    .unwrap();
    let entry = mapping::tracked_table(&spec).unwrap();
    assert_eq!(
        serde_json::to_value(&entry).unwrap(),
        json!({
            "table": {"schema": "public", "name": "article"},
            "configuration": {"custom_root_fields": {"select": "articles", "select_by_pk": "articleById"}, "custom_column_names": {"author_id": "authorId"}},
            "object_relationships": [{"name": "author", "using": {"foreign_key_constraint_on": "author_id"}, "comment": "who"}],
            "array_relationships": [{"name": "comments", "using": {"manual_configuration": {"remote_table": {"schema": "public", "name": "comment"}, "column_mapping": {"id": "article_id"}}}}]
        })
    );

    // BoolExps and presets pass through byte for byte, whatever their spelling.
    let filter =
        json!({"$or": [{"author_id": {"_eq": "X-SVC-USER-ID"}}, {"status": {"$eq": "published"}}]});
    let spec: PermissionSpec = serde_json::from_value(json!({"table": {"name": "article"}, "role": "user", "operation": "update",
        "permission": {"columns": ["title"], "filter": filter, "set": {"edited_at": "now()"}, "check": null}})).unwrap();
    let (table, kind, entry) = mapping::permission(&spec).unwrap();
    assert_eq!(table.name, "article");
    assert_eq!(kind, basalt::metadata::PermissionKind::Update);
    // The rules come back in the catalog's typed form (an absent update `check` is null).
    assert_eq!(
        entry.permission,
        json!({"columns": ["title"], "filter": filter, "check": null, "set": {"edited_at": "now()"}})
    );
    assert_eq!(
        serde_json::to_string(&entry.permission["filter"]).unwrap(),
        serde_json::to_string(&filter).unwrap()
    );
    let spec: PermissionSpec = serde_json::from_value(json!({"table": {"name": "article"}, "role": "user", "operation": "select", "permission": {"columns": "all", "filter": {}}})).unwrap();
    let err = mapping::permission(&spec).unwrap_err();
    assert_eq!(err.path.as_str(), "$.spec.permission.columns", "{err:?}");

    let spec: ComputedFieldSpec =
        serde_json::from_value(json!({"table": {"name": "author"}, "name": "fullName",
        "definition": {"function": {"name": "author_full_name"}, "sessionArgument": "s"}}))
        .unwrap();
    let (_, cf) = mapping::computed_field(&spec).unwrap();
    assert_eq!(
        serde_json::to_value(&cf).unwrap(),
        json!({"name": "fullName", "definition": {"function": {"schema": "public", "name": "author_full_name"}, "session_argument": "s"}})
    );

    let spec: CustomTypeSetSpec = serde_json::from_value(json!({
        "objects": [{"name": "Result", "fields": [{"name": "id", "type": "Int!"}], "relationships": [{"name": "author", "type": "object", "remoteTable": {"name": "author"}, "fieldMapping": {"id": "id"}}]}],
        "enums": [{"name": "Level", "values": [{"value": "LOW", "isDeprecated": true}]}]})).unwrap();
    let types = mapping::custom_types(&spec).unwrap();
    assert_eq!(
        types.objects[0].relationships[0].remote_table.name,
        "author"
    );
    assert_eq!(types.enums[0].values[0].is_deprecated, Some(true));

    let spec: QueryCollectionSpec = serde_json::from_value(json!({"name": "app", "definition": {"queries": [{"name": "q", "query": "{ author { id } }"}]}})).unwrap();
    assert_eq!(
        mapping::query_collection(&spec)
            .unwrap()
            .definition
            .queries
            .len(),
        1
    );
    let bad: QueryCollectionSpec = serde_json::from_value(
        json!({"name": "app", "definition": {"queries": [{"name": "q", "query": "{"}]}}),
    )
    .unwrap();
    assert_eq!(
        mapping::query_collection(&bad).unwrap_err().code.as_str(),
        "parse-failed"
    );
    let spec: AllowListEntrySpec = serde_json::from_value(json!({"collection": "app"})).unwrap();
    assert_eq!(mapping::allowlist_entry(&spec).unwrap().collection.0, "app");

    // EventTrigger: flat `create_event_trigger` fields, nested the way the catalog stores them;
    // payload column lists and header names are user data, kept as written.
    let spec: EventTriggerSpec = serde_json::from_value(json!({
        "name": "article_published", "table": {"schema": "blog", "name": "article"},
        "webhookFromEnv": "ARTICLE_WEBHOOK_URL",
        "insert": {"columns": "*"},
        "update": {"columns": ["published", "Title"], "payload": ["id", "published"]},
        "delete": {"columns": "*", "payload": "*"},
        "headers": [{"name": "X-Token", "valueFromEnv": "HOOK_TOKEN"}, {"name": "X-Source", "value": "basalt"}],
        "retryConf": {"numRetries": 3, "intervalSec": 5},
        "enableManual": true
    }))
    .unwrap();
    let (table, trigger) = mapping::event_trigger(&spec).unwrap();
    assert_eq!(
        (table.schema.as_str(), table.name.as_str()),
        ("blog", "article")
    );
    assert_eq!(
        serde_json::to_value(&trigger).unwrap(),
        json!({
            "name": "article_published",
            "definition": {
                "enable_manual": true,
                "insert": {"columns": "*"},
                "update": {"columns": ["published", "Title"], "payload": ["id", "published"]},
                "delete": {"columns": "*", "payload": "*"}
            },
            "retry_conf": {"num_retries": 3, "interval_sec": 5, "timeout_sec": 60},
            "webhook_from_env": "ARTICLE_WEBHOOK_URL",
            "headers": [{"name": "X-Token", "value_from_env": "HOOK_TOKEN"}, {"name": "X-Source", "value": "basalt"}]
        })
    );
    // It is the same entry the metadata API builds from the equivalent request.
    assert_eq!(
        mapping::event_trigger_json(&spec),
        json!({"name": "article_published", "table": {"schema": "blog", "name": "article"},
            "webhook_from_env": "ARTICLE_WEBHOOK_URL",
            "insert": {"columns": "*"},
            "update": {"columns": ["published", "Title"], "payload": ["id", "published"]},
            "delete": {"columns": "*", "payload": "*"},
            "enable_manual": true,
            "retry_conf": {"num_retries": 3, "interval_sec": 5},
            "headers": [{"name": "X-Token", "value_from_env": "HOOK_TOKEN"}, {"name": "X-Source", "value": "basalt"}]})
    );
    let objects = mapping::event_trigger_objects(&spec).unwrap();
    assert_eq!(objects.len(), 1);
    assert_eq!(objects[0].key(), "event_trigger:article_published");
    // The operation's own checks decide validity, with the path of the field.
    let invalid = [
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h", "insert": {"columns": "all"}}),
            "$.spec.insert.columns",
        ),
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h", "update": {"columns": [1]}}),
            "$.spec.update.columns",
        ),
        (
            json!({"name": "has space", "table": {"name": "a"}, "webhook": "http://h", "insert": {"columns": "*"}}),
            "$.spec.name",
        ),
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h", "insert": {"columns": "*"}, "retryConf": {"timeoutSec": 0}}),
            "$.spec.retry_conf.timeout_sec",
        ),
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h", "webhookFromEnv": "H", "insert": {"columns": "*"}}),
            "$.spec",
        ),
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h"}),
            "$.spec",
        ),
    ];
    for (spec, path) in invalid {
        let typed: EventTriggerSpec = serde_json::from_value(spec.clone()).unwrap();
        let err = mapping::event_trigger(&typed).unwrap_err();
        assert_eq!(err.code.as_str(), "parse-failed", "{spec}: {err:?}");
        assert_eq!(err.path.as_str(), path, "{spec}: {err:?}");
    }

    // RemoteSchema: the `add_remote_schema` arguments, nested as the catalog stores them;
    // secrets stay the names of environment variables.
    let spec: RemoteSchemaSpec = serde_json::from_value(json!({
        "name": "newsletter",
        "definition": {
            "urlFromEnv": "NEWSLETTER_GRAPHQL_URL",
            "headers": [{"name": "Authorization", "valueFromEnv": "NEWSLETTER_API_TOKEN"}, {"name": "X-Source", "value": "basalt"}],
            "forwardClientHeaders": true,
            "timeoutSeconds": 10
        },
        "comment": "subscribers"
    }))
    .unwrap();
    let args = json!({"name": "newsletter",
        "definition": {"url_from_env": "NEWSLETTER_GRAPHQL_URL",
            "headers": [{"name": "Authorization", "value_from_env": "NEWSLETTER_API_TOKEN"}, {"name": "X-Source", "value": "basalt"}],
            "forward_client_headers": true, "timeout_seconds": 10},
        "comment": "subscribers"});
    assert_eq!(mapping::remote_schema_json(&spec), args);
    let entry = mapping::remote_schema(&spec).unwrap();
    // The entry is what the catalog keeps, and the request the controller sends for it.
    assert_eq!(serde_json::to_value(&entry).unwrap(), args);
    let objects = mapping::remote_schema_objects(&spec).unwrap();
    assert_eq!(objects.len(), 1);
    assert_eq!(objects[0].key(), "remote_schema:newsletter");
    assert_eq!(objects[0].canonical(), args);
    // Defaults stay absent: no forwarding, the API's timeout.
    let spec: RemoteSchemaSpec =
        serde_json::from_value(json!({"name": "geo", "definition": {"url": "http://geo/graphql"}}))
            .unwrap();
    assert_eq!(
        mapping::remote_schema_json(&spec),
        json!({"name": "geo", "definition": {"url": "http://geo/graphql", "forward_client_headers": false}})
    );
    assert_eq!(
        serde_json::to_value(mapping::remote_schema(&spec).unwrap()).unwrap(),
        json!({"name": "geo", "definition": {"url": "http://geo/graphql"}})
    );
    let invalid = [
        (
            json!({"name": "", "definition": {"url": "http://h"}}),
            "parse-failed",
            "$.spec.name",
        ),
        (
            json!({"name": "r", "definition": {"url": "http://h", "timeoutSeconds": 4294967296_i64}}),
            "parse-failed",
            "$.spec.definition.timeout_seconds",
        ),
        (
            json!({"name": "r", "definition": {"url": "http://h", "urlFromEnv": "H"}}),
            "invalid-params",
            "$.spec.definition",
        ),
        (
            json!({"name": "r", "definition": {}}),
            "invalid-params",
            "$.spec.definition",
        ),
    ];
    for (spec, code, path) in invalid {
        let typed: RemoteSchemaSpec = serde_json::from_value(spec.clone()).unwrap();
        let err = mapping::remote_schema(&typed).unwrap_err();
        assert_eq!(err.code.as_str(), code, "{spec}: {err:?}");
        assert_eq!(err.path.as_str(), path, "{spec}: {err:?}");
    }
}
