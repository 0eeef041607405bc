//! Which root fields a table offers, declared by resources: a TrackedTable's
//! `customRootFields.selectStream` and a select Permission's `queryRootFields` /
//! `subscriptionRootFields`. They reach the catalog, come back in the export to resources, a
//! spec edit changes them in place, an edit through `/v1/query` is drift until corrected, an
//! adopted permission takes the declared lists, and `select_aggregate` without
//! `allowAggregations` is an invalid spec.

use super::*;

/// Article with custom names for its list query and its stream.
fn article_stream(name: &str) -> TrackedTable {
    tracked(
        "article",
        json!({"table": {"name": "article"},
            "configuration": {"customRootFields": {"select": "posts", "selectStream": name}},
            "objectRelationships": [{"name": "author", "using": {"foreignKeyConstraintOn": "author_id"}}]}),
    )
}

/// `user`'s select permission on article, with the given root-field lists.
fn article_user_lists(
    query: Option<Value>,
    subscription: Option<Value>,
    annotations: &[(&str, &str)],
) -> Permission {
    let mut rules = json!({"columns": ["id", "title"], "filter": {"author_id": {"_eq": "X-Svc-User-Id"}},
        "allowAggregations": true});
    if let Some(list) = query {
        rules["queryRootFields"] = list;
    }
    if let Some(list) = subscription {
        rules["subscriptionRootFields"] = list;
    }
    permission(
        "article-user-select",
        json!({"table": {"name": "article"}, "role": "user", "operation": "select", "permission": rules}),
        annotations,
    )
}

/// The metadata API form of `user`'s select permission on article.
async fn article_user_rules(s: &Setup) -> Value {
    exported_table(&s.server.export().await, "article")["select_permissions"][0]["permission"]
        .clone()
}

#[tokio::test]
async fn root_fields_reach_the_catalog_and_come_back_in_the_export() {
    let s = setup(false).await;
    let article = article_stream("postFeed");
    s.apply(&author()).await;
    s.apply(&article).await;
    s.reconcile(&author()).await.unwrap();
    assert_eq!(s.condition(&article, "Ready").1, "Applied");
    let permission = article_user_lists(
        Some(json!([])),
        Some(json!(["select", "select_aggregate", "select_stream"])),
        &[],
    );
    s.apply(&permission).await;
    assert_eq!(s.condition(&permission, "Ready").1, "Applied");

    let export = s.server.export().await;
    let table = exported_table(&export, "article");
    assert_eq!(
        table["configuration"],
        json!({"custom_root_fields": {"select": "posts", "select_stream": "postFeed"},
            "custom_column_names": {}})
    );
    assert_eq!(
        table["select_permissions"],
        json!([{"role": "user", "permission": {"columns": ["id", "title"],
            "filter": {"author_id": {"_eq": "X-Svc-User-Id"}}, "allow_aggregations": true,
            "query_root_fields": [], "subscription_root_fields": ["select", "select_aggregate", "select_stream"]}}])
    );

    // `basalt export --format crds` writes them back as the resources declared them, `[]`
    // included.
    let metadata = serde_json::from_value(export).unwrap();
    let exported = basalt::controller::export::resources(&metadata, NS).unwrap();
    let manifest = |kind: &str, name: &str| {
        exported
            .resources
            .iter()
            .find(|r| r.kind == kind && r.name == name)
            .unwrap_or_else(|| panic!("no {kind} {name}"))
            .manifest
            .clone()
    };
    let table = manifest("TrackedTable", "article");
    assert_eq!(
        table["spec"]["configuration"],
        json!({"customRootFields": {"select": "posts", "selectStream": "postFeed"}})
    );
    let back: TrackedTable = serde_json::from_value(table).unwrap();
    assert_eq!(back.spec.entry().unwrap(), article.spec.entry().unwrap());
    let rules = manifest("Permission", "article-user-select");
    assert_eq!(
        rules["spec"]["permission"],
        json!({"columns": ["id", "title"], "filter": {"author_id": {"_eq": "X-Svc-User-Id"}},
            "allowAggregations": true, "queryRootFields": [],
            "subscriptionRootFields": ["select", "select_aggregate", "select_stream"]})
    );
    let back: Permission = serde_json::from_value(rules).unwrap();
    back.validate_cel().expect("the CRD's rules accept it");
    assert_eq!(back.spec.entry().unwrap(), permission.spec.entry().unwrap());
    assert!(s.drift_items().await.is_empty());
}

#[tokio::test]
async fn a_spec_edit_changes_the_lists_and_the_stream_name_in_place() {
    let s = setup(false).await;
    s.apply_tables().await;
    let permission = article_user_lists(None, Some(json!(["select_stream"])), &[]);
    s.apply(&permission).await;
    assert_eq!(
        article_user_rules(&s).await["subscription_root_fields"],
        json!(["select_stream"])
    );

    let mut edited = s.fake.get(&permission);
    edited.metadata.generation = Some(2);
    edited.spec = article_user_lists(Some(json!(["select_by_pk"])), None, &[]).spec;
    s.fake.put(&edited);
    s.reconcile(&edited).await.unwrap();
    s.fake.take();
    assert_eq!(s.condition(&edited, "Ready").1, "Applied");
    assert_eq!(s.status(&edited).observed_generation, Some(2));
    let rules = article_user_rules(&s).await;
    assert_eq!(rules["query_root_fields"], json!(["select_by_pk"]));
    assert!(rules.get("subscription_root_fields").is_none(), "{rules}");

    let mut table = s.fake.get(&article());
    table.metadata.generation = Some(2);
    table.spec = article_stream("articleFeed").spec;
    s.fake.put(&table);
    s.reconcile(&table).await.unwrap();
    s.fake.take();
    assert_eq!(s.condition(&table, "Ready").1, "Applied");
    assert_eq!(
        s.server.export().await["tables"][0]["configuration"]["custom_root_fields"],
        json!({"select": "posts", "select_stream": "articleFeed"})
    );
    assert!(s.drift_items().await.is_empty());
}

#[tokio::test]
async fn changed_lists_and_stream_names_are_drift_until_corrected() {
    let s = setup(false).await;
    s.apply(&author()).await;
    let article = article_stream("postFeed");
    s.apply(&article).await;
    s.reconcile(&author()).await.unwrap();
    let permission = article_user_lists(None, Some(json!(["select", "select_stream"])), &[]);
    s.apply(&permission).await;
    s.fake.take();

    // Through /v1/query: the stream renamed, and the stream no longer listed.
    s.server
        .ok(json!({"type": "bulk", "args": [
            {"type": "set_table_custom_fields", "version": 2, "args": {"table": "article",
                "custom_root_fields": {"select": "posts", "select_stream": "postStream"}}},
            {"type": "drop_select_permission", "args": {"table": "article", "role": "user"}},
            {"type": "create_select_permission", "args": {"table": "article", "role": "user",
                "permission": {"columns": ["id", "title"], "filter": {"author_id": {"_eq": "X-Svc-User-Id"}},
                    "allow_aggregations": true, "subscription_root_fields": ["select"]}}}]}))
        .await;
    let mut drift: Vec<(Value, Value)> = s
        .drift_items()
        .await
        .into_iter()
        .map(|d| {
            (
                d["definition"]["object"].clone(),
                d["definition"]["fields"].clone(),
            )
        })
        .collect();
    drift.sort_by_key(|(object, _)| object.to_string());
    assert_eq!(
        drift,
        [
            (
                json!("permission:public.article.user.select"),
                json!(["permission.subscription_root_fields"])
            ),
            (
                json!("table:public.article"),
                json!(["configuration.custom_root_fields"])
            ),
        ]
    );
    s.reconcile(&permission).await.unwrap();
    s.reconcile(&article).await.unwrap();
    assert_eq!(
        events(&s.fake.take()),
        vec!["DriftDetected", "DriftDetected"]
    );
    let (status, reason, message) = s.condition(&permission, "Drifted");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Modified"));
    assert!(
        message.contains("permission.subscription_root_fields"),
        "{message}"
    );

    // Asked to heal, the controller puts the declared lists and name back.
    let heal = || Some([("basalt.dev/self-heal".to_owned(), "true".to_owned())].into());
    let mut healing = s.fake.get(&permission);
    healing.metadata.annotations = heal();
    s.fake.put(&healing);
    s.reconcile(&healing).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftCorrected"]);
    let mut healing = s.fake.get(&article);
    healing.metadata.annotations = heal();
    s.fake.put(&healing);
    s.reconcile(&healing).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftCorrected"]);
    assert_eq!(
        article_user_rules(&s).await["subscription_root_fields"],
        json!(["select", "select_stream"])
    );
    assert_eq!(
        s.server.export().await["tables"][1]["configuration"]["custom_root_fields"]
            ["select_stream"],
        "postFeed"
    );
    assert!(s.drift_items().await.is_empty());
}

#[tokio::test]
async fn an_adopted_permission_takes_the_declared_lists() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.server
        .ok(json!({"type": "create_select_permission", "args": {"table": "article", "role": "user",
            "permission": {"columns": ["id", "title"], "filter": {"author_id": {"_eq": "X-Svc-User-Id"}},
                "query_root_fields": ["select"]}}}))
        .await;
    let permission = article_user_lists(
        None,
        Some(json!(["select_stream"])),
        &[("basalt.dev/adopt", "true")],
    );
    let calls = s.apply(&permission).await;
    assert_eq!(events(&calls), vec!["Adopted"]);
    assert_eq!(s.condition(&permission, "Ready").1, "Applied");
    let rules = article_user_rules(&s).await;
    assert!(rules.get("query_root_fields").is_none(), "{rules}");
    assert_eq!(rules["subscription_root_fields"], json!(["select_stream"]));
    assert!(s.drift_items().await.is_empty());
}

#[tokio::test]
async fn select_aggregate_without_allow_aggregations_is_an_invalid_spec() {
    let s = setup(false).await;
    s.apply_tables().await;
    let mut permission = article_user_lists(None, Some(json!(["select", "select_aggregate"])), &[]);
    permission.spec.permission.allow_aggregations = None;
    permission
        .validate_cel()
        .expect("the CRD's rules leave it to the controller");
    s.apply(&permission).await;
    let (status, reason, message) = s.condition(&permission, "Ready");
    assert_eq!((status.as_str(), reason.as_str()), ("False", "InvalidSpec"));
    assert!(
        message.contains("in table \"article\": in permission for role \"user\": \"select_aggregate\" can only be listed when \"allow_aggregations\" is true"),
        "{message}"
    );
    assert!(article_user_rules(&s).await.is_null(), "nothing written");
}
