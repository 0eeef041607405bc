//! Cron triggers resolved against the process environment (`docs/scheduled-triggers.md`):
//! the schedule parses, the webhook's `{{VAR}}` templates and the headers read from the
//! environment are set. A trigger that passes is deliverable ([`ResolvedCronTrigger`]); one
//! that fails is inconsistent, generates and delivers nothing, and its due events wait.

use super::events::{resolve_headers, ResolvedHeader};
use super::{Inconsistency, Resolution};
use crate::cron::Schedule;
use crate::metadata::error::{Code, MetadataError};
use crate::metadata::ids::ObjectId;
use crate::metadata::path::JsonPath;
use crate::metadata::types::{CronTriggerEntry, Metadata, ScheduledRetryConf};
use serde_json::Value;

/// A deliverable cron trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedCronTrigger {
    pub name: String,
    /// The URL with its templates expanded.
    pub webhook: String,
    pub headers: Vec<ResolvedHeader>,
    pub schedule: Schedule,
    pub retry: ScheduledRetryConf,
    pub payload: Option<Value>,
    pub comment: Option<String>,
}

/// `template` with its `{{VAR}}` templates expanded; `not-found` at `path` for a variable
/// that is not set.
pub fn webhook(template: &str, path: &JsonPath) -> Result<String, MetadataError> {
    super::remote::expand(template).map_err(|var| {
        MetadataError::new(
            Code::NotFound,
            path.clone(),
            format!("environment variable '{var}' not set"),
        )
    })
}

/// The schedule of `entry`, or `parse-failed` at `$.schedule`.
pub fn schedule(entry: &CronTriggerEntry) -> Result<Schedule, MetadataError> {
    Schedule::parse(&entry.schedule).map_err(|e| {
        MetadataError::new(
            Code::ParseFailed,
            JsonPath::root().key("schedule"),
            e.to_string(),
        )
    })
}

/// The trigger as the workers deliver it (paths relative to the trigger's arguments).
pub fn check_cron_trigger(entry: &CronTriggerEntry) -> Result<ResolvedCronTrigger, MetadataError> {
    let root = JsonPath::root();
    Ok(ResolvedCronTrigger {
        name: entry.name.clone(),
        schedule: schedule(entry)?,
        webhook: webhook(&entry.webhook, &root.key("webhook"))?,
        headers: resolve_headers(&entry.headers, &root.key("headers"))?,
        retry: entry.retry_conf,
        payload: entry.payload.clone(),
        comment: entry.comment.clone(),
    })
}

/// Resolves every cron trigger; the ones that fail are reported inconsistent.
pub(super) fn resolve_all(metadata: &Metadata, cache: &mut Resolution) {
    for entry in &metadata.cron_triggers {
        match check_cron_trigger(entry) {
            Ok(resolved) => {
                (cache.resolved.cron_triggers).insert(resolved.name.clone(), resolved);
            }
            Err(err) => cache.inconsistencies.push(Inconsistency {
                object: ObjectId::CronTrigger(entry.name.clone()),
                kind: "cron_trigger",
                definition: serde_json::to_value(entry).unwrap_or(Value::Null),
                reason: err.message,
                conflict: false,
            }),
        }
    }
}
