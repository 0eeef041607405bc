use super::*;

fn library() -> Metadata {
    serde_json::from_value(json!({
        "version": 2,
        "tables": [{
            "table": {"schema": "public", "name": "article"},
            "object_relationships": [{"name": "author", "using": {"foreign_key_constraint_on": "author_id"}}],
            "select_permissions": [{"role": "user", "permission": {"columns": "*", "filter": {"author_id": {"_eq": "X-Svc-User-Id"}}}}],
            "event_triggers": [{"name": "article.published", "definition": {"update": {"columns": ["published"]}},
                "webhook_from_env": "ARTICLE_WEBHOOK_URL"}]
        }, {
            "table": {"schema": "my.schema", "name": "a\"b"}
        }],
        "query_collections": [{"name": "allowed", "definition": {"queries": []}}],
        "allowlist": [{"collection": "allowed"}],
        "custom_types": {"scalars": [{"name": "Email"}]},
        "remote_schemas": [{"name": "geo.v2", "definition": {"url_from_env": "GEO_URL",
            "headers": [{"name": "Authorization", "value_from_env": "GEO_TOKEN"}], "timeout_seconds": 10}}],
        "actions": [{"name": "archiveArticle", "comment": "soft delete",
            "definition": {"handler": "{{ACTIONS_URL}}/archive", "output_type": "ArchiveResult",
                "arguments": [{"name": "id", "type": "Int!"}], "kind": "asynchronous",
                "headers": [{"name": "X-Secret", "value_from_env": "ACTION_SECRET"}]},
            "permissions": [{"role": "editor", "comment": "desk"}, {"role": "team.lead"}]}]
    }))
    .unwrap()
}

/// Looking up some keys finds exactly what the whole map holds for them, dotted and
/// quoted names and event triggers (keyed by name, not table) included.
#[test]
fn objects_with_keys_agree_with_the_whole_map() {
    let mut metadata = library();
    for i in 0..5 {
        let extra: TableEntry = serde_json::from_value(json!({
            "table": {"schema": "public", "name": format!("article{i}")},
            "select_permissions": [{"role": "user", "permission": {"columns": "*", "filter": {}}}]
        }))
        .unwrap();
        metadata.tables.push(std::sync::Arc::new(extra));
    }
    let all = catalog_objects(&metadata);
    let keys: Vec<&String> = all.keys().collect();
    // Every single key, every pair of neighbours, nothing, and keys not in the document.
    let mut sets: Vec<BTreeSet<&str>> = keys.iter().map(|k| [k.as_str()].into()).collect();
    sets.extend(
        keys.windows(2)
            .map(|w| [w[0].as_str(), w[1].as_str()].into()),
    );
    sets.push(BTreeSet::new());
    sets.push(
        [
            "table:public.article9",
            "permission:public.article.nobody.select",
        ]
        .into(),
    );
    sets.push(keys.iter().map(|k| k.as_str()).collect());
    for wanted in sets {
        let expected: BTreeMap<String, Object> = all
            .iter()
            .filter(|(k, _)| wanted.contains(k.as_str()))
            .map(|(k, o)| (k.clone(), o.clone()))
            .collect();
        assert_eq!(
            objects_with_keys(&metadata, &wanted),
            expected,
            "{wanted:?}"
        );
    }
}

#[test]
fn every_object_has_a_key_and_dots_are_quoted() {
    let keys: Vec<String> = catalog_objects(&library()).into_keys().collect();
    assert_eq!(
        keys,
        vec![
            "action:archiveArticle",
            "action_permission:archiveArticle.\"team.lead\"",
            "action_permission:archiveArticle.editor",
            "allowlist:allowed",
            "custom_type:Email",
            "event_trigger:\"article.published\"",
            "permission:public.article.user.select",
            "query_collection:allowed",
            "relationship:public.article.author",
            "remote_schema:\"geo.v2\"",
            "table:\"my.schema\".\"a\"\"b\"",
            "table:public.article",
        ]
    );
}

#[test]
fn event_triggers_are_keyed_by_name_in_every_form() {
    let metadata = library();
    let catalog = catalog_objects(&metadata);
    let key = "event_trigger:\"article.published\"";
    let trigger = &catalog[key];
    assert_eq!(trigger.wire_type(), "event_trigger");
    assert_eq!(
        trigger.table().map(|t| t.name.as_str()),
        Some("article"),
        "a trigger belongs to its table"
    );
    // The definition is the one inconsistencies report, so their owner is found by key.
    let item = trigger.item();
    assert_eq!(item["definition"]["table"]["name"], "article");
    assert_eq!(
        item["definition"]["configuration"]["retry_conf"]["interval_sec"],
        10
    );
    assert_eq!(
        ObjectId::of_item("event_trigger", &item["definition"])
            .map(|id| id.to_string())
            .as_deref(),
        Some(key)
    );
    let id = ObjectId::event_trigger(
        &QualifiedTable::new("public", "article"),
        "article.published",
    );
    assert_eq!(id.to_string(), key);
    assert_eq!(
        ObjectId::of_item("event_trigger", &json!({"table": "x"})),
        None
    );
}

#[test]
fn remote_schemas_are_keyed_by_name_in_every_form() {
    let metadata = library();
    let catalog = catalog_objects(&metadata);
    let key = "remote_schema:\"geo.v2\"";
    let remote = &catalog[key];
    assert_eq!(remote.wire_type(), "remote_schema");
    assert_eq!(remote.table(), None, "a remote schema belongs to no table");
    // The definition is the stored entry, as inconsistencies of remote schemas report it,
    // so their owner is found by key. Header values from the environment stay names.
    let item = remote.item();
    assert_eq!(
        item["definition"],
        json!({"name": "geo.v2", "definition": {"url_from_env": "GEO_URL", "timeout_seconds": 10,
            "headers": [{"name": "Authorization", "value_from_env": "GEO_TOKEN"}]}})
    );
    assert_eq!(
        ObjectId::of_item("remote_schema", &item["definition"])
            .map(|id| id.to_string())
            .as_deref(),
        Some(key)
    );
    let id = ObjectId::RemoteSchema("geo.v2".into());
    assert_eq!(id.to_string(), key);
    assert_eq!(
        ObjectId::of_item("remote_schema", &json!({"url": "x"})),
        None
    );
}

#[test]
fn actions_and_their_permissions_are_keyed_in_every_form() {
    let metadata = library();
    let catalog = catalog_objects(&metadata);
    let key = "action:archiveArticle";
    let action = &catalog[key];
    assert_eq!(action.wire_type(), "action");
    assert_eq!(action.table(), None, "an action belongs to no table");
    // The action's own settings, as `create_action` takes them: its permissions are
    // objects of their own, so adding one through the API is no change to the action.
    assert_eq!(
        action.canonical(),
        json!({"name": "archiveArticle", "comment": "soft delete",
            "definition": {"handler": "{{ACTIONS_URL}}/archive", "output_type": "ArchiveResult",
                "arguments": [{"name": "id", "type": "Int!"}], "type": "mutation",
                "kind": "asynchronous",
                "headers": [{"name": "X-Secret", "value_from_env": "ACTION_SECRET"}]}})
    );
    // Inconsistencies report the whole entry (permissions included) under type `action`;
    // its owner is found by name.
    let reported = serde_json::to_value(&metadata.actions[0]).unwrap();
    assert_eq!(
        ObjectId::of_item("action", &reported)
            .map(|id| id.to_string())
            .as_deref(),
        Some(key)
    );
    let id = ObjectId::Action("archiveArticle".into());
    assert_eq!(id.to_string(), key);
    assert_eq!(ObjectId::of_item("action", &json!({"handler": "x"})), None);

    let key = "action_permission:archiveArticle.\"team.lead\"";
    let permission = &catalog[key];
    assert_eq!(permission.wire_type(), "action_permission");
    assert_eq!(
        permission.canonical(),
        json!({"action": "archiveArticle", "role": "team.lead"})
    );
    let item = permission.item();
    assert_eq!(
        ObjectId::of_item("action_permission", &item["definition"])
            .map(|id| id.to_string())
            .as_deref(),
        Some(key)
    );
    assert_eq!(
        catalog["action_permission:archiveArticle.editor"].canonical(),
        json!({"action": "archiveArticle", "role": "editor", "comment": "desk"})
    );
    assert_eq!(
        ObjectId::of_item("action_permission", &json!({"role": "x"})),
        None
    );
}

#[test]
fn hash_ignores_key_order() {
    let a = json!({"b": 1, "a": {"y": [1, {"q": 1, "p": 2}], "x": null}});
    let b = json!({"a": {"x": null, "y": [1, {"p": 2, "q": 1}]}, "b": 1});
    assert_eq!(hash(&a), hash(&b));
    assert_ne!(hash(&a), hash(&json!({"b": 2})));
    assert!(hash(&a).starts_with("sha256:"));
}

#[test]
fn drift_reports_modified_fields_missing_and_orphaned() {
    let metadata = library();
    let catalog = catalog_objects(&metadata);
    let key = "permission:public.article.user.select";
    let owner = Owner {
        api_version: "basalt.dev/v1alpha1".into(),
        kind: "Permission".into(),
        namespace: "shop".into(),
        name: "article-user-select".into(),
        uid: "u1".into(),
    };
    let mut desired = catalog[key].canonical();
    let row = |desired: Value, orphaned: bool, key: &str| Managed {
        key: key.into(),
        owner: owner.clone(),
        generation: 1,
        desired_hash: hash(&desired),
        desired,
        applied_version: 1,
        orphaned,
    };
    assert_eq!(drift_of(&row(desired.clone(), false, key), &catalog), None);
    desired["permission"]["filter"] = json!({});
    let modified = drift_of(&row(desired.clone(), false, key), &catalog).unwrap();
    assert_eq!(modified.kind, DriftKind::Modified);
    assert_eq!(modified.fields, vec!["permission.filter"]);
    let definition = modified.definition();
    assert_eq!(definition["owner"]["kind"], "Permission");
    assert_eq!(definition["fields"], json!(["permission.filter"]));
    assert!(modified.reason().starts_with("catalog definition differs"));
    let missing = drift_of(&row(desired.clone(), false, "table:public.gone"), &catalog);
    assert_eq!(missing.unwrap().kind, DriftKind::Missing);
    let orphaned = drift_of(&row(desired, true, key), &catalog);
    assert_eq!(orphaned.unwrap().kind, DriftKind::Orphaned);
}

#[test]
fn differing_fields_goes_one_level_deep() {
    let a = json!({"name": "x", "definition": {"a": 1, "b": 2}, "comment": null});
    let b = json!({"name": "y", "definition": {"a": 1, "b": 3}});
    assert_eq!(differing_fields(&a, &b), vec!["definition.b", "name"]);
}
