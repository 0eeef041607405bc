//! Authentication modes through HTTP: admin secret, unauthorized role, JWT with real keys and a
//! JWK set server, the auth webhook, the allow-list, and startup validation.

mod token_attacks;

use crate::harness::{fresh_database, run_sql, TestServer, BLOG, BLOG_METADATA};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use axum::{Json, Router};
use basalt::config::ServeConfig;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

pub(crate) const SECRET: &str = "pw";
pub(crate) const HS_KEY: &str = "0123456789abcdef0123456789abcdef-hs256";
pub(crate) const QUERY: &str = "{ articles(order_by: {id: asc}) { id } }";

pub(crate) async fn blog_server(configure: impl FnOnce(&mut ServeConfig)) -> TestServer {
    let db = fresh_database().await;
    run_sql(&db, BLOG).await;
    let s = TestServer::on(&db, configure).await;
    let metadata: Value = serde_json::from_str(BLOG_METADATA).unwrap();
    s.ok(json!({"type": "replace_metadata", "args": metadata}))
        .await;
    s
}

/// GraphQL without the admin secret unless given in `headers`.
pub(crate) async fn raw_gql(s: &TestServer, query: &str, headers: &[(&str, &str)]) -> Value {
    let mut req = s
        .http
        .post(format!("{}/v1/graphql", s.base))
        .json(&json!({"query": query}));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

pub(crate) async fn raw_metadata(s: &TestServer, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut req = s
        .http
        .post(format!("{}/v1/query", s.base))
        .json(&json!({"type": "export_metadata", "args": {}}));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

pub(crate) fn ids(r: &Value) -> Vec<i64> {
    r["data"]["articles"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|a| a["id"].as_i64().unwrap())
        .collect()
}

pub(crate) fn error_code(r: &Value) -> &str {
    r["errors"][0]["extensions"]["code"].as_str().unwrap_or("")
}

// ---- admin secret and unauthorized role: one test per row ----------------------------------

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

// ---- JWT ---------------------------------------------------------------------------------

pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

pub(crate) fn claims(extra: Value) -> Value {
    let mut c = json!({"sub": "u1", "iat": now(), "exp": now() + 600,
        "https://basalt.dev/jwt/claims": {"x-svc-allowed-roles": ["user", "guest"], "x-svc-default-role": "user", "x-svc-user-id": "1"}});
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    c
}

pub(crate) fn hs_token(claims: &Value) -> String {
    encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(HS_KEY.as_bytes()),
    )
    .unwrap()
}

pub(crate) async fn jwt_server(config: Value) -> TestServer {
    blog_server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.jwt_secret = Some(config.to_string());
    })
    .await
}

pub(crate) async fn with_token(s: &TestServer, token: &str, extra: &[(&str, &str)]) -> Value {
    let auth = format!("Bearer {token}");
    let mut headers = vec![("Authorization", auth.as_str())];
    headers.extend_from_slice(extra);
    raw_gql(s, QUERY, &headers).await
}

#[tokio::test]
async fn jwt_hs256_roles_and_rejections() {
    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY})).await;
    let good = hs_token(&claims(json!({})));
    assert_eq!(
        ids(&with_token(&s, &good, &[]).await),
        [1, 2, 3, 5],
        "default role user, user id from the token"
    );
    assert_eq!(
        ids(&with_token(&s, &good, &[("X-Svc-User-Id", "2")]).await),
        [1, 2, 3, 5],
        "client session headers are ignored"
    );
    assert_eq!(
        ids(&with_token(&s, &good, &[("X-Svc-Role", "guest")]).await),
        [1, 3, 5]
    );
    let r = with_token(&s, &good, &[("X-Svc-Role", "admin")]).await;
    assert_eq!(
        r["errors"][0],
        json!({"message": "Your requested role is not in allowed roles", "extensions": {"path": "$", "code": "access-denied"}})
    );
    let cases: Vec<(String, &str, &str)> = vec![
        (
            hs_token(&claims(json!({"exp": now() - 100}))),
            "invalid-jwt",
            "Could not verify JWT: JWTExpired",
        ),
        (
            hs_token(&claims(json!({"nbf": now() + 600}))),
            "invalid-jwt",
            "Could not verify JWT: JWTNotYetValid",
        ),
        (
            encode(
                &Header::new(Algorithm::HS256),
                &claims(json!({})),
                &EncodingKey::from_secret(b"another-key-another-key-another-key"),
            )
            .unwrap(),
            "invalid-jwt",
            "Could not verify JWT: JWSError JWSInvalidSignature",
        ),
        (
            format!(
                "{}.",
                unsigned(&json!({"alg": "none", "typ": "JWT"}), &claims(json!({})))
            ),
            "invalid-jwt",
            "Could not verify JWT",
        ),
        (
            "not.a.jwt".to_owned(),
            "invalid-jwt",
            "Could not verify JWT",
        ),
        (
            hs_token(&json!({"exp": now() + 60})),
            "jwt-invalid-claims",
            "claims key: 'https://basalt.dev/jwt/claims' not found",
        ),
        (
            hs_token(&json!({"https://basalt.dev/jwt/claims": {"x-svc-default-role": "user"}})),
            "jwt-missing-role-claims",
            "JWT claim does not contain x-svc-allowed-roles",
        ),
        (
            hs_token(&json!({"https://basalt.dev/jwt/claims": {"x-svc-allowed-roles": ["user"]}})),
            "jwt-missing-role-claims",
            "JWT claim does not contain x-svc-default-role",
        ),
        (
            hs_token(
                &json!({"https://basalt.dev/jwt/claims": {"x-svc-allowed-roles": "user", "x-svc-default-role": "user"}}),
            ),
            "jwt-invalid-claims",
            "invalid x-svc-allowed-roles; should be a list of roles",
        ),
        // A default role outside the allowed roles (here `admin`) is never served.
        (
            hs_token(
                &json!({"https://basalt.dev/jwt/claims": {"x-svc-allowed-roles": ["user"], "x-svc-default-role": "admin"}}),
            ),
            "jwt-invalid-claims",
            "x-svc-default-role is not in x-svc-allowed-roles",
        ),
    ];
    // Also when the request asks for an allowed role.
    let admin_default = hs_token(
        &json!({"https://basalt.dev/jwt/claims": {"x-svc-allowed-roles": ["user"], "x-svc-default-role": "admin"}}),
    );
    let r = with_token(&s, &admin_default, &[("X-Svc-Role", "user")]).await;
    assert_eq!(error_code(&r), "jwt-invalid-claims", "{r}");
    for (token, code, message) in cases {
        let r = with_token(&s, &token, &[]).await;
        assert_eq!(error_code(&r), code, "{r}");
        assert!(
            r["errors"][0]["message"]
                .as_str()
                .unwrap()
                .starts_with(message),
            "{message}: {r}"
        );
    }
    let r = raw_gql(&s, QUERY, &[]).await;
    assert_eq!(
        r["errors"][0]["message"],
        "Missing 'Authorization' or 'Cookie' header in JWT authentication mode"
    );
    assert_eq!(error_code(&r), "invalid-headers");
    let r = raw_gql(&s, QUERY, &[("Authorization", "Basic abc")]).await;
    assert_eq!(
        (error_code(&r), r["errors"][0]["message"].as_str()),
        ("invalid-headers", Some("Malformed Authorization header"))
    );
    // On the metadata API: 400 with the same codes; a valid non-admin token is not admin.
    let auth = format!("Bearer {good}");
    let (status, body) = raw_metadata(&s, &[("Authorization", &auth)]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("access-denied"))
    );
    let expired = format!("Bearer {}", hs_token(&claims(json!({"exp": now() - 100}))));
    let (status, body) = raw_metadata(&s, &[("Authorization", &expired)]).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid-jwt")));
    assert_eq!(
        raw_metadata(&s, &[("X-Svc-Admin-Secret", SECRET)]).await.0,
        200,
        "the secret still works"
    );
}

pub(crate) fn unsigned(header: &Value, claims: &Value) -> String {
    use base64::Engine;
    let b = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}", b(header), b(claims))
}

#[tokio::test]
async fn jwt_audience_issuer_skew_namespace_and_cookie() {
    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY, "audience": ["app", "web"], "issuer": "https://issuer.example", "allowed_skew": 60})).await;
    let ok = hs_token(&claims(
        json!({"aud": "web", "iss": "https://issuer.example", "exp": now() - 30}),
    ));
    assert_eq!(
        ids(&with_token(&s, &ok, &[]).await),
        [1, 2, 3, 5],
        "within the allowed skew"
    );
    let r = with_token(
        &s,
        &hs_token(&claims(
            json!({"aud": "other", "iss": "https://issuer.example"}),
        )),
        &[],
    )
    .await;
    assert_eq!(
        r["errors"][0]["message"],
        "Could not verify JWT: JWTNotInAudience"
    );
    let r = with_token(
        &s,
        &hs_token(&claims(
            json!({"aud": "app", "iss": "https://evil.example"}),
        )),
        &[],
    )
    .await;
    assert_eq!(
        r["errors"][0]["message"],
        "Could not verify JWT: JWTNotInIssuer"
    );
    let r = with_token(
        &s,
        &hs_token(&claims(json!({"iss": "https://issuer.example"}))),
        &[],
    )
    .await;
    assert_eq!(
        error_code(&r),
        "invalid-jwt",
        "a configured audience must be in the token: {r}"
    );
    let r = with_token(&s, &hs_token(&claims(json!({"aud": "app"}))), &[]).await;
    assert_eq!(
        error_code(&r),
        "invalid-jwt",
        "a configured issuer must be in the token: {r}"
    );

    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY, "claims_namespace_path": "$.app.auth", "claims_format": "stringified_json",
        "header": {"type": "Cookie", "name": "session"}})).await;
    let inner =
        json!({"x-svc-allowed-roles": ["guest"], "x-svc-default-role": "guest"}).to_string();
    let token = hs_token(&json!({"app": {"auth": inner}, "exp": now() + 60}));
    let cookie = format!("theme=dark; session={token}");
    let r = raw_gql(&s, QUERY, &[("Cookie", cookie.as_str())]).await;
    assert_eq!(ids(&r), [1, 3, 5], "{r}");
    let bad = hs_token(&json!({"app": {"auth": "{not json"}}));
    let r = raw_gql(&s, QUERY, &[("Cookie", format!("session={bad}").as_str())]).await;
    assert_eq!(error_code(&r), "jwt-invalid-claims");

    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY, "claims_map": {
        "x-svc-allowed-roles": {"path": "$.roles"}, "x-svc-default-role": {"path": "$.roles[0]"},
        "x-svc-user-id": {"path": "$.uid", "default": "2"}, "x-svc-org": "acme"}}))
    .await;
    let r = with_token(&s, &hs_token(&json!({"roles": ["user"], "uid": "1"})), &[]).await;
    assert_eq!(ids(&r), [1, 2, 3, 5]);
    let r = with_token(&s, &hs_token(&json!({"roles": ["user"]})), &[]).await;
    assert_eq!(ids(&r), [1, 3, 4, 5], "default user id 2");
    let r = with_token(&s, &hs_token(&json!({"uid": "1"})), &[]).await;
    assert_eq!(
        r["errors"][0]["message"],
        "JWT claim from claims_map, x-svc-allowed-roles not found"
    );
}

pub(crate) struct KeyPair {
    pub(crate) private_pem: String,
    pub(crate) public_pem: String,
}

pub(crate) fn rsa_pair() -> KeyPair {
    use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    let private = rsa::RsaPrivateKey::new(&mut rand_core::OsRng, 2048).unwrap();
    KeyPair {
        private_pem: private.to_pkcs8_pem(LineEnding::LF).unwrap().to_string(),
        public_pem: private
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap(),
    }
}

fn ec_pair() -> KeyPair {
    use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    let secret = p256::SecretKey::random(&mut rand_core::OsRng);
    KeyPair {
        private_pem: secret.to_pkcs8_pem(LineEnding::LF).unwrap().to_string(),
        public_pem: secret
            .public_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap(),
    }
}

fn ed_pair() -> KeyPair {
    use ed25519_dalek::pkcs8::{spki::der::pem::LineEnding, EncodePrivateKey, EncodePublicKey};
    let signing = ed25519_dalek::SigningKey::generate(&mut rand_core::OsRng);
    KeyPair {
        private_pem: signing.to_pkcs8_pem(LineEnding::LF).unwrap().to_string(),
        public_pem: signing
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap(),
    }
}

pub(crate) fn sign(alg: Algorithm, pair: &KeyPair, claims: &Value, kid: Option<&str>) -> String {
    let key = match alg {
        Algorithm::RS256 | Algorithm::RS384 | Algorithm::RS512 => {
            EncodingKey::from_rsa_pem(pair.private_pem.as_bytes()).unwrap()
        }
        Algorithm::ES256 => EncodingKey::from_ec_pem(pair.private_pem.as_bytes()).unwrap(),
        _ => EncodingKey::from_ed_pem(pair.private_pem.as_bytes()).unwrap(),
    };
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    encode(&header, claims, &key).unwrap()
}

#[tokio::test]
async fn jwt_asymmetric_keys_and_algorithm_confusion() {
    for (name, alg, pair, other) in [
        ("RS256", Algorithm::RS256, rsa_pair(), rsa_pair()),
        ("ES256", Algorithm::ES256, ec_pair(), ec_pair()),
        ("Ed25519", Algorithm::EdDSA, ed_pair(), ed_pair()),
    ] {
        let s = jwt_server(json!({"type": name, "key": pair.public_pem})).await;
        let r = with_token(&s, &sign(alg, &pair, &claims(json!({})), None), &[]).await;
        assert_eq!(ids(&r), [1, 2, 3, 5], "{name}: {r}");
        let r = with_token(&s, &sign(alg, &other, &claims(json!({})), None), &[]).await;
        assert_eq!(
            error_code(&r),
            "invalid-jwt",
            "{name}: signed by another key"
        );
        // HS/asymmetric confusion: the public key used as an HMAC secret must not pass.
        let forged = encode(
            &Header::new(Algorithm::HS256),
            &claims(json!({})),
            &EncodingKey::from_secret(pair.public_pem.as_bytes()),
        )
        .unwrap();
        let r = with_token(&s, &forged, &[]).await;
        assert_eq!(
            error_code(&r),
            "invalid-jwt",
            "{name}: HS256 forged with the public key"
        );
    }
}

#[derive(Clone, Default)]
pub(crate) struct Jwks {
    pub(crate) keys: Arc<Mutex<Vec<Value>>>,
    pub(crate) hits: Arc<Mutex<usize>>,
}

pub(crate) async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}

pub(crate) fn jwk(pair: &KeyPair, kid: &str) -> Value {
    let key = EncodingKey::from_rsa_pem(pair.private_pem.as_bytes()).unwrap();
    let mut jwk = serde_json::to_value(
        jsonwebtoken::jwk::Jwk::from_encoding_key(&key, Algorithm::RS256).unwrap(),
    )
    .unwrap();
    jwk["kid"] = json!(kid);
    jwk
}

/// A JWK set server: `GET {base}/jwks` answers `jwks.keys` (fresh for 300 s) and counts the calls.
pub(crate) async fn jwks_server(jwks: Jwks) -> String {
    let router = Router::new()
        .route(
            "/jwks",
            get(|State(j): State<Jwks>| async move {
                *j.hits.lock().unwrap() += 1;
                let keys = j.keys.lock().unwrap().clone();
                (
                    [("cache-control", "public, max-age=300")],
                    Json(json!({"keys": keys})),
                )
            }),
        )
        .with_state(jwks);
    serve(router).await
}

#[tokio::test]
async fn jwt_jwk_set_with_key_rotation() {
    let jwks = Jwks::default();
    let first = rsa_pair();
    jwks.keys.lock().unwrap().push(jwk(&first, "k1"));
    let base = jwks_server(jwks.clone()).await;
    let s = jwt_server(json!({"jwk_url": format!("{base}/jwks")})).await;
    assert_eq!(*jwks.hits.lock().unwrap(), 1, "fetched at startup");
    let r = with_token(
        &s,
        &sign(Algorithm::RS256, &first, &claims(json!({})), Some("k1")),
        &[],
    )
    .await;
    assert_eq!(ids(&r), [1, 2, 3, 5], "{r}");
    assert_eq!(*jwks.hits.lock().unwrap(), 1, "cached per max-age");
    // Rotation: a new key appears; a token with its kid makes Basalt refetch.
    let second = rsa_pair();
    jwks.keys.lock().unwrap().push(jwk(&second, "k2"));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let r = with_token(
        &s,
        &sign(Algorithm::RS256, &second, &claims(json!({})), Some("k2")),
        &[],
    )
    .await;
    assert_eq!(ids(&r), [1, 2, 3, 5], "{r}");
    assert_eq!(*jwks.hits.lock().unwrap(), 2);
    let r = with_token(
        &s,
        &sign(Algorithm::RS256, &second, &claims(json!({})), Some("k9")),
        &[],
    )
    .await;
    assert_eq!(error_code(&r), "invalid-jwt");
    assert!(r["errors"][0]["message"].as_str().unwrap().contains("k9"));
}

#[tokio::test]
async fn jwt_mode_with_unauthorized_role() {
    let s = blog_server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.jwt_secret = Some(json!({"type": "HS256", "key": HS_KEY}).to_string());
        c.unauthorized_role = Some("guest".into());
    })
    .await;
    assert_eq!(
        ids(&raw_gql(&s, QUERY, &[("X-Svc-User-Id", "1")]).await),
        [1, 3, 5]
    );
    assert_eq!(
        ids(&with_token(&s, &hs_token(&claims(json!({}))), &[]).await),
        [1, 2, 3, 5]
    );
}

// ---- auth webhook ---------------------------------------------------------------------------

#[derive(Clone, Default)]
pub(crate) struct Hook {
    pub(crate) hits: Arc<Mutex<usize>>,
    /// The headers (GET) or body (POST) of the last call.
    pub(crate) last: Arc<Mutex<Option<Value>>>,
}

fn hook_answer(token: &str) -> axum::response::Response {
    use axum::response::IntoResponse;
    match token {
        "Bearer good" => {
            Json(json!({"X-Svc-Role": "user", "X-Svc-User-Id": "2", "Cache-Control": "max-age=60"}))
                .into_response()
        }
        "Bearer fresh" => Json(json!({"x-svc-role": "guest"})).into_response(),
        "Bearer brief" => {
            Json(json!({"X-Svc-Role": "user", "X-Svc-User-Id": "2", "Cache-Control": "max-age=2"}))
                .into_response()
        }
        "Bearer norole" => Json(json!({"X-Svc-User-Id": "2"})).into_response(),
        "Bearer notjson" => "hello".into_response(),
        "Bearer denied" => axum::http::StatusCode::UNAUTHORIZED.into_response(),
        // Misbehaving hooks (token_attacks.rs): each must be refused, never served.
        "Bearer malformed" => (
            [("content-type", "application/json")],
            r#"{"X-Svc-Role": "admin""#,
        )
            .into_response(),
        "Bearer empty" => ([("content-type", "application/json")], "").into_response(),
        "Bearer array" => Json(json!([{"X-Svc-Role": "admin"}])).into_response(),
        "Bearer role-number" => Json(json!({"X-Svc-Role": 1})).into_response(),
        "Bearer role-null" => Json(json!({"X-Svc-Role": null})).into_response(),
        "Bearer role-list" => Json(json!({"X-Svc-Role": ["admin"]})).into_response(),
        "Bearer role-object" => Json(json!({"X-Svc-Role": {"admin": true}})).into_response(),
        "Bearer endless" => Json(json!({"X-Svc-Role": "user", "X-Svc-User-Id": "2",
            "Cache-Control": format!("max-age={}", u64::MAX)}))
        .into_response(),
        _ => axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

pub(crate) async fn hook_server(hook: Hook) -> String {
    let router = Router::new()
        .route(
            "/get",
            get(|State(h): State<Hook>, headers: HeaderMap| async move {
                *h.hits.lock().unwrap() += 1;
                let seen: serde_json::Map<String, Value> = headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), json!(v.to_str().unwrap_or(""))))
                    .collect();
                *h.last.lock().unwrap() = Some(Value::Object(seen));
                let token = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                if token == "Bearer slow" {
                    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                }
                hook_answer(&token)
            }),
        )
        .route(
            "/post",
            post(
                |State(h): State<Hook>, Json(body): Json<Value>| async move {
                    *h.hits.lock().unwrap() += 1;
                    *h.last.lock().unwrap() = Some(body.clone());
                    hook_answer(body["headers"]["authorization"].as_str().unwrap_or(""))
                },
            ),
        )
        .with_state(hook);
    serve(router).await
}

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

// ---- allow-list and credentials --------------------------------------------------------------

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
