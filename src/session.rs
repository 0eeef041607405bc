//! The resolved caller ([`Session`]) and how `X-Svc-*` request headers become session
//! variables. No IO; [`crate::auth`] decides which variables to trust.

use http::HeaderMap;
use std::collections::BTreeMap;

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
    /// When the credentials stop being valid (a JWT's `exp`, a webhook answer's
    /// `Cache-Control`/`Expires`): a WebSocket authenticated with them closes then.
    pub expires: Option<std::time::Instant>,
}

impl Session {
    /// The session as event payloads record it: the variables plus `x-svc-role`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut map: serde_json::Map<String, serde_json::Value> = self
            .variables
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        map.insert(
            "x-svc-role".to_owned(),
            serde_json::Value::String(self.role.clone()),
        );
        serde_json::Value::Object(map)
    }

    /// Whether the caller is the admin.
    pub fn is_admin(&self) -> bool {
        self.role == "admin"
    }
}

/// Credentials: never session variables.
const CREDENTIALS: [&str; 2] = ["x-svc-admin-secret", "x-svc-access-key"];

/// Every `X-Svc-*` request header except credentials, keyed lower-case.
pub fn header_variables(headers: &HeaderMap) -> BTreeMap<String, String> {
    headers
        .iter()
        .filter(|(name, _)| {
            name.as_str().starts_with("x-svc-") && !CREDENTIALS.contains(&name.as_str())
        })
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_become_variables() {
        let mut h = HeaderMap::new();
        h.insert("X-Svc-User-Id", "7".parse().unwrap());
        h.insert("X-Svc-Admin-Secret", "s".parse().unwrap());
        h.insert("x-svc-access-key", "s".parse().unwrap());
        h.insert("authorization", "Bearer x".parse().unwrap());
        let vars = header_variables(&h);
        assert_eq!(vars.len(), 1);
        assert_eq!(vars.get("x-svc-user-id").map(String::as_str), Some("7"));
    }
}
