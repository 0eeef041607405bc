//! The generated CRDs: the committed files up to date, every kind served by the fake API
//! server as its CRD declares, structural schemas, and each kind's names and printer columns.

use super::*;

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
    // In the kinds table's order: dependencies first.
    let expected = [
        ("CustomTypeSet", "customtypesets", "bct"),
        ("RemoteSchema", "remoteschemas", "brs"),
        ("TrackedTable", "trackedtables", "btable"),
        ("ComputedField", "computedfields", "bcf"),
        ("Permission", "permissions", "bperm"),
        ("TrackedFunction", "trackedfunctions", "bfn"),
        ("LogicalModel", "logicalmodels", "blm"),
        ("NativeQuery", "nativequeries", "bnq"),
        ("EventTrigger", "eventtriggers", "btrigger"),
        ("CronTrigger", "crontriggers", "bcron"),
        ("Action", "actions", "baction"),
        ("QueryCollection", "querycollections", "bqc"),
        ("AllowListEntry", "allowlistentries", "ballow"),
        ("RestEndpoint", "restendpoints", "brest"),
        ("InheritedRole", "inheritedroles", "brole"),
        ("ApiLimitPolicy", "apilimitpolicies", "blimits"),
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
