//! Change detection of live queries: its triggers (`basalt::catalog::live_change::sync`) on a
//! real database (tracked tables, their partitions and the action log get one that fires
//! always; an excluded table and one with row-level security are not watched; everything is
//! removed when change detection is off or a table is no longer tracked), a cohort that runs
//! only when a table it reads changed (counted), a lost listener, many commits racing the
//! polls, and a view calling `now()` polled every interval.

use crate::harness::{fresh_database, query_json, run_sql};
use basalt::catalog::live_change::sync;
use basalt::names::QualifiedName;
use serde_json::json;

const TABLES: &str = "
CREATE TABLE note (id int PRIMARY KEY);
CREATE TABLE event (at date NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE event_a PARTITION OF event FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
CREATE TABLE event_b PARTITION OF event FOR VALUES FROM ('2027-01-01') TO ('2028-01-01');
CREATE TABLE secret (id int);
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE TABLE noisy (id int);
CREATE VIEW note_view AS SELECT * FROM note;
";

/// `schema.table` → `tgenabled` of every `basalt_live_change` trigger.
async fn triggers(db: &str) -> serde_json::Value {
    let rows = query_json(
        db,
        "SELECT coalesce(json_object_agg(c.relnamespace::regnamespace::text || '.' || c.relname, tg.tgenabled::text
                 ORDER BY c.relname), '{}'::json)
                 AS triggers
         FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid WHERE tg.tgname = 'basalt_live_change'",
    )
    .await;
    rows[0]["triggers"].clone()
}

#[tokio::test]
async fn triggers_follow_what_is_tracked_and_the_setting() {
    let db = fresh_database().await;
    // The catalog schema (with the action log) as the engine creates it.
    let s = crate::harness::TestServer::on(&db, |_| {}).await;
    run_sql(&db, TABLES).await;
    let (mut client, conn) = tokio_postgres::connect(&db, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let public = |t: &str| QualifiedName::new("public", t);
    let tracked = [
        public("note"),
        public("event"),
        public("secret"),
        public("noisy"),
        public("note_view"),
    ];
    let coverage = sync(&mut client, &tracked, &["public.noisy".to_owned()], true)
        .await
        .unwrap();
    assert_eq!(
        triggers(&db).await,
        json!({"basalt_catalog.action_log": "A", "public.event": "A", "public.event_a": "A",
               "public.event_b": "A", "public.note": "A"})
    );
    let mut watched: Vec<(String, usize)> = coverage
        .watched
        .iter()
        .map(|(name, oids)| (name.to_string(), oids.len()))
        .collect();
    watched.sort();
    assert_eq!(
        watched,
        [
            ("basalt_catalog.action_log".to_owned(), 1),
            ("event".to_owned(), 3),
            ("note".to_owned(), 1)
        ]
    );
    // A trigger someone disabled is enabled again; one on a table no longer tracked goes.
    run_sql(&db, "ALTER TABLE note DISABLE TRIGGER basalt_live_change").await;
    sync(&mut client, &[public("event")], &[], true)
        .await
        .unwrap();
    assert_eq!(
        triggers(&db).await,
        json!({"basalt_catalog.action_log": "A", "public.event": "A", "public.event_a": "A",
               "public.event_b": "A"})
    );
    // Off: none anywhere.
    sync(&mut client, &tracked, &[], false).await.unwrap();
    assert_eq!(triggers(&db).await, json!({}));
    drop(s);
}

/// A blog server polling every 100 ms, with change detection on (the default).
async fn watched_server() -> crate::harness::TestServer {
    super::server(|_| {}).await
}

async fn counters(s: &crate::harness::TestServer) -> (u64, u64) {
    let c = s.running.state.counters.snapshot();
    (c.live_statements, c.live_cohorts_skipped)
}

#[tokio::test]
async fn a_cohort_runs_only_when_a_table_it_reads_changed() {
    let s = watched_server().await;
    let mut ws = super::open_transport(&s).await;
    super::send(
        &mut ws,
        json!({"type": "subscribe", "id": "c", "payload": {
        "query": "subscription { author_aggregate { aggregate { count } } }"}}),
    )
    .await;
    let first = super::message(&mut ws).await;
    assert_eq!(
        first["payload"]["data"]["author_aggregate"]["aggregate"]["count"],
        3
    );
    // Wait until the triggers are installed, the listener is up and the first marks are
    // taken: ticks then skip the cohort.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let start = counters(&s).await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let end = counters(&s).await;
        if end.0 == start.0 && end.1 > start.1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the cohort is never skipped"
        );
    }
    let before = counters(&s).await;
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    let idle = counters(&s).await;
    assert_eq!(idle.0, before.0, "no statement while nothing changed");
    assert!(
        idle.1 >= before.1 + 5,
        "ticks skipped the cohort: {before:?} → {idle:?}"
    );
    // A write to a table it does not read changes nothing.
    super::gql(
        &s,
        r#"mutation { insert_article_status(objects: [{value: "archived"}]) { affected_rows } }"#,
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(counters(&s).await.0, before.0, "an unrelated write");
    // A write to `author`: one statement, the new count.
    super::gql(
        &s,
        r#"mutation { insert_author_one(object: {id: 9, name: "Nia"}) { id } }"#,
    )
    .await;
    let next = super::message(&mut ws).await;
    assert_eq!(
        next["payload"]["data"]["author_aggregate"]["aggregate"]["count"],
        4
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(counters(&s).await.0, before.0 + 1, "exactly one statement");
}

#[tokio::test]
async fn a_lost_listener_reconnects_and_nothing_is_missed() {
    let s = watched_server().await;
    let mut ws = super::open_transport(&s).await;
    super::send(
        &mut ws,
        json!({"type": "subscribe", "id": "c", "payload": {
        "query": "subscription { author_aggregate { aggregate { count } } }"}}),
    )
    .await;
    super::message(&mut ws).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let reconnects = s
        .running
        .state
        .changes
        .reconnects
        .load(std::sync::atomic::Ordering::Relaxed);
    run_sql(
        &s.db_url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'basalt-listen'",
    )
    .await;
    super::gql(
        &s,
        r#"mutation { insert_author_one(object: {id: 9, name: "Nia"}) { id } }"#,
    )
    .await;
    let next = super::message(&mut ws).await;
    assert_eq!(
        next["payload"]["data"]["author_aggregate"]["aggregate"]["count"],
        4
    );
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert_eq!(
        s.running
            .state
            .changes
            .reconnects
            .load(std::sync::atomic::Ordering::Relaxed),
        reconnects + 1
    );
}

#[tokio::test]
async fn every_subscriber_ends_at_the_final_state_after_many_commits() {
    let s = watched_server().await;
    let mut sockets = Vec::new();
    for _ in 0..5 {
        let mut ws = super::open_transport(&s).await;
        for i in 0..10 {
            super::send(
                &mut ws,
                json!({"type": "subscribe", "id": i.to_string(), "payload": {
                "query": "subscription { comment_aggregate { aggregate { count } } }"}}),
            )
            .await;
        }
        sockets.push(ws);
    }
    let (client, conn) = tokio_postgres::connect(&s.db_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut seed = 7u64;
    for i in 0..1000 {
        client
            .execute(
                "INSERT INTO comment (id, article_id, author_id, body) VALUES ($1, 1, 1, 'x')",
                &[&(100 + i)],
            )
            .await
            .unwrap();
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        tokio::time::sleep(std::time::Duration::from_micros((seed >> 33) % 5000)).await;
    }
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
    for ws in &mut sockets {
        let mut last = std::collections::HashMap::new();
        while let Ok(Some(super::Got::Message(m))) =
            tokio::time::timeout_at(deadline, super::next(ws, 3)).await
        {
            last.insert(
                m["id"].clone(),
                m["payload"]["data"]["comment_aggregate"]["aggregate"]["count"].clone(),
            );
        }
        assert_eq!(last.len(), 10);
        for count in last.values() {
            assert_eq!(
                count,
                &json!(1004),
                "every subscriber's last message is the final count"
            );
        }
    }
}

#[tokio::test]
async fn a_view_calling_now_is_polled_every_interval() {
    let s = watched_server().await;
    run_sql(
        &s.db_url,
        "CREATE VIEW recent_author AS SELECT id, name FROM author WHERE joined <= now()",
    )
    .await;
    s.ok(json!({"type": "track_table", "args": {"table": "recent_author"}}))
        .await;
    let mut ws = super::open_transport(&s).await;
    super::send(
        &mut ws,
        json!({"type": "subscribe", "id": "v", "payload": {
        "query": "subscription { recent_author(order_by: {id: asc}, limit: 1) { id } }"}}),
    )
    .await;
    super::message(&mut ws).await;
    let before = counters(&s).await.0;
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    let after = counters(&s).await.0;
    assert!(
        after >= before + 5,
        "polled every 100 ms: {before} → {after}"
    );
}
