//! Per-role API limits through `/v1/graphql` (`docs/limits.md`) on the employee fixture:
//! the acceptance examples, each count limit refused one step past its bound and passed at
//! it, who is exempt and which value applies, the time limit cancelling a statement with the
//! pool still serving, and the rate limit under concurrency, per address and session value,
//! for batches and on WebSockets.

use super::subscriptions::{connect, init, message, send, TRANSPORT};
use crate::harness::{fresh_database, query_json, run_sql, TestServer};
use basalt::config::ServeConfig;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const SECRET: &str = "limits-secret";

/// The employee table with its manager relationship, two slow views and a table whose
/// inserts of ids above 100 take two seconds.
const FIXTURE: &str = "
CREATE TABLE employee (id int PRIMARY KEY, name text NOT NULL, salary int,
  manager_remarks text, manager_id int REFERENCES employee(id));
INSERT INTO employee VALUES (1,'e1',10000,'good',1), (2,'e2',20000,'fine',2), (3,'e3',30000,'ok',2);
CREATE VIEW employee_nap AS SELECT e.id, e.name FROM employee e CROSS JOIN pg_sleep(0.1);
CREATE VIEW employee_sleep AS SELECT e.id, e.name FROM employee e CROSS JOIN pg_sleep(2);
CREATE TABLE note (id int PRIMARY KEY);
CREATE FUNCTION note_slowly() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.id > 100 THEN PERFORM pg_sleep(2); END IF; RETURN NEW; END $$;
CREATE TRIGGER note_slowly BEFORE INSERT ON note FOR EACH ROW EXECUTE FUNCTION note_slowly();
";

/// A server on the fixture with the admin secret, configured by `configure`.
async fn server(configure: impl FnOnce(&mut ServeConfig)) -> TestServer {
    let db = fresh_database().await;
    run_sql(&db, FIXTURE).await;
    let s = TestServer::on(&db, |c| {
        c.admin_secret = Some(SECRET.to_owned());
        configure(c);
    })
    .await;
    let select = |table: &str, role: &str, columns: Value, filter: Value, limit: Option<u32>| {
        let mut permission = json!({"columns": columns, "filter": filter});
        if let Some(limit) = limit {
            permission["limit"] = json!(limit);
        }
        if role == "manager" {
            permission["allow_aggregations"] = json!(true);
        }
        json!({"type": "create_select_permission",
            "args": {"table": table, "role": role, "permission": permission}})
    };
    let track =
        |name: &str| json!({"type": "track_table", "args": {"schema": "public", "name": name}});
    // One at a time: a test may bound `bulk` with a small `--max-batch-size`.
    let setup = [
        track("employee"),
        track("employee_nap"),
        track("employee_sleep"),
        track("note"),
        json!({"type": "create_object_relationship", "args": {"table": "employee", "name": "manager",
            "using": {"foreign_key_constraint_on": "manager_id"}}}),
        select(
            "employee",
            "employee",
            json!(["id", "name", "salary"]),
            json!({"id": "X-Svc-User-Id"}),
            Some(10),
        ),
        select(
            "employee",
            "manager",
            json!(["id", "name", "manager_remarks"]),
            json!({"manager_id": "X-Svc-Manager-Id"}),
            Some(2),
        ),
        select(
            "employee_nap",
            "employee",
            json!(["id", "name"]),
            json!({}),
            None,
        ),
        select(
            "employee_sleep",
            "employee",
            json!(["id", "name"]),
            json!({}),
            None,
        ),
        json!({"type": "create_insert_permission", "args": {"table": "note", "role": "employee",
            "permission": {"columns": ["id"], "check": {}}}}),
    ];
    for op in setup {
        s.ok(op).await;
    }
    s
}

/// The session headers of role `employee` (user 1).
const EMPLOYEE: &[(&str, &str)] = &[("X-Svc-Role", "employee"), ("X-Svc-User-Id", "1")];
/// The session headers of role `manager` (manager 2).
const MANAGER: &[(&str, &str)] = &[("X-Svc-Role", "manager"), ("X-Svc-Manager-Id", "2")];

/// An answer: status, headers, body.
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

/// POSTs `body` to `/v1/graphql` with the admin secret and `headers`.
async fn post(s: &TestServer, body: Value, headers: &[(&str, &str)]) -> Answer {
    let mut request = s
        .http
        .post(format!("{}/v1/graphql", s.base))
        .header("X-Svc-Admin-Secret", SECRET)
        .json(&body);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.json().await.unwrap();
    Answer {
        status,
        headers,
        body,
    }
}

/// The body of `query` sent with `headers`, which must be answered 200.
async fn run(s: &TestServer, query: &str, headers: &[(&str, &str)]) -> Value {
    let answer = post(s, json!({"query": query}), headers).await;
    assert_eq!(answer.status, 200, "{query}: {}", answer.body);
    answer.body
}

async fn set_limits(s: &TestServer, limits: Value) {
    let r = s
        .ok(json!({"type": "set_api_limits", "args": limits}))
        .await;
    assert_eq!(r, json!({"message": "success"}));
}

/// The one error of a refused request.
fn refusal(message: &str, code: &str) -> Value {
    json!({"errors": [{"message": message, "extensions": {"path": "$", "code": code}}]})
}

#[tokio::test]
async fn acceptance_examples() {
    let s = server(|_| {}).await;
    // A depth limit holds a role that the admin secret picked, not the admin.
    set_limits(&s, json!({"depth_limit": {"global": 1}})).await;
    let deep = "{ employee { manager { name } } }";
    assert_eq!(
        run(&s, deep, EMPLOYEE).await,
        refusal("query depth exceeds 1", "validation-failed")
    );
    let admin = run(&s, deep, &[]).await;
    assert_eq!(
        admin["data"]["employee"].as_array().unwrap().len(),
        3,
        "{admin}"
    );

    // A rate limit replaces the depth limit: two requests a minute, then 429.
    set_limits(
        &s,
        json!({"rate_limit": {"global": {"max_reqs_per_min": 2}}}),
    )
    .await;
    for remaining in ["1", "0"] {
        let r = post(&s, json!({"query": "{ employee { id } }"}), EMPLOYEE).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body, json!({"data": {"employee": [{"id": 1}]}}));
        assert_eq!(r.header("x-ratelimit-limit"), Some("2"));
        assert_eq!(r.header("x-ratelimit-remaining"), Some(remaining));
    }
    let r = post(&s, json!({"query": "{ employee { id } }"}), EMPLOYEE).await;
    assert_eq!(r.status, 429);
    assert_eq!(
        r.body,
        refusal("rate limit of 2 exceeded", "rate-limit-exceeded")
    );
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(r.header("x-ratelimit-remaining"), Some("0"));
    // The depth limit went with the object it replaced; another role has its own budget.
    let r = post(&s, json!({"query": deep}), MANAGER).await;
    assert_eq!(r.status, 200);
    assert!(r.body["data"]["employee"].is_array(), "{}", r.body);
    assert_eq!(r.header("x-ratelimit-remaining"), Some("1"));
    // The admin is never counted.
    let admin = post(&s, json!({"query": deep}), &[]).await;
    assert_eq!(admin.status, 200);
    assert!(admin.header("x-ratelimit-limit").is_none());

    // The role header is not a session variable to key on.
    let (status, body) = s
        .query(
            json!({"type": "set_api_limits", "args": {"rate_limit": {"global":
            {"max_reqs_per_min": 5, "unique_params": ["x-svc-role"]}}}}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"path": "$.args.rate_limit.global.unique_params",
            "error": "Not a valid value. Should be either: 'IP' or a list of session variables",
            "code": "parse-failed"})
    );
    let removed = s.ok(json!({"type": "remove_api_limits"})).await;
    assert_eq!(removed, json!({"message": "success"}));
    assert!(s.export().await.get("api_limits").is_none());
    // Nothing holds the role any more.
    let r = post(&s, json!({"query": "{ employee { id } }"}), EMPLOYEE).await;
    assert_eq!((r.status, r.header("x-ratelimit-limit")), (200, None));
}

#[tokio::test]
async fn count_limits_refuse_one_step_past_their_bound() {
    let s = server(|_| {}).await;
    set_limits(
        &s,
        json!({"depth_limit": {"global": 2}, "node_limit": {"global": 3}, "batch_limit": {"global": 2}}),
    )
    .await;
    // Depth: two levels pass, three do not, and fragments are expanded.
    let r = run(&s, "{ employee { manager { name } } }", EMPLOYEE).await;
    assert!(r["data"].is_object(), "{r}");
    let three = "{ employee { ...M } } fragment M on employee { manager { manager { id } } }";
    assert_eq!(
        run(&s, three, EMPLOYEE).await,
        refusal("query depth exceeds 2", "validation-failed")
    );
    // Nodes: aliases count apart.
    let nodes = "{ a: employee { id } b: employee { manager { id } } }";
    assert!(run(&s, nodes, EMPLOYEE).await["data"].is_object());
    let four = "{ a: employee { id } b: employee { manager { id } } c: employee { id } }";
    assert_eq!(
        run(&s, four, EMPLOYEE).await,
        refusal("query node count exceeds 3", "validation-failed")
    );
    // Introspection passes any limit.
    let schema = "{ __schema { types { fields { type { ofType { name } } } } } }";
    assert!(run(&s, schema, EMPLOYEE).await["data"].is_object());
    // A plan kept for one value of a condition is checked again for another.
    let conditional =
        "query($deep: Boolean!) { employee { manager { id manager @include(if: $deep) { id } } } }";
    for (deep, refused) in [(false, false), (true, true), (false, false), (true, true)] {
        let body = json!({"query": conditional, "variables": {"deep": deep}});
        let r = post(&s, body, EMPLOYEE).await.body;
        assert_eq!(r.get("errors").is_some(), refused, "{deep}: {r}");
    }
    // Batches: two pass, three are refused whole with one error object.
    let one = json!({"query": "{ employee { id } }"});
    let r = post(&s, json!([one, one]), EMPLOYEE).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body.as_array().map(Vec::len), Some(2), "{}", r.body);
    let r = post(&s, json!([one, one, one]), EMPLOYEE).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, refusal("batch size exceeds 2", "validation-failed"));
    // Subscriptions are measured when they start.
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    let headers = json!({"headers": {"X-Svc-Admin-Secret": SECRET, "X-Svc-Role": "employee", "X-Svc-User-Id": "1"}});
    assert_eq!(init(&mut ws, headers).await["type"], "connection_ack");
    let subscribe = json!({"type": "subscribe", "id": "deep", "payload": {"query":
        "subscription { employee { manager { manager { id } } } }"}});
    send(&mut ws, subscribe).await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "error", "id": "deep", "payload": [{"message": "query depth exceeds 2",
            "extensions": {"path": "$", "code": "validation-failed"}}]})
    );
}

#[tokio::test]
async fn who_is_held_and_to_which_value() {
    let s = server(|c| {
        c.max_query_depth = 3;
        c.max_batch_size = 2;
    })
    .await;
    let depth = |n: usize| {
        let mut q = String::from("{ employee { id ");
        q.push_str(&"manager { ".repeat(n - 1));
        q.push_str("id ");
        q.push_str(&"} ".repeat(n));
        q.push('}');
        q
    };
    set_limits(
        &s,
        json!({"depth_limit": {"global": 1, "per_role": {"manager": 2, "admin": 1}},
            "batch_limit": {"global": 5}}),
    )
    .await;
    // The admin is exempt, even with an entry of its own; the server's limit still holds it.
    assert!(run(&s, &depth(3), &[]).await["data"].is_object());
    assert_eq!(
        run(&s, &depth(4), &[]).await,
        refusal("query depth exceeds 3", "validation-failed")
    );
    // A role's entry overrides the global value for that role only.
    assert!(run(&s, &depth(2), MANAGER).await["data"].is_object());
    assert_eq!(
        run(&s, &depth(3), MANAGER).await,
        refusal("query depth exceeds 2", "validation-failed")
    );
    assert_eq!(
        run(&s, &depth(2), EMPLOYEE).await,
        refusal("query depth exceeds 1", "validation-failed")
    );
    // The API limits only tighten the server's: a batch limit of 5 leaves the server's 2.
    let one = json!({"query": "{ employee { id } }"});
    let r = post(&s, json!([one, one, one]), EMPLOYEE).await;
    assert_eq!(r.body, refusal("batch size exceeds 2", "validation-failed"));
    // Disabled limits are kept but hold no one.
    set_limits(
        &s,
        json!({"disabled": true, "depth_limit": {"global": 1}, "rate_limit": {"global": {"max_reqs_per_min": 1}}}),
    )
    .await;
    assert_eq!(s.export().await["api_limits"]["disabled"], true);
    for _ in 0..3 {
        let r = post(&s, json!({"query": depth(2)}), EMPLOYEE).await;
        assert_eq!(r.status, 200);
        assert!(r.body["data"].is_object(), "{}", r.body);
        assert!(r.header("x-ratelimit-limit").is_none());
    }
}

/// Backends of the server's database running a statement that sleeps.
async fn sleeping(s: &TestServer) -> Value {
    query_json(
        &s.db_url,
        "SELECT query FROM pg_stat_activity WHERE datname = current_database() \
         AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%pg_sleep%'",
    )
    .await
}

#[tokio::test]
async fn the_time_limit_cancels_the_statement_and_the_pool_keeps_serving() {
    let s = server(|c| c.pool_size = 2).await;
    set_limits(&s, json!({"time_limit": {"global": 0.5}})).await;
    let quick = run(&s, "{ employee_nap(order_by: {id: asc}) { id } }", EMPLOYEE).await;
    assert_eq!(quick["data"]["employee_nap"][0]["id"], 1, "{quick}");
    let timed_out = refusal("time limit of 0.5s exceeded", "time-limit-exceeded");
    for _ in 0..3 {
        let started = Instant::now();
        let r = run(&s, "{ employee_sleep { id } }", EMPLOYEE).await;
        let took = started.elapsed();
        assert_eq!(r, timed_out);
        assert!(took < Duration::from_millis(1800), "{took:?}");
        // The statement was cancelled, not left running.
        assert_eq!(sleeping(&s).await, json!([]));
    }
    // The pool still serves (a connection a cancel was sent on is replaced), for the
    // limited role and the admin.
    for _ in 0..4 {
        let r = run(&s, "{ employee { id } }", EMPLOYEE).await;
        assert_eq!(r, json!({"data": {"employee": [{"id": 1}]}}));
    }
    let admin = run(&s, "{ employee_sleep { id } }", &[]).await;
    assert_eq!(admin["data"]["employee_sleep"].as_array().unwrap().len(), 3);
    // A mutation past its limit rolls back, a single statement or a transaction of several.
    let single = "mutation { insert_note(objects: [{id: 101}]) { affected_rows } }";
    assert_eq!(run(&s, single, EMPLOYEE).await, timed_out);
    let several = "mutation { a: insert_note(objects: [{id: 1}]) { affected_rows }
        b: insert_note(objects: [{id: 102}]) { affected_rows } }";
    assert_eq!(run(&s, several, EMPLOYEE).await, timed_out);
    let notes = query_json(&s.db_url, "SELECT id FROM note").await;
    assert_eq!(notes, json!([]));
    assert_eq!(sleeping(&s).await, json!([]));
    let fast = "mutation { insert_note(objects: [{id: 2}]) { affected_rows } }";
    let r = run(&s, fast, EMPLOYEE).await;
    assert_eq!(r["data"]["insert_note"]["affected_rows"], 1, "{r}");
}

#[tokio::test]
async fn concurrent_requests_past_a_rate_limit_get_429() {
    let s = server(|_| {}).await;
    set_limits(
        &s,
        json!({"rate_limit": {"global": {"max_reqs_per_min": 20}}}),
    )
    .await;
    let requests = (0..50).map(|_| post(&s, json!({"query": "{ employee { id } }"}), EMPLOYEE));
    let answers = futures_util::future::join_all(requests).await;
    let count = |status: u16| answers.iter().filter(|a| a.status == status).count();
    assert_eq!((count(200), count(429)), (20, 30));
    for answer in &answers {
        assert_eq!(answer.header("x-ratelimit-limit"), Some("20"));
        match answer.status {
            200 => assert_eq!(answer.body, json!({"data": {"employee": [{"id": 1}]}})),
            _ => assert_eq!(
                answer.body,
                refusal("rate limit of 20 exceeded", "rate-limit-exceeded")
            ),
        }
    }
    let mut remaining: Vec<u32> = answers
        .iter()
        .filter(|a| a.status == 200)
        .map(|a| a.header("x-ratelimit-remaining").unwrap().parse().unwrap())
        .collect();
    remaining.sort_unstable();
    assert_eq!(remaining, (0..20).collect::<Vec<u32>>());
    let metrics = crate::http::scrape(&s, Some(SECRET)).await;
    let role = |name: &str| metrics[&format!("{name}{{role=employee}}")];
    assert_eq!(role("basalt_graphql_rate_limit_admitted_total"), 20.0);
    assert_eq!(role("basalt_graphql_rate_limit_refused_total"), 30.0);
}

#[tokio::test]
async fn rate_buckets_by_address_session_values_and_batches() {
    let s = server(|c| c.trusted_proxy_hops = 1).await;
    set_limits(
        &s,
        json!({"rate_limit": {"global": {"max_reqs_per_min": 1, "unique_params": "IP"},
            "per_role": {"manager": {"max_reqs_per_min": 3, "unique_params": ["X-Svc-Manager-Id"]}}}}),
    )
    .await;
    let query = json!({"query": "{ employee { id } }"});
    let from = |forwarded: &'static str| {
        let mut headers = EMPLOYEE.to_vec();
        headers.push(("X-Forwarded-For", forwarded));
        headers
    };
    // One proxy is trusted: the right-most entry is the client, whatever is left of it.
    let status = |a: Answer| a.status;
    assert_eq!(
        status(post(&s, query.clone(), &from("203.0.113.1")).await),
        200
    );
    assert_eq!(
        status(post(&s, query.clone(), &from("203.0.113.1")).await),
        429
    );
    assert_eq!(
        status(post(&s, query.clone(), &from("203.0.113.2")).await),
        200
    );
    let spoofed = from("198.51.100.7, 203.0.113.1");
    assert_eq!(status(post(&s, query.clone(), &spoofed).await), 429);
    assert_eq!(
        status(post(&s, query.clone(), &from("::ffff:203.0.113.2")).await),
        429
    );
    // A batch of k counts k, admitted or refused whole; refused ones are not counted.
    let manager = |id: &'static str| vec![("X-Svc-Role", "manager"), ("X-Svc-Manager-Id", id)];
    let r = post(&s, json!([query, query]), &manager("2")).await;
    assert_eq!(
        (r.status, r.header("x-ratelimit-remaining")),
        (200, Some("1"))
    );
    let r = post(&s, json!([query, query]), &manager("2")).await;
    assert_eq!(r.status, 429);
    assert_eq!(
        r.body,
        refusal("rate limit of 3 exceeded", "rate-limit-exceeded")
    );
    let r = post(&s, query.clone(), &manager("2")).await;
    assert_eq!(
        (r.status, r.header("x-ratelimit-remaining")),
        (200, Some("0"))
    );
    // Another session value is another bucket; a missing one is the empty value's.
    assert_eq!(status(post(&s, query.clone(), &manager("3")).await), 200);
    let r = post(
        &s,
        json!([query, query, query]),
        &[("X-Svc-Role", "manager")],
    )
    .await;
    assert_eq!(
        (r.status, r.header("x-ratelimit-remaining")),
        (200, Some("0"))
    );

    // Without trusted proxies, the peer is the client and the header is not read.
    let direct = server(|_| {}).await;
    set_limits(
        &direct,
        json!({"rate_limit": {"global": {"max_reqs_per_min": 1, "unique_params": "IP"}}}),
    )
    .await;
    assert_eq!(
        status(post(&direct, query.clone(), &from("203.0.113.1")).await),
        200
    );
    assert_eq!(
        status(post(&direct, query.clone(), &from("203.0.113.2")).await),
        429
    );
}

#[tokio::test]
async fn websocket_starts_count_and_a_refused_one_leaves_the_socket_open() {
    let s = server(|_| {}).await;
    set_limits(
        &s,
        json!({"rate_limit": {"global": {"max_reqs_per_min": 2}}}),
    )
    .await;
    let (mut ws, _) = connect(&s, Some(TRANSPORT), &[]).await;
    let headers = json!({"headers": {"X-Svc-Admin-Secret": SECRET, "X-Svc-Role": "employee", "X-Svc-User-Id": "1"}});
    assert_eq!(init(&mut ws, headers).await["type"], "connection_ack");
    let start =
        |id: &str, query: &str| json!({"type": "subscribe", "id": id, "payload": {"query": query}});
    send(&mut ws, start("q", "{ employee { id } }")).await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "next", "id": "q", "payload": {"data": {"employee": [{"id": 1}]}}})
    );
    assert_eq!(message(&mut ws).await["type"], "complete");
    send(&mut ws, start("s", "subscription { employee { id } }")).await;
    assert_eq!(message(&mut ws).await["type"], "next");
    send(&mut ws, start("refused", "{ employee { id } }")).await;
    assert_eq!(
        message(&mut ws).await,
        json!({"type": "error", "id": "refused", "payload": [{"message": "rate limit of 2 exceeded",
            "extensions": {"path": "$", "code": "rate-limit-exceeded"}}]})
    );
    // Still open, and the subscription goes on.
    send(&mut ws, json!({"type": "ping"})).await;
    assert_eq!(message(&mut ws).await, json!({"type": "pong"}));
    // The HTTP requests of the role share the budget the socket spent.
    let r = post(&s, json!({"query": "{ employee { id } }"}), EMPLOYEE).await;
    assert_eq!(r.status, 429);
}

#[tokio::test]
async fn the_time_limit_cancels_a_slow_computed_field() {
    let s = server(|c| c.pool_size = 1).await;
    s.sql(
        "CREATE FUNCTION employee_slow_name(e employee) RETURNS text LANGUAGE sql STABLE \
         AS $$ SELECT e.name || pg_sleep(2)::text $$",
    )
    .await;
    s.ok(
        json!({"type": "add_computed_field", "args": {"table": "employee", "name": "slow_name",
        "definition": {"function": "employee_slow_name"}}}),
    )
    .await;
    s.ok(
        json!({"type": "create_select_permission", "args": {"table": "employee",
        "role": "reader", "permission": {"columns": ["id"], "computed_fields": ["slow_name"],
        "filter": {}}}}),
    )
    .await;
    set_limits(&s, json!({"time_limit": {"global": 0.5}})).await;
    let reader = [("X-Svc-Role", "reader")];
    let started = Instant::now();
    let r = run(&s, "{ employee(limit: 1) { id slow_name } }", &reader).await;
    assert_eq!(
        r,
        refusal("time limit of 0.5s exceeded", "time-limit-exceeded")
    );
    assert!(started.elapsed() < Duration::from_millis(1800));
    assert_eq!(sleeping(&s).await, json!([]));
    // The pool's one connection was replaced, and serves the next request at once.
    let r = run(
        &s,
        "{ employee(order_by: {id: asc}, limit: 1) { id } }",
        &reader,
    )
    .await;
    assert_eq!(r, json!({"data": {"employee": [{"id": 1}]}}));
}
