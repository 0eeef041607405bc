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
        .resolution
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

/// `db_url` as the login role `role` (password `plain`), created when missing, with the right
/// to create schemas in the database and tables in `public`.
async fn as_plain_role(db_url: &str, role: &str) -> String {
    let database = url::Url::parse(db_url)
        .unwrap()
        .path()
        .trim_start_matches('/')
        .to_owned();
    run_sql(
        db_url,
        &format!(
            "DO $$ BEGIN CREATE ROLE {role} LOGIN PASSWORD 'plain';
             EXCEPTION WHEN duplicate_object THEN NULL; END $$;
             GRANT CREATE ON DATABASE \"{database}\" TO {role};
             GRANT CREATE ON SCHEMA public TO {role};"
        ),
    )
    .await;
    let mut url = url::Url::parse(db_url).unwrap();
    url.set_username(role).unwrap();
    url.set_password(Some("plain")).unwrap();
    url.to_string()
}

async fn versions(db_url: &str) -> basalt::catalog::versions::Versions {
    let (client, conn) = tokio_postgres::connect(db_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    basalt::catalog::versions::read(&client).await.unwrap()
}

#[tokio::test]
async fn ddl_is_counted_for_every_role_and_the_catalog_migrates_without_a_superuser() {
    let role = format!("basalt_plain_{}", std::process::id());
    // Migrated by a superuser: the event trigger counts DDL, whoever runs it (the counting
    // function runs as its owner, so a role without rights on basalt_catalog is not refused).
    let db = fresh_database().await;
    let engine = TestServer::on(&db, |_| {}).await;
    let plain = as_plain_role(&db, &role).await;
    let before = versions(&db).await;
    run_sql(&plain, "CREATE TABLE by_plain (id int PRIMARY KEY)").await;
    let after = versions(&db).await;
    assert_eq!(
        after.ddl,
        before.ddl.map(|n| n + 1),
        "{before:?} → {after:?}"
    );
    engine.running.shutdown().await;

    // Migrated by a role that may not create event triggers: the migration still succeeds,
    // DDL is reported untracked, and the engine serves as usual.
    let db = fresh_database().await;
    let plain = as_plain_role(&db, &role).await;
    let engine = TestServer::on(&plain, |_| {}).await;
    assert_eq!(versions(&plain).await.ddl, None);
    engine.sql("CREATE TABLE shelf (id int PRIMARY KEY)").await;
    engine
        .ok(json!({"type": "track_table", "args": {"table": {"name": "shelf"}}}))
        .await;
    assert_eq!(
        engine.gql("{ shelf { id } }").await,
        json!({"data": {"shelf": []}})
    );
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
    use basalt::catalog::managed::OwnershipChanges;
    use basalt::metadata::objects::{catalog_objects, hash, Managed, Owner};
    use basalt::transaction::{self, TransactionError, Writer};
    let db = fresh_database().await;
    run_sql(&db, LIBRARY).await;
    let s = TestServer::on(&db, |_| {}).await;
    s.ok(json!({"type": "track_table", "args": {"table": "author"}}))
        .await;
    let (mut client, conn) = tokio_postgres::connect(&db, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let snapshot = transaction::read(&client).await.unwrap();
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
    transaction::run_as(
        &mut client,
        &nothing,
        Some(snapshot.version),
        Writer::Controller(&first, &Default::default()),
    )
    .await
    .unwrap();
    let lost = transaction::run_as(
        &mut client,
        &nothing,
        Some(snapshot.version),
        Writer::Controller(&second, &Default::default()),
    )
    .await;
    assert!(
        matches!(lost, Err(TransactionError::Conflict { .. })),
        "{lost:?}"
    );
    let rows = basalt::catalog::managed::load(&client).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].owner.uid, "a", "the first claim stands");
}

/// A write starts from the state this replica's previous write committed (no load, no
/// introspection) only while that is exactly what reading again would find: DDL run outside
/// Basalt, a peer's write and the replica's own `run_sql` each send the next request back to
/// the database, and nothing is lost or read stale.
#[tokio::test]
async fn a_write_starts_from_the_previous_one_only_while_nothing_changed() {
    let db = fresh_database().await;
    run_sql(&db, LIBRARY).await;
    let a = TestServer::on(&db, |c| c.metadata_poll_seconds = 3600).await;
    let b = TestServer::on(&db, |c| c.metadata_poll_seconds = 3600).await;
    let introspections = || a.running.state.counters.snapshot().metadata_introspections;
    let permission = |role: &str, columns: Vec<&str>| {
        json!({"type": "create_select_permission", "args": {"table": "author", "role": role,
            "permission": {"columns": columns, "filter": {}}}})
    };
    a.ok(json!({"type": "track_table", "args": {"table": "author"}}))
        .await;
    // Nothing changed since: neither this write nor a read introspects.
    let start = introspections();
    a.ok(permission("reader", vec!["id", "name"])).await;
    a.ok(json!({"type": "export_metadata", "args": {}})).await;
    assert_eq!(introspections(), start, "started from the previous write");

    // DDL outside Basalt: the new column is seen.
    run_sql(&db, "ALTER TABLE author ADD COLUMN nickname text").await;
    a.ok(permission("writer", vec!["id", "nickname"])).await;
    assert_eq!(introspections(), start + 1);

    // A peer's write is neither lost nor overwritten.
    b.ok(permission("peer", vec!["id"])).await;
    a.ok(permission("late", vec!["name"])).await;
    let roles: Vec<String> = a.export().await["tables"][0]["select_permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["role"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(roles, ["reader", "writer", "peer", "late"]);
    assert_eq!(introspections(), start + 2);

    // The replica's own DDL (run_sql) is seen by its next write too.
    a.ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE author ADD COLUMN motto text"}}))
        .await;
    a.ok(permission("motto", vec!["motto"])).await;
    assert_eq!(
        a.gql_role("{ author { motto } }", "motto", &[]).await,
        json!({"data": {"author": []}})
    );
    // The write after that starts from it again.
    let settled = introspections();
    a.ok(json!({"type": "drop_select_permission", "args": {"table": "author", "role": "motto"}}))
        .await;
    assert_eq!(introspections(), settled);
    // reload_metadata always reads the database again.
    a.ok(json!({"type": "reload_metadata", "args": {}})).await;
    assert_eq!(introspections(), settled + 1);
}
