//! Crashes: an engine killed with SIGKILL in the middle of a large `replace_metadata` or
//! `bulk` leaves the catalog exactly as it was or exactly as the request would have left it,
//! never in between; a Postgres restart under load is survived without restarting Basalt.

use crate::harness::{
    fresh_database, query_json, run_sql, spawn_serve, spawned_query, Spawned, TestServer,
};
use basalt::embedded::{EmbeddedPostgres, StartOptions};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const SECRET: &str = "crash-secret";
const TABLES: usize = 150;

/// `TABLES` tables in a chain of foreign keys.
fn chain_sql() -> String {
    let mut sql = String::from("CREATE TABLE t0 (id int PRIMARY KEY, label text);");
    for i in 1..TABLES {
        sql.push_str(&format!(
            "CREATE TABLE t{i} (id int PRIMARY KEY, label text, up int REFERENCES t{} (id));",
            i - 1
        ));
    }
    sql
}

/// A document tracking every table, with a relationship to the previous one and a select
/// permission each.
fn chain_metadata() -> Value {
    let tables: Vec<Value> = (0..TABLES)
        .map(|i| {
            let mut entry = json!({
                "table": {"schema": "public", "name": format!("t{i}")},
                "select_permissions": [{"role": "user", "permission": {"columns": ["id", "label"], "filter": {"id": {"_gt": 0}}}}],
            });
            if i > 0 {
                entry["object_relationships"] =
                    json!([{"name": "up_row", "using": {"foreign_key_constraint_on": "up"}}]);
            }
            entry
        })
        .collect();
    json!({"version": 2, "tables": tables})
}

/// The stored document and version, read from the catalog table itself.
async fn stored(db: &str) -> (Value, i64) {
    let row = query_json(
        db,
        "SELECT metadata, resource_version FROM basalt_catalog.metadata WHERE id = 1",
    )
    .await;
    (
        row[0]["metadata"].clone(),
        row[0]["resource_version"].as_i64().unwrap(),
    )
}

/// Sends `request` to a fresh engine on `db`, kills it after `delay`, and returns what the
/// catalog holds afterwards.
async fn kill_during(db: &str, request: Value, delay: Duration) -> (Value, i64) {
    let Spawned { base, mut child } =
        spawn_serve(db, SECRET, &[("BASALT_MAX_BATCH_SIZE", "1000")]).await;
    let sent = tokio::spawn(async move {
        let _ = reqwest::Client::new()
            .post(format!("{base}/v1/query"))
            .header("X-Svc-Admin-Secret", SECRET)
            .json(&request)
            .send()
            .await;
    });
    tokio::time::sleep(delay).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    sent.abort();
    stored(db).await
}

/// The catalog after each kill is the old document at the old version or the new one at the
/// next version; repeated at several points of the request, ending with one that completes.
async fn old_or_new(request: Value) {
    let db = fresh_database().await;
    run_sql(&db, &chain_sql()).await;
    // The catalog exists before the first kill.
    drop(TestServer::on(&db, |_| {}).await);
    // What the request leaves when it completes, on a twin database.
    let twin = fresh_database().await;
    run_sql(&twin, &chain_sql()).await;
    let reference = TestServer::on(&twin, |c| c.max_batch_size = 1000).await;
    reference.ok(request.clone()).await;
    let (new_document, _) = stored(&twin).await;

    let mut outcomes = Vec::new();
    for delay_ms in [5, 40, 120, 300, 5000] {
        let (before, version) = stored(&db).await;
        let (after, after_version) =
            kill_during(&db, request.clone(), Duration::from_millis(delay_ms)).await;
        if after_version == version {
            assert_eq!(
                after, before,
                "same version, different document ({delay_ms} ms)"
            );
            outcomes.push("old");
        } else {
            assert_eq!(after_version, version + 1, "{delay_ms} ms");
            assert_eq!(after, new_document, "a partial document ({delay_ms} ms)");
            outcomes.push("new");
            // Back to the old state for the next round.
            run_sql(
                &db,
                &format!(
                    "UPDATE basalt_catalog.metadata SET metadata = '{}'",
                    before.to_string().replace('\'', "''")
                ),
            )
            .await;
        }
    }
    // The last round had time to finish; the first ones were cut short.
    assert_eq!(outcomes.last(), Some(&"new"), "{outcomes:?}");
    assert_eq!(outcomes.first(), Some(&"old"), "{outcomes:?}");
    // And an engine starts on what was left and serves it.
    let engine = spawn_serve(&db, SECRET, &[]).await;
    let r = spawned_query(
        &engine,
        SECRET,
        json!({"type": "get_inconsistent_metadata", "args": {}}),
    )
    .await;
    assert_eq!(r["is_consistent"], true, "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_replace_metadata_leaves_the_old_or_the_new_catalog() {
    old_or_new(json!({"type": "replace_metadata", "args": chain_metadata()})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_a_large_bulk_leaves_the_old_or_the_new_catalog() {
    let mut ops = Vec::new();
    for i in 0..TABLES {
        ops.push(json!({"type": "track_table", "args": {"table": format!("t{i}")}}));
    }
    for i in 0..TABLES {
        ops.push(json!({"type": "create_select_permission", "args": {
            "table": format!("t{i}"), "role": "user",
            "permission": {"columns": ["id"], "filter": {}}}}));
    }
    old_or_new(json!({"type": "bulk", "args": ops})).await;
}

/// A cluster of its own (the shared test cluster cannot be restarted under other tests).
fn own_cluster() -> (EmbeddedPostgres, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let pg = EmbeddedPostgres::start(dir.path(), StartOptions { ephemeral: true }).unwrap();
    (pg, dir)
}

/// Postgres restarts while requests are running: the requests of the outage fail with an
/// error within a bounded time, none hangs, and Basalt recovers on its own — queries,
/// metadata writes, and the catalog listener that hears other replicas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_under_load_is_survived_without_restarting_basalt() {
    let (pg, dir) = own_cluster();
    pg.ensure_database("app").await.unwrap();
    let url = pg.url("app");
    run_sql(&url, crate::harness::BLOG).await;
    // No poll to fall back on within the test: the other replica's change must come through
    // the listener, reconnected after the restart.
    let s = TestServer::on(&url, |c| c.metadata_poll_seconds = 3600).await;
    let metadata: Value = serde_json::from_str(crate::harness::BLOG_METADATA).unwrap();
    s.ok(json!({"type": "replace_metadata", "args": metadata}))
        .await;

    let stop_at = Instant::now() + Duration::from_secs(8);
    let mut load = Vec::new();
    for _ in 0..4 {
        let (http, base) = (s.http.clone(), s.base.clone());
        load.push(tokio::spawn(async move {
            let mut results = Vec::new();
            while Instant::now() < stop_at {
                let started = Instant::now();
                let outcome = http
                    .post(format!("{base}/v1/graphql"))
                    .json(&json!({"query": "{ author(order_by: {id: asc}, limit: 1) { id } }"}))
                    .timeout(Duration::from_secs(60))
                    .send()
                    .await;
                let ok = match outcome {
                    Ok(r) => {
                        let status = r.status().as_u16();
                        let body: Value = r.json().await.unwrap_or(Value::Null);
                        status == 200 && body["data"]["author"][0]["id"] == 1
                    }
                    Err(_) => false,
                };
                results.push((started, started.elapsed(), ok));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            results
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    pg.stop().unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let restarted = EmbeddedPostgres::start(dir.path(), StartOptions { ephemeral: true }).unwrap();
    assert_eq!(restarted.url("app"), url, "the cluster came back elsewhere");
    let restarted_at = Instant::now();

    let mut all = Vec::new();
    for task in load {
        all.extend(task.await.unwrap());
    }
    let failed = all.iter().filter(|(_, _, ok)| !ok).count();
    assert!(
        failed > 0,
        "the outage went unnoticed: the test did not test anything"
    );
    let slowest = all.iter().map(|(_, took, _)| *took).max().unwrap();
    assert!(
        slowest < Duration::from_secs(30),
        "a request hung {slowest:?}"
    );
    // Everything sent a second after the restart succeeded.
    let late: Vec<_> = all
        .iter()
        .filter(|(at, _, _)| *at > restarted_at + Duration::from_secs(1))
        .collect();
    assert!(!late.is_empty());
    assert!(late.iter().all(|(_, _, ok)| *ok), "not recovered: {late:?}");

    // Metadata writes work again, and the listener hears another replica.
    s.ok(json!({"type": "create_select_permission", "args": {"table": "article_status", "role": "user", "permission": {"columns": "*", "filter": {}}}}))
        .await;
    let other = TestServer::on(&url, |_| {}).await;
    other
        .ok(json!({"type": "create_select_permission", "args": {"table": "article_status", "role": "guest", "permission": {"columns": "*", "filter": {}}}}))
        .await;
    let wanted = other.running.state.snapshot().version;
    let mut seen = 0;
    for _ in 0..100 {
        seen = s.running.state.snapshot().version;
        if seen == wanted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        seen, wanted,
        "the first replica never saw the second one's change"
    );
    restarted.stop().unwrap();
}
