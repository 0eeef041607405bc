//! One call to an action's handler (`docs/actions.md`, "Handler protocol"): the request
//! (`action`, `input`, `session_variables`, `request_query`; configured headers over the
//! client's forwarded ones), the timeout, and the reading of the answer — a validated output,
//! or the error the client (or the action log) gets.

use super::output;
use crate::remote::{client, describe};
use crate::resolve::actions::{ResolvedAction, ResolvedCustomTypes};
use http::header::{HeaderName, HeaderValue};
use serde_json::{json, Map, Value};

/// Why an action call gives no output: the GraphQL error `docs/actions.md`, "Answers", gives
/// for each way a call fails.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ActionError {
    pub message: String,
    /// `extensions` as the client sees them: the handler's own, verbatim, or
    /// `{"path": "$", "code": …}`.
    pub extensions: Value,
    /// The exchange, for admins (not when the handler chose the error).
    pub internal: Option<Value>,
}

impl ActionError {
    /// An error Basalt words, with its code.
    fn basalt(code: &str, message: impl Into<String>, internal: Option<Value>) -> Self {
        ActionError {
            message: message.into(),
            extensions: json!({"path": "$", "code": code}),
            internal,
        }
    }

    /// The error's code (`extensions.code`, `unexpected` when the handler gave none).
    pub fn code(&self) -> String {
        self.extensions
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or("unexpected")
            .to_owned()
    }

    /// As the action log stores it: the metadata error shape.
    pub fn to_stored(&self) -> Value {
        json!({"path": "$", "error": self.message, "code": self.code()})
    }
}

/// What a call needs.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub action: &'a ResolvedAction,
    /// The arguments, as the handler receives them.
    pub input: &'a Value,
    /// The caller's session variables (lower-case keys, `x-svc-role` included).
    pub session: &'a Value,
    /// The operation's document.
    pub document: &'a str,
    /// The client's headers to forward (already filtered; empty unless the action forwards
    /// them).
    pub forwarded: &'a Map<String, Value>,
}

impl Call<'_> {
    /// The request body.
    fn body(&self) -> Value {
        json!({
            "action": {"name": self.action.name()},
            "input": self.input,
            "session_variables": self.session,
            "request_query": self.document,
        })
    }

    /// The request headers: configured ones first, then the forwarded client headers they do
    /// not override.
    fn headers(&self) -> Vec<(HeaderName, HeaderValue)> {
        let mut out: Vec<(HeaderName, HeaderValue)> = Vec::new();
        let configured = self
            .action
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()));
        let forwarded = self
            .forwarded
            .iter()
            .filter_map(|(n, v)| Some((n.as_str(), v.as_str()?)));
        for (name, value) in configured.chain(forwarded) {
            let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) else {
                continue;
            };
            if !out.iter().any(|(n, _)| *n == name) {
                out.push((name, value));
            }
        }
        out
    }

    /// What admins see of the request: the URL as configured (templates unexpanded), header
    /// names only, and the body.
    fn shown_request(&self) -> Value {
        let names: Vec<Value> = self
            .headers()
            .iter()
            .map(|(n, _)| json!({"name": n.as_str()}))
            .collect();
        json!({
            "url": self.action.entry.definition.handler,
            "headers": names,
            "body": self.body(),
        })
    }
}

/// The client headers an action with `forward_client_headers` passes on, as a JSON object
/// (what the action log keeps for an asynchronous call); empty otherwise.
pub fn forwarded_headers(action: &ResolvedAction, headers: &http::HeaderMap) -> Map<String, Value> {
    if !action.entry.definition.forward_client_headers {
        return Map::new();
    }
    headers
        .iter()
        .filter(|(name, _)| crate::session::forwardable(name.as_str()))
        .filter_map(|(name, value)| {
            Some((
                name.as_str().to_owned(),
                Value::String(value.to_str().ok()?.to_owned()),
            ))
        })
        .collect()
}

/// Calls the handler and returns its output, validated against the action's output type.
pub async fn call(call: Call<'_>, custom: &ResolvedCustomTypes) -> Result<Value, ActionError> {
    let mut request = client()
        .post(&call.action.handler)
        .timeout(call.action.timeout)
        .json(&call.body());
    let trace = crate::telemetry::outgoing_headers();
    for (name, value) in call.headers() {
        if !trace.contains_key(&name) {
            request = request.header(name, value);
        }
    }
    request = request.headers(trace);
    let http_failure = |detail: String| {
        ActionError::basalt(
            "unexpected",
            "http exception when calling webhook",
            Some(json!({
                "error": format!("http exception when calling webhook: {detail}"),
                "request": call.shown_request(),
            })),
        )
    };
    let response = request
        .send()
        .await
        .map_err(|err| http_failure(describe(&err)))?;
    let status = response.status();
    let response_headers: Vec<Value> = response
        .headers()
        .iter()
        .map(|(n, v)| json!({"name": n.as_str(), "value": v.to_str().unwrap_or_default()}))
        .collect();
    let bytes = crate::remote::body(response, &call.action.entry.definition.handler)
        .await
        .map_err(|err| http_failure(err.to_string()))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let internal = |error: &str| {
        json!({
            "error": error,
            "request": call.shown_request(),
            "response": {"status": status.as_u16(), "headers": response_headers, "body": text},
        })
    };
    let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
    if status.is_success() {
        let Some(body) = parsed.filter(|v| v.is_object() || v.is_array()) else {
            return Err(ActionError::basalt(
                "parse-failed",
                "expecting object or array of objects for action webhook response",
                Some(internal("unexpected response")),
            ));
        };
        return match output::check(&body, &call.action.entry.definition.output_type, custom) {
            Ok(()) => Ok(body),
            Err(error) => Err(ActionError::basalt(
                "unexpected",
                error.to_string(),
                Some(internal("unexpected response")),
            )),
        };
    }
    if status.is_client_error() {
        return Err(handler_error(parsed.as_ref()).unwrap_or_else(|| {
            ActionError::basalt(
                "unexpected",
                "the action handler answered with an error that has no \"message\"",
                Some(internal("unexpected response")),
            )
        }));
    }
    Err(ActionError::basalt(
        "unexpected",
        "internal error",
        Some(json!({
            "error": "unexpected response",
            "request": call.shown_request(),
            "response": {"status": status.as_u16(), "headers": response_headers, "body": text},
            "webhook_response": parsed.unwrap_or(Value::String(text.clone())),
        })),
    ))
}

/// The GraphQL error a handler's 4xx error object makes (`docs/actions.md`, "Answers"), if it
/// has a `message`.
fn handler_error(body: Option<&Value>) -> Option<ActionError> {
    let object = body?.as_object()?;
    let message = match object.get("message")? {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if let Some(extensions) = object.get("extensions").filter(|e| e.is_object()) {
        return Some(ActionError {
            message,
            extensions: extensions.clone(),
            internal: None,
        });
    }
    let code = object
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or("unexpected");
    Some(ActionError {
        message,
        extensions: json!({"path": "$", "code": code}),
        internal: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_errors_follow_the_spec_table() {
        let verbatim = handler_error(Some(&json!({
            "message": "member 7 is already archived",
            "extensions": {"code": "already-archived", "member": 7},
            "code": "ignored"
        })))
        .unwrap();
        assert_eq!(verbatim.message, "member 7 is already archived");
        assert_eq!(
            verbatim.extensions,
            json!({"code": "already-archived", "member": 7})
        );
        assert_eq!(
            verbatim.to_stored(),
            json!({"path": "$", "error": "member 7 is already archived", "code": "already-archived"})
        );
        let coded = handler_error(Some(&json!({"message": "no", "code": "nope"}))).unwrap();
        assert_eq!(coded.extensions, json!({"path": "$", "code": "nope"}));
        let bare = handler_error(Some(&json!({"message": "no"}))).unwrap();
        assert_eq!(bare.extensions, json!({"path": "$", "code": "unexpected"}));
        assert_eq!(handler_error(Some(&json!({"error": "no"}))), None);
        assert_eq!(handler_error(Some(&json!(["no"]))), None);
        assert_eq!(handler_error(None), None);
    }
}
