//! Talking to remote GraphQL servers (`docs/remote-schemas.md`): the introspection call made
//! when a remote schema is added, reloaded, replaced or the server starts ([`introspect`]), and
//! the forwarding of an operation's remote root fields ([`forward`]). Every call goes through
//! one shared HTTP client (connection pool), bounded by the remote's `timeout_seconds`, with a
//! cap on the size of what a remote may answer.

pub mod forward;

use crate::metadata::error::Code;
use crate::metadata::types::RemoteSchemaEntry;
use crate::resolve::remote::{self as resolved, definition_hash, FetchFailure, Fetched};
use serde_json::{json, Value};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Largest response body accepted from a remote (introspection or execution).
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// `User-Agent` of every call.
pub const USER_AGENT: &str = concat!("basalt/", env!("CARGO_PKG_VERSION"));

/// The standard full introspection query (what GraphQL clients send), with enough `ofType`
/// levels for any type reference a schema can reasonably declare.
pub const INTROSPECTION_QUERY: &str = r#"query IntrospectionQuery {
  __schema {
    queryType { name }
    mutationType { name }
    subscriptionType { name }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) {
    name description
    args { ...InputValue }
    type { ...TypeRef }
    isDeprecated deprecationReason
  }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type {
  kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name
    ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } }
}"#;

/// The process's HTTP client for remote schemas.
pub fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .pool_idle_timeout(Duration::from_secs(90))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}

/// Why a call to a remote failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RemoteError {
    /// The URL or a header could not be worked out.
    #[error("{}", .0.message)]
    Config(resolved::UrlError),
    /// Network failure or timeout.
    #[error("HTTP exception occurred while sending the request to {url}")]
    Http {
        /// The URL as configured (templates unexpanded).
        url: String,
        /// What went wrong (`Response timeout`, `Connection refused`, …).
        detail: String,
    },
    /// Introspection answered with a status other than 200.
    #[error("introspection query to {url} has responded with {status} status code")]
    Status {
        /// The URL as configured.
        url: String,
        status: u16,
    },
    /// The answer is not what a GraphQL server sends.
    #[error("{0}")]
    Invalid(String),
}

impl RemoteError {
    /// `extensions.internal` / the metadata error's `internal` for the admin.
    pub fn internal(&self) -> Option<Value> {
        match self {
            RemoteError::Http { detail, .. } => {
                Some(json!({"type": "http_exception", "message": detail}))
            }
            _ => None,
        }
    }

    /// The wire code of a failed introspection.
    pub fn code(&self) -> Code {
        match self {
            RemoteError::Config(_) => Code::InvalidParams,
            _ => Code::RemoteSchemaError,
        }
    }
}

/// What a transport failure was, for `internal.message` (never with the URL, which may carry
/// credentials).
pub(crate) fn describe(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        return "Response timeout".to_owned();
    }
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(err);
    let mut detail = None;
    while let Some(s) = source {
        detail = Some(s.to_string());
        source = s.source();
    }
    match (err.is_connect(), detail) {
        (true, Some(d)) => format!("ConnectionFailure: {d}"),
        (true, None) => "ConnectionFailure".to_owned(),
        (false, Some(d)) => d,
        (false, None) => "request failed".to_owned(),
    }
}

/// Reads a response body, refusing more than [`MAX_RESPONSE_BYTES`].
pub(crate) async fn body(
    mut response: reqwest::Response,
    url: &str,
) -> Result<Vec<u8>, RemoteError> {
    let mut out = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if out.len() + chunk.len() > MAX_RESPONSE_BYTES {
                    return Err(RemoteError::Invalid(format!(
                        "the response of {url} is larger than {MAX_RESPONSE_BYTES} bytes"
                    )));
                }
                out.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(out),
            Err(err) => {
                return Err(RemoteError::Http {
                    url: url.to_owned(),
                    detail: describe(&err),
                })
            }
        }
    }
}

/// Introspects a remote schema: the standard query with the configured headers only (no
/// client headers, no session), answered by a schema our validator accepts. Returns its
/// `__schema` object.
pub async fn introspect(entry: &RemoteSchemaEntry) -> Result<Value, RemoteError> {
    let definition = &entry.definition;
    let shown = resolved::shown_url(definition);
    let url = resolved::resolve_url(definition).map_err(RemoteError::Config)?;
    let headers = resolved::resolve_headers(definition).map_err(RemoteError::Config)?;
    let mut request = client()
        .post(&url)
        .timeout(resolved::timeout(definition))
        .json(&json!({"query": INTROSPECTION_QUERY}));
    for (name, value) in &headers {
        request = request.header(name.as_str(), value.as_str());
    }
    // Introspection only reads.
    let response = crate::outgoing::send_read(request)
        .await
        .map_err(|err| RemoteError::Http {
            url: shown.clone(),
            detail: describe(&err),
        })?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err(RemoteError::Status { url: shown, status });
    }
    let bytes = body(response, &shown).await?;
    let answer: Value = serde_json::from_slice(&bytes).map_err(|_| {
        RemoteError::Invalid(format!(
            "introspection query to {shown} did not answer with JSON"
        ))
    })?;
    let Some(schema) = answer.get("data").and_then(|d| d.get("__schema")) else {
        let errors = answer
            .get("errors")
            .and_then(Value::as_array)
            .map(|errors| {
                errors
                    .iter()
                    .filter_map(|e| e.get("message").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .filter(|m| !m.is_empty());
        return Err(RemoteError::Invalid(match errors {
            Some(messages) => format!("introspection query to {shown} failed: {messages}"),
            None => format!("introspection result of {shown} has no data.__schema"),
        }));
    };
    crate::graphql::remote::parse(&entry.name.0, schema).map_err(|e| RemoteError::Invalid(e.0))?;
    Ok(schema.clone())
}

/// Introspects several definitions at once.
pub async fn introspect_all(entries: &[RemoteSchemaEntry]) -> Vec<Fetched> {
    let calls = entries.iter().map(|entry| async move {
        let outcome = introspect(entry).await;
        if let Err(err) = &outcome {
            tracing::warn!(remote = %entry.name, %err, "remote schema introspection failed");
        }
        Fetched {
            name: entry.name.0.clone(),
            hash: definition_hash(&entry.definition),
            outcome: outcome.map(Arc::new).map_err(|err| FetchFailure {
                code: err.code(),
                environment: matches!(&err, RemoteError::Config(e) if e.environment),
                internal: err.internal(),
                message: err.to_string(),
            }),
        }
    });
    futures_util::future::join_all(calls).await
}
