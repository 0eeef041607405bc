//! JWT mode: the `BASALT_JWT_SECRET` configuration, key material (static or a JWK set fetched,
//! cached per `Cache-Control`/`Expires` and refetched on an unknown `kid`), verification and
//! claim extraction (`docs/auth.md`, "JWT mode").

use super::{AuthConfigError, AuthError};
use crate::session;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::str::FromStr;
use std::sync::RwLock;
use std::time::{Duration, Instant};

/// Default claims namespace.
pub const DEFAULT_NAMESPACE: &str = "https://basalt.dev/jwt/claims";

/// `BASALT_JWT_SECRET`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// Algorithm (with `key`).
    #[serde(rename = "type")]
    pub algorithm: Option<String>,
    /// Shared secret or PEM public key.
    pub key: Option<String>,
    /// JWK set URL.
    pub jwk_url: Option<String>,
    /// Payload key holding the claims.
    pub claims_namespace: Option<String>,
    /// JSONPath to the claims object.
    pub claims_namespace_path: Option<String>,
    /// `json` or `stringified_json`.
    #[serde(default)]
    pub claims_format: Option<String>,
    /// Expected audience(s).
    pub audience: Option<Value>,
    /// Expected issuer.
    pub issuer: Option<String>,
    /// Session variables from payload paths or literals.
    pub claims_map: Option<Map<String, Value>>,
    /// Leeway in seconds for `exp`/`nbf`.
    #[serde(default)]
    pub allowed_skew: u64,
    /// Where the token is: `{"type":"Authorization"}` or `{"type":"Cookie","name":…}`.
    pub header: Option<TokenSource>,
}

/// Where the token travels.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type")]
pub enum TokenSource {
    /// `Authorization: Bearer <token>`.
    Authorization,
    /// The cookie `name`.
    Cookie {
        /// Compared with each cookie's name exactly (case matters).
        name: String,
    },
}

/// A JWK set and when to refetch it.
#[derive(Debug, Default)]
struct KeySet {
    keys: Option<JwkSet>,
    expires: Option<Instant>,
    last_fetch: Option<Instant>,
}

/// Verifies tokens for one configuration.
#[derive(Debug)]
pub struct JwtVerifier {
    config: JwtConfig,
    /// Static key and its algorithm (with `key`).
    fixed: Option<(DecodingKey, Algorithm)>,
    /// JWK set state (with `jwk_url`).
    jwks: RwLock<KeySet>,
    http: reqwest::Client,
}

/// Why the JWK set could not be fetched (logged; verification then reports the missing key).
#[derive(Debug, thiserror::Error)]
pub enum JwkSetError {
    /// The request failed.
    #[error("cannot fetch the JWK set: {0}")]
    Request(reqwest::Error),
    /// The server answered with an error status.
    #[error("cannot fetch the JWK set: HTTP {0}")]
    Status(reqwest::StatusCode),
    /// The answer is not a JWK set.
    #[error("invalid JWK set: {0}")]
    Decode(reqwest::Error),
}

/// Least time between refetches caused by unknown key ids.
const REFETCH_GAP: Duration = Duration::from_secs(1);

fn algorithm(name: &str) -> Result<Algorithm, AuthConfigError> {
    match name {
        "Ed25519" | "EdDSA" => Ok(Algorithm::EdDSA),
        other => Algorithm::from_str(other)
            .map_err(|_| AuthConfigError::JwtUnknownType(other.to_owned())),
    }
}

/// Seconds of freshness a response allows: `Cache-Control` `s-maxage`/`max-age`, else `Expires`.
pub fn freshness(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if let Some(cc) = headers
        .get(reqwest::header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
    {
        let mut best: Option<u64> = None;
        for part in cc.split(',').map(str::trim) {
            for prefix in ["s-maxage=", "max-age="] {
                if let Some(n) = part
                    .strip_prefix(prefix)
                    .and_then(|n| n.parse::<u64>().ok())
                {
                    best = Some(if prefix == "s-maxage=" {
                        n
                    } else {
                        best.unwrap_or(n)
                    });
                }
            }
        }
        if let Some(n) = best {
            return Some(Duration::from_secs(n));
        }
    }
    let expires = headers.get(reqwest::header::EXPIRES)?.to_str().ok()?;
    let at = httpdate::parse_http_date(expires).ok()?;
    at.duration_since(std::time::SystemTime::now()).ok()
}

impl JwtVerifier {
    /// Parses and checks the configuration (config errors are fatal at startup).
    pub fn new(config_json: &str) -> Result<Self, AuthConfigError> {
        let config: JwtConfig =
            serde_json::from_str(config_json).map_err(AuthConfigError::JwtJson)?;
        if config.claims_namespace.is_some() && config.claims_namespace_path.is_some() {
            return Err(AuthConfigError::JwtNamespaceConflict);
        }
        match config.claims_format.as_deref() {
            None | Some("json") | Some("stringified_json") => {}
            Some(other) => return Err(AuthConfigError::JwtClaimsFormat(other.to_owned())),
        }
        let invalid_key =
            |key_type| move |reason| AuthConfigError::JwtInvalidKey { key_type, reason };
        let fixed = match (&config.key, &config.jwk_url) {
            (Some(_), Some(_)) => return Err(AuthConfigError::JwtKeyAndJwkUrl),
            (None, None) => return Err(AuthConfigError::JwtNoKey),
            (Some(key), None) => {
                let name = config
                    .algorithm
                    .as_deref()
                    .ok_or(AuthConfigError::JwtNoType)?;
                let alg = algorithm(name)?;
                let bytes = key.as_bytes();
                let decoding = match alg {
                    Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
                        let minimum = match alg {
                            Algorithm::HS256 => 32,
                            Algorithm::HS384 => 48,
                            _ => 64,
                        };
                        if bytes.len() < minimum {
                            return Err(AuthConfigError::JwtKeyTooShort {
                                algorithm: name.to_owned(),
                                minimum,
                            });
                        }
                        DecodingKey::from_secret(bytes)
                    }
                    Algorithm::RS256
                    | Algorithm::RS384
                    | Algorithm::RS512
                    | Algorithm::PS256
                    | Algorithm::PS384
                    | Algorithm::PS512 => {
                        DecodingKey::from_rsa_pem(bytes).map_err(invalid_key("RSA"))?
                    }
                    Algorithm::ES256 | Algorithm::ES384 => {
                        DecodingKey::from_ec_pem(bytes).map_err(invalid_key("EC"))?
                    }
                    Algorithm::EdDSA => {
                        DecodingKey::from_ed_pem(bytes).map_err(invalid_key("Ed25519"))?
                    }
                    other => return Err(AuthConfigError::JwtUnsupportedAlgorithm(other)),
                };
                Some((decoding, alg))
            }
            (None, Some(url)) => {
                reqwest::Url::parse(url).map_err(AuthConfigError::JwkUrl)?;
                None
            }
        };
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .user_agent(concat!("basalt/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(AuthConfigError::HttpClient)?;
        Ok(JwtVerifier {
            config,
            fixed,
            jwks: RwLock::new(KeySet::default()),
            http,
        })
    }

    /// Fetches the JWK set (at startup and when stale or a key id is unknown).
    pub async fn refresh(&self) -> Result<(), JwkSetError> {
        let Some(url) = &self.config.jwk_url else {
            return Ok(());
        };
        {
            let mut state = self.jwks.write().unwrap_or_else(|p| p.into_inner());
            state.last_fetch = Some(Instant::now());
        }
        let response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(JwkSetError::Request)?;
        if !response.status().is_success() {
            return Err(JwkSetError::Status(response.status()));
        }
        let fresh_for = freshness(response.headers());
        let keys: JwkSet = response.json().await.map_err(JwkSetError::Decode)?;
        let mut state = self.jwks.write().unwrap_or_else(|p| p.into_inner());
        state.keys = Some(keys);
        // A lifetime too long for an `Instant` (`max-age` near `u64::MAX`) means never stale.
        state.expires = fresh_for.and_then(|d| Instant::now().checked_add(d));
        Ok(())
    }

    fn jwk_key(&self, kid: Option<&str>) -> Option<(DecodingKey, Algorithm)> {
        let state = self.jwks.read().unwrap_or_else(|p| p.into_inner());
        let set = state.keys.as_ref()?;
        let jwk = match kid {
            Some(kid) => set.find(kid)?,
            None if set.keys.len() == 1 => &set.keys[0],
            None => return None,
        };
        // The algorithm the key declares, else the usual one for its key type.
        let by_type = match &jwk.algorithm {
            jsonwebtoken::jwk::AlgorithmParameters::RSA(_) => Some(Algorithm::RS256),
            jsonwebtoken::jwk::AlgorithmParameters::EllipticCurve(p) => Some(match p.curve {
                jsonwebtoken::jwk::EllipticCurve::P384 => Algorithm::ES384,
                _ => Algorithm::ES256,
            }),
            jsonwebtoken::jwk::AlgorithmParameters::OctetKeyPair(_) => Some(Algorithm::EdDSA),
            jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_) => Some(Algorithm::HS256),
            _ => None,
        };
        let alg = jwk
            .common
            .key_algorithm
            .and_then(|a| Algorithm::from_str(&a.to_string()).ok())
            .or(by_type)?;
        Some((DecodingKey::from_jwk(jwk).ok()?, alg))
    }

    async fn key_for(&self, kid: Option<&str>) -> Result<(DecodingKey, Algorithm), AuthError> {
        if let Some((key, alg)) = &self.fixed {
            return Ok((key.clone(), *alg));
        }
        let (stale, may_refetch) = {
            let state = self.jwks.read().unwrap_or_else(|p| p.into_inner());
            let stale = state.keys.is_none() || state.expires.is_some_and(|e| Instant::now() >= e);
            let may = state.last_fetch.is_none_or(|t| t.elapsed() >= REFETCH_GAP);
            (stale, may)
        };
        if stale && may_refetch {
            if let Err(err) = self.refresh().await {
                tracing::warn!(%err, "JWK set refresh failed");
            }
        }
        if let Some(found) = self.jwk_key(kid) {
            return Ok(found);
        }
        // An unknown key id may mean the keys were rotated: refetch once (rate-limited).
        let may_refetch = {
            let state = self.jwks.read().unwrap_or_else(|p| p.into_inner());
            state.last_fetch.is_none_or(|t| t.elapsed() >= REFETCH_GAP)
        };
        if may_refetch {
            if let Err(err) = self.refresh().await {
                tracing::warn!(%err, "JWK set refresh failed");
            }
            if let Some(found) = self.jwk_key(kid) {
                return Ok(found);
            }
        }
        Err(AuthError::InvalidJwt(format!(
            "Could not verify JWT: no key found for kid {}",
            kid.unwrap_or("(none)")
        )))
    }

    /// The token from the request headers, per `header`.
    pub fn token<'h>(&self, headers: &'h http::HeaderMap) -> Result<Option<&'h str>, AuthError> {
        match &self.config.header {
            Some(TokenSource::Cookie { name }) => {
                for cookie in headers
                    .get_all(http::header::COOKIE)
                    .iter()
                    .filter_map(|v| v.to_str().ok())
                {
                    for pair in cookie.split(';').map(str::trim) {
                        if let Some((k, v)) = pair.split_once('=') {
                            if k == name {
                                return Ok(Some(v));
                            }
                        }
                    }
                }
                Ok(None)
            }
            _ => match headers.get(http::header::AUTHORIZATION) {
                None => Ok(None),
                Some(value) => {
                    let text = value.to_str().map_err(|_| {
                        AuthError::InvalidHeader("Malformed Authorization header".into())
                    })?;
                    let (scheme, token) = text.split_once(' ').ok_or_else(|| {
                        AuthError::InvalidHeader("Malformed Authorization header".into())
                    })?;
                    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
                        return Err(AuthError::InvalidHeader(
                            "Malformed Authorization header".into(),
                        ));
                    }
                    Ok(Some(token.trim()))
                }
            },
        }
    }

    /// Verifies a token and returns (allowed roles, default role, session variables).
    pub async fn verify(&self, token: &str) -> Result<Claims, AuthError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| AuthError::InvalidJwt(verify_message(&e)))?;
        let (key, alg) = self.key_for(header.kid.as_deref()).await?;
        let mut validation = Validation::new(alg);
        validation.required_spec_claims = HashSet::new();
        validation.leeway = self.config.allowed_skew;
        validation.validate_nbf = true;
        // A configured audience or issuer must be present in the token, not merely match if given.
        if self.config.audience.is_some() {
            validation.required_spec_claims.insert("aud".to_owned());
        }
        if self.config.issuer.is_some() {
            validation.required_spec_claims.insert("iss".to_owned());
        }
        match &self.config.audience {
            Some(Value::String(a)) => validation.set_audience(&[a]),
            Some(Value::Array(items)) => {
                let list: Vec<String> = items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect();
                validation.set_audience(&list);
            }
            _ => validation.validate_aud = false,
        }
        if let Some(iss) = &self.config.issuer {
            validation.set_issuer(&[iss]);
        }
        let data = jsonwebtoken::decode::<Value>(token, &key, &validation)
            .map_err(|e| AuthError::InvalidJwt(verify_message(&e)))?;
        let mut claims = self.claims(&data.claims)?;
        claims.expires = data
            .claims
            .get("exp")
            .and_then(expiry_seconds)
            .and_then(|exp| {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let left = exp
                    .saturating_add(self.config.allowed_skew)
                    .saturating_sub(now);
                // An `exp` too far ahead for an `Instant` (a signed `u64::MAX`) never comes: no
                // expiry, rather than a panic on the request path.
                Instant::now().checked_add(Duration::from_secs(left))
            });
        Ok(claims)
    }

    fn claims(&self, payload: &Value) -> Result<Claims, AuthError> {
        let invalid = AuthError::JwtInvalidClaims;
        let object: Map<String, Value> = match &self.config.claims_map {
            Some(map) => {
                let mut out = Map::new();
                for (var, rule) in map {
                    let value = match rule {
                        Value::Object(o) if o.contains_key("path") => {
                            let path = o.get("path").and_then(Value::as_str).unwrap_or("$");
                            match lookup(payload, path) {
                                Some(v) => v.clone(),
                                None => match o.get("default") {
                                    Some(d) => d.clone(),
                                    None => {
                                        return Err(invalid(format!(
                                            "JWT claim from claims_map, {var} not found"
                                        )))
                                    }
                                },
                            }
                        }
                        literal => literal.clone(),
                    };
                    out.insert(var.to_ascii_lowercase(), value);
                }
                out
            }
            None => {
                let (found, name) = match &self.config.claims_namespace_path {
                    Some(path) => (lookup(payload, path), path.clone()),
                    None => {
                        let ns = self
                            .config
                            .claims_namespace
                            .clone()
                            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
                        (payload.get(&ns), ns)
                    }
                };
                let found =
                    found.ok_or_else(|| invalid(format!("claims key: '{name}' not found")))?;
                let value = if self.config.claims_format.as_deref() == Some("stringified_json") {
                    let text = found
                        .as_str()
                        .ok_or_else(|| invalid("stringified claims must be a string".into()))?;
                    serde_json::from_str(text)
                        .map_err(|e| invalid(format!("invalid stringified claims: {e}")))?
                } else {
                    found.clone()
                };
                match value {
                    Value::Object(o) => o
                        .into_iter()
                        .map(|(k, v)| (k.to_ascii_lowercase(), v))
                        .collect(),
                    _ => return Err(invalid(format!("claims key: '{name}' is not an object"))),
                }
            }
        };
        let allowed = object.get("x-svc-allowed-roles").ok_or_else(|| {
            AuthError::JwtMissingRoleClaims("JWT claim does not contain x-svc-allowed-roles".into())
        })?;
        let allowed: Vec<String> = match allowed {
            Value::Array(items) if items.iter().all(Value::is_string) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            other => {
                return Err(invalid(format!(
                    "invalid x-svc-allowed-roles; should be a list of roles: {other}"
                )))
            }
        };
        let default = object
            .get("x-svc-default-role")
            .ok_or_else(|| {
                AuthError::JwtMissingRoleClaims(
                    "JWT claim does not contain x-svc-default-role".into(),
                )
            })?
            .as_str()
            .ok_or_else(|| invalid("invalid x-svc-default-role; should be a string".into()))?
            .to_owned();
        // A token may not grant by default a role it does not allow (checked whether or not
        // the request names a role): otherwise a default of `admin` would be served as such.
        if !allowed.contains(&default) {
            return Err(invalid(
                "x-svc-default-role is not in x-svc-allowed-roles".into(),
            ));
        }
        let mut variables = BTreeMap::new();
        for (k, v) in &object {
            let credential = k == session::ADMIN_SECRET || k == session::ACCESS_KEY;
            if k.starts_with(session::PREFIX)
                && k != "x-svc-allowed-roles"
                && k != "x-svc-default-role"
                && !credential
            {
                let text = v
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string());
                variables.insert(k.clone(), text);
            }
        }
        Ok(Claims {
            allowed,
            default,
            variables,
            expires: None,
        })
    }
}

/// Roles and session variables taken from a verified token.
#[derive(Debug, Clone, PartialEq)]
pub struct Claims {
    /// `x-svc-allowed-roles`.
    pub allowed: Vec<String>,
    /// `x-svc-default-role`.
    pub default: String,
    /// Other `x-svc-*` claims.
    pub variables: BTreeMap<String, String>,
    /// When the token expires (its `exp`, plus the allowed skew).
    pub expires: Option<Instant>,
}

/// A verified token's `exp` in seconds. jsonwebtoken accepts it as an integer or as a float
/// (rounded), so the session's expiry must read both: a float `exp` must not make a WebSocket
/// outlive its token.
fn expiry_seconds(exp: &Value) -> Option<u64> {
    exp.as_u64().or_else(|| {
        exp.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            // `as` saturates at `u64::MAX`, which the caller treats as "never".
            .map(|f| f.round() as u64)
    })
}

/// The message of a verification failure (`docs/auth.md`, "Verification").
fn verify_message(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind;
    let reason = match e.kind() {
        ErrorKind::ExpiredSignature => "JWTExpired".to_owned(),
        ErrorKind::ImmatureSignature => "JWTNotYetValid".to_owned(),
        ErrorKind::InvalidSignature => "JWSError JWSInvalidSignature".to_owned(),
        ErrorKind::InvalidAudience => "JWTNotInAudience".to_owned(),
        ErrorKind::InvalidIssuer => "JWTNotInIssuer".to_owned(),
        ErrorKind::InvalidAlgorithm => "JWSError JWSInvalidAlgorithm".to_owned(),
        other => format!("{other:?}"),
    };
    format!("Could not verify JWT: {reason}")
}

/// Follows a JSONPath (`$.a.b[0]`) into a JSON value.
fn lookup<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    let keys = crate::json_path::keys(path)?;
    let mut cursor = value;
    for key in &keys {
        cursor = match cursor {
            Value::Object(map) => map.get(key)?,
            Value::Array(items) => items.get(key.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_errors_are_reported() {
        let err = JwtVerifier::new(r#"{"type":"HS256","key":"short"}"#).unwrap_err();
        assert!(
            matches!(err, AuthConfigError::JwtKeyTooShort { minimum: 32, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("at least 32"));
        assert!(JwtVerifier::new(
            r#"{"type":"HS256","key":"0123456789abcdef0123456789abcdef","jwk_url":"http://x"}"#
        )
        .is_err());
        assert!(JwtVerifier::new(r#"{"type":"HS256"}"#).is_err());
        assert!(
            JwtVerifier::new(r#"{"type":"XX1","key":"0123456789abcdef0123456789abcdef"}"#).is_err()
        );
        let err = JwtVerifier::new(r#"{"type":"RS256","key":"not a pem"}"#).unwrap_err();
        assert!(
            matches!(
                err,
                AuthConfigError::JwtInvalidKey {
                    key_type: "RSA",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("invalid RSA key"));
        assert!(JwtVerifier::new(r#"{"type":"HS256","key":"0123456789abcdef0123456789abcdef","claims_namespace":"a","claims_namespace_path":"$.b"}"#).is_err());
        assert!(JwtVerifier::new(
            r#"{"type":"HS256","key":"0123456789abcdef0123456789abcdef","unknown":1}"#
        )
        .is_err());
    }

    #[test]
    fn freshness_reads_cache_control_then_expires() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("cache-control", "public, max-age=60".parse().unwrap());
        assert_eq!(freshness(&h), Some(Duration::from_secs(60)));
        h.insert("cache-control", "max-age=60, s-maxage=10".parse().unwrap());
        assert_eq!(freshness(&h), Some(Duration::from_secs(10)));
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("expires", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(freshness(&h), None, "in the past");
    }

    #[tokio::test]
    async fn session_expiry_reads_exp_in_any_number_form_and_never_overflows() {
        use jsonwebtoken::{EncodingKey, Header};
        let key = "0123456789abcdef0123456789abcdef";
        let verifier = JwtVerifier::new(&format!(r#"{{"type":"HS256","key":"{key}"}}"#)).unwrap();
        let token = |exp: Value| {
            let payload = serde_json::json!({"exp": exp, DEFAULT_NAMESPACE:
                {"x-svc-allowed-roles": ["user"], "x-svc-default-role": "user"}});
            jsonwebtoken::encode(
                &Header::new(Algorithm::HS256),
                &payload,
                &EncodingKey::from_secret(key.as_bytes()),
            )
            .unwrap()
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        for exp in [
            serde_json::json!(now + 100),
            serde_json::json!(now as f64 + 100.4),
        ] {
            let claims = verifier.verify(&token(exp.clone())).await.unwrap();
            let left = claims
                .expires
                .map(|at| at.saturating_duration_since(Instant::now()));
            assert!(
                left.is_some_and(|l| l > Duration::from_secs(90) && l <= Duration::from_secs(101)),
                "exp {exp}: {left:?}"
            );
        }
        for exp in [serde_json::json!(u64::MAX), serde_json::json!(1e19)] {
            let claims = verifier.verify(&token(exp.clone())).await.unwrap();
            assert_eq!(claims.expires, None, "exp {exp}: too far to represent");
        }
    }

    #[test]
    fn paths_walk_objects_and_arrays() {
        let v = serde_json::json!({"a": {"roles": ["x", "y"]}});
        assert_eq!(lookup(&v, "$.a.roles[1]"), Some(&serde_json::json!("y")));
        assert_eq!(lookup(&v, "$.a.nope"), None);
        assert_eq!(lookup(&v, "$"), Some(&v));
    }
}
