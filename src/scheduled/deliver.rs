//! One attempt at a scheduled event (`docs/scheduled-triggers.md`, "The request"): the body,
//! the webhook and headers (a cron event's from its resolved trigger, a one-off event's read
//! from its own row, the environment read now), and what follows from the answer.

use super::store::{Claimed, Next, Outcome};
use crate::catalog::scheduled::rfc3339;
use crate::events::deliver::{client_error, logged_headers, send, Answered};
use crate::metadata::path::JsonPath;
use crate::metadata::types::{Header, ScheduledRetryConf};
use crate::resolve::events::ResolvedHeader;
use crate::resolve::scheduled::ResolvedCronTrigger;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// The retry settings of `event` and its tolerance in seconds.
pub(super) fn retry_of(
    event: &Claimed,
    triggers: &BTreeMap<String, ResolvedCronTrigger>,
) -> (ScheduledRetryConf, f64) {
    let retry = match (&event.trigger, &event.definition) {
        (Some(name), _) => triggers.get(name).map(|t| t.retry).unwrap_or_default(),
        (None, Some(d)) => serde_json::from_value(d.retry_conf.clone()).unwrap_or_default(),
        (None, None) => ScheduledRetryConf::default(),
    };
    (retry, retry.tolerance_seconds)
}

/// The outcome of an event picked up past its tolerance: not sent, no log, tries unchanged.
pub(super) fn dead(event: &Claimed) -> Outcome {
    Outcome {
        id: event.id.clone(),
        table: event.table,
        lease: event.lease.clone(),
        trigger: event.trigger.clone(),
        next: Next::Dead,
        status: 0,
        request: Value::Null,
        response: Value::Null,
    }
}

/// The webhook's JSON body for `event`.
fn body(event: &Claimed, trigger: Option<&ResolvedCronTrigger>) -> Value {
    let mut body = Map::new();
    body.insert("id".into(), json!(event.id));
    if let Some(t) = trigger {
        body.insert("name".into(), json!(t.name));
    }
    body.insert(
        "scheduled_time".into(),
        json!(rfc3339(event.scheduled_time)),
    );
    let (payload, comment) = match (trigger, &event.definition) {
        (Some(t), _) => (t.payload.clone(), t.comment.clone()),
        (None, Some(d)) => (d.payload.clone(), d.comment.clone()),
        (None, None) => (None, None),
    };
    body.insert("payload".into(), payload.unwrap_or(Value::Null));
    if let Some(comment) = comment {
        body.insert("comment".into(), json!(comment));
    }
    if let Some(d) = &event.definition {
        let created = d.created_at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
        body.insert("created_at".into(), json!(created));
    }
    Value::Object(body)
}

/// Where a one-off event goes: its webhook and headers with the environment read now.
fn one_off_target(event: &Claimed) -> Result<(String, Vec<ResolvedHeader>), String> {
    let Some(d) = &event.definition else {
        return Err("the event has no definition".to_owned());
    };
    let template = d.webhook.as_str().unwrap_or_default();
    let url =
        crate::resolve::scheduled::webhook(template, &JsonPath::root()).map_err(|e| e.message)?;
    let headers: Vec<Header> = serde_json::from_value(d.headers.clone()).unwrap_or_default();
    let headers = crate::resolve::events::resolve_headers(&headers, &JsonPath::root())
        .map_err(|e| e.message)?;
    Ok((url, headers))
}

/// Sends one attempt and decides what follows. A cron event whose trigger is not served (it
/// went inconsistent since the claim) fails the attempt.
pub(super) async fn attempt(
    http: &reqwest::Client,
    event: &Claimed,
    trigger: Option<&ResolvedCronTrigger>,
    retry: &ScheduledRetryConf,
) -> Outcome {
    let payload = body(event, trigger);
    let target = match (trigger, &event.trigger) {
        (Some(t), _) => Ok((t.webhook.clone(), t.headers.clone())),
        (None, Some(name)) => Err(format!("cron trigger \"{name}\" is not served")),
        (None, None) => one_off_target(event),
    };
    let (answered, headers) = match target {
        Ok((url, headers)) => {
            let mut request = http
                .post(url)
                .timeout(Duration::from_secs_f64(retry.timeout_seconds.max(0.001)))
                .header("Content-Type", "application/json")
                .header("User-Agent", concat!("basalt/", env!("CARGO_PKG_VERSION")));
            for h in &headers {
                request = request.header(&h.name, &h.value);
            }
            let answered = send(request.json(&payload), retry.timeout_seconds).await;
            (answered, logged_headers(&headers))
        }
        Err(message) => {
            let answered = Answered {
                status: 1000,
                response: client_error(&message),
                retry_after: None,
            };
            (answered, Vec::new())
        }
    };
    let next = if (200..300).contains(&answered.status) {
        Next::Delivered
    } else if let Some(seconds) = answered.retry_after {
        Next::Retry((seconds as f64).min(crate::metadata::types::MAX_SECONDS))
    } else if u32::try_from(event.tries).unwrap_or(u32::MAX) < retry.num_retries {
        Next::Retry(retry.retry_interval_seconds)
    } else {
        Next::Failed
    };
    Outcome {
        id: event.id.clone(),
        table: event.table,
        lease: event.lease.clone(),
        trigger: event.trigger.clone(),
        next,
        status: answered.status,
        request: json!({"payload": payload, "headers": headers, "version": "2"}),
        response: answered.response,
    }
}
