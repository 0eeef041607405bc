//! Who owns an object: a resource conflicts with an object the metadata API made until it
//! adopts it, exports name each object's owner, reject mode refuses imperative changes to
//! managed objects, orphans are reported and released, and suspended resources and the
//! orphan deletion policy leave the catalog alone.

use super::*;

#[tokio::test]
async fn conflict_backs_off_until_adopted() {
    let s = setup(false).await;
    s.server
        .ok(json!({"type": "track_table", "args": {"table": "article"}}))
        .await;
    let plain = tracked("article", json!({"table": {"name": "article"}}));
    let calls = s.apply(&plain).await;
    assert_eq!(events(&calls), vec!["Conflict"]);
    let (_, reason, message) = s.condition(&plain, "Ready");
    assert_eq!(reason, "Conflict");
    assert!(message.contains("basalt.dev/adopt"), "{message}");
    assert_eq!(s.ctx.failures("TrackedTable/shop/article"), 1);
    s.reconcile(&plain).await.unwrap();
    assert_eq!(s.ctx.failures("TrackedTable/shop/article"), 2);
    assert!(events(&s.fake.take()).is_empty(), "no repeated Event");

    let mut adopting = s.fake.get(&plain);
    adopting.metadata.annotations =
        Some([("basalt.dev/adopt".to_owned(), "true".to_owned())].into());
    adopting.spec = serde_json::from_value(json!({"table": {"name": "article"},
        "configuration": {"customRootFields": {"select": "posts"}}}))
    .unwrap();
    s.fake.put(&adopting);
    s.reconcile(&adopting).await.unwrap();
    assert_eq!(events(&s.fake.take()), vec!["Adopted"]);
    assert_eq!(s.ctx.failures("TrackedTable/shop/article"), 0);
    assert_eq!(s.condition(&plain, "Ready").1, "Applied");
    let export = s.server.export().await;
    assert_eq!(
        export["tables"][0]["configuration"]["custom_root_fields"]["select"],
        "posts"
    );
}

#[tokio::test]
async fn export_says_who_owns_each_object() {
    let s = setup(false).await;
    s.apply_tables().await;
    s.server
        .ok(
            json!({"type": "create_select_permission", "args": {"table": "author", "role": "guest",
            "permission": {"columns": ["id"], "filter": {}}}}),
        )
        .await;
    let plain = s.server.export().await;
    assert!(plain.get("owners").is_none(), "only when asked");
    let r = s
        .server
        .ok(json!({"type": "export_metadata", "args": {"include_owners": true}}))
        .await;
    let owners = &r["owners"];
    assert_eq!(
        owners["table:public.author"],
        json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable", "namespace": NS, "name": "author"}),
        "{owners}"
    );
    assert_eq!(
        owners["relationship:public.author.articles"]["name"],
        "author"
    );
    assert_eq!(owners["permission:public.author.guest.select"], "api");
    // The document itself is unchanged, and can be replaced as it is (owners are ignored).
    let mut document = r.clone();
    document.as_object_mut().unwrap().remove("owners");
    assert_eq!(document, plain);
    s.server
        .ok(json!({"type": "replace_metadata", "args": r}))
        .await;
    assert_eq!(s.server.export().await, plain);
}

#[tokio::test]
async fn reject_mode_refuses_imperative_changes_to_managed_objects() {
    let db = crate::harness::fresh_database().await;
    crate::harness::run_sql(&db, BLOG).await;
    let server = TestServer::on(&db, |c| {
        c.managed_metadata = basalt::config::ManagedMetadata::Reject;
    })
    .await;
    let fake = Arc::new(FakeApi::default());
    let s = Setup {
        ctx: context(fake.clone(), &db, false),
        fake,
        server,
    };
    s.apply(&article()).await;
    s.apply(&article_user_select(&[])).await;
    let response = s
        .server
        .fails(
            json!({"type": "drop_select_permission", "args": {"table": "article", "role": "user"}}),
            400,
            "not-supported",
            "$.args",
        )
        .await;
    assert_eq!(
        response["error"],
        "permission:public.article.user.select is managed by basalt.dev/v1alpha1 Permission shop/article-user-select"
    );
    s.server
        .fails(
            json!({"type": "clear_metadata", "args": {}}),
            400,
            "not-supported",
            "$.args",
        )
        .await;
    // Unmanaged objects are still the metadata API's.
    s.server
        .ok(json!({"type": "track_table", "args": {"table": "comment"}}))
        .await;
    s.server
        .ok(json!({"type": "untrack_table", "args": {"table": "comment"}}))
        .await;
}

#[tokio::test]
async fn orphans_are_reported_and_release_ownership_forgets_them() {
    let s = setup(false).await;
    s.apply_tables().await;
    let orphaned = reconcile::mark_orphans(&s.ctx.pool, &Default::default(), &[Some(NS.into())])
        .await
        .unwrap();
    assert_eq!(
        orphaned,
        vec![
            "relationship:public.article.author",
            "relationship:public.author.articles",
            "table:public.article",
            "table:public.author"
        ]
    );
    let drift = s.drift_items().await;
    assert_eq!(drift.len(), 4);
    assert!(drift.iter().all(|d| d["definition"]["drift"] == "orphaned"));
    // Unwatched namespaces are never judged.
    let other = reconcile::mark_orphans(&s.ctx.pool, &Default::default(), &[Some("other".into())])
        .await
        .unwrap();
    assert!(other.is_empty());
    let client = s.ctx.pool.get().await.unwrap();
    assert_eq!(managed::release(&**client, Some(NS)).await.unwrap(), 4);
    assert!(s.drift_items().await.is_empty());
    assert!(s.inconsistent().await.is_empty());
}

#[tokio::test]
async fn suspended_resources_are_left_alone_and_orphan_policy_keeps_objects() {
    let s = setup(false).await;
    let before = s.version().await;
    let suspended = permission(
        "suspended",
        json!({"table": {"name": "article"}, "role": "user", "operation": "delete", "permission": {"filter": {}}}),
        &[("basalt.dev/reconcile", "disabled")],
    );
    s.apply(&suspended).await;
    let (status, reason, _) = s.condition(&suspended, "Ready");
    assert_eq!((status.as_str(), reason.as_str()), ("Unknown", "Suspended"));
    assert_eq!(
        s.version().await,
        before,
        "a suspended resource never touches the catalog"
    );

    let kept = tracked("kept", json!({"table": {"name": "comment"}}));
    let mut kept_meta = kept.clone();
    kept_meta.metadata.annotations =
        Some([("basalt.dev/deletion-policy".to_owned(), "orphan".to_owned())].into());
    s.apply(&kept_meta).await;
    s.delete(&kept_meta);
    s.reconcile(&kept_meta).await.unwrap();
    let calls = s.fake.take();
    assert_eq!(events(&calls), vec!["Deleted"]);
    assert!(
        calls[0].body["note"]
            .as_str()
            .unwrap()
            .contains("released ownership"),
        "{calls:#?}"
    );
    assert_eq!(
        s.server.export().await["tables"][0]["table"]["name"],
        "comment",
        "object kept"
    );
    let client = s.ctx.pool.get().await.unwrap();
    assert!(
        managed::load(&**client).await.unwrap().is_empty(),
        "ownership released"
    );
}
