//! The auth webhook in GET and POST mode: the headers and request it is sent, the session it
//! answers, and a request asked again when the hook drops a kept-alive connection.

use super::*;

/// Asking the hook only reads: a request whose connection the hook closes without answering
/// (a kept-alive connection closed as it was reused) is sent once more, in both modes, and
/// the client is served.
#[tokio::test]
async fn the_hook_is_asked_again_after_a_dropped_connection() {
    for mode in ["get", "post"] {
        let hook = Hook::default();
        let base = hook_server(hook.clone()).await;
        let front = crate::http::front::Front::start(&format!("{base}/{mode}")).await;
        let s = blog_server(|c| {
            c.admin_secret = Some(SECRET.into());
            c.auth_hook = Some(front.url.clone());
            c.auth_hook_mode = mode.to_uppercase();
        })
        .await;
        let fresh = [("Authorization", "Bearer fresh")];
        assert_eq!(ids(&raw_gql(&s, QUERY, &fresh).await), [1, 3, 5], "{mode}");
        let accepted = front.accepted();
        front.drop_next();
        assert_eq!(ids(&raw_gql(&s, QUERY, &fresh).await), [1, 3, 5], "{mode}");
        assert_eq!(front.accepted(), accepted + 1, "{mode}: a new connection");
        assert_eq!(
            *hook.hits.lock().unwrap(),
            2,
            "{mode}: the dropped call never arrived"
        );
    }
}

#[tokio::test]
async fn webhook_get_mode() {
    let hook = Hook::default();
    let base = hook_server(hook.clone()).await;
    let s = blog_server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.auth_hook = Some(format!("{base}/get"));
        c.auth_hook_timeout_seconds = 1;
    })
    .await;
    let r = raw_gql(
        &s,
        QUERY,
        &[("Authorization", "Bearer good"), ("X-Svc-Role", "admin")],
    )
    .await;
    assert_eq!(
        ids(&r),
        [1, 3, 4, 5],
        "role and user id from the hook, not the client: {r}"
    );
    let seen = hook.last.lock().unwrap().clone().unwrap();
    assert_eq!(seen["authorization"], "Bearer good");
    assert!(seen.get("content-type").is_none(), "not forwarded");
    assert!(
        seen.get("x-request-id").is_some(),
        "the request id reaches the hook (and, differing per request, does not defeat its cache)"
    );
    let r = raw_gql(
        &s,
        QUERY,
        &[("Authorization", "Bearer good"), ("X-Svc-Role", "admin")],
    )
    .await;
    assert_eq!(ids(&r), [1, 3, 4, 5]);
    assert_eq!(*hook.hits.lock().unwrap(), 1, "cached for max-age");
    raw_gql(&s, QUERY, &[("Authorization", "Bearer fresh")]).await;
    raw_gql(&s, QUERY, &[("Authorization", "Bearer fresh")]).await;
    assert_eq!(
        *hook.hits.lock().unwrap(),
        3,
        "answers without a max-age are not cached"
    );
    assert_eq!(
        ids(&raw_gql(&s, QUERY, &[("Authorization", "Bearer fresh")]).await),
        [1, 3, 5]
    );
    for (token, code, message) in [
        (
            "Bearer denied",
            "access-denied",
            "Authentication hook unauthorized this request",
        ),
        (
            "Bearer broken",
            "unexpected",
            "Invalid response from authorization hook",
        ),
        (
            "Bearer notjson",
            "unexpected",
            "Invalid response from authorization hook: ",
        ),
        (
            "Bearer norole",
            "invalid-params",
            "x-svc-role not found in session variables",
        ),
        (
            "Bearer slow",
            "unexpected",
            "webhook authentication request failed",
        ),
    ] {
        let r = raw_gql(&s, QUERY, &[("Authorization", token)]).await;
        assert_eq!(error_code(&r), code, "{token}: {r}");
        assert!(
            r["errors"][0]["message"]
                .as_str()
                .unwrap()
                .starts_with(message),
            "{token}: {r}"
        );
    }
    // The admin secret bypasses the hook and is never sent to it.
    let hits = *hook.hits.lock().unwrap();
    assert_eq!(
        ids(&raw_gql(&s, QUERY, &[("X-Svc-Admin-Secret", SECRET)]).await),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(*hook.hits.lock().unwrap(), hits);
    let (status, body) = raw_metadata(&s, &[("Authorization", "Bearer denied")]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("access-denied"))
    );
    let (status, _) = raw_metadata(&s, &[("Authorization", "Bearer broken")]).await;
    assert_eq!(status, 500);
}

#[tokio::test]
async fn webhook_post_mode_sends_headers_and_request() {
    let hook = Hook::default();
    let base = hook_server(hook.clone()).await;
    let s = blog_server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.auth_hook = Some(format!("{base}/post"));
        c.auth_hook_mode = "POST".into();
    })
    .await;
    let r = raw_gql(
        &s,
        QUERY,
        &[
            ("Authorization", "Bearer fresh"),
            ("X-Svc-Admin-Secret-Hint", "x"),
        ],
    )
    .await;
    assert_eq!(ids(&r), [1, 3, 5]);
    let body = hook.last.lock().unwrap().clone().unwrap();
    assert_eq!(body["request"]["query"], QUERY);
    assert_eq!(body["headers"]["authorization"], "Bearer fresh");
    let (status, _) = raw_metadata(&s, &[("Authorization", "Bearer fresh")]).await;
    assert_eq!(status, 400, "guest is not admin");
    assert_eq!(
        hook.last.lock().unwrap().clone().unwrap()["request"],
        Value::Null,
        "no GraphQL request on /v1/query"
    );
}
