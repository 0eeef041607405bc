//! The TrackedFunction kind: waiting for its table and for the database, its grants waiting
//! for their select permissions without undoing the function, configuration and comment
//! changes, drift, export, and deletion.

use super::*;

fn search(spec: Value) -> TrackedFunction {
    resource("search-articles", spec)
}

fn article_user_select() -> Permission {
    permission(
        "article-user-select",
        json!({"table": {"name": "article"}, "role": "user", "operation": "select",
            "permission": {"columns": ["id", "title"], "filter": {}}}),
        &[],
    )
}

#[tokio::test]
async fn tracked_function_waits_lands_changes_drifts_and_goes() {
    let s = setup(false).await;
    let spec = json!({"function": {"name": "search_articles"}, "permissions": [{"role": "user"}]});
    // Before its table is tracked: waiting, nothing written.
    s.apply(&search(spec.clone())).await;
    let (_, reason, message) = s.condition(&search(spec.clone()), "Ready");
    assert_eq!(reason, "DependencyNotReady");
    assert!(
        message.contains("table \"article\" is not tracked"),
        "{message}"
    );
    s.apply_tables().await;
    // The table is there, the grant's select permission is not: the function lands alone.
    s.reconcile(&search(spec.clone())).await.unwrap();
    let (_, reason, message) = s.condition(&search(spec.clone()), "Ready");
    assert_eq!(reason, "DependencyNotReady", "{message}");
    assert!(
        message.contains("function permission search_articles.user waits"),
        "{message}"
    );
    let exported = s.server.export().await;
    assert_eq!(
        exported["functions"],
        json!([{"function": {"schema": "public", "name": "search_articles"}}])
    );
    s.apply(&article_user_select()).await;
    s.reconcile(&search(spec.clone())).await.unwrap();
    assert_eq!(s.condition(&search(spec.clone()), "Ready").1, "Applied");
    assert_eq!(
        s.status(&search(spec.clone())).object_keys,
        vec![
            "function:public.search_articles",
            "function_permission:public.search_articles.user"
        ]
    );
    s.server.running.state.reload(false).await.unwrap();
    let found = s
        .server
        .gql_role(
            r#"{ search_articles(args: {term: "rust"}) { id title } }"#,
            "user",
            &[],
        )
        .await;
    assert_eq!(
        found,
        json!({"data": {"search_articles": [{"id": 1, "title": "Rust in practice"}]}})
    );

    // A configuration change, then a comment change: the grant stays through both.
    let mut renamed = s.fake.get(&search(spec.clone()));
    renamed.metadata.generation = Some(2);
    renamed.spec.configuration.custom_name = Some("findArticles".into());
    s.fake.put(&renamed);
    s.reconcile(&renamed).await.unwrap();
    assert_eq!(s.condition(&renamed, "Ready").1, "Applied");
    renamed.metadata.generation = Some(3);
    renamed.spec.comment = Some("search by title".into());
    s.fake.put(&renamed);
    s.reconcile(&renamed).await.unwrap();
    assert_eq!(s.condition(&renamed, "Ready").1, "Applied");
    assert_eq!(
        s.server.export().await["functions"],
        json!([{"function": {"schema": "public", "name": "search_articles"},
            "configuration": {"custom_name": "findArticles"},
            "permissions": [{"role": "user"}], "comment": "search by title"}])
    );

    // Changed through /v1/query: drift on the function.
    s.server
        .ok(
            json!({"type": "set_function_customization", "args": {"function": "search_articles",
            "configuration": {"custom_name": "lookUp"}}}),
        )
        .await;
    s.reconcile(&renamed).await.unwrap();
    let (_, reason, message) = s.condition(&renamed, "Ready");
    assert_eq!(reason, "Drifted");
    assert!(
        message.contains("function:public.search_articles: configuration"),
        "{message}"
    );

    // Exported as a resource.
    let metadata = serde_json::from_value(s.server.export().await).unwrap();
    let export = basalt::controller::export::resources(&metadata, NS).unwrap();
    let function = export
        .resources
        .iter()
        .find(|r| r.kind == "TrackedFunction")
        .unwrap();
    assert_eq!(
        function.manifest["spec"],
        json!({"function": {"schema": "public", "name": "search_articles"},
            "configuration": {"customName": "lookUp"}, "comment": "search by title",
            "permissions": [{"role": "user"}]})
    );

    // Deleted: untracked with its grant.
    s.delete(&renamed);
    s.reconcile(&renamed).await.unwrap();
    assert_eq!(s.server.export().await.get("functions"), None);
}

#[tokio::test]
async fn a_function_the_database_lacks_waits_for_its_migration() {
    let s = setup(false).await;
    s.apply_tables().await;
    let missing: TrackedFunction = resource("not-yet", json!({"function": {"name": "not_yet"}}));
    s.apply(&missing).await;
    let (_, reason, message) = s.condition(&missing, "Ready");
    assert_eq!(reason, "DatabaseObjectMissing", "{message}");
    // A mutation placement for a STABLE function breaks a rule: the spec is invalid.
    let wrong: TrackedFunction = resource(
        "wrong",
        json!({"function": {"name": "search_articles"}, "configuration": {"exposedAs": "mutation"}}),
    );
    s.apply(&wrong).await;
    let (_, reason, message) = s.condition(&wrong, "Ready");
    assert_eq!(reason, "InvalidSpec", "{message}");
    assert!(message.contains("not marked VOLATILE"), "{message}");
}
