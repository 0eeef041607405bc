//! The resolved caller ([`Session`]) and how `X-Svc-*` request headers become session
//! variables. No IO; [`crate::auth`] decides which variables to trust.

use http::{HeaderMap, HeaderValue};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The session variable (and request header) that names the caller's role.
pub const ROLE: &str = "x-svc-role";
/// What every session variable's name (and every Basalt request header's) starts with.
pub const PREFIX: &str = "x-svc-";
/// The request header carrying the admin secret.
pub const ADMIN_SECRET: &str = "x-svc-admin-secret";
/// The older name of [`ADMIN_SECRET`], accepted the same way.
pub const ACCESS_KEY: &str = "x-svc-access-key";
/// The request header asking for backend-only insert permissions.
pub const USE_BACKEND_ONLY_PERMISSIONS: &str = "x-svc-use-backend-only-permissions";
/// The role that bypasses permissions.
pub const ADMIN_ROLE: &str = "admin";

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
    /// The admin, with no other variable: who Basalt's own work runs as.
    pub fn admin() -> Self {
        Session {
            role: ADMIN_ROLE.to_owned(),
            variables: BTreeMap::new(),
            backend_only: false,
            expires: None,
        }
    }

    /// A session from variables given as JSON (explain's `user`): names lower-cased, values
    /// that are not strings as their JSON text, the role from [`ROLE`] (admin when absent) and
    /// kept among the variables.
    pub fn from_variables(given: &Map<String, Value>) -> Self {
        let mut variables: BTreeMap<String, String> = given
            .iter()
            .map(|(name, value)| {
                let text = value
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| value.to_string());
                (name.to_ascii_lowercase(), text)
            })
            .collect();
        let role = variables
            .get(ROLE)
            .cloned()
            .unwrap_or_else(|| ADMIN_ROLE.to_owned());
        variables.insert(ROLE.to_owned(), role.clone());
        Session {
            role,
            variables,
            backend_only: false,
            expires: None,
        }
    }

    /// The session as event payloads and handlers receive it: the variables plus [`ROLE`].
    pub fn to_json(&self) -> Value {
        let mut map: Map<String, Value> = self
            .variables
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        map.insert(ROLE.to_owned(), Value::String(self.role.clone()));
        Value::Object(map)
    }

    /// Whether the caller is the admin.
    pub fn is_admin(&self) -> bool {
        self.role == ADMIN_ROLE
    }
}

/// Client headers that describe the client's own connection or body, never forwarded to
/// another service (an auth webhook in GET mode, a remote schema with
/// `forward_client_headers`).
pub const NOT_FORWARDED: &[&str] = &[
    "content-length",
    "content-type",
    "content-md5",
    "user-agent",
    "host",
    "origin",
    "referer",
    "accept",
    "accept-encoding",
    "accept-language",
    "accept-datetime",
    "cache-control",
    "connection",
    "dnt",
];

/// Hop-by-hop and WebSocket headers, which mean nothing on another connection: not forwarded
/// either.
const HOP_BY_HOP: &[&str] = &[
    "keep-alive",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authorization",
    "proxy-connection",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-extensions",
    "sec-websocket-protocol",
];

/// Whether a client header (lower-case name) may be forwarded to another service (a remote
/// schema or an action handler with `forward_client_headers`): not one that describes the
/// client's own connection or body, not a hop-by-hop one, and never an `X-Svc-*` header —
/// credentials stay here, and the session's variables say who the caller is.
pub fn forwardable(name: &str) -> bool {
    !(NOT_FORWARDED.contains(&name) || HOP_BY_HOP.contains(&name) || name.starts_with(PREFIX))
}

/// Credentials: never session variables.
const CREDENTIALS: [&str; 2] = [ADMIN_SECRET, ACCESS_KEY];

/// A session header whose value is not UTF-8 text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}: the value is not valid UTF-8")]
pub struct UnreadableHeader(pub String);

/// The text of the header `name`: its bytes read as UTF-8 (HTTP carries any byte but controls).
pub fn header_text<'v>(name: &str, value: &'v HeaderValue) -> Result<&'v str, UnreadableHeader> {
    std::str::from_utf8(value.as_bytes()).map_err(|_| UnreadableHeader(name.to_owned()))
}

/// Every `X-Svc-*` request header except credentials, keyed lower-case. A value that is not
/// UTF-8 is an error, never left out: without its `X-Svc-Role`, a trusted request would run
/// as `admin`.
pub fn header_variables(headers: &HeaderMap) -> Result<BTreeMap<String, String>, UnreadableHeader> {
    headers
        .iter()
        .filter(|(name, _)| {
            name.as_str().starts_with(PREFIX) && !CREDENTIALS.contains(&name.as_str())
        })
        .map(|(name, value)| {
            let text = header_text(name.as_str(), value)?;
            Ok((name.as_str().to_owned(), text.to_owned()))
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
        let vars = header_variables(&h).unwrap();
        assert_eq!(vars.len(), 1);
        assert_eq!(vars.get("x-svc-user-id").map(String::as_str), Some("7"));
    }

    #[test]
    fn values_are_utf8_and_other_bytes_are_refused() {
        let mut h = HeaderMap::new();
        let apostrophe = "\u{02BC}; --";
        h.insert(
            "x-svc-user-id",
            HeaderValue::from_bytes(apostrophe.as_bytes()).unwrap(),
        );
        let vars = header_variables(&h).unwrap();
        assert_eq!(
            vars.get("x-svc-user-id").map(String::as_str),
            Some(apostrophe)
        );
        h.insert("x-svc-role", HeaderValue::from_bytes(b"\xff").unwrap());
        assert_eq!(
            header_variables(&h).unwrap_err().to_string(),
            "x-svc-role: the value is not valid UTF-8"
        );
    }
}
