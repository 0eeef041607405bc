//! Forwarding an operation's remote root fields (`docs/remote-schemas.md`, "Execution"): one
//! `POST` per remote with the document the planner printed, the variables it uses and its
//! headers ("Headers"); the remote's answer becomes the `data` to merge, or the errors to
//! return (never partial data).

use super::{body, client, describe, RemoteError};
use crate::resolve::remote::{shown_url, ResolvedRemote};
use crate::session::{forwardable, Session};
use http::header::{HeaderName, HeaderValue, SET_COOKIE};
use http::HeaderMap;
use serde_json::{json, Map, Value};

/// One remote call.
#[derive(Debug)]
pub struct Call<'a> {
    pub remote: &'a ResolvedRemote,
    /// The document with only this remote's root fields.
    pub document: &'a str,
    /// Values of the variables the document declares.
    pub variables: Map<String, Value>,
    /// The client's operation name, if any.
    pub operation_name: Option<&'a str>,
    /// A query: a request that failed to get an answer (but did not time out) is sent once
    /// more. A mutation's never is: the remote may have run it.
    pub read_only: bool,
    /// The caller.
    pub session: &'a Session,
    /// The client's headers (over WebSocket: upgrade headers and `connection_init` headers).
    pub client_headers: &'a HeaderMap,
}

/// A remote's successful answer.
#[derive(Debug, Default)]
pub struct Answered {
    /// Its `data`, keyed by the client's response keys.
    pub data: Map<String, Value>,
    /// Its `Set-Cookie` headers, for the client's HTTP response.
    pub cookies: Vec<HeaderValue>,
}

/// Why a remote call gives no data.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// The remote could not be reached or did not answer as a GraphQL server.
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// The remote answered with GraphQL errors: returned to the client unchanged.
    #[error("the remote schema answered with errors")]
    Errors(Vec<Value>),
}

/// The headers of a call (`docs/remote-schemas.md`, "Headers"): configured, then session
/// variables, then (when `forward_client_headers`) the client's; an earlier source wins for the
/// same name. The client's credential and `X-Svc-*` headers are never forwarded: the session's
/// variables say who the caller is.
pub fn headers(
    remote: &ResolvedRemote,
    session: &Session,
    client_headers: &HeaderMap,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut out: Vec<(HeaderName, HeaderValue)> = Vec::new();
    let mut push = |name: &str, value: HeaderValue| {
        let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else {
            return;
        };
        if !out.iter().any(|(n, _)| *n == name) {
            out.push((name, value));
        }
    };
    for (name, value) in &remote.headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            push(name, value);
        }
    }
    if let Value::Object(variables) = session.to_json() {
        for (name, value) in variables {
            if let Some(Ok(value)) = value.as_str().map(HeaderValue::from_str) {
                push(&name, value);
            }
        }
    }
    if remote.entry.definition.forward_client_headers {
        for (name, value) in client_headers {
            if forwardable(name.as_str()) {
                push(name.as_str(), value.clone());
            }
        }
    }
    out
}

/// Sends one call and reads the answer.
pub async fn send(call: Call<'_>) -> Result<Answered, ForwardError> {
    let shown = shown_url(&call.remote.entry.definition);
    let mut body_json = json!({"query": call.document, "variables": call.variables});
    if let Some(name) = call.operation_name {
        body_json["operationName"] = Value::String(name.to_owned());
    }
    // The current span's trace context, when traces are on, continues the trace at the
    // remote (in place of a client's own `traceparent`).
    let trace = crate::telemetry::outgoing_headers();
    let mut request = client()
        .post(&call.remote.url)
        .timeout(call.remote.timeout)
        .json(&body_json);
    for (name, value) in headers(call.remote, call.session, call.client_headers) {
        if !trace.contains_key(&name) {
            request = request.header(name, value);
        }
    }
    let request = request.headers(trace);
    // A query only reads: sent once more if it got no answer. A mutation never is, since the
    // remote may have run it.
    let response = if call.read_only {
        crate::outgoing::send_read(request).await
    } else {
        request.send().await
    }
    .map_err(|err| RemoteError::Http {
        url: shown.clone(),
        detail: describe(&err),
    })?;
    let status = response.status();
    let cookies: Vec<HeaderValue> = response
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .cloned()
        .collect();
    let bytes = body(response, &shown).await?;
    let answer: Option<Value> = serde_json::from_slice(&bytes).ok();
    let graphql = answer
        .as_ref()
        .filter(|a| a.get("data").is_some() || a.get("errors").is_some());
    let Some(answer) = graphql else {
        return Err(RemoteError::Invalid(if status.is_success() {
            format!("the remote schema at {shown} did not answer with a GraphQL response")
        } else {
            format!(
                "the remote schema at {shown} responded with {} status code",
                status.as_u16()
            )
        })
        .into());
    };
    if let Some(errors) = answer.get("errors").and_then(Value::as_array) {
        if !errors.is_empty() {
            return Err(ForwardError::Errors(errors.clone()));
        }
    }
    match answer.get("data") {
        Some(Value::Object(data)) => Ok(Answered {
            data: data.clone(),
            cookies,
        }),
        _ => Err(RemoteError::Invalid(format!(
            "the remote schema at {shown} answered without data"
        ))
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::types::{Name, RemoteSchemaDefinition, RemoteSchemaEntry};
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::time::Duration;

    fn remote(forward: bool) -> ResolvedRemote {
        ResolvedRemote {
            entry: RemoteSchemaEntry {
                name: Name("geo".to_owned()),
                definition: RemoteSchemaDefinition {
                    url: Some("http://geo/graphql".to_owned()),
                    url_from_env: None,
                    timeout_seconds: None,
                    headers: Vec::new(),
                    forward_client_headers: forward,
                },
                comment: None,
                remote_relationships: Vec::new(),
            },
            url: "http://geo/graphql".to_owned(),
            timeout: Duration::from_secs(60),
            headers: vec![("Authorization".to_owned(), "Basic cfg".to_owned())],
            introspection: Arc::new(Value::Null),
        }
    }

    #[test]
    fn headers_follow_the_spec_order_and_never_leak_credentials() {
        let session = Session {
            role: "reader".to_owned(),
            variables: BTreeMap::from([("x-svc-user-id".to_owned(), "9".to_owned())]),
            backend_only: false,
            expires: None,
        };
        let mut client = HeaderMap::new();
        client.insert("authorization", HeaderValue::from_static("Bearer t1"));
        client.insert("x-svc-admin-secret", HeaderValue::from_static("s3cret"));
        client.insert("x-svc-user-id", HeaderValue::from_static("666"));
        client.insert("x-request-id", HeaderValue::from_static("r1"));
        client.insert("host", HeaderValue::from_static("basalt"));
        let sent: Vec<(String, String)> = headers(&remote(true), &session, &client)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            sent,
            [
                ("authorization", "Basic cfg"),
                ("x-svc-user-id", "9"),
                ("x-svc-role", "reader"),
                ("x-request-id", "r1"),
            ]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
        let without: Vec<String> = headers(&remote(false), &session, &client)
            .into_iter()
            .map(|(n, _)| n.to_string())
            .collect();
        assert_eq!(without, ["authorization", "x-svc-user-id", "x-svc-role"]);
    }
}
