//! Who is calling: the admin secret and the requested role, from request headers. No IO.

use http::HeaderMap;
use std::collections::BTreeMap;
use subtle::ConstantTimeEq;

/// The resolved caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Role (`admin` bypasses permissions).
    pub role: String,
    /// Session variables, keys lower-case (`x-svc-user-id`); never holds credentials.
    pub variables: BTreeMap<String, String>,
    /// Trusted backend request: `X-Svc-Use-Backend-Only-Permissions: true` with the admin
    /// secret (or in open mode). Only backend-only insert permissions apply to it.
    pub backend_only: bool,
}

impl Session {
    /// Whether the caller is the admin.
    pub fn is_admin(&self) -> bool {
        self.role == "admin"
    }
}

/// Authentication failures (HTTP 401, code `access-denied`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// A secret was sent and it is wrong.
    #[error("invalid x-svc-admin-secret/x-svc-access-key")]
    InvalidSecret,
    /// A secret is configured and none was sent.
    #[error("x-svc-admin-secret/x-svc-access-key required, but not found")]
    MissingSecret,
    /// A header has a value that cannot be understood.
    #[error("{0}")]
    InvalidHeader(String),
}

impl AuthError {
    /// The wire code.
    pub fn code(&self) -> &'static str {
        match self {
            AuthError::InvalidSecret | AuthError::MissingSecret => "access-denied",
            AuthError::InvalidHeader(_) => "invalid-headers",
        }
    }
}

const BACKEND_ONLY_HEADER: &str = "x-svc-use-backend-only-permissions";

const SECRET_HEADERS: [&str; 2] = ["x-svc-admin-secret", "x-svc-access-key"];

/// Resolves the session from headers. With a secret configured the request must carry it
/// (compared in constant time); the role is `X-Svc-Role`, else `admin`.
pub fn authenticate(headers: &HeaderMap, admin_secret: Option<&str>) -> Result<Session, AuthError> {
    if let Some(secret) = admin_secret {
        let given = SECRET_HEADERS.iter().find_map(|h| headers.get(*h));
        match given {
            None => return Err(AuthError::MissingSecret),
            Some(value) => {
                if !bool::from(value.as_bytes().ct_eq(secret.as_bytes())) {
                    return Err(AuthError::InvalidSecret);
                }
            }
        }
    }
    let mut variables = BTreeMap::new();
    for (name, value) in headers {
        let name = name.as_str();
        if name.starts_with("x-svc-") && !SECRET_HEADERS.contains(&name) {
            if let Ok(v) = value.to_str() {
                variables.insert(name.to_owned(), v.to_owned());
            }
        }
    }
    let role = variables
        .get("x-svc-role")
        .cloned()
        .unwrap_or_else(|| "admin".to_owned());
    variables.insert("x-svc-role".to_owned(), role.clone());
    // Reaching here means the secret matched, or there is none (open mode): trusted either way.
    let backend_only = match variables.get(BACKEND_ONLY_HEADER) {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        Some(v) => {
            return Err(AuthError::InvalidHeader(format!(
                "x-svc-use-backend-only-permissions: expected true or false, found \"{v}\""
            )))
        }
    };
    Ok(Session {
        role,
        variables,
        backend_only,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn open_mode_defaults_to_admin_and_never_keeps_secrets() {
        let s = authenticate(
            &headers(&[("X-Svc-User-Id", "7"), ("X-Svc-Admin-Secret", "x")]),
            None,
        )
        .unwrap();
        assert_eq!(s.role, "admin");
        assert_eq!(
            s.variables.get("x-svc-user-id").map(String::as_str),
            Some("7")
        );
        assert!(!s.variables.contains_key("x-svc-admin-secret"));
    }

    #[test]
    fn secret_mode_checks_the_secret() {
        assert_eq!(
            authenticate(&headers(&[]), Some("s3")),
            Err(AuthError::MissingSecret)
        );
        assert_eq!(
            authenticate(&headers(&[("x-svc-admin-secret", "no")]), Some("s3")),
            Err(AuthError::InvalidSecret)
        );
        let s = authenticate(
            &headers(&[("x-svc-admin-secret", "s3"), ("x-svc-role", "user")]),
            Some("s3"),
        )
        .unwrap();
        assert_eq!(s.role, "user");
        let s = authenticate(&headers(&[("x-svc-access-key", "s3")]), Some("s3")).unwrap();
        assert!(s.is_admin());
        assert!(!s.backend_only);
        let s = authenticate(
            &headers(&[
                ("x-svc-admin-secret", "s3"),
                ("x-svc-use-backend-only-permissions", "TRUE"),
            ]),
            Some("s3"),
        )
        .unwrap();
        assert!(s.backend_only);
        let e = authenticate(
            &headers(&[("x-svc-use-backend-only-permissions", "yes")]),
            None,
        )
        .unwrap_err();
        assert_eq!(e.code(), "invalid-headers");
    }
}
