//! Streaming subscriptions (`<t>_stream`) on a table of messages: batches in cursor order, new
//! rows only, descending cursors, no empty batch, the cursor and root-field errors, the
//! permission's row filter and `subscription_root_fields`, a custom root field name, and
//! cohorts with different cursors sharing one statement.

use super::*;
use crate::harness::{fresh_database, run_sql};

const FIXTURE: &str = r#"
CREATE TABLE message (id serial PRIMARY KEY, room_id integer NOT NULL, body text NOT NULL);
CREATE TABLE audit (id serial PRIMARY KEY);
INSERT INTO message (room_id, body) VALUES (1, 'm1'), (1, 'm2'), (1, 'm3'), (1, 'm4'), (1, 'm5');
"#;

/// Milliseconds between two batches of one stream in these tests.
const INTERVAL_MS: u64 = 300;

async fn stream_server() -> TestServer {
    let db = fresh_database().await;
    run_sql(&db, FIXTURE).await;
    let s = TestServer::on(&db, |c| {
        fast(c);
        c.live.stream_refetch_interval_ms = INTERVAL_MS;
    })
    .await;
    let select = |role: &str, extra: Value| {
        let mut permission = json!({"columns": ["id", "room_id", "body"],
            "filter": {"room_id": {"_eq": "X-Svc-Room-Id"}}});
        if let (Some(p), Some(e)) = (permission.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        json!({"type": "create_select_permission", "args": {"table": "message", "role": role,
            "permission": permission}})
    };
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "args": {"table": "message"}},
        {"type": "track_table", "args": {"table": "audit"}},
        select("member", json!({})),
        select("guest", json!({"subscription_root_fields": ["select"]})),
    ]}))
    .await;
    s
}

/// A socket speaking `protocol`, its connection acknowledged.
async fn open(s: &TestServer, protocol: &str, headers: &[(&str, &str)]) -> Ws {
    let (mut ws, _) = connect(s, Some(protocol), headers).await;
    init(&mut ws, json!({})).await;
    ws
}

async fn subscribe(ws: &mut Ws, id: &str, query: &str) {
    send(
        ws,
        json!({"type": "subscribe", "id": id, "payload": {"query": query}}),
    )
    .await;
}

/// The ids of a `next` frame's `message_stream` rows.
fn ids(frame: &Value, field: &str) -> Vec<i64> {
    frame["payload"]["data"][field]
        .as_array()
        .unwrap_or_else(|| panic!("no rows in {frame}"))
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn batches_come_in_cursor_order_and_then_only_new_rows() {
    let s = stream_server().await;
    let mut ws = open(&s, TRANSPORT, &[]).await;
    subscribe(
        &mut ws,
        "s1",
        "subscription { message_stream(batch_size: 2, cursor: {initial_value: {id: 0}}) { id body } }",
    )
    .await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "next", "id": "s1", "payload": {"data": {"message_stream": [
            {"id": 1, "body": "m1"}, {"id": 2, "body": "m2"}]}}})
    );
    let started = std::time::Instant::now();
    assert_eq!(ids(&message(&mut ws).await, "message_stream"), [3, 4]);
    // One batch per interval: the backlog is not sent at once.
    assert!(started.elapsed() >= Duration::from_millis(INTERVAL_MS / 2));
    assert_eq!(ids(&message(&mut ws).await, "message_stream"), [5]);
    // No empty batches.
    quiet(&mut ws, 3 * INTERVAL_MS).await;
    gql(
        &s,
        r#"mutation { insert_message(objects: [{room_id: 1, body: "m6"}, {room_id: 1, body: "m7"}]) { affected_rows } }"#,
    )
    .await;
    assert_eq!(
        message(&mut ws).await["payload"]["data"]["message_stream"],
        json!([{"id": 6, "body": "m6"}, {"id": 7, "body": "m7"}])
    );
    quiet(&mut ws, 3 * INTERVAL_MS).await;
}

#[tokio::test]
async fn a_descending_cursor_and_a_cursor_past_every_row() {
    let s = stream_server().await;
    let mut ws = open(&s, TRANSPORT, &[]).await;
    subscribe(
        &mut ws,
        "s3",
        "subscription { message_stream(batch_size: 10, cursor: {initial_value: {id: 4}, ordering: DESC}) { id } }",
    )
    .await;
    assert_eq!(ids(&message(&mut ws).await, "message_stream"), [3, 2, 1]);
    gql(
        &s,
        r#"mutation { insert_message_one(object: {id: 8, room_id: 1, body: "m8"}) { id } }"#,
    )
    .await;
    quiet(&mut ws, 3 * INTERVAL_MS).await;
    // A list of one cursor is the same as one cursor; nothing matches, nothing is sent.
    subscribe(
        &mut ws,
        "s4",
        "subscription { message_stream(batch_size: 5, cursor: [{initial_value: {id: 100}}]) { id } }",
    )
    .await;
    quiet(&mut ws, 3 * INTERVAL_MS).await;
    send(&mut ws, json!({"type": "complete", "id": "s4"})).await;
    quiet(&mut ws, 2 * INTERVAL_MS).await;
}

#[tokio::test]
async fn cursor_and_root_field_errors() {
    let s = stream_server().await;
    let mut ws = open(&s, TRANSPORT, &[]).await;
    for (cursor, message_text) in [
        (
            "{initial_value: {id: 0, room_id: 1}}",
            "multiple column cursors are not supported yet",
        ),
        (
            "[{initial_value: {id: 0}}, {initial_value: {room_id: 1}}]",
            "multiple column cursors are not supported yet",
        ),
        (
            "{initial_value: {}}",
            "one streaming column field is expected",
        ),
        (
            "{initial_value: {id: null}}",
            "one streaming column field is expected",
        ),
    ] {
        subscribe(
            &mut ws,
            "s5",
            &format!("subscription {{ message_stream(batch_size: 1, cursor: {cursor}) {{ id }} }}"),
        )
        .await;
        assert_eq!(
            message(&mut ws).await,
            json!({"type": "error", "id": "s5", "payload": [{"message": message_text,
                "extensions": {"path": "$.selectionSet.message_stream.args.cursor", "code": "validation-failed"}}]}),
            "{cursor}"
        );
    }
    subscribe(
        &mut ws,
        "s6",
        "subscription { message_stream(batch_size: -1, cursor: {initial_value: {id: 0}}) { id } }",
    )
    .await;
    let error = message(&mut ws).await;
    assert_eq!(
        error["payload"][0]["extensions"],
        json!({"path": "$.selectionSet.message_stream.args.batch_size", "code": "validation-failed"}),
        "{error}"
    );
    // Not in queries.
    let r = s
        .gql("{ message_stream(batch_size: 1, cursor: {initial_value: {id: 0}}) { id } }")
        .await;
    assert_eq!(
        r["errors"][0]["message"],
        "field \"message_stream\" not found in type: 'query_root'"
    );
    // graphql-ws: a stream beside a live query, or two streams, is refused.
    let mut apollo = open(&s, "graphql-ws", &[]).await;
    for (query, text) in [
        (
            "subscription { message_stream(batch_size: 1, cursor: {initial_value: {id: 0}}) { id } message { id } }",
            "streaming and livequery subscriptions cannot be executed in the same subscription",
        ),
        (
            "subscription { a: message_stream(batch_size: 1, cursor: {initial_value: {id: 0}}) { id } b: message_stream(batch_size: 1, cursor: {initial_value: {id: 0}}) { id } }",
            "exactly one root field is allowed for streaming subscriptions",
        ),
    ] {
        send(
            &mut apollo,
            json!({"type": "start", "id": "1", "payload": {"query": query}}),
        )
        .await;
        assert_eq!(
            message(&mut apollo).await,
            json!({"type": "error", "id": "1", "payload": {"errors": [{"message": text,
                "extensions": {"path": "$", "code": "not-supported"}}]}})
        );
        assert_eq!(
            message(&mut apollo).await,
            json!({"type": "complete", "id": "1"})
        );
    }
}

#[tokio::test]
async fn the_row_filter_and_the_listed_root_fields_apply() {
    let s = stream_server().await;
    let mut member = open(
        &s,
        TRANSPORT,
        &[("X-Svc-Role", "member"), ("X-Svc-Room-Id", "2")],
    )
    .await;
    subscribe(
        &mut member,
        "m",
        "subscription { message_stream(batch_size: 2, cursor: {initial_value: {id: 0}}) { id body } }",
    )
    .await;
    quiet(&mut member, 2 * INTERVAL_MS).await;
    gql(&s, r#"mutation { insert_message(objects: [{room_id: 1, body: "r1"}, {room_id: 2, body: "r2"}]) { affected_rows } }"#).await;
    assert_eq!(
        message(&mut member).await["payload"]["data"]["message_stream"],
        json!([{"id": 7, "body": "r2"}])
    );
    quiet(&mut member, 2 * INTERVAL_MS).await;
    // `guest` lists only `select` among its subscription root fields.
    let mut guest = open(
        &s,
        TRANSPORT,
        &[("X-Svc-Role", "guest"), ("X-Svc-Room-Id", "1")],
    )
    .await;
    subscribe(
        &mut guest,
        "g",
        "subscription { message_stream(batch_size: 1, cursor: {initial_value: {id: 0}}) { id } }",
    )
    .await;
    assert_eq!(
        message(&mut guest).await,
        json!({"type": "error", "id": "g", "payload": [{"message": "field \"message_stream\" not found in type: 'subscription_root'",
            "extensions": {"path": "$.selectionSet.message_stream", "code": "validation-failed"}}]})
    );
    subscribe(
        &mut guest,
        "g2",
        "subscription { message(order_by: {id: asc}, limit: 1) { id } }",
    )
    .await;
    assert_eq!(
        message(&mut guest).await["payload"]["data"],
        json!({"message": [{"id": 1}]})
    );
}

#[tokio::test]
async fn a_custom_name_and_cohorts_sharing_one_statement() {
    let s = stream_server().await;
    s.ok(
        json!({"type": "set_table_custom_fields", "version": 2, "args": {"table": "message",
        "custom_root_fields": {"select_stream": "messageFeed"}}}),
    )
    .await;
    let export = s.export().await;
    let table = export["tables"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["table"]["name"] == "message"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        table["configuration"],
        json!({"custom_root_fields": {"select_stream": "messageFeed"}, "custom_column_names": {}})
    );
    let mut ws = open(&s, TRANSPORT, &[]).await;
    subscribe(
        &mut ws,
        "old",
        "subscription { message_stream(batch_size: 1, cursor: {initial_value: {id: 0}}) { id } }",
    )
    .await;
    assert_eq!(message(&mut ws).await["type"], "error");
    // Three subscribers at three cursors: three cohorts, polled by one statement per tick.
    for (id, from) in [("a", 0), ("b", 2), ("c", 4)] {
        subscribe(
            &mut ws,
            id,
            &format!("subscription {{ messageFeed(batch_size: 1, cursor: {{initial_value: {{id: {from}}}}}) {{ id }} }}"),
        )
        .await;
    }
    let mut got: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
    for _ in 0..3 {
        let (id, rows) = feed_frame(&mut ws).await;
        got.entry(id).or_default().extend(rows);
    }
    let counters = &s.running.state.counters;
    let before = counters.snapshot();
    // Two more ticks: `a` gets 2 then 3, `b` 4 then 5, `c` (at 5) nothing.
    for _ in 0..4 {
        let (id, rows) = feed_frame(&mut ws).await;
        got.entry(id).or_default().extend(rows);
    }
    let after = counters.snapshot();
    assert_eq!(got["a"], [1, 2, 3]);
    assert_eq!(got["b"], [3, 4, 5]);
    assert_eq!(got["c"], [5]);
    let (statements, polls) = (
        after.live_statements - before.live_statements,
        after.live_polls - before.live_polls,
    );
    assert!(polls >= 2, "{polls} polls");
    assert_eq!(
        statements, polls,
        "one statement per poll for the three cohorts"
    );
    assert_eq!(s.running.live.group_count(), 1);
}

/// The next frame's subscription id and its `messageFeed` ids.
async fn feed_frame(ws: &mut Ws) -> (String, Vec<i64>) {
    let f = message(ws).await;
    let id = f["id"].as_str().unwrap_or_default().to_owned();
    (id, ids(&f, "messageFeed"))
}

#[tokio::test]
async fn a_new_metadata_version_keeps_the_cursor() {
    let s = stream_server().await;
    let mut ws = open(&s, TRANSPORT, &[]).await;
    subscribe(
        &mut ws,
        "s",
        "subscription { message_stream(batch_size: 10, cursor: {initial_value: {id: 3}}) { id } }",
    )
    .await;
    assert_eq!(ids(&message(&mut ws).await, "message_stream"), [4, 5]);
    // A metadata change plans the stream again; it goes on after 5, not after 3.
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "audit", "role": "member",
        "permission": {"columns": ["id"], "filter": {}}}}),
    )
    .await;
    quiet(&mut ws, 3 * INTERVAL_MS).await;
    gql(
        &s,
        r#"mutation { insert_message_one(object: {room_id: 1, body: "m6"}) { id } }"#,
    )
    .await;
    assert_eq!(ids(&message(&mut ws).await, "message_stream"), [6]);
    // A stream whose columns vanish for the role ends.
    s.ok(json!({"type": "untrack_table", "args": {"table": "message", "cascade": true}}))
        .await;
    assert_eq!(message(&mut ws).await["type"], "error");
}

#[tokio::test]
async fn views_partitioned_tables_and_inherited_roles_stream_too() {
    let s = stream_server().await;
    s.sql(
        "CREATE VIEW room_one AS SELECT id, body FROM message WHERE room_id = 1;
         CREATE TABLE event (at timestamptz NOT NULL, name text NOT NULL) PARTITION BY RANGE (at);
         CREATE TABLE event_2026 PARTITION OF event FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
         CREATE TABLE event_2027 PARTITION OF event FOR VALUES FROM ('2027-01-01') TO ('2028-01-01');
         INSERT INTO event VALUES ('2026-12-31 23:59:59.123456+00', 'late'), ('2027-01-01 00:00:00.5+00', 'new year');",
    )
    .await;
    s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "args": {"table": "room_one"}},
        {"type": "track_table", "args": {"table": "event"}},
        {"type": "add_inherited_role", "args": {"role_name": "visitor", "role_set": ["member", "guest"]}}
    ]}))
    .await;
    let mut ws = open(&s, TRANSPORT, &[]).await;
    subscribe(
        &mut ws,
        "v",
        "subscription { room_one_stream(batch_size: 2, cursor: {initial_value: {id: 3}}) { id body } }",
    )
    .await;
    assert_eq!(ids(&message(&mut ws).await, "room_one_stream"), [4, 5]);
    // A timestamp cursor keeps its microseconds from one batch to the next, across partitions.
    subscribe(
        &mut ws,
        "e",
        r#"subscription { event_stream(batch_size: 1, cursor: {initial_value: {at: "2026-01-01T00:00:00Z"}}) { name } }"#,
    )
    .await;
    let mut names = Vec::new();
    for _ in 0..2 {
        let frame = message(&mut ws).await;
        names.push(frame["payload"]["data"]["event_stream"][0]["name"].clone());
    }
    assert_eq!(names, [json!("late"), json!("new year")]);
    quiet(&mut ws, 2 * INTERVAL_MS).await;
    // `visitor` inherits from `member` (every subscription root field) and `guest` (only
    // `select`): it streams.
    let mut visitor = open(
        &s,
        TRANSPORT,
        &[("X-Svc-Role", "visitor"), ("X-Svc-Room-Id", "1")],
    )
    .await;
    subscribe(
        &mut visitor,
        "i",
        "subscription { message_stream(batch_size: 10, cursor: {initial_value: {id: 4}}) { id } }",
    )
    .await;
    assert_eq!(ids(&message(&mut visitor).await, "message_stream"), [5]);
}
