//! Token attacks (a suite of `docs/security.md`): forged, tampered, stale, misaddressed, oversized
//! and mistyped credentials, and misbehaving auth hooks, sent through `/v1/graphql` and
//! `/v1/query` to a real server. Every attack must be refused with the code of `docs/auth.md`
//! ("Errors") and serve no data. Each test also shows that the same server serves the honest
//! credential, so a refusal means the attack failed and not that the server is broken.

use crate::auth::{
    blog_server, claims, error_code, hook_server, hs_token, ids, jwk, jwks_server, jwt_server, now,
    raw_gql, raw_metadata, rsa_pair, serve, sign, unsigned, Hook, Jwks, KeyPair, HS_KEY, QUERY,
    SECRET,
};
use crate::harness::TestServer;
use axum::Router;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Claims that would make the caller admin (and so pass `/v1/query`) if the token were
/// accepted: what an attacker forges.
fn admin_claims() -> Value {
    json!({"sub": "attacker", "exp": now() + 600,
        "https://basalt.dev/jwt/claims": {"x-svc-allowed-roles": ["admin"], "x-svc-default-role": "admin"}})
}

/// A valid payload whose claims object is `claims`.
fn with_claims(claims: Value) -> Value {
    json!({"exp": now() + 600, "https://basalt.dev/jwt/claims": claims})
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Sends the request described by `headers` to both APIs and asserts it is refused with `code`:
/// on `/v1/graphql` HTTP 200 with one error at `$` and no `data`, on `/v1/query` `status` with
/// nothing but the error body. Returns the message, which both APIs must agree on.
async fn refused(s: &TestServer, headers: &[(&str, &str)], code: &str, status: u16) -> String {
    let r = raw_gql(s, QUERY, headers).await;
    assert_eq!(error_code(&r), code, "{r}");
    assert!(r.get("data").is_none(), "no data may be served: {r}");
    assert_eq!(r["errors"][0]["extensions"]["path"], "$", "{r}");
    assert_eq!(r["errors"].as_array().map(Vec::len), Some(1), "{r}");
    let message = r["errors"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let (got, body) = raw_metadata(s, headers).await;
    assert_eq!((got, body["code"].as_str()), (status, Some(code)), "{body}");
    let mut keys: Vec<&str> = body
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "error", "path"], "only the error: {body}");
    assert_eq!(body["path"], "$", "{body}");
    assert_eq!(body["error"], message.as_str(), "same message on both APIs");
    message
}

/// A JWT attack: refused with `code` (400 on `/v1/query`), message starting with `message`.
async fn token_refused(s: &TestServer, token: &str, code: &str, message: &str) {
    let auth = bearer(token);
    let got = refused(s, &[("Authorization", &auth)], code, 400).await;
    assert!(
        got.starts_with(message),
        "expected {message:?}, got {got:?}"
    );
}

/// Asserts that `token` is accepted as admin: the control that makes a refusal of the same
/// claims, forged, meaningful.
async fn admin_token_works(s: &TestServer, token: &str) {
    let auth = bearer(token);
    let (status, body) = raw_metadata(s, &[("Authorization", &auth)]).await;
    assert_eq!(status, 200, "the honest token is admin: {body}");
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

// ---- forged signatures ----------------------------------------------------------------------

#[tokio::test]
async fn alg_none_tokens_are_refused() {
    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY})).await;
    let honest = hs_token(&admin_claims());
    admin_token_works(&s, &honest).await;
    let signature = honest.rsplit('.').next().unwrap_or_default().to_owned();
    let mut forgeries = Vec::new();
    for alg in ["none", "None", "NONE", "nOnE"] {
        let body = unsigned(&json!({"alg": alg, "typ": "JWT"}), &admin_claims());
        // Without a signature segment, with an empty one, and with the honest token's.
        forgeries.push(body.clone());
        forgeries.push(format!("{body}."));
        forgeries.push(format!("{body}.{signature}"));
    }
    for token in &forgeries {
        token_refused(&s, token, "invalid-jwt", "Could not verify JWT: ").await;
    }
    // The configured algorithm with the signature stripped.
    let stripped = format!(
        "{}.",
        unsigned(&json!({"alg": "HS256", "typ": "JWT"}), &admin_claims())
    );
    token_refused(
        &s,
        &stripped,
        "invalid-jwt",
        "Could not verify JWT: JWSError JWSInvalidSignature",
    )
    .await;
    // The honest header and signature over a payload the attacker swapped in.
    let header = honest.split('.').next().unwrap_or_default();
    let mut swapped = admin_claims();
    swapped["sub"] = json!("someone-else");
    let spliced = format!(
        "{header}.{}.{signature}",
        b64(swapped.to_string().as_bytes())
    );
    token_refused(
        &s,
        &spliced,
        "invalid-jwt",
        "Could not verify JWT: JWSError JWSInvalidSignature",
    )
    .await;
}

#[tokio::test]
async fn hmac_signed_with_the_rsa_public_key_is_refused() {
    let pair = rsa_pair();
    let s = jwt_server(json!({"type": "RS256", "key": pair.public_pem})).await;
    admin_token_works(&s, &sign(Algorithm::RS256, &pair, &admin_claims(), None)).await;
    let pem = pair.public_pem.as_bytes();
    let trimmed = pair.public_pem.trim_end().as_bytes();
    for (alg, secret) in [
        (Algorithm::HS256, pem),
        (Algorithm::HS384, pem),
        (Algorithm::HS512, pem),
        (Algorithm::HS256, trimmed),
    ] {
        let forged = encode(
            &Header::new(alg),
            &admin_claims(),
            &EncodingKey::from_secret(secret),
        )
        .unwrap();
        token_refused(
            &s,
            &forged,
            "invalid-jwt",
            "Could not verify JWT: JWSError JWSInvalidAlgorithm",
        )
        .await;
    }

    // The same confusion against a JWK set: the key's own `n` or its JSON as the HMAC secret.
    let jwks = Jwks::default();
    let key = jwk(&pair, "k1");
    jwks.keys.lock().unwrap().push(key.clone());
    let base = jwks_server(jwks).await;
    let s = jwt_server(json!({"jwk_url": format!("{base}/jwks")})).await;
    admin_token_works(
        &s,
        &sign(Algorithm::RS256, &pair, &admin_claims(), Some("k1")),
    )
    .await;
    let n = key["n"].as_str().unwrap_or_default().to_owned();
    for secret in [n.as_bytes(), key.to_string().as_bytes(), pem] {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".into());
        let forged = encode(&header, &admin_claims(), &EncodingKey::from_secret(secret)).unwrap();
        token_refused(
            &s,
            &forged,
            "invalid-jwt",
            "Could not verify JWT: JWSError JWSInvalidAlgorithm",
        )
        .await;
    }
}

// ---- time, audience and issuer --------------------------------------------------------------

#[tokio::test]
async fn expired_premature_and_misaddressed_tokens_are_refused() {
    // No `allowed_skew`: no leeway at all (jwt.rs sets the leeway to the setting, 0, instead of
    // jsonwebtoken's default of 60 s), so 5 s late is too late.
    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY})).await;
    admin_token_works(&s, &hs_token(&admin_claims())).await;
    let at = |extra: Value| {
        let mut c = admin_claims();
        for (k, v) in extra.as_object().into_iter().flatten() {
            c[k] = v.clone();
        }
        hs_token(&c)
    };
    for (token, message) in [
        (
            at(json!({"exp": now() - 5})),
            "Could not verify JWT: JWTExpired",
        ),
        (
            at(json!({"exp": now() - 86_400 * 365})),
            "Could not verify JWT: JWTExpired",
        ),
        (
            at(json!({"nbf": now() + 5})),
            "Could not verify JWT: JWTNotYetValid",
        ),
        // An `exp` that is not a number must not count as "no expiry".
        (
            at(json!({"exp": "0"})),
            "Could not verify JWT: InvalidClaimFormat(\"exp\")",
        ),
        (
            at(json!({"exp": -1})),
            "Could not verify JWT: InvalidClaimFormat(\"exp\")",
        ),
        (
            at(json!({"nbf": "9999999999"})),
            "Could not verify JWT: InvalidClaimFormat(\"nbf\")",
        ),
    ] {
        token_refused(&s, &token, "invalid-jwt", message).await;
    }

    // Audience, issuer and 30 s of skew configured.
    let s = jwt_server(
        json!({"type": "HS256", "key": HS_KEY, "audience": ["basalt-api"],
        "issuer": "https://issuer.example", "allowed_skew": 30}),
    )
    .await;
    let addressed = |extra: Value| {
        let mut c = admin_claims();
        c["aud"] = json!("basalt-api");
        c["iss"] = json!("https://issuer.example");
        for (k, v) in extra.as_object().into_iter().flatten() {
            if v.is_null() {
                c.as_object_mut().map(|o| o.remove(k));
            } else {
                c[k] = v.clone();
            }
        }
        hs_token(&c)
    };
    admin_token_works(&s, &addressed(json!({"exp": now() - 10}))).await;
    for (token, message) in [
        (
            addressed(json!({"exp": now() - 60})),
            "Could not verify JWT: JWTExpired",
        ),
        (
            addressed(json!({"nbf": now() + 60})),
            "Could not verify JWT: JWTNotYetValid",
        ),
        (
            addressed(json!({"aud": "other-api"})),
            "Could not verify JWT: JWTNotInAudience",
        ),
        (
            addressed(json!({"aud": ["other-api", "Basalt-API"]})),
            "Could not verify JWT: JWTNotInAudience",
        ),
        (
            addressed(json!({"aud": null})),
            "Could not verify JWT: MissingRequiredClaim(\"aud\")",
        ),
        (
            addressed(json!({"iss": "https://evil.example"})),
            "Could not verify JWT: JWTNotInIssuer",
        ),
        (
            addressed(json!({"iss": "https://issuer.example/"})),
            "Could not verify JWT: JWTNotInIssuer",
        ),
        (
            addressed(json!({"iss": null})),
            "Could not verify JWT: MissingRequiredClaim(\"iss\")",
        ),
    ] {
        token_refused(&s, &token, "invalid-jwt", message).await;
    }
}

// ---- key selection ----------------------------------------------------------------------------

#[tokio::test]
async fn kid_outside_the_jwk_set_is_refused() {
    let (k1, k2, attacker) = (rsa_pair(), rsa_pair(), rsa_pair());
    let jwks = Jwks::default();
    jwks.keys
        .lock()
        .unwrap()
        .extend([jwk(&k1, "k1"), jwk(&k2, "k2")]);
    let base = jwks_server(jwks.clone()).await;
    let s = jwt_server(json!({"jwk_url": format!("{base}/jwks")})).await;
    admin_token_works(
        &s,
        &sign(Algorithm::RS256, &k2, &admin_claims(), Some("k2")),
    )
    .await;
    let forged = |kid: Option<&str>| sign(Algorithm::RS256, &attacker, &admin_claims(), kid);
    for (token, message) in [
        (
            forged(Some("k9")),
            "Could not verify JWT: no key found for kid k9",
        ),
        (
            forged(Some("")),
            "Could not verify JWT: no key found for kid ",
        ),
        // Two keys in the set: a token without `kid` matches none of them.
        (
            forged(None),
            "Could not verify JWT: no key found for kid (none)",
        ),
        // A real key id does not help a signature made with another key.
        (
            forged(Some("k1")),
            "Could not verify JWT: JWSError JWSInvalidSignature",
        ),
        // A kid that is not signed by its own key.
        (
            sign(Algorithm::RS256, &k1, &admin_claims(), Some("k2")),
            "Could not verify JWT: JWSError JWSInvalidSignature",
        ),
    ] {
        token_refused(&s, &token, "invalid-jwt", message).await;
    }
    // Made-up key ids make Basalt refetch the set at most once a second.
    let before = *jwks.hits.lock().unwrap();
    let started = Instant::now();
    for i in 0..20 {
        let token = forged(Some(&format!("made-up-{i}")));
        let r = raw_gql(&s, QUERY, &[("Authorization", &bearer(&token))]).await;
        assert_eq!(error_code(&r), "invalid-jwt", "{r}");
    }
    let fetches = *jwks.hits.lock().unwrap() - before;
    let allowed = started.elapsed().as_secs() as usize + 1;
    assert!(
        fetches <= allowed,
        "{fetches} fetches for 20 made-up key ids in {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn jwk_set_that_never_goes_stale_is_not_a_panic() {
    // A key server whose `max-age` is too long for a clock: the set is simply never stale.
    let pair = rsa_pair();
    let keys = json!({"keys": [jwk(&pair, "k1")]});
    let router = Router::new().route(
        "/jwks",
        axum::routing::get(move || {
            let keys = keys.clone();
            async move {
                (
                    [("cache-control", format!("max-age={}", u64::MAX))],
                    axum::Json(keys),
                )
            }
        }),
    );
    let base = serve(router).await;
    let s = jwt_server(json!({"jwk_url": format!("{base}/jwks")})).await;
    admin_token_works(
        &s,
        &sign(Algorithm::RS256, &pair, &admin_claims(), Some("k1")),
    )
    .await;
    token_refused(
        &s,
        &sign(Algorithm::RS256, &rsa_pair(), &admin_claims(), Some("k1")),
        "invalid-jwt",
        "Could not verify JWT: JWSError JWSInvalidSignature",
    )
    .await;
}

/// Counts every request an attacker's key server receives, whatever its path, and answers
/// with the attacker's JWK set.
async fn attacker_server(hits: Arc<AtomicUsize>, keys: Value) -> String {
    let router = Router::new().fallback(move || {
        let hits = hits.clone();
        let keys = keys.clone();
        async move {
            hits.fetch_add(1, Ordering::SeqCst);
            axum::Json(keys)
        }
    });
    serve(router).await
}

/// A token signed by `pair` whose header points at `base` for its key in every way JOSE
/// allows: `jku`, `x5u` and an embedded `jwk`.
fn self_describing(pair: &KeyPair, base: &str, kid: &str) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    header.jku = Some(format!("{base}/.well-known/jwks.json"));
    header.x5u = Some(format!("{base}/cert.pem"));
    header.jwk = serde_json::from_value(jwk(pair, kid)).ok();
    assert!(header.jwk.is_some(), "the embedded key is well-formed");
    let key = EncodingKey::from_rsa_pem(pair.private_pem.as_bytes()).unwrap();
    encode(&header, &admin_claims(), &key).unwrap()
}

#[tokio::test]
async fn jku_x5u_and_embedded_jwk_headers_are_ignored() {
    let (configured, attacker) = (rsa_pair(), rsa_pair());
    let hits = Arc::new(AtomicUsize::new(0));
    let evil = attacker_server(hits.clone(), json!({"keys": [jwk(&attacker, "attacker")]})).await;

    // A static key.
    let s = jwt_server(json!({"type": "RS256", "key": configured.public_pem})).await;
    admin_token_works(
        &s,
        &sign(Algorithm::RS256, &configured, &admin_claims(), None),
    )
    .await;
    token_refused(
        &s,
        &self_describing(&attacker, &evil, "attacker"),
        "invalid-jwt",
        "Could not verify JWT: JWSError JWSInvalidSignature",
    )
    .await;

    // A JWK set: only the configured URL is asked for keys.
    let jwks = Jwks::default();
    jwks.keys.lock().unwrap().push(jwk(&configured, "k1"));
    let base = jwks_server(jwks.clone()).await;
    let s = jwt_server(json!({"jwk_url": format!("{base}/jwks")})).await;
    admin_token_works(
        &s,
        &sign(Algorithm::RS256, &configured, &admin_claims(), Some("k1")),
    )
    .await;
    token_refused(
        &s,
        &self_describing(&attacker, &evil, "attacker"),
        "invalid-jwt",
        "Could not verify JWT: no key found for kid attacker",
    )
    .await;
    token_refused(
        &s,
        &self_describing(&attacker, &evil, "k1"),
        "invalid-jwt",
        "Could not verify JWT: JWSError JWSInvalidSignature",
    )
    .await;
    assert!(
        *jwks.hits.lock().unwrap() >= 1,
        "the configured set was fetched"
    );
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the attacker's key server got no request"
    );
    // The counter works: the attacker's server was reachable all along.
    let r = reqwest::get(format!("{evil}/cert.pem")).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

// ---- oversized tokens -------------------------------------------------------------------------

#[tokio::test]
async fn huge_tokens_are_refused_cleanly() {
    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY})).await;
    let http = reqwest::Client::new();

    // A 1 MB Authorization header exceeds hyper's request-head buffer (about 400 KB: 8 KiB +
    // 100 × 4 KiB, hyper's default that axum::serve keeps). hyper answers `431 Request Header
    // Fields Too Large` itself, before routing, with an empty body, on every path.
    let huge = format!("Bearer {}", "a".repeat(1024 * 1024));
    for path in ["/v1/graphql", "/v1/query"] {
        let r = http
            .post(format!("{}{path}", s.base))
            .header("Authorization", &huge)
            .json(&json!({"query": QUERY}))
            .send()
            .await
            .expect("an answer, not a dropped connection");
        assert_eq!(r.status(), 431, "{path}");
        assert_eq!(r.text().await.unwrap_or_default(), "", "{path}: no data");
    }

    // A token with a 100,000-element claims array (about 270 KB encoded) fits under that limit
    // and reaches verification. Signed with another key: refused before its payload is read.
    let mut payload = admin_claims();
    payload["filler"] = json!(vec![0; 100_000]);
    let forged = encode(
        &Header::new(Algorithm::HS256),
        &payload,
        &EncodingKey::from_secret(b"not-the-configured-key-not-the-configured-key"),
    )
    .unwrap();
    assert!(forged.len() > 250_000, "{}", forged.len());
    token_refused(
        &s,
        &forged,
        "invalid-jwt",
        "Could not verify JWT: JWSError JWSInvalidSignature",
    )
    .await;
    // Signed with the right key but the array where the allowed roles go: the claims are refused.
    let signed = hs_token(&with_claims(
        json!({"x-svc-allowed-roles": vec![0; 100_000], "x-svc-default-role": "user"}),
    ));
    token_refused(
        &s,
        &signed,
        "jwt-invalid-claims",
        "invalid x-svc-allowed-roles; should be a list of roles: ",
    )
    .await;

    // The server still answers.
    let r = http
        .get(format!("{}/healthz", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = raw_gql(
        &s,
        QUERY,
        &[("Authorization", &bearer(&hs_token(&claims(json!({})))))],
    )
    .await;
    assert_eq!(ids(&r), [1, 2, 3, 5], "{r}");
}

// ---- claims ---------------------------------------------------------------------------------

#[tokio::test]
async fn claims_of_the_wrong_type_are_refused() {
    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY})).await;
    let honest = hs_token(&claims(json!({})));
    let r = raw_gql(&s, QUERY, &[("Authorization", &bearer(&honest))]).await;
    assert_eq!(ids(&r), [1, 2, 3, 5], "{r}");
    let roles = "invalid x-svc-allowed-roles; should be a list of roles: ";
    let default = "invalid x-svc-default-role; should be a string";
    let namespace = "claims key: 'https://basalt.dev/jwt/claims'";
    let claims_text = json!({"x-svc-allowed-roles": ["admin"], "x-svc-default-role": "admin"});
    for (payload, message) in [
        (
            with_claims(json!({"x-svc-allowed-roles": "admin", "x-svc-default-role": "admin"})),
            format!("{roles}\"admin\""),
        ),
        (
            with_claims(json!({"x-svc-allowed-roles": ["user", 1], "x-svc-default-role": "user"})),
            format!("{roles}[\"user\",1]"),
        ),
        (
            with_claims(
                json!({"x-svc-allowed-roles": {"0": "admin"}, "x-svc-default-role": "admin"}),
            ),
            format!("{roles}{{\"0\":\"admin\"}}"),
        ),
        (
            with_claims(json!({"x-svc-allowed-roles": null, "x-svc-default-role": "admin"})),
            format!("{roles}null"),
        ),
        (
            with_claims(json!({"x-svc-allowed-roles": ["user"], "x-svc-default-role": 1})),
            default.to_owned(),
        ),
        (
            with_claims(json!({"x-svc-allowed-roles": ["user"], "x-svc-default-role": ["user"]})),
            default.to_owned(),
        ),
        (
            with_claims(json!({"x-svc-allowed-roles": ["user"], "x-svc-default-role": null})),
            default.to_owned(),
        ),
        (
            json!({"exp": now() + 600}),
            format!("{namespace} not found"),
        ),
        (
            with_claims(json!(claims_text.to_string())),
            format!("{namespace} is not an object"),
        ),
        (
            with_claims(json!([claims_text])),
            format!("{namespace} is not an object"),
        ),
        (
            with_claims(Value::Null),
            format!("{namespace} is not an object"),
        ),
    ] {
        let auth = bearer(&hs_token(&payload));
        let got = refused(&s, &[("Authorization", &auth)], "jwt-invalid-claims", 400).await;
        assert_eq!(got, message, "{payload}");
    }

    // The role header may only pick one of the token's allowed roles, spelled exactly.
    let auth = bearer(&honest);
    for requested in ["admin", "USER", "User", "", "user,admin", "editor"] {
        let got = refused(
            &s,
            &[("Authorization", &auth), ("X-Svc-Role", requested)],
            "access-denied",
            400,
        )
        .await;
        assert_eq!(got, "Your requested role is not in allowed roles");
    }
    // A wrong admin secret never falls back to the (valid) token.
    let got = refused(
        &s,
        &[("Authorization", &auth), ("X-Svc-Admin-Secret", "guess")],
        "access-denied",
        401,
    )
    .await;
    assert_eq!(got, "invalid x-svc-admin-secret/x-svc-access-key");
}

#[tokio::test]
async fn default_role_outside_the_allowed_roles_is_refused() {
    let message = "x-svc-default-role is not in x-svc-allowed-roles";
    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY})).await;
    for (allowed, default) in [
        (json!(["user"]), "admin"),
        (json!(["user", "guest"]), "editor"),
        (json!([]), "admin"),
        (json!(["Admin"]), "admin"),
    ] {
        let token = hs_token(&with_claims(
            json!({"x-svc-allowed-roles": allowed, "x-svc-default-role": default}),
        ));
        let auth = bearer(&token);
        // Checked whether or not the request names a role, allowed or not.
        for role in [None, Some("user"), Some("admin")] {
            let mut headers = vec![("Authorization", auth.as_str())];
            headers.extend(role.map(|r| ("X-Svc-Role", r)));
            let got = refused(&s, &headers, "jwt-invalid-claims", 400).await;
            assert_eq!(got, message, "{allowed} / {default} / {role:?}");
        }
    }

    // The same through a claims_map.
    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY, "claims_map": {
        "x-svc-allowed-roles": {"path": "$.roles"}, "x-svc-default-role": {"path": "$.role"},
        "x-svc-user-id": {"path": "$.sub"}}}))
    .await;
    let honest = hs_token(&json!({"sub": "1", "roles": ["user"], "role": "user"}));
    let r = raw_gql(&s, QUERY, &[("Authorization", &bearer(&honest))]).await;
    assert_eq!(ids(&r), [1, 2, 3, 5], "{r}");
    let token = hs_token(&json!({"sub": "1", "roles": ["user"], "role": "admin"}));
    let got = refused(
        &s,
        &[("Authorization", &bearer(&token))],
        "jwt-invalid-claims",
        400,
    )
    .await;
    assert_eq!(got, message);
}

#[tokio::test]
async fn far_future_expiry_is_served_not_a_panic() {
    // A correctly signed token whose `exp` is the largest number a JWT can carry: it has not
    // expired, so it is served, and the session's expiry (for WebSockets) must not overflow.
    let s = jwt_server(json!({"type": "HS256", "key": HS_KEY})).await;
    for exp in [json!(u64::MAX), json!(1e19), json!(i64::MAX)] {
        let token = hs_token(&claims(json!({ "exp": exp })));
        let r = raw_gql(&s, QUERY, &[("Authorization", &bearer(&token))]).await;
        assert_eq!(ids(&r), [1, 2, 3, 5], "exp {exp}: {r}");
    }
}

// ---- webhook mode -------------------------------------------------------------------------------

#[tokio::test]
async fn misbehaving_hooks_are_refused() {
    let hook = Hook::default();
    let base = hook_server(hook.clone()).await;
    let s = blog_server(|c| {
        c.admin_secret = Some(SECRET.into());
        c.auth_hook = Some(format!("{base}/get"));
        c.auth_hook_timeout_seconds = 1;
    })
    .await;
    let r = raw_gql(&s, QUERY, &[("Authorization", "Bearer good")]).await;
    assert_eq!(ids(&r), [1, 3, 4, 5], "the honest answer is served: {r}");

    let before = *hook.hits.lock().unwrap();
    let invalid = "Invalid response from authorization hook";
    for (token, code, status, message) in [
        ("Bearer broken", "unexpected", 500, invalid.to_owned()),
        (
            "Bearer malformed",
            "unexpected",
            500,
            format!("{invalid}: "),
        ),
        ("Bearer empty", "unexpected", 500, format!("{invalid}: ")),
        (
            "Bearer array",
            "unexpected",
            500,
            format!("{invalid}: expected a JSON object"),
        ),
        (
            "Bearer role-number",
            "unexpected",
            500,
            format!("{invalid}: X-Svc-Role is not a string"),
        ),
        (
            "Bearer role-null",
            "unexpected",
            500,
            format!("{invalid}: X-Svc-Role is not a string"),
        ),
        (
            "Bearer role-list",
            "unexpected",
            500,
            format!("{invalid}: X-Svc-Role is not a string"),
        ),
        (
            "Bearer role-object",
            "unexpected",
            500,
            format!("{invalid}: X-Svc-Role is not a string"),
        ),
        (
            "Bearer norole",
            "invalid-params",
            400,
            "x-svc-role not found in session variables".to_owned(),
        ),
        (
            "Bearer denied",
            "access-denied",
            401,
            "Authentication hook unauthorized this request".to_owned(),
        ),
    ] {
        let got = refused(&s, &[("Authorization", token)], code, status).await;
        assert!(got.starts_with(&message), "{token}: {got:?}");
    }
    assert_eq!(
        *hook.hits.lock().unwrap() - before,
        20,
        "each attempt on each API asked the hook: failures are never cached"
    );

    // A hook slower than the timeout (1 s here; it sleeps 5 s) is abandoned in time.
    let started = Instant::now();
    let got = refused(&s, &[("Authorization", "Bearer slow")], "unexpected", 500).await;
    assert_eq!(got, "webhook authentication request failed");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "two calls, each cut at 1 s: {:?}",
        started.elapsed()
    );

    // An answer cached "forever" is served, and does not overflow the session's expiry.
    for _ in 0..2 {
        let r = raw_gql(&s, QUERY, &[("Authorization", "Bearer endless")]).await;
        assert_eq!(ids(&r), [1, 3, 4, 5], "{r}");
    }
    // The server still answers.
    let r = raw_gql(&s, QUERY, &[("Authorization", "Bearer good")]).await;
    assert_eq!(ids(&r), [1, 3, 4, 5], "{r}");
}
