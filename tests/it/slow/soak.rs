//! Soak: a real engine process under a steady mixed load — queries, mutations and metadata
//! changes that alter (never remove) what the load uses — at 80 % of the rate it reached just
//! before. Zero errors, memory flat once warm, connections back to the pool after the load.
//! `BASALT_SOAK_SECONDS` sets the length after a 20 s warm-up (30 by default, as in CI; the
//! documented long run is 600, see docs/security.md). Memory is compared between 20 % of the
//! soak (minute 2 of 10) and its end.

use crate::harness::{
    fresh_database, query_json, run_sql, spawn_serve, spawned_query, BLOG, BLOG_METADATA,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SECRET: &str = "soak-secret";
const POOL: &str = "8";

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// One request of the mix, by sequence number: mostly reads, some writes; one in ten as the
/// `user` role (its permissions are what the metadata changes alter).
fn request(n: u64) -> Value {
    match n % 10 {
        5 => {
            json!({"query": "{ articles(order_by: {id: asc}) { id title viewCount } author(order_by: {id: asc}) { name full_name } }"})
        }
        0 | 1 => {
            json!({"query": "mutation ($r: numeric) { update_author_by_pk(pk_columns: {id: 2}, _set: {rating: $r}) { id } }",
                        "variables": {"r": (n % 50) as f64 / 10.0}})
        }
        2 => json!({"query": "{ article_aggregate { aggregate { count max { viewCount } } } }"}),
        3 | 4 => {
            json!({"query": "query ($id: Int!) { articleById(id: $id) { title author { name } } }",
                        "variables": {"id": 1 + n % 3}})
        }
        _ => {
            json!({"query": "{ articles(order_by: {id: asc}) { id title author { name articles_aggregate { aggregate { count } } } } }"})
        }
    }
}

/// The `n`-th metadata change: every other one replaces the `user` role's select permission on
/// `author` (read by the load) with one that lets it see the same, in one `bulk`; the others
/// change a comment.
fn metadata_change(n: u64) -> Value {
    if n % 2 == 1 {
        return json!({"type": "set_permission_comment", "args": {
            "table": "author", "role": "user", "type": "select", "comment": format!("soak {n}")}});
    }
    json!({"type": "bulk", "args": [
        {"type": "drop_select_permission", "args": {"table": "author", "role": "user"}},
        {"type": "create_select_permission", "args": {"table": "author", "role": "user", "permission": {
            "columns": ["id", "name", "rating"], "computed_fields": ["full_name", "is_me"],
            "filter": {"id": {"_gt": -(n as i64)}}, "allow_aggregations": true}}},
    ]})
}

/// Sends one request; true when it answered data without errors.
async fn send(http: &reqwest::Client, base: &str, n: u64) -> bool {
    let mut post = http
        .post(format!("{base}/v1/graphql"))
        .header("X-Svc-Admin-Secret", SECRET);
    if n % 10 == 5 {
        post = post
            .header("X-Svc-Role", "user")
            .header("X-Svc-User-Id", (1 + n % 3).to_string());
    }
    let response = post
        .json(&request(n))
        .timeout(Duration::from_secs(30))
        .send()
        .await;
    match response {
        Ok(r) if r.status() == 200 => r
            .json::<Value>()
            .await
            .is_ok_and(|b| b.get("errors").is_none() && b.get("data").is_some()),
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_mixed_load_runs_without_errors_or_growth() {
    let seconds: u64 = std::env::var("BASALT_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let db = fresh_database().await;
    run_sql(&db, BLOG).await;
    let engine = spawn_serve(&db, SECRET, &[("BASALT_POOL_SIZE", POOL)]).await;
    let pid = engine.child.id().unwrap();
    let metadata: Value = serde_json::from_str(BLOG_METADATA).unwrap();
    spawned_query(
        &engine,
        SECRET,
        json!({"type": "replace_metadata", "args": metadata}),
    )
    .await;
    let http = reqwest::Client::new();
    let base = engine.base.clone();

    // The rate this machine reaches now: closed loop, 8 at a time, 3 s.
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(3);
    let mut workers = Vec::new();
    for w in 0..8u64 {
        let (http, base, done) = (http.clone(), base.clone(), done.clone());
        workers.push(tokio::spawn(async move {
            let mut n = w;
            while Instant::now() < until {
                send(&http, &base, n).await;
                done.fetch_add(1, Ordering::Relaxed);
                n += 8;
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    let rate = (done.load(Ordering::Relaxed) as f64 / 3.0 * 0.8).max(5.0);

    // The soak: open loop at 80 % of that rate, metadata changing every 3 s; the first 20 s
    // warm up (plan caches, each connection's prepared statements, allocator arenas) and are
    // not part of the memory comparison. Measured alone for 90 s, RSS climbs in steps for
    // ~20-35 s and is then flat within 1 %; 10 s of warm-up left the last step inside the
    // comparison on a loaded CI machine.
    let warm_up = Duration::from_secs(20);
    let started = Instant::now();
    let end = started + warm_up + Duration::from_secs(seconds);
    let errors = Arc::new(AtomicU64::new(0));
    let sent = Arc::new(AtomicU64::new(0));
    let in_flight = Arc::new(tokio::sync::Semaphore::new(64));
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut rss_warm = 0;
    let mut samples: Vec<u64> = Vec::new();
    let mut next_sample = started;
    let mut next_change = started + Duration::from_secs(3);
    let mut changes = 0u64;
    let mut n = 0u64;
    while Instant::now() < end {
        tick.tick().await;
        if rss_warm == 0 && started.elapsed() >= warm_up + Duration::from_secs(seconds / 5) {
            rss_warm = rss_kb(pid);
        }
        if Instant::now() >= next_sample {
            samples.push(rss_kb(pid));
            next_sample += Duration::from_secs(5);
        }
        if Instant::now() >= next_change {
            changes += 1;
            next_change += Duration::from_secs(3);
            spawned_query(&engine, SECRET, metadata_change(changes)).await;
        }
        let permit = in_flight.clone().acquire_owned().await.unwrap();
        let (http, base, errors, sent) = (http.clone(), base.clone(), errors.clone(), sent.clone());
        n += 1;
        let this = n;
        tokio::spawn(async move {
            if !send(&http, &base, this).await {
                errors.fetch_add(1, Ordering::Relaxed);
            }
            sent.fetch_add(1, Ordering::Relaxed);
            drop(permit);
        });
    }
    let _ = in_flight.acquire_many(64).await.unwrap();
    let rss_end = rss_kb(pid);
    let total = sent.load(Ordering::Relaxed);
    eprintln!(
        "soak: {total} requests at {rate:.0}/s, {changes} metadata changes; RSS {rss_warm} KB after warm-up, {rss_end} KB at the end; every 5 s: {samples:?}"
    );
    assert!(
        total as f64 >= rate * seconds as f64 * 0.5,
        "the load fell behind: {total} requests at {rate:.0}/s"
    );
    assert_eq!(
        errors.load(Ordering::Relaxed),
        0,
        "errors among {total} requests"
    );
    assert!(changes >= seconds / 3 - 1);
    assert!(
        rss_end as f64 <= rss_warm as f64 * 1.10,
        "memory grew: {rss_warm} KB at {} s of the soak, {rss_end} KB at the end; every 5 s: {samples:?}",
        seconds / 5
    );

    // Connections return to the pool: no more than the pool, the catalog listener, the event
    // workers' listener and the action worker's, and none lent out.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let name = db.rsplit('/').next().unwrap().to_owned();
    let connections = query_json(
        &db,
        &format!(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        ),
    )
    .await[0]["n"]
        .as_i64()
        .unwrap();
    let pool: i64 = POOL.parse().unwrap();
    assert!(
        connections <= pool + 3,
        "{connections} connections for a pool of {pool}"
    );
    let metrics = reqwest::Client::new()
        .get(format!("{base}/metrics"))
        .header("X-Svc-Admin-Secret", SECRET)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.lines().any(|l| l == "basalt_db_pool_in_use 0"),
        "{metrics}"
    );
}
