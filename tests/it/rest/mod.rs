//! REST endpoints through the HTTP API (`docs/rest.md`): the metadata operations and their
//! errors, serving `/api/rest/…` (matching, variables from the path, query string and body,
//! statuses, roles and limits), and the OpenAPI document.

mod auth;
mod endpoints;
mod openapi;
mod serving;

use crate::harness::TestServer;
use serde_json::{json, Value};

/// The examples' fixture: `member` tracked, role `reader` without permissions, collection
/// `app` with three queries, and their three endpoints.
pub(crate) async fn members() -> TestServer {
    let s = TestServer::with_fixture(
        "CREATE TABLE member (id int PRIMARY KEY, name text NOT NULL, joined date);
         INSERT INTO member VALUES (1, 'Ann', '2024-01-05'), (2, 'Bob', '2024-03-01');",
    )
    .await;
    s.ok(json!({"type": "track_table", "args": {"table": "member"}}))
        .await;
    s.ok(json!({"type": "create_query_collection", "args": {"name": "app", "definition": {"queries": [
        {"name": "member_by_id", "query": "query member_by_id($id: Int!) { member_by_pk(id: $id) { id name } }"},
        {"name": "members_since", "query": "query members_since($since: date!, $limit: Int) { member(where: {joined: {_gte: $since}}, limit: $limit, order_by: {id: asc}) { id name } }"},
        {"name": "add_member", "query": "mutation add_member($id: Int!, $name: String!) { insert_member_one(object: {id: $id, name: $name}) { id name } }"}
    ]}}}))
    .await;
    for (name, url, methods) in [
        ("member_by_id", "members/:id", json!(["GET"])),
        ("members_since", "since", json!(["GET", "POST"])),
        ("add_member", "members", json!(["POST"])),
    ] {
        s.ok(endpoint(name, url, methods, name)).await;
    }
    s
}

/// `create_rest_endpoint` of query `query` of collection `app`.
pub(crate) fn endpoint(name: &str, url: &str, methods: Value, query: &str) -> Value {
    json!({"type": "create_rest_endpoint", "args": {"name": name, "url": url, "methods": methods,
        "definition": {"query": {"collection_name": "app", "query_name": query}}}})
}

/// A REST call: status, `Allow` header, and body.
pub(crate) async fn call(
    s: &TestServer,
    method: &str,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (u16, Option<String>, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = s
        .http
        .request(method, format!("{}/api/rest/{path}", s.base));
    if let Some(body) = body {
        request = request.json(&body);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let allow = response
        .headers()
        .get("allow")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.unwrap_or_default();
    (
        status,
        allow,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}
