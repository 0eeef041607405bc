//! Resources and the metadata API describe the same catalog: resources build exactly what the
//! metadata API builds, and `basalt export --format crds` writes resources (and a
//! kustomization) that rebuild the catalog exactly.

use super::*;

#[tokio::test]
async fn resources_build_the_same_catalog_as_the_metadata_api() {
    let s = setup(false).await;
    let resources_json = [
        json!({"kind": "ComputedField", "name": "author-full-name", "spec": {"table": {"name": "author"}, "name": "full_name",
            "definition": {"function": {"name": "author_full_name"}}, "comment": "name and bio"}}),
        json!({"kind": "CustomTypeSet", "name": "types", "spec": {"scalars": [{"name": "Email"}],
            "inputObjects": [{"name": "SignupInput", "fields": [{"name": "email", "type": "Email!"}]}]}}),
        json!({"kind": "QueryCollection", "name": "allowed", "spec": {"name": "allowed",
            "definition": {"queries": [{"name": "titles", "query": "query { article { title } }"}]}}}),
        json!({"kind": "AllowListEntry", "name": "allowed", "spec": {"collection": "allowed"}}),
        json!({"kind": "EventTrigger", "name": "article-status", "spec": {"name": "article_status",
            "table": {"name": "article"}, "webhook": "http://127.0.0.1:9/status",
            "update": {"columns": ["status"], "payload": "*"}, "delete": {"columns": "*"},
            "headers": [{"name": "X-Source", "value": "basalt"}],
            "retryConf": {"numRetries": 2, "timeoutSec": 5}, "enableManual": true}}),
    ];
    // Dependants first: they wait (and are retried) until what they need exists.
    s.apply(&article_user_select(&[])).await;
    assert_eq!(
        s.condition(&article_user_select(&[]), "Ready").1,
        "DependencyNotReady"
    );
    s.apply(&article()).await;
    s.apply(&author()).await;
    s.reconcile(&article()).await.unwrap();
    s.reconcile(&article_user_select(&[])).await.unwrap();
    for r in &resources_json {
        let (name, spec) = (r["name"].as_str().unwrap(), r["spec"].clone());
        match r["kind"].as_str().unwrap() {
            "ComputedField" => s.apply(&resource::<ComputedField>(name, spec)).await,
            "CustomTypeSet" => s.apply(&resource::<CustomTypeSet>(name, spec)).await,
            "QueryCollection" => s.apply(&resource::<QueryCollection>(name, spec)).await,
            "EventTrigger" => s.apply(&resource::<EventTrigger>(name, spec)).await,
            _ => s.apply(&resource::<AllowListEntry>(name, spec)).await,
        };
    }
    assert_eq!(s.condition(&article_user_select(&[]), "Ready").1, "Applied");

    // The same metadata through /v1/query on another database.
    let imperative = TestServer::with_fixture(BLOG).await;
    imperative
        .ok(json!({"type": "bulk", "args": [
            {"type": "track_table", "version": 2, "args": {"table": "article", "configuration": {"custom_root_fields": {"select": "posts"}}}},
            {"type": "track_table", "args": {"table": "author"}},
            {"type": "create_object_relationship", "args": {"table": "article", "name": "author", "using": {"foreign_key_constraint_on": "author_id"}}},
            {"type": "create_array_relationship", "args": {"table": "author", "name": "articles", "using": {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}}}},
            {"type": "create_select_permission", "args": {"table": "article", "role": "user", "permission": {"columns": ["id", "title"], "filter": {"author_id": {"_eq": "X-Svc-User-Id"}}, "limit": 10}}},
            {"type": "add_computed_field", "args": {"table": "author", "name": "full_name", "definition": {"function": "author_full_name"}, "comment": "name and bio"}},
            {"type": "set_custom_types", "args": {"scalars": [{"name": "Email"}], "input_objects": [{"name": "SignupInput", "fields": [{"name": "email", "type": "Email!"}]}]}},
            {"type": "create_query_collection", "args": {"name": "allowed", "definition": {"queries": [{"name": "titles", "query": "query { article { title } }"}]}}},
            {"type": "add_collection_to_allowlist", "args": {"collection": "allowed"}},
            {"type": "create_event_trigger", "args": {"name": "article_status", "table": "article",
                "webhook": "http://127.0.0.1:9/status",
                "update": {"columns": ["status"], "payload": "*"}, "delete": {"columns": "*"},
                "headers": [{"name": "X-Source", "value": "basalt"}],
                "retry_conf": {"num_retries": 2, "timeout_sec": 5}, "enable_manual": true}}
        ]}))
        .await;
    let ours = normalize(s.server.export().await);
    let theirs = normalize(imperative.export().await);
    assert_eq!(ours, theirs);
    assert!(s.inconsistent().await.is_empty());
}

/// Tables in name order (the order resources were applied in is not meaningful).
fn normalize(mut export: Value) -> Value {
    if let Some(tables) = export["tables"].as_array_mut() {
        tables.sort_by_key(|t| t["table"]["name"].as_str().unwrap_or_default().to_owned());
    }
    export
}

/// Relationship lists in name order: a relationship that waited for its target is appended
/// when it lands, and the order of relationships carries no meaning.
fn sort_relationships(mut export: Value) -> Value {
    for table in export["tables"].as_array_mut().into_iter().flatten() {
        for key in ["object_relationships", "array_relationships"] {
            if let Some(list) = table.get_mut(key).and_then(Value::as_array_mut) {
                list.sort_by_key(|r| r["name"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    export
}

#[tokio::test]
async fn exported_resources_rebuild_the_catalog_exactly() {
    let source = TestServer::blog().await;
    source
        .ok(json!({"type": "bulk", "args": [
            {"type": "set_custom_types", "args": {
                "scalars": [{"name": "Email", "description": "an address"}],
                "enums": [{"name": "Mood", "values": [{"value": "HAPPY"}, {"value": "SAD", "is_deprecated": true}]}],
                "input_objects": [{"name": "SignupInput", "fields": [{"name": "email", "type": "Email!"}]}],
                "objects": [{"name": "SignupResult", "fields": [{"name": "author_id", "type": "Int!"}],
                    "relationships": [{"name": "author", "type": "object", "remote_table": "author", "field_mapping": {"author_id": "id"}}]}]}},
            {"type": "create_query_collection", "args": {"name": "allowed", "comment": "production",
                "definition": {"queries": [{"name": "titles", "query": "query { article { title } }"}]}}},
            {"type": "add_collection_to_allowlist", "args": {"collection": "allowed"}},
            // An action on the custom types above, with a header from the environment and two
            // roles allowed.
            {"type": "create_action", "args": {"name": "signUp", "comment": "new author",
                "definition": {"handler": "http://127.0.0.1:9/sign-up", "output_type": "SignupResult",
                    "arguments": [{"name": "input", "type": "SignupInput!"}, {"name": "mood", "type": "Mood"}],
                    "headers": [{"name": "X-Path", "value_from_env": "PATH"}],
                    "kind": "asynchronous", "timeout": 15}}},
            {"type": "create_action_permission", "args": {"action": "signUp", "role": "user"}},
            {"type": "create_action_permission", "args": {"action": "signUp", "role": "guest", "comment": "sign-up page"}},
            {"type": "set_table_custom_fields", "version": 2, "args": {"table": "comment",
                "custom_root_fields": {"select_by_pk": "commentById", "update_many": "editComments"}, "custom_column_names": {"body": "text"}}},
            // A header read from the environment (PATH: set in every process, engine and
            // controller alike) is exported by the variable's name, never its value.
            {"type": "create_event_trigger", "args": {"name": "article_status", "table": "article",
                "webhook_from_env": "PATH", "update": {"columns": ["status"]}, "insert": {"columns": "*", "payload": ["id"]},
                "headers": [{"name": "X-Path", "value_from_env": "PATH"}, {"name": "X-Source", "value": "basalt"}],
                "retry_conf": {"num_retries": 1}}}
        ]}))
        .await;
    let wanted = source.export().await;
    let metadata = serde_json::from_value(wanted.clone()).unwrap();
    let export = basalt::controller::export::resources(&metadata, NS).unwrap();
    let kinds: BTreeMap<&str, usize> = export.resources.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry(r.kind).or_default() += 1;
        m
    });
    assert_eq!(kinds["TrackedTable"], 6);
    assert_eq!(kinds["CustomTypeSet"], 1);
    assert_eq!(kinds["AllowListEntry"], 1);
    assert_eq!(kinds["EventTrigger"], 1);
    assert_eq!(kinds["Action"], 1);
    let action = export
        .resources
        .iter()
        .find(|r| r.kind == "Action")
        .unwrap();
    assert_eq!(action.name, "signup");
    assert_eq!(
        action.manifest["spec"],
        json!({"name": "signUp", "comment": "new author", "definition": {
            "type": "mutation", "kind": "asynchronous",
            "arguments": [{"name": "input", "type": "SignupInput!"}, {"name": "mood", "type": "Mood"}],
            "outputType": "SignupResult", "handler": "http://127.0.0.1:9/sign-up",
            "headers": [{"name": "X-Path", "valueFromEnv": "PATH"}], "timeout": 15},
            "permissions": [{"role": "user"}, {"role": "guest", "comment": "sign-up page"}]})
    );
    let trigger = export
        .resources
        .iter()
        .find(|r| r.kind == "EventTrigger")
        .unwrap();
    assert_eq!(trigger.name, "article-status");
    assert_eq!(
        trigger.manifest["spec"],
        json!({"name": "article_status", "table": {"schema": "public", "name": "article"},
            "webhookFromEnv": "PATH",
            "insert": {"columns": "*", "payload": ["id"]}, "update": {"columns": ["status"]},
            "headers": [{"name": "X-Path", "valueFromEnv": "PATH"}, {"name": "X-Source", "value": "basalt"}],
            "retryConf": {"numRetries": 1, "intervalSec": 10, "timeoutSec": 60}})
    );
    let path = std::env::var("PATH").unwrap();
    let files = export.files().unwrap();
    let (_, yaml) = files
        .iter()
        .find(|(f, _)| f == "eventtrigger-article-status.yaml")
        .expect("one file per resource, named like the others");
    assert!(
        !yaml.contains(&path),
        "no resolved value is exported: {yaml}"
    );

    // Applied to a fresh catalog of the same database schema, through the controller.
    let s = setup(false).await;
    let typed = |r: &basalt::controller::export::Exported| {
        let mut manifest = r.manifest.clone();
        manifest["metadata"]["uid"] = json!(format!("uid-{}-{}", r.kind, r.name));
        manifest["metadata"]["generation"] = json!(1);
        manifest
    };
    macro_rules! each {
        ($r:expr, $run:ident) => {
            match $r.kind {
                "TrackedTable" => drop(
                    s.$run(&serde_json::from_value::<TrackedTable>(typed($r)).unwrap())
                        .await,
                ),
                "Permission" => drop(
                    s.$run(&serde_json::from_value::<Permission>(typed($r)).unwrap())
                        .await,
                ),
                "ComputedField" => drop(
                    s.$run(&serde_json::from_value::<ComputedField>(typed($r)).unwrap())
                        .await,
                ),
                "CustomTypeSet" => drop(
                    s.$run(&serde_json::from_value::<CustomTypeSet>(typed($r)).unwrap())
                        .await,
                ),
                "QueryCollection" => drop(
                    s.$run(&serde_json::from_value::<QueryCollection>(typed($r)).unwrap())
                        .await,
                ),
                "EventTrigger" => drop(
                    s.$run(&serde_json::from_value::<EventTrigger>(typed($r)).unwrap())
                        .await,
                ),
                "Action" => drop(
                    s.$run(
                        &serde_json::from_value::<basalt::controller::kinds::Action>(typed($r))
                            .unwrap(),
                    )
                    .await,
                ),
                _ => drop(
                    s.$run(&serde_json::from_value::<AllowListEntry>(typed($r)).unwrap())
                        .await,
                ),
            }
        };
    }
    // In two waves, as a GitOps tool applies them: tables (their relationships wait for one
    // another and land on the second reconcile, as a NOTIFY triggers it live), then the rest.
    let (tables, rest): (Vec<_>, Vec<_>) = export
        .resources
        .iter()
        .partition(|r| r.kind == "TrackedTable");
    for r in &tables {
        each!(r, apply);
    }
    for r in &tables {
        each!(r, reconcile);
    }
    for r in &rest {
        each!(r, apply);
    }
    assert_eq!(
        sort_relationships(s.server.export().await),
        sort_relationships(wanted)
    );
    assert!(s.drift_items().await.is_empty());
}

#[tokio::test]
async fn export_command_writes_resources_and_a_kustomization() {
    let source = TestServer::blog().await;
    let dir = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["export", "--format", "crds", "--namespace", "blog", "--out"])
        .arg(dir.path())
        .env("BASALT_DATABASE_URL", &source.db_url)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let kustomization: Value = serde_yaml::from_str(
        &std::fs::read_to_string(dir.path().join("kustomization.yaml")).unwrap(),
    )
    .unwrap();
    let files: Vec<String> = kustomization["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    assert!(
        files.contains(&"trackedtable-article.yaml".to_owned()),
        "{files:?}"
    );
    assert!(
        files.contains(&"permission-article-user-select.yaml".to_owned()),
        "{files:?}"
    );
    let permission: Permission = serde_yaml::from_str(
        &std::fs::read_to_string(dir.path().join("permission-article-user-select.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(permission.metadata.namespace.as_deref(), Some("blog"));
    assert_eq!(permission.spec.role, "user");
    assert_eq!(
        permission.metadata.annotations.as_ref().unwrap()["basalt.dev/adopt"],
        "true"
    );
    permission
        .validate_cel()
        .expect("the CRD's rules accept it");
    // Without --out: one YAML stream on stdout.
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["export", "--format", "crds"])
        .env("BASALT_DATABASE_URL", &source.db_url)
        .output()
        .await
        .unwrap();
    let stream = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        stream.matches("\n---\n").count() + 1,
        files.len(),
        "{stream}"
    );
}
