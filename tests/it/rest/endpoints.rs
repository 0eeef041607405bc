//! `create_rest_endpoint` and `drop_rest_endpoint`: every rule, export and replace, and what
//! collection edits do to an endpoint that uses their query.

use super::{call, endpoint, members};
use crate::harness::TestServer;
use serde_json::{json, Value};

async fn refused(s: &TestServer, body: Value) -> Value {
    let (status, err) = s.query(body.clone()).await;
    assert_eq!(status, 400, "{body}: {err}");
    err
}

#[tokio::test]
async fn every_rule_has_its_code_and_message() {
    let s = members().await;
    let cases = [
        (
            endpoint("since2", "members/since", json!(["GET"]), "members_since"),
            "already-exists",
            "Ambiguous URL paths: members/:id, members/since",
        ),
        (
            endpoint("add_get", "add", json!(["GET", "POST"]), "add_member"),
            "not-supported",
            "in endpoint add_get: GET cannot be used for mutation add_member",
        ),
        (
            endpoint("member_by_id", "other", json!(["GET"]), "member_by_id"),
            "already-exists",
            "Endpoint with name: member_by_id already exists",
        ),
        (
            endpoint("x", "/a", json!(["GET"]), "member_by_id"),
            "bad-request",
            "Empty segments or unnamed variables are not allowed: /a",
        ),
        (
            endpoint("x", "a/:id/:id", json!(["GET"]), "member_by_id"),
            "bad-request",
            "Duplicate variables found in endpoint paths: a/:id/:id",
        ),
        (
            endpoint("x", "a b", json!(["GET"]), "member_by_id"),
            "bad-request",
            "Invalid characters in URL segment \"a b\": a b",
        ),
        (
            endpoint("x", "a/:nope", json!(["GET"]), "member_by_id"),
            "bad-request",
            "in endpoint x: URL variable \"nope\" is not a scalar variable of query member_by_id",
        ),
        (
            endpoint("x", "a", json!(["GET"]), "missing"),
            "not-exists",
            "in endpoint x: query with name missing does not exist in collection app",
        ),
        (
            endpoint("x", "a", json!(["GET", "TRACE"]), "member_by_id"),
            "parse-failed",
            "Method TRACE not supported.",
        ),
        (
            endpoint("x", "", json!(["GET"]), "member_by_id"),
            "parse-failed",
            "empty string not allowed",
        ),
    ];
    for (request, code, message) in cases {
        let err = refused(&s, request.clone()).await;
        assert_eq!(
            (err["code"].as_str(), err["error"].as_str()),
            (Some(code), Some(message)),
            "{request}"
        );
    }
    let err = refused(
        &s,
        endpoint("since2", "members/since", json!(["GET"]), "members_since"),
    )
    .await;
    assert_eq!(
        err["internal"]["conflicts"][0]["name"], "member_by_id",
        "{err}"
    );
    // Overlapping templates with disjoint methods coexist.
    s.ok(endpoint(
        "since_post",
        "members/since",
        json!(["PUT"]),
        "members_since",
    ))
    .await;
    // Queries that are not one servable operation, and one the admin schema refuses.
    s.ok(json!({"type": "bulk", "args": [
        {"type": "add_query_to_collection", "args": {"collection_name": "app", "query_name": "two",
            "query": "query a { member { id } } query b { member { id } }"}},
        {"type": "add_query_to_collection", "args": {"collection_name": "app", "query_name": "sub",
            "query": "subscription s { member { id } }"}},
        {"type": "add_query_to_collection", "args": {"collection_name": "app", "query_name": "bad",
            "query": "query bad { member { nope } }"}}
    ]}))
    .await;
    for (query, code, message) in [
        (
            "two",
            "bad-request",
            "in endpoint x: query with name two has multiple definitions.",
        ),
        (
            "sub",
            "not-supported",
            "in endpoint x: query with name sub is a subscription",
        ),
        (
            "bad",
            "validation-failed",
            "in endpoint x: field \"nope\" not found in type: 'member'",
        ),
    ] {
        let err = refused(&s, endpoint("x", "x", json!(["GET"]), query)).await;
        assert_eq!(
            (err["code"].as_str(), err["error"].as_str()),
            (Some(code), Some(message))
        );
    }
    let err = refused(
        &s,
        json!({"type": "drop_rest_endpoint", "args": {"name": "nope"}}),
    )
    .await;
    assert_eq!(err["error"], "endpoint with name: nope does not exist");
}

#[tokio::test]
async fn endpoints_are_exported_replaced_dropped_and_hold_their_queries() {
    let s = members().await;
    let export = s.export().await;
    assert_eq!(
        export["rest_endpoints"][1],
        json!({"name": "members_since", "url": "since", "methods": ["GET", "POST"],
            "definition": {"query": {"collection_name": "app", "query_name": "members_since"}}})
    );
    s.ok(json!({"type": "replace_metadata", "args": export.clone()}))
        .await;
    assert_eq!(s.export().await, export);
    // A query an endpoint uses cannot go, even with cascade.
    for drop in [
        json!({"type": "drop_query_from_collection", "args": {"collection_name": "app", "query_name": "member_by_id"}}),
        json!({"type": "drop_query_collection", "args": {"collection": "app", "cascade": true}}),
    ] {
        let err = refused(&s, drop).await;
        assert_eq!(
            err["error"], "cannot continue due to new inconsistent metadata",
            "{err}"
        );
    }
    // The query's text replaced in one bulk: the endpoint serves the new one.
    s.ok(json!({"type": "bulk", "args": [
        {"type": "drop_query_from_collection", "args": {"collection_name": "app", "query_name": "member_by_id"}},
        {"type": "add_query_to_collection", "args": {"collection_name": "app", "query_name": "member_by_id",
            "query": "query member_by_id($id: Int!) { member_by_pk(id: $id) { name } }"}}
    ]}))
    .await;
    assert_eq!(
        call(&s, "GET", "members/2", None, &[]).await.2,
        json!({"member_by_pk": {"name": "Bob"}})
    );
    s.ok(json!({"type": "drop_rest_endpoint", "args": {"name": "member_by_id"}}))
        .await;
    assert_eq!(call(&s, "GET", "members/2", None, &[]).await.0, 404);
    // Inconsistent after a change with checking off: 404, listed.
    s.ok(
        json!({"type": "run_sql", "args": {"sql": "ALTER TABLE member DROP COLUMN joined",
        "check_metadata_consistency": false}}),
    )
    .await;
    s.ok(json!({"type": "reload_metadata", "args": {}})).await;
    let inconsistent = s
        .ok(json!({"type": "get_inconsistent_metadata", "args": {}}))
        .await;
    let items: Vec<&Value> = inconsistent["inconsistent_objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "rest_endpoint")
        .collect();
    assert_eq!(items.len(), 1, "{inconsistent}");
    assert_eq!(items[0]["definition"]["name"], "members_since");
    assert!(items[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("in endpoint members_since: "));
    assert_eq!(
        call(&s, "GET", "since?since=2024-01-01", None, &[]).await.0,
        404
    );
    s.ok(json!({"type": "clear_metadata", "args": {}})).await;
    assert!(s.export().await.get("rest_endpoints").is_none());
}

#[tokio::test]
async fn documents_are_checked_whatever_their_variables_hold() {
    let s = members().await;
    s.ok(json!({"type": "add_query_to_collection", "args": {"collection_name": "app", "query_name": "flagged",
        "query": "query flagged($show: Boolean!, $id: Int = 1) { member_by_pk(id: $id) { id name @include(if: $show) } }"}}))
    .await;
    s.ok(endpoint("flagged", "flagged", json!(["GET"]), "flagged"))
        .await;
    assert_eq!(
        call(&s, "GET", "flagged?show=false", None, &[]).await.2,
        json!({"member_by_pk": {"id": 1}})
    );
    assert_eq!(
        call(&s, "GET", "flagged?show&id=2", None, &[]).await.2,
        json!({"member_by_pk": {"id": 2, "name": "Bob"}})
    );
    // The URL rules apply in order over the whole template.
    for (url, message) in [
        (
            "a b/",
            "Empty segments or unnamed variables are not allowed: a b/",
        ),
        (
            ":x/:x/",
            "Empty segments or unnamed variables are not allowed: :x/:x/",
        ),
        (
            "a b/:x/:x",
            "Duplicate variables found in endpoint paths: a b/:x/:x",
        ),
    ] {
        let err = refused(&s, endpoint("x", url, json!(["GET"]), "member_by_id")).await;
        assert_eq!(err["error"], message, "{url}");
    }
    // One template with other variable names is one OpenAPI path: refused, whatever the method.
    s.ok(json!({"type": "add_query_to_collection", "args": {"collection_name": "app", "query_name": "by_key",
        "query": "query by_key($key: Int!) { member_by_pk(id: $key) { id } }"}}))
    .await;
    let err = refused(&s, endpoint("x", "members/:key", json!(["PUT"]), "by_key")).await;
    assert_eq!(
        err["error"],
        "Ambiguous URL paths: members/:id, members/:key"
    );
}

#[tokio::test]
async fn a_name_repeated_by_a_replace_is_inconsistent() {
    let s = members().await;
    let mut document = s.export().await;
    let mut twin = document["rest_endpoints"][0].clone();
    twin["url"] = json!("twin/:id");
    document["rest_endpoints"]
        .as_array_mut()
        .unwrap()
        .push(twin);
    let answer = s
        .ok(
            json!({"type": "replace_metadata", "args": {"metadata": document,
            "allow_inconsistent_metadata": true}}),
        )
        .await;
    assert_eq!(answer["is_consistent"], false, "{answer}");
    let items = &answer["inconsistent_objects"];
    assert_eq!(items.as_array().unwrap().len(), 1, "{items}");
    assert_eq!(
        items[0]["reason"],
        "in endpoint member_by_id: Endpoint with name: member_by_id already exists"
    );
    assert_eq!(call(&s, "GET", "members/1", None, &[]).await.0, 200);
    assert_eq!(call(&s, "GET", "twin/1", None, &[]).await.0, 404);
}
