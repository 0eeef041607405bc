//! Change detection's triggers (`basalt::catalog::live_change::sync`) on a real database:
//! tracked tables, their partitions and the action log get one that fires always, an excluded
//! table and one with row-level security are not watched, and everything is removed when
//! change detection is off or a table is no longer tracked.

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
