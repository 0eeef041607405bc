//! JWT mode: HS256 roles and rejections, audience, issuer, clock skew, claims namespace and
//! cookie, asymmetric keys (RSA, EC, Ed25519) and algorithm confusion, a JWK set server with key
//! rotation, and the unauthorized role beside JWTs.

use super::*;

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
