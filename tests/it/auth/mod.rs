//! Authentication through HTTP (`docs/auth.md`): the admin secret and the unauthorized role,
//! JWTs with real keys and a JWK set server, the auth webhook, the allow-list, startup
//! validation, and the token attacks of the security suite. The servers, tokens, keys and hooks
//! here are shared with the other areas' tests that need a credential.

mod credentials;
mod inherited_roles;
mod jwt;
mod token_attacks;
mod webhook;

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

pub(crate) fn unsigned(header: &Value, claims: &Value) -> String {
    use base64::Engine;
    let b = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}", b(header), b(claims))
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
        "Bearer staff" => {
            Json(json!({"X-Svc-Role": "user_guest", "X-Svc-User-Id": "1"})).into_response()
        }
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
