//! Who may call an endpoint: every authentication mode of `/v1/graphql` (the admin secret,
//! a role header, JWTs, an auth webhook sent no request, an unauthorized role), the
//! allow-list, and the API limits, with REST statuses.

use crate::auth::{blog_server, claims, hook_server, hs_token, Hook, HS_KEY, SECRET};
use crate::harness::TestServer;
use serde_json::{json, Value};

/// The blog's `articles` as the endpoint `GET /api/rest/articles`.
async fn with_endpoint(s: &TestServer) {
    s.ok(json!({"type": "bulk", "args": [
        {"type": "create_query_collection", "args": {"name": "app", "definition": {"queries": [
            {"name": "ids", "query": "query ids { articles(order_by: {id: asc}) { id } }"}]}}},
        {"type": "create_rest_endpoint", "args": {"name": "ids", "url": "articles", "methods": ["GET"],
            "definition": {"query": {"collection_name": "app", "query_name": "ids"}}}}
    ]}))
    .await;
}

async fn get(s: &TestServer, headers: &[(&str, &str)]) -> (u16, Value, Option<String>) {
    let mut request = s.http.get(format!("{}/api/rest/articles", s.base));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let retry = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, response.json().await.unwrap_or(Value::Null), retry)
}

fn ids(body: &Value) -> Vec<i64> {
    body["articles"]
        .as_array()
        .map(|rows| rows.iter().filter_map(|r| r["id"].as_i64()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_admin_secret_and_role_headers() {
    let s = blog_server(|c| c.admin_secret = Some(SECRET.into())).await;
    with_endpoint(&s).await;
    let (status, body, _) = get(&s, &[]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("access-denied")),
        "{body}"
    );
    let (status, body, _) = get(&s, &[("X-Svc-Admin-Secret", "wrong")]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("access-denied")),
        "{body}"
    );
    let (status, admin, _) = get(&s, &[("X-Svc-Admin-Secret", SECRET)]).await;
    assert_eq!(status, 200, "{admin}");
    let (status, user, _) = get(
        &s,
        &[
            ("X-Svc-Admin-Secret", SECRET),
            ("X-Svc-Role", "user"),
            ("X-Svc-User-Id", "1"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{user}");
    assert!(
        ids(&user).len() < ids(&admin).len(),
        "the role's rows: {user} / {admin}"
    );
}

#[tokio::test]
async fn jwts_and_the_unauthorized_role() {
    let s = blog_server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.jwt_secret = Some(json!({"type": "HS256", "key": HS_KEY}).to_string());
        c.unauthorized_role = Some("guest".into());
    })
    .await;
    with_endpoint(&s).await;
    let token = format!("Bearer {}", hs_token(&claims(json!({}))));
    let (status, user, _) = get(&s, &[("Authorization", token.as_str())]).await;
    assert_eq!(status, 200, "{user}");
    let (status, body, _) = get(&s, &[("Authorization", "Bearer not.a.jwt")]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("invalid-jwt")),
        "{body}"
    );
    // A role the token does not allow: 400, as on the metadata API.
    let asked = [("Authorization", token.as_str()), ("X-Svc-Role", "editor")];
    let (status, body, _) = get(&s, &asked).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("access-denied")),
        "{body}"
    );
    // No credentials: the unauthorized role, with its own rows (the published articles).
    let (status, guest, _) = get(&s, &[]).await;
    assert_eq!(status, 200, "{guest}");
    let user_ids = ids(&user);
    assert!(
        !ids(&guest).is_empty() && ids(&guest).iter().all(|id| user_ids.contains(id)),
        "{guest} / {user}"
    );
    assert!(
        ids(&guest).len() < user_ids.len(),
        "the user also reads its drafts"
    );
}

#[tokio::test]
async fn an_auth_webhook_in_post_mode_is_sent_no_request() {
    let hook = Hook::default();
    let base = hook_server(hook.clone()).await;
    let s = blog_server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.auth_hook = Some(format!("{base}/post"));
        c.auth_hook_mode = "POST".into();
    })
    .await;
    with_endpoint(&s).await;
    let (status, body, _) = get(&s, &[("Authorization", "Bearer good")]).await;
    assert_eq!(status, 200, "{body}");
    let sent = hook
        .last
        .lock()
        .unwrap()
        .clone()
        .expect("the hook was called");
    assert_eq!(sent["request"], Value::Null, "{sent}");
    let (status, body, _) = get(&s, &[("Authorization", "Bearer denied")]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("access-denied")),
        "{body}"
    );
}

#[tokio::test]
async fn the_allow_list_and_the_rate_limit_apply() {
    let s = blog_server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.enable_allowlist = true;
    })
    .await;
    with_endpoint(&s).await;
    let user = [
        ("X-Svc-Admin-Secret", SECRET),
        ("X-Svc-Role", "user"),
        ("X-Svc-User-Id", "1"),
    ];
    let (status, body, _) = get(&s, &user).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("query is not allowed")),
        "being an endpoint allow-lists nothing: {body}"
    );
    s.ok(json!({"type": "add_collection_to_allowlist", "args": {"collection": "app"}}))
        .await;
    assert_eq!(get(&s, &user).await.0, 200);
    s.ok(
        json!({"type": "set_api_limits", "args": {"rate_limit": {"global": {
        "max_reqs_per_min": 1, "unique_params": ["x-svc-user-id"]}}}}),
    )
    .await;
    let (first, ..) = get(&s, &user).await;
    let (status, body, retry) = get(&s, &user).await;
    assert_eq!(first, 200);
    assert_eq!(
        (status, body["code"].as_str()),
        (429, Some("rate-limit-exceeded")),
        "{body}"
    );
    assert!(retry.is_some(), "Retry-After");
}
