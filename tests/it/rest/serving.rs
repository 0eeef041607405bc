//! `/api/rest/…`: the acceptance examples' calls, and the variable rules.

use super::{call, members};
use serde_json::json;

#[tokio::test]
async fn endpoints_answer_their_queries_and_mutations() {
    let s = members().await;
    assert_eq!(
        call(&s, "GET", "members/1", None, &[]).await,
        (200, None, json!({"member_by_pk": {"id": 1, "name": "Ann"}}))
    );
    // `limit` is a number, `since` a string.
    assert_eq!(
        call(&s, "GET", "since?since=2024-02-01&limit=5", None, &[])
            .await
            .2,
        json!({"member": [{"id": 2, "name": "Bob"}]})
    );
    // The body beats the query string.
    assert_eq!(
        call(
            &s,
            "POST",
            "since?since=2020-01-01",
            Some(json!({"since": "2024-02-01"})),
            &[]
        )
        .await
        .2,
        json!({"member": [{"id": 2, "name": "Bob"}]})
    );
    assert_eq!(
        call(
            &s,
            "POST",
            "members",
            Some(json!({"id": 3, "name": "Cy"})),
            &[]
        )
        .await,
        (
            200,
            None,
            json!({"insert_member_one": {"id": 3, "name": "Cy"}})
        )
    );
    assert_eq!(
        call(&s, "DELETE", "members/1", None, &[]).await,
        (
            405,
            Some("GET".to_owned()),
            json!({"path": "$", "error": "Allowed methods: GET", "code": "method-not-allowed"})
        )
    );
    assert_eq!(
        call(&s, "GET", "since?since=2024-02-01&page=2", None, &[]).await,
        (
            400,
            None,
            json!({"path": "$", "error": "Unexpected variable page", "code": "bad-request"})
        )
    );
    assert_eq!(
        call(&s, "GET", "members/1", None, &[("X-Svc-Role", "reader")]).await,
        (
            400,
            None,
            json!({"path": "$.selectionSet.member_by_pk",
                "error": "field \"member_by_pk\" not found in type: 'query_root'",
                "code": "validation-failed"})
        )
    );
}

#[tokio::test]
async fn paths_methods_and_variables_follow_the_rules() {
    let s = members().await;
    for path in ["nowhere", "members/1/x", "members/1/", ""] {
        let (status, _, body) = call(&s, "GET", path, None, &[]).await;
        assert_eq!(
            (status, body),
            (
                404,
                json!({"path": "$", "error": "Endpoint not found", "code": "not-found"})
            ),
            "{path}"
        );
    }
    let (status, _, body) = call(&s, "HEAD", "members/1", None, &[]).await;
    assert_eq!(status, 400, "{body}");
    // The path beats the body; a body that is not an object is refused.
    assert_eq!(
        call(&s, "GET", "members/2", Some(json!({"id": 1})), &[])
            .await
            .2,
        json!({"member_by_pk": {"id": 2, "name": "Bob"}})
    );
    assert_eq!(
        call(&s, "GET", "members/1", Some(json!([1])), &[]).await.2,
        json!({"path": "$", "error": "request body must be a JSON object", "code": "parse-failed"})
    );
    // A value of the wrong type fails validation; a missing non-null variable too.
    let (status, _, body) = call(&s, "GET", "members/abc", None, &[]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("validation-failed")),
        "{body}"
    );
    let (status, _, body) = call(&s, "GET", "since", None, &[]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("validation-failed")),
        "{body}"
    );
    // A key that is no GraphQL name is ignored.
    assert_eq!(
        call(&s, "GET", "since?since=2024-02-01&utm-source=x", None, &[])
            .await
            .0,
        200
    );
    // Values from the path are decoded once, and only ever bound as parameters.
    for hostile in [
        "1%27%3B%20DROP%20TABLE%20member%3B--",
        "%2520",
        "1%20OR%201%3D1",
    ] {
        let (status, _, body) = call(&s, "GET", &format!("members/{hostile}"), None, &[]).await;
        assert_eq!(status, 400, "{hostile}: {body}");
    }
    assert_eq!(
        call(
            &s,
            "GET",
            "since?since=2024-01-01%27%20OR%20%271%27%3D%271",
            None,
            &[]
        )
        .await
        .0,
        400
    );
    assert_eq!(
        call(&s, "GET", "members/1", None, &[]).await.0,
        200,
        "the table is still there"
    );
}

#[tokio::test]
async fn browser_pages_get_cors_headers_and_preflights_an_answer() {
    let s = members().await;
    let preflight = s
        .http
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/api/rest/members/1", s.base),
        )
        .header("Origin", "https://app.example")
        .header("Access-Control-Request-Headers", "x-svc-role, content-type")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status().as_u16(), 204);
    let header = |name: &str| {
        preflight
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(
        header("access-control-allow-origin").as_deref(),
        Some("https://app.example")
    );
    assert_eq!(
        header("access-control-allow-credentials"),
        None,
        "no cookies across sites"
    );
    assert_eq!(header("access-control-max-age").as_deref(), Some("1728000"));
    assert_eq!(
        header("access-control-allow-headers").as_deref(),
        Some("x-svc-role, content-type")
    );
    let answer = s
        .http
        .get(format!("{}/api/rest/members/1", s.base))
        .header("Origin", "https://app.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        answer.headers().get("access-control-allow-origin").unwrap(),
        "https://app.example"
    );
    // Without Origin, OPTIONS is a method no endpoint answers.
    let (status, _, body) = call(&s, "OPTIONS", "members/1", None, &[]).await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"path": "$", "error": "Method OPTIONS not supported.", "code": "bad-request"})
        )
    );
}
