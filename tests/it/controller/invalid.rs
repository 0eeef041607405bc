//! Objects that no longer match their schema (a CRD upgraded under them): reported once per
//! change, and always deletable — the finalizer's cleanup runs from the metadata alone.

use super::*;

fn invalid_table(name: &str, uid: &str, deleting: bool) -> InvalidObject {
    let mut metadata = meta(name, &[]);
    metadata.uid = Some(uid.to_owned());
    metadata.resource_version = Some("7".to_owned());
    if deleting {
        metadata.finalizers = Some(vec![
            "basalt.dev/catalog-cleanup".to_owned(),
            "example.com/other".to_owned(),
        ]);
        metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
    }
    InvalidObject {
        error: "spec.table: missing field `name`".into(),
        metadata,
    }
}

#[tokio::test]
async fn an_invalid_object_is_reported_once_per_change() {
    let s = setup(false).await;
    s.fake.put(
        &json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable",
        "metadata": {"name": "broken", "namespace": NS}, "spec": {"table": {}}}),
    );
    let reconcile_invalid = |invalid: InvalidObject| {
        let guard: DeserializeGuard<TrackedTable> = DeserializeGuard(Err(invalid));
        reconcile::reconcile(Arc::new(guard), s.ctx.clone())
    };
    let action = reconcile_invalid(invalid_table("broken", "uid-broken", false))
        .await
        .unwrap();
    assert_eq!(action, Action::await_change());
    let calls = s.fake.take();
    assert_eq!(calls[0].line(), format!("PATCH {TABLES}/broken/status?"));
    assert!(calls[0].content_type.contains("merge-patch"));
    let ready = &calls[0].body["status"]["conditions"][0];
    assert_eq!(ready["reason"], "InvalidSpec");
    assert!(ready["message"].as_str().unwrap().contains("missing field"));
    assert_eq!(events(&calls), vec!["InvalidSpec"]);
    // A catalog notification re-runs it: nothing to write, no repeated Event.
    reconcile_invalid(invalid_table("broken", "uid-broken", false))
        .await
        .unwrap();
    assert!(
        s.fake.take().is_empty(),
        "status and Events only on transitions"
    );
    // A new generation that is still invalid is a transition.
    let mut next = invalid_table("broken", "uid-broken", false);
    next.metadata.generation = Some(2);
    reconcile_invalid(next).await.unwrap();
    let calls = s.fake.take();
    assert_eq!(calls[0].line(), format!("PATCH {TABLES}/broken/status?"));
    assert_eq!(calls[0].body["status"]["observedGeneration"], 2);
    // (the recorder counts the repeated Event into the first one's series)
    assert!(calls.iter().any(|c| c.uri.contains("/events")), "{calls:?}");
}

#[tokio::test]
async fn an_invalid_object_being_deleted_releases_its_catalog_objects_and_finalizer() {
    let s = setup(false).await;
    let table = tracked("article", json!({"table": {"name": "article"}}));
    s.apply(&table).await;
    assert_eq!(s.condition(&table, "Ready").1, "Applied");
    let export = s.server.export().await;
    assert_eq!(export["tables"][0]["table"]["name"], "article");
    // After an upgrade the stored object no longer reads; then someone deletes it.
    let uid = table.metadata.uid.clone().unwrap();
    let invalid = invalid_table("article", &uid, true);
    let guard: DeserializeGuard<TrackedTable> = DeserializeGuard(Err(invalid));
    let action = reconcile::reconcile(Arc::new(guard), s.ctx.clone())
        .await
        .unwrap();
    assert_eq!(action, Action::await_change());
    let calls = s.fake.take();
    let patch = calls
        .iter()
        .find(|c| c.method == "PATCH" && c.uri.starts_with(&format!("{TABLES}/article?")))
        .unwrap_or_else(|| panic!("no finalizer patch: {calls:?}"));
    assert_eq!(
        patch.body["metadata"],
        json!({"finalizers": ["example.com/other"], "resourceVersion": "7"}),
        "only our finalizer goes, with optimistic concurrency"
    );
    assert_eq!(events(&calls), vec!["Deleted"]);
    assert_eq!(s.server.export().await["tables"], json!([]));
    let rows = query_json(
        &s.server.db_url,
        "SELECT object_key FROM basalt_catalog.managed_objects",
    )
    .await;
    assert_eq!(rows, json!([]), "ownership released");
    // Without our finalizer there is nothing to do.
    let mut done = invalid_table("article", &uid, true);
    done.metadata.finalizers = Some(vec!["example.com/other".to_owned()]);
    let guard: DeserializeGuard<TrackedTable> = DeserializeGuard(Err(done));
    reconcile::reconcile(Arc::new(guard), s.ctx.clone())
        .await
        .unwrap();
    assert!(s.fake.take().is_empty());
}
