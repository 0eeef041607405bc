//! The request around a query: validation errors, depth and root field limits, injection
//! attempts answered as plain values, the transport (GET, batches, `Accept`, request ids),
//! batch size limits, auth errors answered with HTTP 200, and `explain`.

use super::ids;
use crate::harness::TestServer;
use serde_json::{json, Value};

#[tokio::test]
async fn validation_errors() {
    let s = TestServer::blog().await;
    let cases = [
        (
            "{ author { nickname } }",
            "$.selectionSet.author.selectionSet.nickname",
            "field \"nickname\" not found in type: 'author'",
        ),
        (
            "{ nobody { id } }",
            "$.selectionSet.nobody",
            "field \"nobody\" not found in type: 'query_root'",
        ),
        (
            "{ author(where: {nope: {_eq: 1}}) { id } }",
            "$.selectionSet.author.args.where.nope",
            "field \"nope\" not found in type: 'author_bool_exp'",
        ),
        (
            "{ author(limit: \"x\") { id } }",
            "$.selectionSet.author.args.limit",
            "expected a value of type \"Int\", found \"x\"",
        ),
        (
            "{ author(bogus: 1) { id } }",
            "$.selectionSet.author.args.bogus",
            "'author' has no argument named 'bogus'",
        ),
        (
            "{ articleById { id } }",
            "$.selectionSet.articleById",
            "missing required field 'id'",
        ),
        (
            "{ author }",
            "$.selectionSet.author",
            "missing selection set for field of type \"author\"",
        ),
        (
            "{ author { id { x } } }",
            "$.selectionSet.author.selectionSet.id",
            "field \"id\" must not have a selection since its type is a scalar",
        ),
        (
            "{ author(order_by: {id: sideways}) { id } }",
            "$.selectionSet.author.args.order_by.id",
            "expected one of the values of enum \"order_by\", found sideways",
        ),
        (
            "query($x: Int) { articleById(id: $x) { id } }",
            "$.selectionSet.articleById.args.id",
            "variable \"x\" of type \"Int\" cannot be used where \"Int!\" is expected",
        ),
        (
            "mutation { x }",
            "$.selectionSet.x",
            "field \"x\" not found in type: 'mutation_root'",
        ),
        (
            "subscription { author { id } }",
            "$",
            "subscriptions are not supported over HTTP, use websockets instead",
        ),
        (
            "{ author { ...Missing } }",
            "$.selectionSet.author",
            "fragment \"Missing\" not found",
        ),
    ];
    for (q, path, message) in cases {
        let r = s.gql(q).await;
        assert_eq!(
            r["errors"][0]["extensions"],
            json!({"path": path, "code": "validation-failed"}),
            "{q}: {r}"
        );
        assert_eq!(r["errors"][0]["message"], message, "{q}");
        assert!(r.get("data").is_none());
    }
    let r = s.gql("{ author { id ").await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "parse-failed");
    let r = s.graphql_as(json!({"query": "query($id: Int!) { articleById(id: $id) { id } }", "variables": {"id": "one"}}), &[]).await;
    assert_eq!(r["errors"][0]["extensions"]["path"], "$.variableValues.id");
    let r = s
        .graphql_as(
            json!({"query": "query($id: Int!) { articleById(id: $id) { id } }"}),
            &[],
        )
        .await;
    assert_eq!(
        r["errors"][0]["message"],
        "expecting a value for non-nullable variable: \"id\""
    );
    // Once the document's plan is cached, each request's values are still checked.
    let by_id = "query($id: Int!) { articleById(id: $id) { id } }";
    let r = s
        .graphql_as(json!({"query": by_id, "variables": {"id": 1}}), &[])
        .await;
    assert_eq!(r["data"]["articleById"]["id"], 1, "{r}");
    let r = s
        .graphql_as(json!({"query": by_id, "variables": {"id": "one"}}), &[])
        .await;
    assert_eq!(
        r["errors"][0]["extensions"],
        json!({"path": "$.variableValues.id", "code": "validation-failed"}),
        "{r}"
    );
    let r = s.graphql_as(json!({"query": by_id}), &[]).await;
    assert_eq!(
        r["errors"][0]["message"],
        "expecting a value for non-nullable variable: \"id\""
    );
    let r = s.gql("{ author { profile(path: \"$.a[\") } }").await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "parse-failed");
}

#[tokio::test]
async fn query_depth_and_root_field_limits() {
    let db = crate::harness::fresh_database().await;
    crate::harness::run_sql(&db, crate::harness::BLOG).await;
    let s = TestServer::on(&db, |c| {
        c.max_query_depth = 4;
        c.max_root_fields = 3;
    })
    .await;
    let metadata: Value = serde_json::from_str(crate::harness::BLOG_METADATA).unwrap();
    s.ok(json!({"type": "replace_metadata", "args": metadata}))
        .await;
    let r = s
        .gql("{ author { articles { author { articles { id } } } } }")
        .await;
    assert!(r["data"].is_object(), "depth 4 is allowed: {r}");
    let r = s
        .gql("{ author { articles { author { articles { author { id } } } } } }")
        .await;
    assert_eq!(r["errors"][0]["message"], "query depth exceeds 4");
    let r = s
        .gql("{ a: __typename b: __typename c: __typename d: __typename }")
        .await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "validation-failed");
}

#[tokio::test]
async fn injection_attempts_are_plain_values() {
    let s = TestServer::blog().await;
    let nasty = [
        "x' OR '1'='1",
        "it's \"quoted\" \\ back",
        "'); DROP TABLE author; --",
        "\\'; SELECT pg_sleep(1); --",
        "$1::text",
        "%' OR title LIKE '%",
    ];
    for value in nasty {
        let r = s.graphql_as(
            json!({"query": "query($v: String!) { author(where: {_or: [{name: {_eq: $v}}, {bio: {_like: $v}}]}) { id } articles(where: {title: {_eq: $v}}) { id } }", "variables": {"v": value}}),
            &[],
        )
        .await;
        assert_eq!(
            r,
            json!({"data": {"author": [], "articles": []}}),
            "{value}"
        );
        let literal = serde_json::to_string(value).unwrap();
        let q = format!("{{ author(where: {{bio: {{_eq: {literal}}}}}) {{ id }} a2: author(where: {{profile: {{_has_key: {literal}}}}}) {{ id }} }}");
        let r = s.gql(&q).await;
        let expected = if value == "it's \"quoted\" \\ back" {
            vec![3]
        } else {
            vec![]
        };
        assert_eq!(ids(&r["data"]["author"]), expected, "{value}: {r}");
        assert_eq!(r["data"]["a2"], json!([]));
        let r = s
            .gql_role("{ articles { id } }", "user", &[("X-Svc-User-Id", value)])
            .await;
        assert_eq!(
            r["errors"][0]["extensions"]["code"], "data-exception",
            "{value}: {r}"
        );
    }
    // Still intact.
    let r = s.gql("{ author_aggregate { aggregate { count } } }").await;
    assert_eq!(r["data"]["author_aggregate"]["aggregate"]["count"], 3);
}

#[tokio::test]
async fn transport_get_batch_accept_request_id() {
    let s = TestServer::blog().await;
    let url = format!("{}/v1/graphql", s.base);
    let r = s
        .http
        .get(&url)
        .query(&[
            ("query", "query($id: Int!) { articleById(id: $id) { id } }"),
            ("variables", "{\"id\": 3}"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "application/json");
    assert!(r.headers().contains_key("x-request-id"));
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"data": {"articleById": {"id": 3}}})
    );
    let r = s
        .http
        .get(&url)
        .query(&[("query", "mutation { x }")])
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap()["errors"][0]["message"],
        "mutations and subscriptions are not allowed over GET"
    );
    let r = s
        .http
        .get(&url)
        .query(&[("query", "{ __typename }"), ("variables", "{not json")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let message = r.json::<Value>().await.unwrap()["errors"][0]["message"].clone();
    assert!(
        message.as_str().unwrap().starts_with("invalid variables: "),
        "{message}"
    );
    let r = s.http.post(&url).header("accept", "application/graphql-response+json").header("x-request-id", "abc-123")
        .json(&json!([{"query": "{ articleById(id: 1) { id } }"}, {"query": "{ nope }"}, {"query": "{ __typename }"}])).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"],
        "application/graphql-response+json"
    );
    assert_eq!(r.headers()["x-request-id"], "abc-123");
    let batch: Value = r.json().await.unwrap();
    assert_eq!(batch[0], json!({"data": {"articleById": {"id": 1}}}));
    assert_eq!(
        batch[1]["errors"][0]["extensions"]["code"],
        "validation-failed"
    );
    assert_eq!(batch[2], json!({"data": {"__typename": "query_root"}}));
    let r = s.http.post(&url).body("{not json").send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap()["errors"][0]["extensions"]["code"],
        "parse-failed"
    );
    let console = s
        .http
        .get(format!("{}/console", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(console.status(), 200);
    let policy = console.headers()["content-security-policy"]
        .to_str()
        .unwrap();
    assert!(policy.contains("connect-src 'self'"), "{policy}");
    assert!(console
        .text()
        .await
        .unwrap()
        .contains("/console/assets/graphiql.min.js"));
    let script = s
        .http
        .get(format!("{}/console/assets/console.js", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(
        script.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert!(script.text().await.unwrap().contains("/v1/graphql"));
    let missing = s
        .http
        .get(format!("{}/console/assets/../Cargo.toml", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn auth_errors_on_graphql_are_http_200() {
    let db = crate::harness::fresh_database().await;
    crate::harness::run_sql(&db, crate::harness::BLOG).await;
    let s = TestServer::on(&db, |c| c.admin_secret = Some("pw".to_owned())).await;
    let r = s
        .http
        .post(format!("{}/v1/graphql", s.base))
        .json(&json!({"query": "{ __typename }"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"errors": [{"message": "x-svc-admin-secret/x-svc-access-key required, but not found", "extensions": {"path": "$", "code": "access-denied"}}]})
    );
}

#[tokio::test]
async fn batch_size_limit() {
    let db = crate::harness::fresh_database().await;
    crate::harness::run_sql(&db, crate::harness::BLOG).await;
    let s = TestServer::on(&db, |c| c.max_batch_size = 2).await;
    let one = json!({"query": "{ __typename }"});
    let r = s.graphql_as(json!([one, one]), &[]).await;
    assert_eq!(
        r,
        json!([{"data": {"__typename": "query_root"}}, {"data": {"__typename": "query_root"}}])
    );
    let r = s.graphql_as(json!([one, one, one]), &[]).await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "validation-failed");
    assert_eq!(r["errors"][0]["message"], "batch size exceeds 2");
}

#[tokio::test]
async fn explain_shows_sql_params_and_plan_per_root_field() {
    let s = TestServer::blog().await;
    let url = format!("{}/v1/graphql/explain", s.base);
    let body = json!({"query": {"query": "query($n: Int!) { articles(limit: $n) { id author { name } } author_aggregate { aggregate { count } } __typename }", "variables": {"n": 2}},
        "user": {"X-Svc-Role": "user", "X-Svc-User-Id": "7"}});
    let r: Value = s
        .http
        .post(&url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let fields: Vec<&str> = r
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["articles", "author_aggregate"], "{r}");
    let articles = &r[0];
    assert!(
        articles["sql"]
            .as_str()
            .unwrap()
            .contains("FROM \"public\".\"article\""),
        "{articles}"
    );
    let params: Vec<Value> = articles["params"].as_array().unwrap().clone();
    assert!(
        params.contains(&json!("7")),
        "the user's session variable is bound: {params:?}"
    );
    assert!(
        params.contains(&json!("2")),
        "the variable is bound: {params:?}"
    );
    assert!(!articles["plan"].as_array().unwrap().is_empty());
    // Admin only; queries only.
    let r = s
        .http
        .post(&url)
        .header("X-Svc-Role", "user")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = s.http.post(&url).json(&json!({"query": {"query": "mutation { delete_comment(where: {}) { affected_rows } }"}})).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap()["errors"][0]["message"],
        "only queries can be explained"
    );
    assert_eq!(
        s.gql("{ comment_aggregate { aggregate { count } } }").await["data"]["comment_aggregate"]
            ["aggregate"]["count"],
        4,
        "nothing was executed"
    );
}
