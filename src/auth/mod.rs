//! Who is calling: the admin secret, JWT, auth webhook or unauthorized role, resolved per
//! request into a [`Session`] (`docs/auth.md`). Credentials never become session data.

pub mod jwt;
pub mod webhook;

use crate::session::{self, header_text, header_variables, Session, UnreadableHeader};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// Authentication failures. Their statuses and wire codes (`docs/auth.md`, "Errors") are
/// decided in `http/error.rs`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// A secret was sent and it is wrong (401).
    #[error("invalid x-svc-admin-secret/x-svc-access-key")]
    InvalidSecret,
    /// A secret is configured and no credential was sent (401).
    #[error("x-svc-admin-secret/x-svc-access-key required, but not found")]
    MissingSecret,
    /// A header cannot be understood (400 `invalid-headers`).
    #[error("{0}")]
    InvalidHeader(String),
    /// The token does not verify (400 `invalid-jwt`).
    #[error("{0}")]
    InvalidJwt(String),
    /// Claims present but malformed (400 `jwt-invalid-claims`).
    #[error("{0}")]
    JwtInvalidClaims(String),
    /// Role claims absent (400 `jwt-missing-role-claims`).
    #[error("{0}")]
    JwtMissingRoleClaims(String),
    /// The requested role is not allowed (400 `access-denied`).
    #[error("Your requested role is not in allowed roles")]
    RoleNotAllowed,
    /// The hook said 401 (401 `access-denied`).
    #[error("Authentication hook unauthorized this request")]
    HookUnauthorized,
    /// The hook answered 200 without a role (400 `invalid-params`).
    #[error("x-svc-role not found in session variables")]
    HookNoRole,
    /// The hook failed or answered badly (500 `unexpected`).
    #[error("{0}")]
    HookFailed(String),
}

/// Authentication settings that cannot work, found at startup ([`Authenticator::new`],
/// [`jwt::JwtVerifier::new`], [`webhook::Webhook::new`]). The messages are the ones operators
/// see when the server refuses to start. No variant names another error as its `source`, so
/// a chain printed with `{:#}` repeats nothing.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    /// An unauthorized role without an admin secret.
    #[error("--unauthorized-role (BASALT_UNAUTHORIZED_ROLE) requires --admin-secret (BASALT_ADMIN_SECRET) to be set")]
    UnauthorizedRoleWithoutSecret,
    /// JWT mode without an admin secret.
    #[error(
        "--jwt-secret (BASALT_JWT_SECRET) requires --admin-secret (BASALT_ADMIN_SECRET) to be set"
    )]
    JwtWithoutSecret,
    /// Webhook mode without an admin secret.
    #[error(
        "--auth-hook (BASALT_AUTH_HOOK) requires --admin-secret (BASALT_ADMIN_SECRET) to be set"
    )]
    HookWithoutSecret,
    /// Both JWT and webhook mode.
    #[error("JWT mode and webhook mode cannot be used together")]
    JwtWithHook,
    /// An unauthorized role in webhook mode.
    #[error("--unauthorized-role cannot be used with an auth webhook")]
    UnauthorizedRoleWithHook,
    /// `BASALT_AUTH_HOOK_MODE` is neither GET nor POST (the value given).
    #[error("BASALT_AUTH_HOOK_MODE must be GET or POST, not {0}")]
    HookMode(String),
    /// `BASALT_AUTH_HOOK` is not a URL.
    #[error("invalid BASALT_AUTH_HOOK: {0}")]
    HookUrl(UrlError),
    /// `BASALT_JWT_SECRET` is not valid JSON of the expected shape.
    #[error("invalid BASALT_JWT_SECRET: {0}")]
    JwtJson(serde_json::Error),
    /// Both `claims_namespace` and `claims_namespace_path`.
    #[error(
        "BASALT_JWT_SECRET: claims_namespace and claims_namespace_path are mutually exclusive"
    )]
    JwtNamespaceConflict,
    /// A `claims_format` other than `json` or `stringified_json` (the value given).
    #[error("BASALT_JWT_SECRET: unknown claims_format \"{0}\"")]
    JwtClaimsFormat(String),
    /// Both `key` and `jwk_url`.
    #[error("BASALT_JWT_SECRET: key and jwk_url are mutually exclusive")]
    JwtKeyAndJwkUrl,
    /// Neither `key` nor `jwk_url`.
    #[error("BASALT_JWT_SECRET: one of key or jwk_url is required")]
    JwtNoKey,
    /// `key` without `type`.
    #[error("BASALT_JWT_SECRET: type is required with key")]
    JwtNoType,
    /// A `type` that names no algorithm (the name given).
    #[error("unsupported JWT type \"{0}\"")]
    JwtUnknownType(String),
    /// An algorithm Basalt cannot verify with a static key.
    #[error("BASALT_JWT_SECRET: unsupported JWT type {0:?}")]
    JwtUnsupportedAlgorithm(jsonwebtoken::Algorithm),
    /// An HMAC key shorter than its algorithm requires.
    #[error("BASALT_JWT_SECRET: the {algorithm} key must be at least {minimum} characters")]
    JwtKeyTooShort {
        /// The algorithm as configured (`HS256`).
        algorithm: String,
        /// Its least key length.
        minimum: usize,
    },
    /// A PEM key that does not parse as the algorithm's key type.
    #[error("BASALT_JWT_SECRET: invalid {key_type} key: {reason}")]
    JwtInvalidKey {
        /// `RSA`, `EC` or `Ed25519`.
        key_type: &'static str,
        /// Why it does not parse.
        reason: jsonwebtoken::errors::Error,
    },
    /// `jwk_url` is not a URL.
    #[error("BASALT_JWT_SECRET: invalid jwk_url: {0}")]
    JwkUrl(UrlError),
    /// The HTTP client for the hook or the JWK set cannot be built.
    #[error("{0}")]
    HttpClient(reqwest::Error),
}

/// Why a URL does not parse.
pub type UrlError = <reqwest::Url as std::str::FromStr>::Err;

/// How requests without the admin secret are authenticated.
#[derive(Debug)]
pub enum Mode {
    /// No admin secret: everyone is admin unless `X-Svc-Role` says otherwise.
    Open,
    /// Admin secret only.
    AdminSecret,
    /// A verified token says who the caller is.
    Jwt(Box<jwt::JwtVerifier>),
    /// An HTTP hook says who the caller is.
    Webhook(webhook::Webhook),
}

/// Authentication settings, validated at startup.
#[derive(Debug)]
pub struct Authenticator {
    secret: Option<String>,
    mode: Mode,
    unauthorized_role: Option<String>,
}

const SECRET_HEADERS: [&str; 2] = [session::ADMIN_SECRET, session::ACCESS_KEY];
const BACKEND_ONLY_HEADER: &str = session::USE_BACKEND_ONLY_PERMISSIONS;

impl Authenticator {
    /// Checks the combination of settings (`docs/auth.md`, "Startup checks") and prepares the mode.
    pub async fn new(
        secret: Option<String>,
        jwt_secret: Option<&str>,
        hook: Option<&str>,
        hook_mode: &str,
        hook_timeout: Duration,
        unauthorized_role: Option<String>,
    ) -> Result<Self, AuthConfigError> {
        if secret.is_none() {
            if unauthorized_role.is_some() {
                return Err(AuthConfigError::UnauthorizedRoleWithoutSecret);
            }
            if jwt_secret.is_some() {
                return Err(AuthConfigError::JwtWithoutSecret);
            }
            if hook.is_some() {
                return Err(AuthConfigError::HookWithoutSecret);
            }
        }
        let mode = match (jwt_secret, hook) {
            (Some(_), Some(_)) => return Err(AuthConfigError::JwtWithHook),
            (Some(config), None) => {
                let verifier = jwt::JwtVerifier::new(config)?;
                if let Err(err) = verifier.refresh().await {
                    // The JWK set may be unreachable right now; it is fetched again on demand.
                    tracing::warn!(%err, "could not fetch the JWK set at startup");
                }
                Mode::Jwt(Box::new(verifier))
            }
            (None, Some(url)) => {
                if unauthorized_role.is_some() {
                    return Err(AuthConfigError::UnauthorizedRoleWithHook);
                }
                let mode = match hook_mode.to_ascii_uppercase().as_str() {
                    "GET" => webhook::HookMode::Get,
                    "POST" => webhook::HookMode::Post,
                    other => return Err(AuthConfigError::HookMode(other.to_owned())),
                };
                Mode::Webhook(webhook::Webhook::new(url, mode, hook_timeout)?)
            }
            (None, None) if secret.is_some() => Mode::AdminSecret,
            (None, None) => Mode::Open,
        };
        Ok(Authenticator {
            secret,
            mode,
            unauthorized_role,
        })
    }

    /// No authentication at all (tests and embedding).
    pub fn open() -> Self {
        Authenticator {
            secret: None,
            mode: Mode::Open,
            unauthorized_role: None,
        }
    }

    /// Whether anyone may act as admin without credentials.
    pub fn is_open(&self) -> bool {
        matches!(self.mode, Mode::Open)
    }

    /// Whether resolving a caller may read the GraphQL request itself (an auth webhook in
    /// POST mode sends it along); every other mode reads headers only.
    pub fn reads_request(&self) -> bool {
        matches!(&self.mode, Mode::Webhook(hook) if hook.sends_request())
    }

    /// Resolves the caller. `request` is the GraphQL request (for POST webhooks).
    pub async fn authenticate(
        &self,
        headers: &http::HeaderMap,
        request: Option<&Value>,
    ) -> Result<Session, AuthError> {
        let given = SECRET_HEADERS.iter().find_map(|h| headers.get(*h));
        let trusted = match (&self.secret, given) {
            (None, _) => true,
            (Some(secret), Some(value)) => {
                if !bool::from(value.as_bytes().ct_eq(secret.as_bytes())) {
                    return Err(AuthError::InvalidSecret);
                }
                true
            }
            (Some(_), None) => false,
        };
        if trusted {
            let mut variables = header_variables(headers).map_err(unreadable)?;
            let role = variables
                .get(session::ROLE)
                .cloned()
                .unwrap_or_else(|| session::ADMIN_ROLE.to_owned());
            variables.insert(session::ROLE.to_owned(), role.clone());
            let backend_only = backend_flag(&variables)?;
            return Ok(Session {
                role,
                variables,
                backend_only,
                expires: None,
            });
        }
        match &self.mode {
            Mode::Open | Mode::AdminSecret => self.unauthorized(headers, true),
            Mode::Jwt(verifier) => {
                match verifier.token(headers)? {
                    None => {
                        if self.unauthorized_role.is_some() {
                            self.unauthorized(headers, false)
                        } else {
                            Err(AuthError::InvalidHeader("Missing 'Authorization' or 'Cookie' header in JWT authentication mode".into()))
                        }
                    }
                    Some(token) => {
                        let claims = verifier.verify(token).await?;
                        let requested = match headers.get(session::ROLE) {
                            Some(value) => Some(
                                header_text(session::ROLE, value)
                                    .map_err(unreadable)?
                                    .to_owned(),
                            ),
                            None => None,
                        };
                        let role = match requested {
                            Some(r) if claims.allowed.contains(&r) => r,
                            Some(_) => return Err(AuthError::RoleNotAllowed),
                            None => claims.default.clone(),
                        };
                        let mut variables = claims.variables;
                        variables.insert(session::ROLE.to_owned(), role.clone());
                        Ok(Session {
                            role,
                            variables,
                            backend_only: false,
                            expires: claims.expires,
                        })
                    }
                }
            }
            Mode::Webhook(hook) => {
                let (variables, expires) = hook.session(headers, request).await?;
                let role = variables.get(session::ROLE).cloned().unwrap_or_default();
                Ok(Session {
                    role,
                    variables,
                    backend_only: false,
                    expires,
                })
            }
        }
    }

    /// The unauthorized role, or the missing-secret error. In admin-secret mode the client's
    /// `X-Svc-*` headers (except the role) are kept; in JWT mode none are.
    fn unauthorized(
        &self,
        headers: &http::HeaderMap,
        keep_headers: bool,
    ) -> Result<Session, AuthError> {
        let role = self
            .unauthorized_role
            .clone()
            .ok_or(AuthError::MissingSecret)?;
        let mut variables: BTreeMap<String, String> = if keep_headers {
            header_variables(headers).map_err(unreadable)?
        } else {
            BTreeMap::new()
        };
        variables.insert(session::ROLE.to_owned(), role.clone());
        Ok(Session {
            role,
            variables,
            backend_only: false,
            expires: None,
        })
    }
}

/// A session header that cannot be read refuses the request (`invalid-headers`).
fn unreadable(err: UnreadableHeader) -> AuthError {
    AuthError::InvalidHeader(err.to_string())
}

/// `X-Svc-Use-Backend-Only-Permissions` of a trusted request.
fn backend_flag(variables: &BTreeMap<String, String>) -> Result<bool, AuthError> {
    match variables.get(BACKEND_ONLY_HEADER) {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
        Some(v) => Err(AuthError::InvalidHeader(format!(
            "x-svc-use-backend-only-permissions: expected true or false, found \"{v}\""
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn new(
        secret: Option<&str>,
        jwt: Option<&str>,
        hook: Option<&str>,
        hook_mode: &str,
        unauthorized_role: Option<&str>,
    ) -> Result<Authenticator, AuthConfigError> {
        Authenticator::new(
            secret.map(str::to_owned),
            jwt,
            hook,
            hook_mode,
            Duration::from_secs(1),
            unauthorized_role.map(str::to_owned),
        )
        .await
    }

    #[tokio::test]
    async fn settings_that_do_not_fit_are_typed_with_the_operator_messages() {
        let jwt = r#"{"type":"HS256","key":"0123456789abcdef0123456789abcdef"}"#;
        let hook = "http://127.0.0.1:1/hook";
        let cases = [
            (
                new(None, None, None, "GET", Some("guest")).await,
                "--unauthorized-role (BASALT_UNAUTHORIZED_ROLE) requires --admin-secret (BASALT_ADMIN_SECRET) to be set",
            ),
            (
                new(None, Some(jwt), None, "GET", None).await,
                "--jwt-secret (BASALT_JWT_SECRET) requires --admin-secret (BASALT_ADMIN_SECRET) to be set",
            ),
            (
                new(None, None, Some(hook), "GET", None).await,
                "--auth-hook (BASALT_AUTH_HOOK) requires --admin-secret (BASALT_ADMIN_SECRET) to be set",
            ),
            (
                new(Some("s"), Some(jwt), Some(hook), "GET", None).await,
                "JWT mode and webhook mode cannot be used together",
            ),
            (
                new(Some("s"), None, Some(hook), "GET", Some("guest")).await,
                "--unauthorized-role cannot be used with an auth webhook",
            ),
            (
                new(Some("s"), None, Some(hook), "put", None).await,
                "BASALT_AUTH_HOOK_MODE must be GET or POST, not PUT",
            ),
        ];
        for (result, message) in cases {
            assert_eq!(result.map(|_| ()).unwrap_err().to_string(), message);
        }
        assert!(matches!(
            new(Some("s"), None, Some("not a url"), "GET", None).await,
            Err(AuthConfigError::HookUrl(_))
        ));
        assert!(new(Some("s"), Some(jwt), None, "GET", None).await.is_ok());
    }
}
