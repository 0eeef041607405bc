//! The HTTP envelope: authentication, body limits, request shape, bulk, auxiliary endpoints.

use super::scrape;
use crate::harness::{fresh_database, run_sql, TestServer, LIBRARY};
use serde_json::json;

#[tokio::test]
async fn admin_secret_and_roles() {
    let db = fresh_database().await;
    let mut s = TestServer::on(&db, |c| c.admin_secret = Some("s3cret".to_owned())).await;
    s.ok(json!({"type": "export_metadata", "args": {}})).await;
    let url = format!("{}/v1/query", s.base);
    let body = json!({"type": "export_metadata", "args": {}});
    let r = s.http.post(&url).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(
        v,
        json!({"path": "$", "error": "x-svc-admin-secret/x-svc-access-key required, but not found", "code": "access-denied"})
    );
    let r = s
        .http
        .post(&url)
        .header("X-Svc-Admin-Secret", "wrong")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["error"],
        "invalid x-svc-admin-secret/x-svc-access-key"
    );
    let r = s
        .http
        .post(&url)
        .header("X-Svc-Access-Key", "s3cret")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = s
        .http
        .post(&url)
        .header("X-Svc-Admin-Secret", "s3cret")
        .header("X-Svc-Role", "user")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap(),
        json!({"path": "$.args", "error": "restricted access : admin only", "code": "access-denied"})
    );
    // Without a secret, the role header alone decides.
    s.admin_secret = None;
    let open = TestServer::on(&db, |_| {}).await;
    let r = open
        .http
        .post(format!("{}/v1/query", open.base))
        .header("x-svc-role", "editor")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = open
        .http
        .post(format!("{}/v1/query", open.base))
        .header("x-svc-role", "admin")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn request_shape_errors() {
    let s = TestServer::library().await;
    let r = s
        .http
        .post(format!("{}/v1/query", s.base))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["code"],
        "invalid-json"
    );
    let r = s
        .fails(
            json!({"type": "frobnicate", "args": {}}),
            400,
            "parse-failed",
            "$.type",
        )
        .await;
    assert_eq!(r["error"], "unknown operation type \"frobnicate\"");
    s.fails(json!({"args": {}}), 400, "parse-failed", "$").await;
    s.fails(json!({"type": "export_metadata"}), 400, "parse-failed", "$")
        .await;
    let r = s
        .fails(
            json!({"type": "track_table", "version": 3, "args": {"table": "author"}}),
            400,
            "parse-failed",
            "$.version",
        )
        .await;
    assert_eq!(r["error"], "expected 1 or 2, encountered 3");
    s.fails(
        json!({"type": "untrack_table", "version": 2, "args": {"table": "author"}}),
        400,
        "parse-failed",
        "$.version",
    )
    .await;
    s.fails(
        json!({"type": "add_remote_schema", "args": {}}),
        400,
        "parse-failed",
        "$.args",
    )
    .await;
    s.fails(
        json!({"type": "create_action", "args": {}}),
        400,
        "parse-failed",
        "$.args",
    )
    .await;
}

#[tokio::test]
async fn body_limit_gives_413() {
    let db = fresh_database().await;
    let s = TestServer::on(&db, |c| c.max_body_bytes = 64).await;
    let big = json!({"type": "export_metadata", "args": {"padding": "x".repeat(200)}});
    let (status, body) = s.query(big).await;
    assert_eq!(status, 413);
    assert_eq!(body["code"], "payload-too-large");
    assert_eq!(body["path"], "$");
    s.ok(json!({"type": "export_metadata", "args": {}})).await;
}

#[tokio::test]
async fn bulk_is_atomic_and_prefixes_paths() {
    let s = TestServer::library().await;
    assert_eq!(s.ok(json!({"type": "bulk", "args": []})).await, json!([]));
    let r = s.ok(json!({"type": "bulk", "args": [
        {"type": "track_table", "args": {"schema": "public", "name": "author"}},
        {"type": "bulk", "args": [{"type": "track_table", "version": 2, "args": {"table": "article"}}]},
        {"type": "export_metadata", "args": {}}
    ]})).await;
    assert_eq!(r[0], json!({"message": "success"}));
    assert_eq!(r[1], json!([{"message": "success"}]));
    assert_eq!(r[2]["tables"].as_array().unwrap().len(), 2);
    let before = s.export().await;
    let r = s
        .fails(
            json!({"type": "bulk", "args": [
                {"type": "untrack_table", "args": {"table": "article"}},
                {"type": "track_table", "args": {"table": "ghost"}}
            ]}),
            400,
            "not-exists",
            "$.args[1].args",
        )
        .await;
    assert_eq!(
        r["error"],
        "no such table/view exists in postgres: \"ghost\""
    );
    assert_eq!(s.export().await, before, "a failed bulk changes nothing");
    s.fails(json!({"type": "bulk", "args": [{"type": "export_metadata", "args": {}}, {"type": "track_table", "args": {"table": 1}}]}), 400, "parse-failed", "$.args[1].args.table").await;
    s.fails(
        json!({"type": "bulk", "args": {}}),
        400,
        "parse-failed",
        "$.args",
    )
    .await;
    let many: Vec<_> = (0..65)
        .map(|_| json!({"type": "export_metadata", "args": {}}))
        .collect();
    s.fails(
        json!({"type": "bulk", "args": many}),
        400,
        "parse-failed",
        "$.args",
    )
    .await;
}

#[tokio::test]
async fn health_version_and_unknown_paths() {
    let db = fresh_database().await;
    run_sql(&db, LIBRARY).await;
    let s = TestServer::on(&db, |_| {}).await;
    let r = reqwest::get(format!("{}/healthz", s.base)).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "OK");
    let v: serde_json::Value = reqwest::get(format!("{}/v1/version", s.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v, json!({"version": env!("CARGO_PKG_VERSION")}));
    let r = reqwest::get(format!("{}/v2/nothing", s.base))
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["code"],
        "not-found"
    );
    let graphql_only = TestServer::on(&db, |c| c.enabled_apis = vec!["graphql".to_owned()]).await;
    let (status, body) = graphql_only
        .query(json!({"type": "export_metadata", "args": {}}))
        .await;
    assert_eq!(status, 404);
    assert_eq!(body["code"], "not-found");
}

#[tokio::test]
async fn healthz_reports_an_unreachable_catalog() {
    let s = TestServer::library().await;
    s.sql("DROP SCHEMA basalt_catalog CASCADE").await;
    let r = reqwest::get(format!("{}/healthz", s.base)).await.unwrap();
    assert_eq!(r.status(), 500);
    assert_eq!(r.text().await.unwrap(), "ERROR");
}

/// `/readyz`: 200 with every check passing; 503, naming the failed check, when the database
/// stops answering (here: its database dropped under the running server).
#[tokio::test]
async fn readyz_reports_what_is_not_ready() {
    let s = TestServer::library().await;
    let r = reqwest::get(format!("{}/readyz", s.base)).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap(),
        json!({"ready": true, "metadata_loaded": true, "schema_built": true, "database": true})
    );
    let name = s.db_url.rsplit('/').next().unwrap().to_owned();
    run_sql(
        &s.db_url.replace(&name, "postgres"),
        &format!("DROP DATABASE \"{name}\" WITH (FORCE)"),
    )
    .await;
    let r = reqwest::get(format!("{}/readyz", s.base)).await.unwrap();
    assert_eq!(r.status(), 503);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["ready"], false);
    assert_eq!(body["database"], false);
    assert_eq!(body["metadata_loaded"], true);
}

#[tokio::test]
async fn internal_errors_are_generic_unless_dev_mode() {
    for dev_mode in [false, true] {
        let db = fresh_database().await;
        let s = TestServer::on(&db, |c| c.dev_mode = dev_mode).await;
        // A hand-edited catalog document that no longer parses is an internal failure.
        run_sql(
            &db,
            r#"UPDATE basalt_catalog.metadata SET metadata = '{"tables": 5}'"#,
        )
        .await;
        let (status, body) = s
            .query(json!({"type": "export_metadata", "args": {}}))
            .await;
        assert_eq!(status, 500);
        assert_eq!(body["code"], "unexpected");
        assert_eq!(body["error"], "unexpected internal error");
        assert_eq!(body.get("internal").is_some(), dev_mode, "{body}");
    }
}

#[tokio::test]
async fn metrics_are_prometheus_text_and_move() {
    let db = fresh_database().await;
    run_sql(&db, crate::harness::BLOG).await;
    let s = TestServer::on(&db, |c| c.admin_secret = Some("pw".into())).await;
    let metadata: serde_json::Value = serde_json::from_str(crate::harness::BLOG_METADATA).unwrap();
    s.ok(json!({"type": "replace_metadata", "args": metadata}))
        .await;
    // Admin only by default.
    let r = s
        .http
        .get(format!("{}/metrics", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let before = scrape(&s, Some("pw")).await;
    for name in [
        "basalt_db_pool_size{}",
        "basalt_db_pool_in_use{}",
        "basalt_db_pool_waiters{}",
        "basalt_websocket_connections{}",
        "basalt_live_subscriptions{}",
        "basalt_schema_builds_total{}",
    ] {
        assert!(before.contains_key(name), "{name} missing: {before:?}");
    }
    assert_eq!(
        before["basalt_catalog_version{}"],
        s.running.state.snapshot().version as f64
    );
    let query = "{ articles(limit: 1) { id } }";
    s.graphql_as(json!({"query": query}), &[("X-Svc-Admin-Secret", "pw")])
        .await;
    s.graphql_as(json!({"query": query}), &[("X-Svc-Admin-Secret", "pw")])
        .await;
    s.ok(json!({"type": "export_metadata", "args": {}})).await;
    let after = scrape(&s, Some("pw")).await;
    let delta = |key: &str| {
        after.get(key).copied().unwrap_or(0.0) - before.get(key).copied().unwrap_or(0.0)
    };
    assert_eq!(
        delta("basalt_http_requests_total{api=graphql,operation=query,status=200}"),
        2.0,
        "{after:?}"
    );
    assert_eq!(
        delta("basalt_http_requests_total{api=metadata,operation=export_metadata,status=200}"),
        1.0
    );
    assert_eq!(delta("basalt_graphql_plan_cache_misses_total{}"), 1.0);
    assert_eq!(delta("basalt_graphql_plan_cache_hits_total{}"), 1.0);
    assert!(
        delta("basalt_sql_duration_seconds_count{}") >= 2.0,
        "{after:?}"
    );
    assert!(delta("basalt_http_request_duration_seconds_count{api=graphql}") >= 2.0);
    assert_eq!(
        after["basalt_catalog_version{}"],
        before["basalt_catalog_version{}"]
    );
    // A metadata write moves the version and builds schemas again.
    s.ok(
        json!({"type": "create_query_collection", "args": {"name": "c", "definition": {"queries": []}}}),
    )
    .await;
    let written = scrape(&s, Some("pw")).await;
    assert_eq!(
        written["basalt_catalog_version{}"],
        after["basalt_catalog_version{}"] + 1.0
    );
    assert!(written["basalt_schema_builds_total{}"] > after["basalt_schema_builds_total{}"]);
    // An open WebSocket counts.
    let url = format!("{}/v1/graphql", s.base.replace("http://", "ws://"));
    let (socket, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap();
    assert_eq!(
        scrape(&s, Some("pw")).await["basalt_websocket_connections{}"],
        1.0
    );
    drop(socket);
    // Public when configured.
    let open = TestServer::on(&db, |c| {
        c.admin_secret = Some("pw".into());
        c.metrics_public = true;
    })
    .await;
    assert!(scrape(&open, None)
        .await
        .contains_key("basalt_catalog_version{}"));
}

/// A single GraphQL body is read straight into a request when authentication does not need
/// it as a JSON value; the outcomes are those of the general path, whichever path answers.
#[tokio::test]
async fn graphql_bodies_answer_alike_on_either_path() {
    let db = fresh_database().await;
    let s = TestServer::on(&db, |c| c.admin_secret = Some("s3cret".to_owned())).await;
    let url = format!("{}/v1/graphql", s.base);
    let post = |body: &'static str, admin: bool| {
        let mut request = s
            .http
            .post(&url)
            .header("Content-Type", "application/json")
            .body(body);
        if admin {
            request = request.header("X-Svc-Admin-Secret", "s3cret");
        }
        async move {
            let r = request.send().await.unwrap();
            assert_eq!(r.status(), 200);
            r.json::<serde_json::Value>().await.unwrap()
        }
    };
    let code = |v: &serde_json::Value| v["errors"][0]["extensions"]["code"].clone();
    // Authentication answers first, for a request and for a body that is not one.
    for body in [r#"{"query": "{ __typename }"}"#, r#"{"nope": 1}"#, "5"] {
        let v = post(body, false).await;
        assert_eq!(code(&v), "access-denied", "{body}: {v}");
    }
    // Leading white space, unknown members and a null `variables` are a request.
    let v = post(
        " \n {\"query\": \"{ __typename }\", \"variables\": null, \"extensions\": {}}",
        true,
    )
    .await;
    assert_eq!(v, json!({"data": {"__typename": "query_root"}}));
    // A repeated member: the last one counts, as in the general reading.
    let v = post(r#"{"query": "{ nope }", "query": "{ __typename }"}"#, true).await;
    assert_eq!(v, json!({"data": {"__typename": "query_root"}}));
    // Not a request, not JSON, not an object: `parse-failed`, with serde's reason.
    for (body, reason) in [
        (r#"{"query": 5}"#, "invalid type: integer `5`"),
        (r#"{"variables": {}}"#, "missing field `query`"),
        (r#""{ __typename }""#, "invalid type: string"),
        (r#"{"query": "#, "EOF while parsing"),
    ] {
        let v = post(body, true).await;
        assert_eq!(code(&v), "parse-failed", "{body}: {v}");
        let message = v["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(reason), "{body}: {message}");
    }
    // An array is a batch.
    let v = post(r#"[{"query": "{ __typename }"}]"#, true).await;
    assert_eq!(v, json!([{"data": {"__typename": "query_root"}}]));
}
