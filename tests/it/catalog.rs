//! The catalog across processes: replicas see each other's changes, writers serialize,
//! compare-and-swap with resource_version, idempotent migrations.

use crate::harness::{fresh_database, run_sql, TestServer, LIBRARY};
use serde_json::json;
use std::time::{Duration, Instant};

async fn eventually(mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("condition not met within 20 s");
}

#[tokio::test]
async fn two_engines_see_each_others_changes() {
    let db = fresh_database().await;
    run_sql(&db, LIBRARY).await;
    // A long poll interval: only NOTIFY can make this prompt.
    let a = TestServer::on(&db, |c| c.metadata_poll_seconds = 3600).await;
    let b = TestServer::on(&db, |c| c.metadata_poll_seconds = 3600).await;
    a.ok(json!({"type": "track_table", "args": {"table": "author"}}))
        .await;
    let version_a = a.running.state.snapshot().version;
    eventually(async || b.running.state.snapshot().version == version_a).await;
    assert!(b
        .running
        .state
        .snapshot()
        .schema
        .resolved
        .tables
        .contains_key(&basalt::metadata::types::QualifiedTable::new(
            "public", "author"
        )));
    b.ok(json!({"type": "track_table", "args": {"table": "article"}}))
        .await;
    eventually(async || a.running.state.snapshot().metadata.tables.len() == 2).await;
    assert_eq!(a.export().await, b.export().await);
}

#[tokio::test]
async fn periodic_poll_catches_changes_without_notify() {
    let db = fresh_database().await;
    run_sql(&db, LIBRARY).await;
    let a = TestServer::on(&db, |c| c.metadata_poll_seconds = 1).await;
    // A write that bypasses Basalt (no NOTIFY).
    run_sql(&db, r#"UPDATE basalt_catalog.metadata SET metadata = '{"version":2,"tables":[{"table":{"schema":"public","name":"author"}}]}', resource_version = resource_version + 1"#).await;
    eventually(async || a.running.state.snapshot().metadata.tables.len() == 1).await;
}

#[tokio::test]
async fn concurrent_writers_lose_no_update() {
    let s = TestServer::library().await;
    let base = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(base["is_consistent"], true);
    let writes = (0..20).map(|i| {
        let body = json!({"type": "create_query_collection", "args": {"name": format!("c{i}"), "definition": {"queries": []}}});
        let s = &s;
        async move { s.query(body).await }
    });
    let results = futures_util::future::join_all(writes).await;
    assert!(
        results.iter().all(|(status, _)| *status == 200),
        "{results:?}"
    );
    let exported = s.export().await;
    assert_eq!(exported["query_collections"].as_array().unwrap().len(), 20);
    assert_eq!(s.running.state.snapshot().version, 21);
}

#[tokio::test]
async fn stale_resource_version_gets_409() {
    let s = TestServer::library().await;
    let response = s
        .http
        .post(format!("{}/v1/query", s.base))
        .json(&json!({"type": "track_table", "args": {"table": "author"}, "resource_version": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-basalt-resource-version"], "2");
    let r = s
        .fails(
            json!({"type": "track_table", "args": {"table": "article"}, "resource_version": 1}),
            409,
            "conflict",
            "$.resource_version",
        )
        .await;
    assert!(r["error"].as_str().unwrap().contains("expected 1"), "{r}");
    s.ok(json!({"type": "track_table", "args": {"table": "article"}, "resource_version": 2}))
        .await;
    // Reads ignore the expectation.
    s.ok(json!({"type": "export_metadata", "args": {}, "resource_version": 1}))
        .await;
    // A no-op write does not bump the version.
    s.ok(json!({"type": "create_query_collection", "args": {"name": "c", "definition": {"queries": []}}})).await;
    s.ok(json!({"type": "add_collection_to_allowlist", "args": {"collection": "c"}}))
        .await;
    let v = s.running.state.snapshot().version;
    s.ok(json!({"type": "add_collection_to_allowlist", "args": {"collection": "c"}}))
        .await;
    assert_eq!(s.running.state.snapshot().version, v);
}

#[tokio::test]
async fn migrations_are_idempotent_and_safe_in_parallel() {
    let db = fresh_database().await;
    let (a, b) = tokio::join!(TestServer::on(&db, |_| {}), TestServer::on(&db, |_| {}));
    a.ok(json!({"type": "create_query_collection", "args": {"name": "c", "definition": {"queries": []}}})).await;
    a.running.shutdown().await;
    let c = TestServer::on(&db, |_| {}).await;
    assert_eq!(c.export().await["query_collections"][0]["name"], "c");
    assert_eq!(b.export().await, c.export().await);
}

#[tokio::test]
async fn two_controllers_claiming_the_same_object_at_once_cannot_both_win() {
    use basalt::catalog::{self, managed::OwnershipChanges, CatalogError, Writer};
    use basalt::metadata::objects::{catalog_objects, hash, Managed, Owner};
    let db = fresh_database().await;
    run_sql(&db, LIBRARY).await;
    let s = TestServer::on(&db, |_| {}).await;
    s.ok(json!({"type": "track_table", "args": {"table": "author"}}))
        .await;
    let (mut client, conn) = tokio_postgres::connect(&db, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let snapshot = catalog::build(&client).await.unwrap();
    let (key, object) = catalog_objects(&snapshot.metadata)
        .into_iter()
        .next()
        .unwrap();
    // Both adopt the unowned, in-sync table: an ownership-only write, planned against the
    // same state (no owner).
    let claim = |uid: &str| {
        let owner = Owner {
            api_version: "basalt.dev/v1alpha1".into(),
            kind: "TrackedTable".into(),
            namespace: "shop".into(),
            name: format!("author-{uid}"),
            uid: uid.into(),
        };
        let mut changes = OwnershipChanges::default();
        changes.upsert.push(Managed {
            key: key.clone(),
            owner,
            generation: 1,
            desired: object.canonical(),
            desired_hash: hash(&object.canonical()),
            applied_version: 0,
            orphaned: false,
        });
        changes.seen.push((key.clone(), None));
        changes
    };
    let (first, second) = (claim("a"), claim("b"));
    let nothing = basalt::ops::Op::Bulk(Vec::new());
    catalog::execute_with(
        &mut client,
        &nothing,
        Some(snapshot.version),
        Writer::Controller(&first),
    )
    .await
    .unwrap();
    let lost = catalog::execute_with(
        &mut client,
        &nothing,
        Some(snapshot.version),
        Writer::Controller(&second),
    )
    .await;
    assert!(
        matches!(lost, Err(CatalogError::Conflict { .. })),
        "{lost:?}"
    );
    let rows = basalt::catalog::managed::load(&client).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].owner.uid, "a", "the first claim stands");
}
