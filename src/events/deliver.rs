//! One delivery attempt (`docs/events.md`, "Delivery"): the webhook request built from the
//! event and its trigger, sent with the trigger's timeout, and what follows from the answer —
//! delivered, retried later (`retry_conf`, `Retry-After`), or in error.

use super::store::{Attempt, Claimed, Next};
use crate::resolve::events::ResolvedEventTrigger;
use serde_json::{json, Value};
use std::time::Duration;

/// Longest response body kept in an invocation log.
const MAX_LOGGED_BODY: usize = 64 * 1024;

/// The webhook's JSON body for `event`.
pub fn body(event: &Claimed, trigger: &ResolvedEventTrigger) -> Value {
    json!({
        "id": event.id,
        "created_at": event.created_at,
        "trigger": {"name": event.trigger},
        "table": {"schema": event.schema, "name": event.table},
        "event": {
            "op": event.payload["op"],
            "data": event.payload["data"],
            "session_variables": event.payload["session_variables"],
            "trace_context": event.payload["trace_context"],
        },
        "delivery_info": {"current_retry": event.tries, "max_retries": trigger.retry.num_retries},
    })
}

/// The W3C `traceparent` continuing the trace the change was made in, when it was recorded.
pub(super) fn traceparent(event: &Claimed) -> Option<String> {
    let context = &event.payload["trace_context"];
    let trace = context["trace_id"].as_str()?;
    let span = context["span_id"].as_str()?;
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    (hex(trace, 32) && hex(span, 16)).then(|| format!("00-{trace}-{span}-01"))
}

/// What a webhook answered to one request, as invocation logs record it.
pub(crate) struct Answered {
    /// The HTTP status, or 1000 without an answer.
    pub status: i32,
    /// `{"type": "webhook_response", "data": {status, headers, body}}`, or
    /// `{"type": "client_error", "data": {message}}`.
    pub response: Value,
    /// A positive `Retry-After` in seconds.
    pub retry_after: Option<u64>,
}

/// Sends `request` (its timeout, `timeout_seconds`, already set) and reads the answer.
pub(crate) async fn send(request: reqwest::RequestBuilder, timeout_seconds: f64) -> Answered {
    let (status, response, retry_after) = match request.send().await {
        Ok(response) => {
            let status = response.status();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|n| *n > 0);
            let headers: Vec<Value> = response
                .headers()
                .iter()
                .map(|(k, v)| json!({"name": k.as_str(), "value": v.to_str().unwrap_or("")}))
                .collect();
            let mut text = response.text().await.unwrap_or_default();
            if text.len() > MAX_LOGGED_BODY {
                let mut cut = MAX_LOGGED_BODY;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
            }
            let logged = json!({"type": "webhook_response", "version": "2",
                "data": {"status": status.as_u16(), "headers": headers, "body": text}});
            (i32::from(status.as_u16()), logged, retry_after)
        }
        Err(e) => {
            let message = if e.is_timeout() {
                format!("the webhook did not answer within {timeout_seconds} s")
            } else {
                format!("the webhook could not be reached: {e}")
            };
            (1000, client_error(&message), None)
        }
    };
    Answered {
        status,
        response,
        retry_after,
    }
}

/// Headers as invocation logs record them: values read from the environment are secrets, so
/// the log names the variable instead.
pub(crate) fn logged_headers(headers: &[crate::resolve::events::ResolvedHeader]) -> Vec<Value> {
    headers
        .iter()
        .map(|h| match &h.from_env {
            Some(var) => json!({"name": h.name, "value_from_env": var}),
            None => json!({"name": h.name, "value": h.value}),
        })
        .collect()
}

/// The logged response of an attempt that got no answer.
pub(crate) fn client_error(message: &str) -> Value {
    json!({"type": "client_error", "version": "2", "data": {"message": message}})
}

/// Sends one attempt and decides what follows.
pub async fn attempt(
    http: &reqwest::Client,
    event: &Claimed,
    trigger: &ResolvedEventTrigger,
) -> Attempt {
    let payload = body(event, trigger);
    let mut request = http
        .post(&trigger.webhook)
        .timeout(Duration::from_secs(u64::from(trigger.retry.timeout_sec)))
        .header("Content-Type", "application/json")
        .header("User-Agent", concat!("basalt/", env!("CARGO_PKG_VERSION")));
    let outgoing = crate::telemetry::outgoing_headers();
    match (outgoing.is_empty(), traceparent(event)) {
        (false, _) => request = request.headers(outgoing),
        (true, Some(parent)) => request = request.header("traceparent", parent),
        (true, None) => {}
    }
    for header in &trigger.headers {
        request = request.header(&header.name, &header.value);
    }
    let logged_request =
        json!({"payload": payload, "headers": logged_headers(&trigger.headers), "version": "2"});
    let timeout = f64::from(trigger.retry.timeout_sec);
    let Answered {
        status,
        response,
        retry_after,
    } = send(request.json(&payload), timeout).await;
    let next = if (200..300).contains(&status) {
        Next::Delivered
    } else if let Some(seconds) = retry_after {
        Next::Retry(seconds as f64)
    } else if u32::try_from(event.tries).unwrap_or(u32::MAX) < trigger.retry.num_retries {
        Next::Retry(f64::from(trigger.retry.interval_sec))
    } else {
        Next::Failed
    };
    Attempt {
        event_id: event.id.clone(),
        trigger: event.trigger.clone(),
        status,
        request: logged_request,
        response,
        next,
    }
}
