//! One resource reconciled against the fake API server: the finalizer first and nothing
//! written, then the apply with its status patch and one Event, no call when nothing changed,
//! drift reported (or healed when asked), a dependency waited for, objects made inconsistent
//! by `run_sql`, and deletion releasing the finalizer only once the objects are gone.

use super::*;

#[tokio::test]
async fn new_resource_gets_the_finalizer_and_no_catalog_write() {
    let s = setup(false).await;
    let before = s.version().await;
    s.create(&author());
    let action = s.reconcile(&author()).await.unwrap();
    assert_eq!(action, Action::await_change());
    let calls = s.fake.take();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].line(), format!("PATCH {TABLES}/author?"));
    assert!(calls[0].content_type.contains("json-patch"));
    assert_eq!(
        calls[0].body,
        json!([{"op": "test", "path": "/metadata/finalizers", "value": null},
               {"op": "add", "path": "/metadata/finalizers", "value": ["basalt.dev/catalog-cleanup"]}])
    );
    assert_eq!(
        s.version().await,
        before,
        "no catalog write before the finalizer"
    );
    assert_eq!(s.server.export().await["tables"], json!([]));
}

#[tokio::test]
async fn finalized_resource_is_applied_with_status_and_one_event() {
    let s = setup(false).await;
    s.apply(&article()).await;
    assert_eq!(s.condition(&article(), "Ready").1, "DependencyNotReady");
    let calls = s.apply(&author()).await;
    let lines: Vec<String> = calls.iter().map(Call::line).collect();
    assert_eq!(
        lines,
        vec![format!("PATCH {TABLES}/author{SSA}"), EVENTS.to_owned()],
        "{calls:#?}"
    );
    let patch = &calls[0].body;
    assert!(calls[0].content_type.contains("apply-patch"));
    assert_eq!(patch["apiVersion"], "basalt.dev/v1alpha1");
    assert_eq!(patch["kind"], "TrackedTable");
    assert_eq!(patch["status"]["observedGeneration"], 1);
    assert_eq!(patch["status"]["catalogResourceVersion"], s.version().await);
    assert_eq!(
        patch["status"]["objectKeys"],
        json!(["table:public.author", "relationship:public.author.articles"])
    );
    assert!(patch["status"]["specHash"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    assert_eq!(events(&calls), vec!["Applied"]);
    assert_eq!(s.condition(&author(), "Ready").1, "Applied");
    assert_eq!(s.condition(&author(), "Consistent").0, "True");
    assert_eq!(s.condition(&author(), "Drifted").1, "InSync");
    s.reconcile(&article()).await.unwrap();
    assert_eq!(
        events(&s.fake.take()),
        vec!["Applied"],
        "the waiting relationship landed"
    );
    s.server.running.state.reload(false).await.unwrap();
    // The engine serves what the resources declared.
    let data = s.server.gql("{ posts(order_by: {id: asc}, limit: 1) { id author { name articles(limit: 1) { id } } } }").await;
    assert_eq!(data["data"]["posts"][0]["author"]["name"], "Ann", "{data}");
}

#[tokio::test]
async fn second_reconcile_without_change_makes_no_call_and_no_write() {
    let s = setup(false).await;
    s.apply_tables().await;
    let version = s.version().await;
    let action = s.reconcile(&article()).await.unwrap();
    assert_eq!(action, Action::requeue(Duration::from_secs(300)));
    assert!(
        s.fake.take().is_empty(),
        "an in-sync resource makes no API call"
    );
    assert_eq!(s.version().await, version, "and no catalog write");
}

#[tokio::test]
async fn drift_is_reported_only_by_default() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.apply(&article_user_select(&[])).await;
    let version = s.version().await;
    // Someone edits the managed permission through the metadata API.
    s.server
        .ok(json!({"type": "bulk", "args": [
            {"type": "drop_select_permission", "args": {"table": "article", "role": "user"}},
            {"type": "create_select_permission", "args": {"table": "article", "role": "user",
                "permission": {"columns": "*", "filter": {}}}}]}))
        .await;
    let drift = s.drift_items().await;
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(
        drift[0]["definition"]["object"],
        "permission:public.article.user.select"
    );
    assert_eq!(drift[0]["definition"]["drift"], "modified");
    assert_eq!(
        drift[0]["definition"]["fields"],
        json!([
            "permission.columns",
            "permission.filter",
            "permission.limit"
        ])
    );
    assert_eq!(
        drift[0]["definition"]["owner"]["name"],
        "article-user-select"
    );
    s.reconcile(&article_user_select(&[])).await.unwrap();
    let calls = s.fake.take();
    assert_eq!(
        calls[0].line(),
        format!("PATCH {PERMISSIONS}/article-user-select{SSA}")
    );
    assert_eq!(events(&calls), vec!["DriftDetected"]);
    let (status, reason, message) = s.condition(&article_user_select(&[]), "Drifted");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Modified"));
    assert!(message.contains("permission.filter"), "{message}");
    assert_eq!(s.condition(&article_user_select(&[]), "Ready").1, "Drifted");
    assert_eq!(
        s.version().await,
        version + 1,
        "report-only leaves the catalog as edited"
    );
    // drop_inconsistent_metadata cannot resolve a disagreement between two sources of truth.
    s.server
        .ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(s.drift_items().await.len(), 1);
    // Dropping it entirely turns the drift into `missing`.
    s.server
        .ok(json!({"type": "drop_select_permission", "args": {"table": "article", "role": "user"}}))
        .await;
    assert_eq!(s.drift_items().await[0]["definition"]["drift"], "missing");
    s.reconcile(&article_user_select(&[])).await.unwrap();
    assert_eq!(
        s.condition(&article_user_select(&[]), "Drifted").1,
        "Missing"
    );
    assert!(
        events(&s.fake.take()).is_empty(),
        "no new Event without a transition"
    );
}

#[tokio::test]
async fn self_heal_restores_drifted_objects() {
    let s = setup(false).await;
    s.apply_tables().await;
    let healing = article_user_select(&[("basalt.dev/self-heal", "true")]);
    s.apply(&healing).await;
    let wanted = s.server.export().await;
    s.server
        .ok(json!({"type": "drop_select_permission", "args": {"table": "article", "role": "user"}}))
        .await;
    assert_eq!(s.drift_items().await.len(), 1);
    s.reconcile(&healing).await.unwrap();
    let calls = s.fake.take();
    assert_eq!(events(&calls), vec!["DriftCorrected"]);
    assert_eq!(
        s.server.export().await,
        wanted,
        "the permission is back as declared"
    );
    assert!(s.drift_items().await.is_empty());
    assert_eq!(s.condition(&healing, "Drifted").1, "Corrected");
    assert_eq!(s.condition(&healing, "Ready").1, "Applied");
}

#[tokio::test]
async fn controller_wide_self_heal_and_sync_request() {
    let s = setup(true).await;
    s.apply(&article()).await;
    s.server
        .ok(json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "article", "custom_root_fields": {}}}))
        .await;
    s.reconcile(&article()).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["DriftCorrected"]);
    assert_eq!(
        s.server.export().await["tables"][0]["configuration"]["custom_root_fields"]["select"],
        "posts"
    );

    // Report-only controller: a new sync-requested-at value re-applies once.
    // (No relationship here: a sync request counts as handled once everything landed.)
    let s = setup(false).await;
    let article = || {
        tracked(
            "article",
            json!({"table": {"name": "article"},
            "configuration": {"customRootFields": {"select": "posts"}}}),
        )
    };
    s.apply(&article()).await;
    s.server
        .ok(json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "article", "custom_root_fields": {}}}))
        .await;
    s.reconcile(&article()).await.unwrap();
    assert_eq!(s.condition(&article(), "Drifted").0, "True");
    let mut requested = s.fake.get(&article());
    requested.metadata.annotations =
        Some([("basalt.dev/sync-requested-at".to_owned(), "now".to_owned())].into());
    s.fake.put(&requested);
    s.reconcile(&requested).await.unwrap();
    assert_eq!(s.condition(&article(), "Drifted").1, "Corrected");
    assert_eq!(
        s.status(&article()).last_sync_request.as_deref(),
        Some("now")
    );
}

#[tokio::test]
async fn deletion_drops_the_objects_then_releases_the_finalizer() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.apply(&article_user_select(&[])).await;
    s.delete(&article_user_select(&[]));
    s.reconcile(&article_user_select(&[])).await.unwrap();
    let calls = s.fake.take();
    let lines: Vec<String> = calls.iter().map(Call::line).collect();
    assert_eq!(
        lines,
        vec![
            EVENTS.to_owned(),
            format!("PATCH {PERMISSIONS}/article-user-select?")
        ],
        "{calls:#?}"
    );
    assert_eq!(events(&calls), vec!["Deleted"]);
    assert_eq!(
        calls[1].body,
        json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "basalt.dev/catalog-cleanup"},
               {"op": "remove", "path": "/metadata/finalizers/0"}])
    );
    let export = s.server.export().await;
    assert!(
        export["tables"][0].get("select_permissions").is_none(),
        "{export}"
    );
    let client = s.ctx.pool.get().await.unwrap();
    let rows = managed::load(&**client).await.unwrap();
    assert!(rows.iter().all(|r| r.owner.name != "article-user-select"));
}

#[tokio::test]
async fn deletion_blocked_by_dependants_keeps_the_finalizer() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.delete(&author());
    let err = s.reconcile(&author()).await.expect_err("blocked");
    assert!(matches!(err, reconcile::Error::DeletionBlocked(_)), "{err}");
    let calls = s.fake.take();
    assert_eq!(events(&calls), vec!["DeletionBlocked"]);
    assert!(
        calls
            .iter()
            .all(|c| !c.uri.starts_with(&format!("{TABLES}/author?"))),
        "the finalizer stays: {calls:#?}"
    );
    let (_, reason, message) = s.condition(&author(), "Ready");
    assert_eq!(reason, "DeletionBlocked");
    assert!(message.contains("dependency-error"), "{message}");
    // Once the dependant is gone, the deletion converges.
    s.delete(&article());
    s.reconcile(&article()).await.unwrap();
    s.reconcile(&author()).await.unwrap();
    assert_eq!(s.server.export().await["tables"], json!([]));
}

/// A collection whose queries are reordered and changed in its resource ends in the
/// resource's order: applied once, then in sync (no drift item, no Drifted condition, and a
/// second reconcile writes nothing).
#[tokio::test]
async fn query_collection_edits_keep_the_resources_order() {
    let s = setup(false).await;
    let spec = |queries: &[(&str, &str)]| {
        let queries: Vec<Value> = queries
            .iter()
            .map(|(name, query)| json!({"name": name, "query": query}))
            .collect();
        json!({"name": "app", "definition": {"queries": queries}})
    };
    let collection = resource::<QueryCollection>(
        "app",
        spec(&[
            ("a", "query { author { id } }"),
            ("b", "query { article { id } }"),
            ("c", "query { author { name } }"),
        ]),
    );
    s.apply(&collection).await;
    assert_eq!(s.condition(&collection, "Ready").1, "Applied");
    // Reordered, one query changed, one new: c, a (changed), d.
    let mut edited = s.fake.get(&collection);
    edited.metadata.generation = Some(2);
    edited.spec = resource::<QueryCollection>(
        "app",
        spec(&[
            ("c", "query { author { name } }"),
            ("a", "query { author { id name } }"),
            ("d", "query { article { title } }"),
        ]),
    )
    .spec;
    s.fake.put(&edited);
    s.reconcile(&edited).await.unwrap();
    s.fake.take();
    assert_eq!(s.condition(&edited, "Ready").1, "Applied");
    let exported = s.server.export().await;
    let queries: Vec<(String, String)> = exported["query_collections"][0]["definition"]["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            (
                q["name"].as_str().unwrap().to_owned(),
                q["query"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        queries,
        [
            ("c".to_owned(), "query { author { name } }".to_owned()),
            ("a".to_owned(), "query { author { id name } }".to_owned()),
            ("d".to_owned(), "query { article { title } }".to_owned()),
        ]
    );
    assert!(
        s.drift_items().await.is_empty(),
        "{:?}",
        s.drift_items().await
    );
    let version = s.version().await;
    s.reconcile(&edited).await.unwrap();
    assert_eq!(s.version().await, version, "in sync: nothing written again");
    assert!(
        s.status(&edited)
            .conditions
            .iter()
            .all(|c| c.type_ != "Drifted" || c.status == "False"),
        "{:?}",
        s.status(&edited)
    );
}

#[tokio::test]
async fn relationship_waits_for_its_target_without_blocking_the_table() {
    // `posts` needs the popular_article view tracked, which happens later.
    let s2 = setup(false).await;
    let calls = s2
        .apply(&tracked("author", json!({"table": {"name": "author"}, "arrayRelationships": [
            {"name": "posts", "using": {"manualConfiguration": {"remoteTable": {"name": "popular_article"}, "columnMapping": {"id": "author_id"}}}}]})))
        .await;
    assert_eq!(events(&calls), vec!["ApplyFailed"]);
    let waiting = s2
        .fake
        .get(&tracked("author", json!({"table": {"name": "author"}})));
    let (_, reason, message) = s2.condition(&waiting, "Ready");
    assert_eq!(reason, "DependencyNotReady");
    assert!(
        message.contains("relationship:public.author.posts"),
        "{message}"
    );
    assert_eq!(
        s2.server.export().await["tables"][0]["table"]["name"],
        "author",
        "the table is tracked"
    );
    s2.server
        .ok(json!({"type": "track_table", "args": {"table": "popular_article"}}))
        .await;
    s2.reconcile(&waiting).await.unwrap();
    assert_eq!(s2.condition(&waiting, "Ready").1, "Applied");
    let export = s2.server.export().await;
    assert_eq!(
        export["tables"][0]["array_relationships"][0]["name"], "posts",
        "{export}"
    );
}

#[tokio::test]
async fn unchecked_run_sql_drop_makes_resources_inconsistent() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.apply(&article_user_select(&[])).await;
    s.server
        .ok(json!({"type": "run_sql", "args": {"sql": "DROP TABLE comment; DROP TABLE article CASCADE", "check_metadata_consistency": false}}))
        .await;
    s.reconcile(&article()).await.unwrap();
    s.reconcile(&article_user_select(&[])).await.unwrap();
    for (status, what) in [
        (s.condition(&article(), "Consistent"), "table"),
        (
            s.condition(&article_user_select(&[]), "Consistent"),
            "permission",
        ),
    ] {
        assert_eq!(
            (status.0.as_str(), status.1.as_str()),
            ("False", "Inconsistent"),
            "{what}"
        );
    }
    assert_eq!(s.condition(&article(), "Ready").1, "Inconsistent");
    assert!(events(&s.fake.take()).contains(&"Inconsistent".to_owned()));
    // Each inconsistent object says who owns it: the resource to fix, or the API.
    let r = s
        .server
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    let owner_of = |kind: &str| -> Value {
        r["inconsistent_objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["type"] == kind)
            .map(|i| i["owner"].clone())
            .unwrap_or(Value::Null)
    };
    assert_eq!(
        owner_of("table"),
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable", "namespace": NS, "name": "article"}),
        "{r}"
    );
    assert_eq!(
        owner_of("select_permission"),
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "Permission", "namespace": NS, "name": "article-user-select"})
    );
}

#[tokio::test]
async fn deletion_in_any_order_converges() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.apply(&article_user_select(&[])).await;
    // The referenced table first: blocked until the table whose relationship points at it
    // is gone; the permission last, after its table took it along.
    s.delete(&author());
    assert!(s.reconcile(&author()).await.is_err());
    s.delete(&article());
    s.reconcile(&article()).await.unwrap();
    s.reconcile(&author()).await.unwrap();
    s.delete(&article_user_select(&[]));
    s.reconcile(&article_user_select(&[])).await.unwrap();
    assert_eq!(s.server.export().await["tables"], json!([]));
    let client = s.ctx.pool.get().await.unwrap();
    assert!(managed::load(&**client).await.unwrap().is_empty());
    assert!(s.drift_items().await.is_empty());
}
