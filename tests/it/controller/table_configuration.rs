//! A TrackedTable's `configuration`, through `customRootFields.updateMany` (the name of
//! `update_<t>_many`): it reaches the catalog, comes back in the export to resources, a spec
//! edit renames it in place, a rename through `/v1/query` is drift until corrected, an
//! adopted table takes the declared name, and a name another table serves is refused.

use super::*;

/// Table article with custom names for its list query and for `update_article_many`.
fn article_update_many(name: &str) -> TrackedTable {
    tracked(
        "article",
        json!({"table": {"name": "article"},
            "configuration": {"customRootFields": {"select": "posts", "updateMany": name}}}),
    )
}

async fn custom_root_fields(s: &Setup) -> Value {
    s.server.export().await["tables"][0]["configuration"]["custom_root_fields"].clone()
}

#[tokio::test]
async fn update_many_reaches_the_catalog_and_comes_back_in_the_export() {
    let s = setup(false).await;
    let article = article_update_many("editPosts");
    s.apply(&article).await;
    assert_eq!(s.condition(&article, "Ready").1, "Applied");
    let export = s.server.export().await;
    assert_eq!(
        export["tables"][0]["configuration"],
        json!({"custom_root_fields": {"select": "posts", "update_many": "editPosts"},
            "custom_column_names": {}})
    );

    // `basalt export --format crds` writes it back as the resource declared it.
    let metadata = serde_json::from_value(export).unwrap();
    let exported = basalt::controller::export::resources(&metadata, NS).unwrap();
    let table = exported
        .resources
        .iter()
        .find(|r| r.kind == "TrackedTable")
        .unwrap();
    assert_eq!(
        table.manifest["spec"]["configuration"],
        json!({"customRootFields": {"select": "posts", "updateMany": "editPosts"}})
    );
    let back: TrackedTable = serde_json::from_value(table.manifest.clone()).unwrap();
    assert_eq!(back.spec.entry().unwrap(), article.spec.entry().unwrap());

    // A spec edit renames it in place.
    let mut edited = s.fake.get(&article);
    edited.metadata.generation = Some(2);
    edited.spec = article_update_many("editArticles").spec;
    s.fake.put(&edited);
    s.reconcile(&edited).await.unwrap();
    s.fake.take();
    assert_eq!(s.condition(&edited, "Ready").1, "Applied");
    assert_eq!(s.status(&edited).observed_generation, Some(2));
    assert_eq!(
        custom_root_fields(&s).await,
        json!({"select": "posts", "update_many": "editArticles"})
    );
    assert!(s.drift_items().await.is_empty());
}

#[tokio::test]
async fn a_renamed_update_many_is_drift_until_corrected() {
    let s = setup(false).await;
    let article = article_update_many("editPosts");
    s.apply(&article).await;
    s.server
        .ok(
            json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "article",
            "custom_root_fields": {"select": "posts", "update_many": "bulkEditPosts"}}}),
        )
        .await;
    let drift = s.drift_items().await;
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(drift[0]["definition"]["object"], "table:public.article");
    assert_eq!(drift[0]["definition"]["drift"], "modified");
    assert_eq!(
        drift[0]["definition"]["fields"],
        json!(["configuration.custom_root_fields"])
    );
    s.reconcile(&article).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftDetected"]);
    let (status, reason, message) = s.condition(&article, "Drifted");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Modified"));
    assert!(
        message.contains("configuration.custom_root_fields"),
        "{message}"
    );
    assert_eq!(
        custom_root_fields(&s).await["update_many"],
        "bulkEditPosts",
        "report-only leaves the catalog as edited"
    );

    // Asked to heal, the controller puts the declared name back.
    let mut healing = s.fake.get(&article);
    healing.metadata.annotations =
        Some([("basalt.dev/self-heal".to_owned(), "true".to_owned())].into());
    s.fake.put(&healing);
    s.reconcile(&healing).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftCorrected"]);
    assert_eq!(
        custom_root_fields(&s).await,
        json!({"select": "posts", "update_many": "editPosts"})
    );
    assert!(s.drift_items().await.is_empty());
    assert_eq!(s.condition(&article, "Drifted").1, "Corrected");
}

#[tokio::test]
async fn an_adopted_table_takes_the_declared_update_many() {
    let s = setup(false).await;
    s.server
        .ok(
            json!({"type": "track_table", "version": 2, "args": {"table": "article",
            "configuration": {"custom_root_fields": {"update_many": "bulkEditPosts"}}}}),
        )
        .await;
    let mut article = article_update_many("editPosts");
    article.metadata.annotations =
        Some([("basalt.dev/adopt".to_owned(), "true".to_owned())].into());
    let calls = s.apply(&article).await;
    assert_eq!(events(&calls), vec!["Adopted"]);
    assert_eq!(s.condition(&article, "Ready").1, "Applied");
    assert_eq!(
        custom_root_fields(&s).await,
        json!({"select": "posts", "update_many": "editPosts"})
    );
    assert!(s.drift_items().await.is_empty());
}

#[tokio::test]
async fn an_update_many_another_table_serves_is_an_invalid_spec() {
    let s = setup(false).await;
    s.apply(&article_update_many("editPosts")).await;
    let author = tracked(
        "author",
        json!({"table": {"name": "author"},
            "configuration": {"customRootFields": {"updateMany": "editPosts"}}}),
    );
    s.apply(&author).await;
    let (status, reason, message) = s.condition(&author, "Ready");
    assert_eq!((status.as_str(), reason.as_str()), ("False", "InvalidSpec"));
    assert!(
        message.contains(
            "the root field \"editPosts\" of table \"author\" conflicts with a root field of table \"article\""
        ),
        "{message}"
    );
    assert_eq!(
        s.server.export().await["tables"].as_array().unwrap().len(),
        1
    );
}
