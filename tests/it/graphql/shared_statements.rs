//! Shared statements: concurrent requests for one query plan answered by one statement, each
//! with its own answer, never across sessions where the session could be observed. Proven by
//! counting statements while a lock held by the test keeps the plan's first statements
//! waiting, so that the requests after them queue deterministically.

use crate::harness::{fresh_database, query_json, run_sql, TestServer, BLOG, BLOG_METADATA};
use basalt::stats::CountersSnapshot;
use serde_json::{json, Value};
use std::time::Duration;

/// Statements of one read plan running before requests queue (the default).
const IN_FLIGHT: usize = 2;

/// Statements of one insert plan running before inserts queue (the default): unlike the
/// reads' width, so the tests show each kind of plan keeps its own.
const WRITES_IN_FLIGHT: usize = 1;

/// The blog, served with sharing on; plans whose statement takes longer than `below_us` alone
/// are not shared (`0`: no such bound).
async fn blog_sharing_below(below_us: u64) -> TestServer {
    blog_sharing(below_us, WRITES_IN_FLIGHT).await
}

/// The blog, served with sharing on, `writes_in_flight` statements of an insert plan running
/// before inserts queue, and no read plan shared whose statement takes longer than
/// `below_us` alone (`0`: no such bound).
async fn blog_sharing(below_us: u64, writes_in_flight: usize) -> TestServer {
    let db = fresh_database().await;
    run_sql(&db, BLOG).await;
    let server = TestServer::on(&db, |c| {
        c.pool_size = 8;
        c.shared_statements_in_flight = IN_FLIGHT;
        c.shared_writes_in_flight = writes_in_flight;
        c.shared_statements_below_us = below_us;
    })
    .await;
    let metadata: Value = serde_json::from_str(BLOG_METADATA).unwrap();
    server
        .ok(json!({"type": "replace_metadata", "args": metadata}))
        .await;
    server
}

/// The blog, served with sharing on and no absolute bound (the default). Its plans' first
/// statements wait for the test's lock, which only makes sharing look more worthwhile.
async fn blog() -> TestServer {
    blog_sharing_below(0).await
}

fn counters(server: &TestServer) -> CountersSnapshot {
    server.running.state.counters.snapshot()
}

/// A session holding `ACCESS EXCLUSIVE` on `article` until it is dropped.
struct TableLock {
    client: tokio_postgres::Client,
}

impl TableLock {
    async fn take(db_url: &str) -> Self {
        let (client, conn) = tokio_postgres::connect(db_url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        client
            .batch_execute("BEGIN; LOCK TABLE article IN ACCESS EXCLUSIVE MODE")
            .await
            .expect("lock");
        TableLock { client }
    }

    async fn release(self) {
        self.client.batch_execute("COMMIT").await.expect("unlock");
    }
}

/// Waits until `n` backends of the server's database wait for a lock.
async fn until_blocked(server: &TestServer, n: usize) {
    let sql = "SELECT count(*) AS n FROM pg_stat_activity \
               WHERE datname = current_database() AND wait_event_type = 'Lock'";
    for _ in 0..500 {
        let rows = query_json(&server.db_url, sql).await;
        if rows[0]["n"].as_u64() == Some(n as u64) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{n} statements never waited for the lock");
}

/// Waits until `n` more requests than `before` queued for a shared statement.
async fn until_queued(server: &TestServer, before: &CountersSnapshot, n: u64) {
    for _ in 0..500 {
        if counters(server).shared_waits - before.shared_waits == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "{n} requests never queued: {} did",
        counters(server).shared_waits - before.shared_waits
    );
}

/// Sends `query` with `headers` in a task of its own.
fn send(
    server: &TestServer,
    query: &'static str,
    headers: Vec<(&'static str, &'static str)>,
) -> tokio::task::JoinHandle<Value> {
    send_body(server, json!({ "query": query }), headers)
}

/// Sends a GraphQL request body with `headers` in a task of its own.
fn send_body(
    server: &TestServer,
    body: Value,
    headers: Vec<(&'static str, &'static str)>,
) -> tokio::task::JoinHandle<Value> {
    let http = server.http.clone();
    let url = format!("{}/v1/graphql", server.base);
    let secret = server.admin_secret.clone();
    tokio::spawn(async move {
        let mut request = http.post(url).json(&body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        if let Some(secret) = secret {
            request = request.header("X-Svc-Admin-Secret", secret);
        }
        let response = request.send().await.expect("request");
        assert_eq!(response.status().as_u16(), 200);
        response.json().await.expect("json")
    })
}

/// [`send`] as role `user` with `X-Svc-User-Id: user`.
fn send_as(
    server: &TestServer,
    query: &'static str,
    user: &'static str,
) -> tokio::task::JoinHandle<Value> {
    send(
        server,
        query,
        vec![("X-Svc-Role", "user"), ("X-Svc-User-Id", user)],
    )
}

/// The article ids role `user` sees as `user`: published ones and their own drafts.
fn visible_to(user: &str) -> Value {
    match user {
        "1" => json!([1, 2, 3, 5]),
        "2" => json!([1, 3, 4, 5]),
        _ => json!([1, 3, 5]),
    }
}

/// Runs `query` once as `user` (compiling its plan and timing its statement) and checks the
/// answer.
async fn warm(server: &TestServer, query: &str, user: &str) {
    let answer = server
        .gql_role(query, "user", &[("X-Svc-User-Id", user)])
        .await;
    assert_eq!(ids(&answer), visible_to(user), "{answer}");
}

fn ids(answer: &Value) -> Value {
    let rows = answer["data"]["articles"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"));
    Value::Array(rows.iter().map(|r| r["id"].clone()).collect())
}

/// Runs `query` for the first two users until both statements wait for the lock, then for
/// `queued` users, which queue one at a time in that order (so a shared statement's rows come
/// in that order); releases the lock and returns every answer with its user.
async fn blocked_then_queued(
    server: &TestServer,
    query: &'static str,
    queued: &[&'static str],
) -> Vec<(&'static str, Value)> {
    let lock = TableLock::take(&server.db_url).await;
    let before = counters(server);
    let mut sent = Vec::new();
    for user in ["1", "2"] {
        sent.push((user, send_as(server, query, user)));
    }
    until_blocked(server, IN_FLIGHT).await;
    for (i, user) in queued.iter().enumerate() {
        sent.push((*user, send_as(server, query, user)));
        until_queued(server, &before, i as u64 + 1).await;
    }
    lock.release().await;
    let mut answers = Vec::new();
    for (user, task) in sent {
        answers.push((user, task.await.expect("request task")));
    }
    answers
}

const ARTICLES: &str = "{ articles(order_by: {id: asc}) { id } }";

/// Requests queued behind the plan's running statements are answered by one statement, each
/// with the rows its own session may see (the session user is a parameter of that statement,
/// one value per distinct user: requests of the same user share a row).
#[tokio::test]
async fn queued_requests_share_one_statement_and_each_gets_its_own_rows() {
    let server = blog().await;
    // Compiles the plan (and prepares its statement on one connection).
    warm(&server, ARTICLES, "1").await;
    let before = counters(&server);
    let queued = ["3", "1", "2", "3", "2", "1"];
    let answers = blocked_then_queued(&server, ARTICLES, &queued).await;
    for (user, answer) in &answers {
        assert_eq!(ids(answer), visible_to(user), "user {user}: {answer}");
    }
    let after = counters(&server);
    assert_eq!(
        after.statements_run - before.statements_run,
        3,
        "two statements alone, then one for the six queued requests"
    );
    assert_eq!(after.shared_statements - before.shared_statements, 1);
    assert_eq!(after.shared_requests - before.shared_requests, 6);
    assert_eq!(after.shared_waits - before.shared_waits, 6);
    assert_eq!(
        after.shared_coalesced - before.shared_coalesced,
        3,
        "three users twice each: three rows, each answering two requests"
    );
}

/// A batch that fills up starts at once, beside the plan's running statements, instead of
/// waiting for one of them to end.
#[tokio::test]
async fn a_full_batch_starts_at_once() {
    let server = blog().await;
    const QUERY: &str = "query Full { articles(order_by: {id: asc}) { id } }";
    warm(&server, QUERY, "3").await;
    let full = basalt::execute::MAX_SHARED_REQUESTS;
    let lock = TableLock::take(&server.db_url).await;
    let before = counters(&server);
    let users = ["1", "2", "3"];
    let mut sent = Vec::new();
    for user in ["1", "2"] {
        sent.push((user, send_as(&server, QUERY, user)));
    }
    until_blocked(&server, IN_FLIGHT).await;
    for i in 0..full {
        let user = users[i % users.len()];
        sent.push((user, send_as(&server, QUERY, user)));
    }
    until_queued(&server, &before, full as u64).await;
    // The full batch reached Postgres while the first two statements still wait.
    until_blocked(&server, IN_FLIGHT + 1).await;
    for user in users {
        sent.push((user, send_as(&server, QUERY, user)));
    }
    until_queued(&server, &before, full as u64 + 3).await;
    lock.release().await;
    for (user, task) in sent {
        let answer = task.await.expect("request task");
        assert_eq!(ids(&answer), visible_to(user), "user {user}: {answer}");
    }
    let after = counters(&server);
    assert_eq!(after.shared_statements - before.shared_statements, 2);
    assert_eq!(
        after.shared_requests - before.shared_requests,
        full as u64 + 3
    );
    assert_eq!(
        after.shared_coalesced - before.shared_coalesced,
        full as u64 - 3,
        "the full batch is three rows (three users); the last three, three more"
    );
    assert_eq!(
        after.statements_run - before.statements_run,
        4,
        "two alone, the full batch, then one for the last three"
    );
}

/// A shared statement that Postgres refuses part way (one request's session value is not an
/// integer) answers the requests whose rows it sent before the error: a read's row is complete
/// when it is sent. The requests after it run alone, the bad one gets its error and the others
/// their rows.
#[tokio::test]
async fn a_failed_shared_statement_answers_the_rows_it_sent_and_runs_the_rest_alone() {
    let server = blog().await;
    const QUERY: &str = "query Mine { articles(order_by: {id: asc}) { id } }";
    warm(&server, QUERY, "2").await;
    let before = counters(&server);
    let queued = ["1", "not-a-number", "2"];
    let answers = blocked_then_queued(&server, QUERY, &queued).await;
    for (user, answer) in &answers {
        if *user == "not-a-number" {
            let message = answer["errors"][0]["message"].as_str().unwrap_or_default();
            assert!(answer.get("data").is_none(), "{answer}");
            assert!(!message.is_empty(), "{answer}");
        } else {
            assert_eq!(ids(answer), visible_to(user), "user {user}: {answer}");
        }
    }
    let after = counters(&server);
    assert_eq!(after.shared_statements - before.shared_statements, 1);
    assert_eq!(
        after.shared_requests - before.shared_requests,
        1,
        "the first queued request's row came before the error"
    );
    assert_eq!(
        after.statements_run - before.statements_run,
        2 + 1 + 2,
        "two alone, the failed shared one, then the two requests it did not answer alone"
    );
}

/// Sends `query` five times while `article` is locked and checks that every request reached
/// Postgres on its own (none queued) and got `expected`.
async fn five_run_alone(server: &TestServer, query: &'static str, expected: &Value) {
    let before = counters(server);
    let lock = TableLock::take(&server.db_url).await;
    let sent: Vec<_> = (0..5).map(|_| send(server, query, Vec::new())).collect();
    until_blocked(server, 5).await;
    lock.release().await;
    for task in sent {
        assert_eq!(&task.await.expect("request task"), expected);
    }
    let after = counters(server);
    assert_eq!(after.statements_run - before.statements_run, 5);
    assert_eq!(after.shared_waits, before.shared_waits);
    assert_eq!(after.shared_statements, before.shared_statements);
}

/// [`five_run_alone`] for a plan that could share but whose sharing does not pay: the three
/// requests past the plan's statements in flight are counted as declined.
async fn five_declined(server: &TestServer, query: &'static str, expected: &Value) {
    let before = counters(server);
    five_run_alone(server, query, expected).await;
    let after = counters(server);
    assert_eq!(
        after.shared_declined - before.shared_declined,
        5 - IN_FLIGHT as u64
    );
    let metrics = crate::http::scrape(server, server.admin_secret.as_deref()).await;
    assert_eq!(
        metrics["basalt_shared_declined_total{}"],
        after.shared_declined as f64
    );
}

/// A read alone runs its own statement first, then its multiplexed statement with one row
/// (which Postgres plans once), each timed; from then on the cheaper one, and the other now and
/// then to time it again. Both give each user their own rows, and a request the one-row form
/// fails for gets the error of its own statement (the failure counting against that form).
#[tokio::test]
async fn a_read_alone_times_both_forms_and_each_answers_alike() {
    let server = blog().await;
    const QUERY: &str = "query Forms { articles(order_by: {id: asc}) { id } }";
    let before = counters(&server);
    warm(&server, QUERY, "1").await;
    let plain = counters(&server);
    assert_eq!(plain.alone_multiplexed, before.alone_multiplexed);
    assert_eq!(plain.statements_run - before.statements_run, 1);
    // Next, the one-row form; it fails for this user id, and the request's own statement
    // answers with its own error.
    let refused = server
        .gql_role(QUERY, "user", &[("X-Svc-User-Id", "not-a-number")])
        .await;
    assert!(refused.get("data").is_none(), "{refused}");
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not-a-number")),
        "{refused}"
    );
    let failed = counters(&server);
    assert_eq!(failed.alone_multiplexed, before.alone_multiplexed);
    assert_eq!(
        failed.statements_run - plain.statements_run,
        2,
        "the one-row form, then the request's own statement"
    );
    // The failure counts against the one-row form: the next request runs its own statement.
    warm(&server, QUERY, "2").await;
    let own = counters(&server);
    assert_eq!(own.alone_multiplexed, failed.alone_multiplexed);
    assert_eq!(own.statements_run - failed.statements_run, 1);
    // Whichever form is cheaper from here, the other is timed again once in every sixteen.
    for i in 0..32 {
        warm(&server, QUERY, ["1", "2", "3"][i % 3]).await;
    }
    let after = counters(&server);
    let multiplexed = after.alone_multiplexed - own.alone_multiplexed;
    assert!(
        (2..=30).contains(&multiplexed),
        "both forms ran: {multiplexed} of 32 in the one-row form"
    );
    assert_eq!(after.statements_run - own.statements_run, 32);
    assert_eq!(after.shared_statements, before.shared_statements);
}

/// A plan that can observe the session (here a view) is never shared: every request runs its
/// own statement with its own session setting, even while others of the plan wait.
#[tokio::test]
async fn a_plan_that_can_observe_the_session_is_never_shared() {
    let server = blog().await;
    const VIEW: &str = "{ popular_article(order_by: {id: asc}) { id } }";
    let first = server.gql(VIEW).await;
    assert_eq!(
        first["data"]["popular_article"].as_array().map(Vec::len),
        Some(3),
        "{first}"
    );
    let before = counters(&server);
    five_run_alone(&server, VIEW, &first).await;
    assert_eq!(
        counters(&server).shared_declined,
        before.shared_declined,
        "a plan that may never share declines nothing"
    );
}

/// A plan whose statement alone takes longer than the absolute bound keeps one statement per
/// request (and Postgres's parallelism), whatever sharing would save: here every plan is too
/// slow for a 1 µs bound once its first statement has been timed.
#[tokio::test]
async fn a_plan_slower_than_the_bound_is_not_shared() {
    let server = blog_sharing_below(1).await;
    const QUERY: &str = "query Slow { articles(order_by: {id: asc}) { id } }";
    let first = server.gql(QUERY).await;
    assert_eq!(
        first["data"]["articles"].as_array().map(Vec::len),
        Some(5),
        "{first}"
    );
    five_declined(&server, QUERY, &first).await;
}

const INSERT_ARTICLE: &str = "mutation ($id: Int!, $title: String!, $author: Int!) { \
     insert_article_one(object: {id: $id, title: $title, author_id: $author}) \
     { id title author_id status } }";

/// An `insert_article_one` of article `id` by `author`, as role `user` with
/// `X-Svc-User-Id: user` (or as admin when `user` is `None`).
fn insert_article(
    server: &TestServer,
    id: i64,
    title: &str,
    author: i64,
    user: Option<&'static str>,
) -> tokio::task::JoinHandle<Value> {
    let body = json!({
        "query": INSERT_ARTICLE,
        "variables": {"id": id, "title": title, "author": author},
    });
    let headers = match user {
        Some(user) => vec![("X-Svc-Role", "user"), ("X-Svc-User-Id", user)],
        None => Vec::new(),
    };
    send_body(server, body, headers)
}

/// The answer to an insert of `(id, title, author)` as role `user`, whose permission sets
/// `status` to `draft`.
fn inserted(id: i64, title: &str, author: i64) -> Value {
    json!({"data": {"insert_article_one": {
        "id": id, "title": title, "author_id": author, "status": "draft",
    }}})
}

/// Inserts article 99 as user 1: compiles the insert plan and times its statement alone.
async fn warm_insert(server: &TestServer) {
    let warm = insert_article(server, 99, "warm", 1, Some("1"))
        .await
        .unwrap();
    assert_eq!(warm, inserted(99, "warm", 1));
}

/// An insert: `(id, title, author, session user)`.
type Insert = (i64, &'static str, i64, Option<&'static str>);

/// Checks that each insert of `first` then `queued` was answered with its own row.
fn each_got_its_row(first: &[Insert], queued: &[Insert], answers: &[Value]) {
    assert_eq!(answers.len(), first.len() + queued.len());
    for ((id, title, author, _), answer) in first.iter().chain(queued).zip(answers) {
        assert_eq!(answer, &inserted(*id, title, *author));
    }
}

/// The articles with ids from 100, as `(id, title, author_id)`, in id order.
async fn new_articles(server: &TestServer) -> Value {
    query_json(
        &server.db_url,
        "SELECT id, title, author_id FROM article WHERE id >= 100 ORDER BY id",
    )
    .await
}

/// Sends the inserts `(id, title, author, user)` of `first` until they wait for the lock on
/// `article`, then those of `queued`, which queue; releases the lock and returns every
/// answer, in the order sent.
async fn inserts_blocked_then_queued(
    server: &TestServer,
    first: &[Insert],
    queued: &[Insert],
) -> Vec<Value> {
    let lock = TableLock::take(&server.db_url).await;
    let before = counters(server);
    let mut sent = Vec::new();
    for (id, title, author, user) in first {
        sent.push(insert_article(server, *id, title, *author, *user));
    }
    until_blocked(server, first.len()).await;
    for (id, title, author, user) in queued {
        sent.push(insert_article(server, *id, title, *author, *user));
    }
    until_queued(server, &before, queued.len() as u64).await;
    lock.release().await;
    let mut answers = Vec::new();
    for task in sent {
        answers.push(task.await.expect("request task"));
    }
    answers
}

/// Concurrent inserts of one session queued behind the plan's running statement are made
/// by one statement, each request writing its own row and getting that row back, even when
/// two requests carry the same values (two rows, not one answer shared).
#[tokio::test]
async fn queued_inserts_of_one_session_share_one_statement_each_with_its_own_row() {
    let server = blog().await;
    warm_insert(&server).await;
    let before = counters(&server);
    let user = Some("1");
    let first = [(100, "a", 1, user)];
    let queued = [
        (101, "b", 1, user),
        (102, "c", 1, user),
        (103, "same", 1, user),
        (104, "same", 1, user),
        (105, "d", 1, user),
    ];
    let answers = inserts_blocked_then_queued(&server, &first, &queued).await;
    each_got_its_row(&first, &queued, &answers);
    assert_eq!(
        new_articles(&server).await,
        json!([
            {"id": 100, "title": "a", "author_id": 1},
            {"id": 101, "title": "b", "author_id": 1},
            {"id": 102, "title": "c", "author_id": 1},
            {"id": 103, "title": "same", "author_id": 1},
            {"id": 104, "title": "same", "author_id": 1},
            {"id": 105, "title": "d", "author_id": 1},
        ])
    );
    let after = counters(&server);
    assert_eq!(
        after.statements_run - before.statements_run,
        2,
        "one insert alone, then one statement for the five queued"
    );
    assert_eq!(after.shared_statements - before.shared_statements, 1);
    assert_eq!(after.shared_requests - before.shared_requests, 5);
    assert_eq!(after.shared_coalesced, before.shared_coalesced);
}

/// Inserts can observe the session (a trigger, a default), so a shared statement takes the
/// requests of one session only: queued inserts of two users are two statements, each row
/// written under its own user's permission.
#[tokio::test]
async fn queued_inserts_of_different_sessions_never_share_a_statement() {
    let server = blog().await;
    warm_insert(&server).await;
    let before = counters(&server);
    let first = [(100, "a", 1, Some("1"))];
    let queued = [
        (101, "b", 2, Some("2")),
        (102, "c", 1, Some("1")),
        (103, "d", 2, Some("2")),
        (104, "e", 1, Some("1")),
        (105, "f", 2, Some("2")),
        (106, "g", 3, Some("3")),
    ];
    let answers = inserts_blocked_then_queued(&server, &first, &queued).await;
    each_got_its_row(&first, &queued, &answers);
    let rows = new_articles(&server).await;
    assert_eq!(rows.as_array().map(Vec::len), Some(7), "{rows}");
    let after = counters(&server);
    assert_eq!(
        after.shared_statements - before.shared_statements,
        2,
        "users 1 and 2 one statement each; user 3's request alone needs none"
    );
    assert_eq!(after.shared_requests - before.shared_requests, 5);
    assert_eq!(
        after.statements_run - before.statements_run,
        1 + 2 + 1,
        "one alone, two shared, user 3's alone"
    );
}

/// A shared insert Postgres refuses (one request's id is taken, another's row fails the
/// role's check) wrote nothing: each of its requests runs alone, the bad ones get their own
/// errors, and every good row is written once.
#[tokio::test]
async fn a_refused_shared_insert_runs_each_request_alone_and_writes_each_row_once() {
    let server = blog().await;
    warm_insert(&server).await;
    let user = Some("1");
    let first = [(100, "a", 1, user)];
    let queued = [
        (101, "b", 1, user),
        (102, "c", 1, user),
        (1, "taken", 1, user),
        (103, "d", 1, user),
        (104, "not mine", 2, user),
        (105, "e", 1, user),
    ];
    let before = counters(&server);
    let answers = inserts_blocked_then_queued(&server, &first, &queued).await;
    let sent: Vec<_> = first.iter().chain(&queued).collect();
    for ((id, title, author, _), answer) in sent.iter().zip(&answers) {
        match *title {
            "taken" => assert_eq!(
                answer["errors"][0]["extensions"]["code"], "constraint-violation",
                "{answer}"
            ),
            "not mine" => assert_eq!(
                answer["errors"][0]["extensions"]["code"], "permission-error",
                "{answer}"
            ),
            _ => assert_eq!(answer, &inserted(*id, title, *author)),
        }
    }
    assert_eq!(
        new_articles(&server).await,
        json!([
            {"id": 100, "title": "a", "author_id": 1},
            {"id": 101, "title": "b", "author_id": 1},
            {"id": 102, "title": "c", "author_id": 1},
            {"id": 103, "title": "d", "author_id": 1},
            {"id": 105, "title": "e", "author_id": 1},
        ])
    );
    let after = counters(&server);
    assert_eq!(after.shared_statements - before.shared_statements, 1);
    assert_eq!(after.shared_requests - before.shared_requests, 0);
    assert_eq!(
        after.statements_run - before.statements_run,
        1 + 1 + 6,
        "one alone, the refused shared one, then the six queued requests alone"
    );
}

/// Queued inserts each alone of its session in their batch (three users) share nothing:
/// each runs alone, as the plan's own statement would, and writes its own row; no shared
/// statement runs. (That such requests then weigh against queueing is a unit test of
/// `execute::shared`, where it does not depend on timing.)
#[tokio::test]
async fn queued_inserts_alone_of_their_session_each_run_alone() {
    let server = blog().await;
    warm_insert(&server).await;
    let before = counters(&server);
    let first = [(100, "a", 1, Some("1"))];
    let lone = [
        (101, "b", 1, Some("1")),
        (102, "c", 2, Some("2")),
        (103, "d", 3, Some("3")),
    ];
    let answers = inserts_blocked_then_queued(&server, &first, &lone).await;
    each_got_its_row(&first, &lone, &answers);
    let rows = new_articles(&server).await;
    assert_eq!(rows.as_array().map(Vec::len), Some(4), "{rows}");
    let after = counters(&server);
    assert_eq!(after.shared_statements, before.shared_statements);
    assert_eq!(after.shared_requests, before.shared_requests);
    assert_eq!(after.shared_waits - before.shared_waits, 3);
    assert_eq!(
        after.statements_run - before.statements_run,
        4,
        "every insert its own statement"
    );
}

/// `BASALT_SHARED_WRITES_IN_FLIGHT` sets the width for inserts alone: with 0, concurrent
/// inserts each run their own statement (none queues, all wait for the lock side by side),
/// while reads of the same server still queue behind their plan's two running statements.
#[tokio::test]
async fn with_no_write_width_inserts_run_alone_while_reads_still_share() {
    let server = blog_sharing(0, 0).await;
    warm_insert(&server).await;
    let lock = TableLock::take(&server.db_url).await;
    let before = counters(&server);
    let inserts: [Insert; 3] = [
        (100, "a", 1, Some("1")),
        (101, "b", 1, Some("1")),
        (102, "c", 1, Some("1")),
    ];
    let sent: Vec<_> = inserts
        .iter()
        .map(|(id, title, author, user)| insert_article(&server, *id, title, *author, *user))
        .collect();
    until_blocked(&server, inserts.len()).await;
    lock.release().await;
    let mut answers = Vec::new();
    for task in sent {
        answers.push(task.await.expect("request task"));
    }
    each_got_its_row(&inserts, &[], &answers);
    let after = counters(&server);
    assert_eq!(after.shared_waits, before.shared_waits, "no insert queued");
    assert_eq!(after.statements_run - before.statements_run, 3);

    // The reads below expect the blog's own articles.
    run_sql(&server.db_url, "DELETE FROM article WHERE id >= 99").await;
    warm(&server, ARTICLES, "1").await;
    let before = counters(&server);
    let answers = blocked_then_queued(&server, ARTICLES, &["3", "1"]).await;
    for (user, answer) in &answers {
        assert_eq!(ids(answer), visible_to(user), "user {user}: {answer}");
    }
    let after = counters(&server);
    assert_eq!(after.shared_waits - before.shared_waits, 2, "reads queued");
    assert_eq!(after.shared_statements - before.shared_statements, 1);
}
