//! The admin secret and the unauthorized role (one test per combination of mode and headers),
//! the metadata API's statuses per credential, inconsistent settings refused at startup, the
//! allow-list for roles other than admin, and credentials never copied into the session.

use super::*;

/// (mode, headers) → expected outcome on /v1/graphql: Ok(article ids) or Err(code).
macro_rules! secret_cases {
    ($($name:ident: $secret:expr, $unauthorized:expr, $headers:expr => $expect:expr;)*) => {$(
        #[tokio::test]
        async fn $name() {
            let s = blog_server(|c| {
                c.admin_secret = $secret.map(str::to_owned);
                c.unauthorized_role = $unauthorized.map(str::to_owned);
            })
            .await;
            let r = raw_gql(&s, QUERY, &$headers).await;
            let expect: Result<Vec<i64>, &str> = $expect;
            match expect {
                Ok(expected) => assert_eq!(ids(&r), expected, "{r}"),
                Err(code) => assert_eq!(error_code(&r), code, "{r}"),
            }
        }
    )*};
}

secret_cases! {
    open_mode_is_admin: None::<&str>, None::<&str>, [] => Ok(vec![1, 2, 3, 4, 5]);
    open_mode_role_header: None::<&str>, None::<&str>, [("X-Svc-Role", "guest")] => Ok(vec![1, 3, 5]);
    secret_missing: Some(SECRET), None::<&str>, [] => Err("access-denied");
    secret_wrong: Some(SECRET), None::<&str>, [("X-Svc-Admin-Secret", "nope")] => Err("access-denied");
    secret_right: Some(SECRET), None::<&str>, [("X-Svc-Admin-Secret", SECRET)] => Ok(vec![1, 2, 3, 4, 5]);
    secret_legacy_access_key: Some(SECRET), None::<&str>, [("X-Svc-Access-Key", SECRET)] => Ok(vec![1, 2, 3, 4, 5]);
    secret_impersonates_role: Some(SECRET), None::<&str>, [("X-Svc-Admin-Secret", SECRET), ("X-Svc-Role", "user"), ("X-Svc-User-Id", "2")] => Ok(vec![1, 3, 4, 5]);
    unauthorized_role_without_credentials: Some(SECRET), Some("guest"), [] => Ok(vec![1, 3, 5]);
    unauthorized_role_cannot_pick_roles: Some(SECRET), Some("guest"), [("X-Svc-Role", "user"), ("X-Svc-User-Id", "2")] => Ok(vec![1, 3, 5]);
    unauthorized_role_wrong_secret_still_denied: Some(SECRET), Some("guest"), [("X-Svc-Admin-Secret", "nope")] => Err("access-denied");
}

#[tokio::test]
async fn metadata_api_statuses_per_credential() {
    let s = blog_server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.unauthorized_role = Some("guest".into());
    })
    .await;
    assert_eq!(
        raw_metadata(&s, &[]).await.0,
        400,
        "the unauthorized role is not admin"
    );
    assert_eq!(
        raw_metadata(&s, &[("X-Svc-Admin-Secret", "nope")]).await.0,
        401
    );
    assert_eq!(
        raw_metadata(&s, &[("X-Svc-Admin-Secret", SECRET)]).await.0,
        200
    );
    let (status, body) = raw_metadata(
        &s,
        &[("X-Svc-Admin-Secret", SECRET), ("X-Svc-Role", "user")],
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("access-denied"))
    );
}

#[tokio::test]
async fn startup_rejects_inconsistent_settings() {
    let db = fresh_database().await;
    type Configure = Box<dyn Fn(&mut ServeConfig)>;
    let cases: Vec<(Configure, &str)> = vec![
        (
            Box::new(|c| c.unauthorized_role = Some("guest".into())),
            "requires --admin-secret",
        ),
        (
            Box::new(|c| c.jwt_secret = Some(format!(r#"{{"type":"HS256","key":"{HS_KEY}"}}"#))),
            "requires --admin-secret",
        ),
        (
            Box::new(|c| c.auth_hook = Some("http://127.0.0.1:1/hook".into())),
            "requires --admin-secret",
        ),
        (
            Box::new(|c| {
                c.admin_secret = Some(SECRET.into());
                c.jwt_secret = Some(format!(r#"{{"type":"HS256","key":"{HS_KEY}"}}"#));
                c.auth_hook = Some("http://127.0.0.1:1/hook".into());
            }),
            "cannot be used together",
        ),
        (
            Box::new(|c| {
                c.admin_secret = Some(SECRET.into());
                c.auth_hook = Some("http://127.0.0.1:1/hook".into());
                c.unauthorized_role = Some("guest".into());
            }),
            "cannot be used with an auth webhook",
        ),
        (
            Box::new(|c| {
                c.admin_secret = Some(SECRET.into());
                c.jwt_secret = Some(r#"{"type":"HS256","key":"short"}"#.into());
            }),
            "at least 32",
        ),
    ];
    for (configure, expected) in cases {
        let mut config = ServeConfig::for_database(&db);
        configure(&mut config);
        let err = basalt::app::start(config)
            .await
            .expect_err("must not start");
        assert!(format!("{err:#}").contains(expected), "{err:#}");
    }
}

#[tokio::test]
async fn allowlist_restricts_non_admin_roles() {
    let s = blog_server(|c| c.enable_allowlist = true).await;
    s.ok(json!({"type": "create_query_collection", "args": {"name": "app", "definition": {"queries": [
        {"name": "mine", "query": "query mine { articles(order_by: {id: asc}, where: {id: {_lt: 3}}) { id } }"}]}}})).await;
    let guest = [("X-Svc-Role", "guest")];
    let listed =
        "query mine {\n  articles(where: {id: {_lt: 3}}, order_by: {id: asc}) { __typename id }\n}";
    let r = raw_gql(&s, listed, &guest).await;
    assert_eq!(
        r["errors"][0]["message"], "query is not allowed",
        "collection not on the allow-list yet"
    );
    s.ok(json!({"type": "add_collection_to_allowlist", "args": {"collection": "app"}}))
        .await;
    let r = raw_gql(&s, listed, &guest).await;
    assert_eq!(
        r["data"]["articles"],
        json!([{"__typename": "article", "id": 1}]),
        "{r}"
    );
    let r = raw_gql(&s, "query mine { articles { id title } }", &guest).await;
    assert_eq!(
        r["errors"][0],
        json!({"message": "query is not allowed", "extensions": {"path": "$", "code": "validation-failed"}})
    );
    assert_eq!(
        ids(&raw_gql(&s, QUERY, &[]).await),
        [1, 2, 3, 4, 5],
        "admin is never restricted"
    );
}

#[tokio::test]
async fn admin_secret_never_reaches_the_session() {
    let s = blog_server(|c| c.admin_secret = Some(SECRET.into())).await;
    s.sql("CREATE FUNCTION author_session(a author) RETURNS text LANGUAGE sql STABLE AS $$ SELECT current_setting('basalt.user', true) $$").await;
    s.ok(json!({"type": "add_computed_field", "args": {"table": "author", "name": "session", "definition": {"function": "author_session"}}})).await;
    let r = raw_gql(
        &s,
        "{ author_by_pk(id: 1) { session } }",
        &[
            ("X-Svc-Admin-Secret", SECRET),
            ("X-Svc-Access-Key", SECRET),
            ("X-Svc-User-Id", "7"),
        ],
    )
    .await;
    let session: Value =
        serde_json::from_str(r["data"]["author_by_pk"]["session"].as_str().unwrap()).unwrap();
    assert_eq!(
        session,
        json!({"x-svc-role": "admin", "x-svc-user-id": "7"})
    );
}

#[tokio::test]
async fn credential_claims_never_reach_the_session() {
    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY})).await;
    s.sql("CREATE FUNCTION author_session(a author) RETURNS text LANGUAGE sql STABLE AS $$ SELECT current_setting('basalt.user', true) $$").await;
    s.ok(json!({"type": "add_computed_field", "args": {"table": "author", "name": "session", "definition": {"function": "author_session"}}})).await;
    s.ok(json!({"type": "create_select_permission", "args": {"table": "author", "role": "reader", "permission": {"columns": ["id"], "computed_fields": ["session"], "filter": {}}}})).await;
    let token = hs_token(
        &json!({"exp": now() + 60, "https://basalt.dev/jwt/claims": {"x-svc-allowed-roles": ["reader"], "x-svc-default-role": "reader",
        "x-svc-admin-secret": "leak", "X-Svc-Access-Key": "leak", "x-svc-user-id": "5"}}),
    );
    let auth = format!("Bearer {token}");
    let r = raw_gql(
        &s,
        "{ author_by_pk(id: 1) { session } }",
        &[("Authorization", auth.as_str())],
    )
    .await;
    let session: Value =
        serde_json::from_str(r["data"]["author_by_pk"]["session"].as_str().unwrap()).unwrap();
    assert_eq!(
        session,
        json!({"x-svc-role": "reader", "x-svc-user-id": "5"})
    );
}
