//! Change detection of live queries: its triggers on a real database, kept in step by the
//! metadata API (tracked tables, their partitions and the action log get one that fires
//! always; an excluded table and one with row-level security are not watched; a view is
//! watched through what it reads; everything is removed when change detection is off or a
//! table is no longer tracked), a cohort that runs
//! only when a table it reads changed (counted), a lost listener, many commits racing the
//! polls, and a view calling `now()` polled every interval.

use crate::harness::{fresh_database, query_json, run_sql};
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
    run_sql(&db, TABLES).await;
    let s = crate::harness::TestServer::on(&db, |c| {
        c.live.detection.change_detection_exclude = vec!["public.noisy".to_owned()]
    })
    .await;
    // At start, only the action log.
    assert_eq!(
        triggers(&db).await,
        json!({"basalt_catalog.action_log": "A"})
    );
    for table in ["note", "event", "secret", "noisy", "note_view"] {
        s.ok(json!({"type": "track_table", "args": {"table": table}}))
            .await;
    }
    assert_eq!(
        triggers(&db).await,
        json!({"basalt_catalog.action_log": "A", "public.event": "A", "public.event_a": "A",
               "public.event_b": "A", "public.note": "A"})
    );
    let coverage = s.running.state.changes.coverage();
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
            ("note".to_owned(), 1),
            ("note_view".to_owned(), 1),
        ],
        "the view resolves to the table it reads; the excluded table and the one with row security are not watched"
    );
    // A trigger someone disabled is enabled again by the next run_sql; a partition created
    // there is covered; a table no longer tracked loses its trigger.
    s.ok(json!({"type": "run_sql", "args": {"sql": "ALTER TABLE note DISABLE TRIGGER basalt_live_change;
        CREATE TABLE event_c PARTITION OF event FOR VALUES FROM ('2028-01-01') TO ('2029-01-01')"}}))
        .await;
    assert_eq!(
        triggers(&db).await,
        json!({"basalt_catalog.action_log": "A", "public.event": "A", "public.event_a": "A",
               "public.event_b": "A", "public.event_c": "A", "public.note": "A"})
    );
    s.ok(json!({"type": "untrack_table", "args": {"table": "note", "cascade": true}}))
        .await;
    assert_eq!(
        triggers(&db).await,
        json!({"basalt_catalog.action_log": "A", "public.event": "A", "public.event_a": "A",
               "public.event_b": "A", "public.event_c": "A"})
    );
    drop(s);
    // Off: a server starting drops them everywhere.
    let off = crate::harness::TestServer::on(&db, |c| {
        c.live.detection.change_detection = basalt::config::ChangeDetection::Off
    })
    .await;
    assert_eq!(triggers(&db).await, json!({}));
    assert!(off.running.state.changes.coverage().watched.is_empty());
}

/// A blog server polling every 100 ms, with change detection on (the default).
async fn watched_server() -> crate::harness::TestServer {
    super::server(|_| {}).await
}

async fn counters(s: &crate::harness::TestServer) -> (u64, u64) {
    let c = s.running.state.counters.snapshot();
    (c.live_statements, c.live_cohorts_skipped)
}

/// A socket subscribed to the number of authors, its first answer read.
async fn subscribe_count(s: &crate::harness::TestServer) -> super::Ws {
    let mut ws = super::open_transport(s).await;
    super::send(
        &mut ws,
        json!({"type": "subscribe", "id": "c", "payload": {
        "query": "subscription { author_aggregate { aggregate { count } } }"}}),
    )
    .await;
    ws
}

/// Inserts a fourth author through GraphQL; the socket of [`subscribe_count`] hears of it
/// within `within`.
async fn insert_and_see(
    s: &crate::harness::TestServer,
    ws: &mut super::Ws,
    within: std::time::Duration,
) {
    let written = std::time::Instant::now();
    super::gql(
        s,
        r#"mutation { insert_author_one(object: {id: 9, name: "Nia"}) { id } }"#,
    )
    .await;
    let next = super::message(ws).await;
    assert!(written.elapsed() < within, "{:?}", written.elapsed());
    assert_eq!(
        next["payload"]["data"]["author_aggregate"]["aggregate"]["count"],
        4
    );
}

/// The subscription metrics of `/metrics`, as an operator reads them.
struct Scraped(std::collections::BTreeMap<String, f64>);

impl Scraped {
    async fn of(s: &crate::harness::TestServer) -> Self {
        Scraped(crate::http::scrape(s, s.admin_secret.as_deref()).await)
    }

    fn get(&self, key: &str) -> f64 {
        self.0.get(key).copied().unwrap_or(0.0)
    }

    fn statements(&self) -> f64 {
        self.get("basalt_subscription_statements_total{kind=live}")
    }

    fn skipped(&self) -> f64 {
        self.get("basalt_subscription_cohort_polls_total{kind=live,result=skipped}")
    }

    fn reason(&self, reason: &str) -> f64 {
        self.get(&format!(
            "basalt_subscription_poll_reasons_total{{kind=live,reason={reason}}}"
        ))
    }
}

#[tokio::test]
async fn a_cohort_runs_only_when_a_table_it_reads_changed() {
    let s = watched_server().await;
    let mut ws = subscribe_count(&s).await;
    let first = super::message(&mut ws).await;
    assert_eq!(
        first["payload"]["data"]["author_aggregate"]["aggregate"]["count"],
        3
    );
    // Wait until the listener is up and the first marks are taken: ticks then skip the
    // cohort.
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
    let before = Scraped::of(&s).await;
    assert_eq!(before.reason("initial"), 1.0, "its first poll");
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    let idle = Scraped::of(&s).await;
    assert_eq!(
        idle.statements(),
        before.statements(),
        "no statement while nothing changed"
    );
    assert!(
        idle.skipped() >= before.skipped() + 5.0,
        "ticks skipped the cohort: {} → {}",
        before.skipped(),
        idle.skipped()
    );
    // A write to a table it does not read changes nothing.
    super::gql(
        &s,
        r#"mutation { insert_article_status(objects: [{value: "archived"}]) { affected_rows } }"#,
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(
        Scraped::of(&s).await.statements(),
        before.statements(),
        "an unrelated write"
    );
    // A write to `author`: one statement, the new count, within 1.5 s.
    insert_and_see(&s, &mut ws, std::time::Duration::from_millis(1500)).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let after = Scraped::of(&s).await;
    assert_eq!(
        after.statements(),
        before.statements() + 1.0,
        "exactly one statement"
    );
    assert_eq!(after.reason("changed"), before.reason("changed") + 1.0);
    assert!(after.get("basalt_subscription_change_notifications_total{}") >= 1.0);
    // The push was timed from the notification.
    let text = crate::http::metrics_text(&s, s.admin_secret.as_deref()).await;
    assert!(
        text.lines()
            .any(|l| l == "basalt_subscription_change_to_push_seconds_count{kind=\"live\"} 1"),
        "one change-to-push observation"
    );
    assert_eq!(
        after.get("basalt_subscription_opaque_cohorts{kind=live}"),
        0.0
    );
    assert_eq!(after.get("basalt_subscription_listener_up{}"), 1.0);
}

#[tokio::test]
async fn a_lost_listener_reconnects_and_nothing_is_missed() {
    let s = watched_server().await;
    let mut ws = subscribe_count(&s).await;
    super::message(&mut ws).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let reconnects = |m: &Scraped| m.get("basalt_subscription_listener_reconnects_total{}");
    let before = Scraped::of(&s).await;
    s.ok(json!({"type": "run_sql", "args": {"sql":
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'basalt-listen' AND datname = current_database()"}}))
        .await;
    insert_and_see(&s, &mut ws, std::time::Duration::from_secs(2)).await;
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let after = Scraped::of(&s).await;
    assert_eq!(reconnects(&after), reconnects(&before) + 1.0);
    assert_eq!(after.get("basalt_subscription_listener_up{}"), 1.0);
}

#[tokio::test]
async fn every_subscriber_ends_at_the_final_state_after_many_commits() {
    let s = watched_server().await;
    // 50 cohorts (each subscriber its own variable; every row matches all of them), on five
    // sockets: three speak graphql-transport-ws, two the legacy graphql-ws.
    let query = "subscription ($min: Int!) { comment_aggregate(where: {id: {_gte: $min}}) { aggregate { count } } }";
    let mut sockets = Vec::new();
    for socket in 0..5 {
        let legacy = socket >= 3;
        let mut ws = match legacy {
            false => super::open_transport(&s).await,
            true => {
                let (mut ws, _) = super::connect(&s, Some(super::APOLLO), &[]).await;
                super::init(&mut ws, json!({})).await;
                ws
            }
        };
        for i in 0..10 {
            let payload = json!({"query": query, "variables": {"min": -(socket * 10 + i)}});
            let kind = if legacy { "start" } else { "subscribe" };
            super::send(
                &mut ws,
                json!({"type": kind, "id": i.to_string(), "payload": payload}),
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

/// Waits until ticks skip the live cohorts of `s` (listener up, first marks taken).
async fn until_idle(s: &crate::harness::TestServer) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let start = counters(s).await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let end = counters(s).await;
        if end.0 == start.0 && end.1 > start.1 {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "never idle");
    }
}

#[tokio::test]
async fn a_subscriber_joining_a_current_cohort_gets_its_answer_without_a_statement() {
    let s = watched_server().await;
    let query = "subscription { author(order_by: {id: asc}) { name } }";
    let subscribe = |id: &str| json!({"type": "subscribe", "id": id, "payload": {"query": query}});
    let mut first = super::open_transport(&s).await;
    super::send(&mut first, subscribe("a")).await;
    let answer = super::message(&mut first).await;
    until_idle(&s).await;
    let before = Scraped::of(&s).await;
    let mut second = super::open_transport(&s).await;
    super::send(&mut second, subscribe("b")).await;
    let joined = super::message(&mut second).await;
    assert_eq!(joined["payload"], answer["payload"]);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        Scraped::of(&s).await.statements(),
        before.statements(),
        "answered from the cohort's last result"
    );
    // Both get the next change, from one statement.
    super::gql(
        &s,
        r#"mutation { insert_author_one(object: {id: 9, name: "Nia"}) { id } }"#,
    )
    .await;
    for ws in [&mut first, &mut second] {
        let next = super::message(ws).await;
        assert_eq!(
            next["payload"]["data"]["author"].as_array().unwrap().len(),
            4
        );
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        Scraped::of(&s).await.statements(),
        before.statements() + 1.0
    );
}

#[tokio::test]
async fn a_disabled_trigger_is_noticed_at_the_fallback_check() {
    let s = super::server(|c| c.live.fallback_refetch_interval_ms = 1000).await;
    let mut ws = subscribe_count(&s).await;
    super::message(&mut ws).await;
    until_idle(&s).await;
    // Outside Basalt (run_sql would put it back): writes no longer notify.
    run_sql(
        &s.db_url,
        "ALTER TABLE author DISABLE TRIGGER basalt_live_change;
         INSERT INTO author (id, name) VALUES (9, 'Nia')",
    )
    .await;
    // The fallback poll brings the write, and the check makes the cohort opaque.
    let next = super::message(&mut ws).await;
    assert_eq!(
        next["payload"]["data"]["author_aggregate"]["aggregate"]["count"],
        4
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let m = Scraped::of(&s).await;
        if m.get("basalt_subscription_opaque_cohorts{kind=live}") == 1.0 && m.reason("opaque") > 0.0
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the cohort never became opaque"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // Opaque: every interval, so the next untriggered write arrives without a fallback.
    let written = std::time::Instant::now();
    run_sql(&s.db_url, "INSERT INTO author (id, name) VALUES (10, 'Oz')").await;
    let next = super::message(&mut ws).await;
    assert_eq!(
        next["payload"]["data"]["author_aggregate"]["aggregate"]["count"],
        5
    );
    assert!(written.elapsed() < std::time::Duration::from_millis(900));
}

#[tokio::test]
async fn a_partition_sees_writes_made_through_its_parent() {
    let db = fresh_database().await;
    run_sql(&db, TABLES).await;
    let s = crate::harness::TestServer::on(&db, |c| c.live.refetch_interval_ms = 100).await;
    for table in ["event", "event_a"] {
        s.ok(json!({"type": "track_table", "args": {"table": table}}))
            .await;
    }
    let mut ws = super::open_transport(&s).await;
    super::send(
        &mut ws,
        json!({"type": "subscribe", "id": "p", "payload": {
        "query": "subscription { event_a_aggregate { aggregate { count } } }"}}),
    )
    .await;
    let first = super::message(&mut ws).await;
    assert_eq!(
        first["payload"]["data"]["event_a_aggregate"]["aggregate"]["count"],
        0
    );
    until_idle(&s).await;
    // Written through the parent: only the parent's trigger fires.
    let written = std::time::Instant::now();
    let r = s
        .gql(r#"mutation { insert_event(objects: [{at: "2026-06-01"}]) { affected_rows } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r}");
    let next = super::message(&mut ws).await;
    assert_eq!(
        next["payload"]["data"]["event_a_aggregate"]["aggregate"]["count"],
        1
    );
    assert!(written.elapsed() < std::time::Duration::from_millis(1500));
}
