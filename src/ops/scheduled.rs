//! Scheduled triggers (`docs/scheduled-triggers.md`): the cron trigger operations, which
//! change metadata (`create_cron_trigger`, `delete_cron_trigger`, and `get_cron_triggers`,
//! which reads it), and the operations on scheduled events, which are data in the catalog,
//! not metadata (`create_scheduled_event`, `delete_scheduled_event`, `get_scheduled_events`,
//! `get_scheduled_event_invocations`; run by the transaction layer). Must not do IO.

use crate::metadata::error::{parse_failed, Code, MetadataError, Result};
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// An operation on cron triggers.
#[derive(Debug, Clone)]
pub enum CronTriggerOp {
    Create {
        entry: Box<CronTriggerEntry>,
        replace: bool,
    },
    Delete {
        name: String,
    },
    /// `get_cron_triggers`.
    Get,
}

/// Which table a scheduled event is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    OneOff,
    Cron,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::OneOff => "one_off",
            EventKind::Cron => "cron",
        }
    }
}

/// The states of a scheduled event.
pub const STATUSES: [&str; 5] = ["scheduled", "locked", "delivered", "error", "dead"];

/// A one-off event to schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// The URL, `{{VAR}}` templates unexpanded.
    pub webhook: String,
    /// RFC 3339, as Postgres reads it.
    pub schedule_at: String,
    pub payload: Option<Value>,
    pub headers: Vec<Header>,
    pub retry_conf: ScheduledRetryConf,
    pub comment: Option<String>,
}

/// Which events or invocations a read lists.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    pub kind: EventKind,
    /// The cron trigger (required for cron events).
    pub trigger: Option<String>,
    pub event_id: Option<String>,
    pub statuses: Vec<String>,
    pub limit: Option<i64>,
    pub offset: i64,
    pub count: bool,
}

/// An operation on scheduled events.
#[derive(Debug, Clone)]
pub enum ScheduledEventOp {
    Create(Box<NewEvent>),
    Delete {
        kind: EventKind,
        event_id: String,
    },
    /// `get_scheduled_events`.
    List(Listing),
    /// `get_scheduled_event_invocations`.
    Invocations(Listing),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateCron {
    name: String,
    webhook: String,
    schedule: String,
    #[serde(default)]
    payload: Option<Value>,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(default)]
    retry_conf: ScheduledRetryConf,
    include_in_metadata: bool,
    #[serde(default)]
    comment: Option<String>,
    #[serde(default)]
    replace: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ByName {
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateEvent {
    webhook: String,
    schedule_at: String,
    #[serde(default)]
    payload: Option<Value>,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(default)]
    retry_conf: ScheduledRetryConf,
    #[serde(default)]
    comment: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteEvent {
    #[serde(rename = "type")]
    kind: EventKind,
    event_id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(rename = "type")]
    kind: EventKind,
    #[serde(default)]
    trigger_name: Option<String>,
    #[serde(default)]
    event_id: Option<String>,
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    offset: Option<u32>,
    #[serde(default)]
    status: Vec<String>,
    #[serde(default)]
    get_rows_count: bool,
}

/// Transforms are not part of scheduled triggers here: refused before anything else.
fn refuse_transforms(args: &Value, path: &JsonPath) -> Result<()> {
    let has = |k: &str| args.get(k).is_some_and(|v| !v.is_null());
    if has("request_transform") || has("response_transform") {
        return Err(MetadataError::new(
            Code::NotSupported,
            path.clone(),
            "request and response transforms are not supported",
        ));
    }
    Ok(())
}

/// `args` without the transform keys (already refused when set), for the strict parsers.
fn without_transforms(args: &Value) -> Value {
    let mut args = args.clone();
    if let Some(map) = args.as_object_mut() {
        map.remove("request_transform");
        map.remove("response_transform");
    }
    args
}

/// A listing's arguments checked: a cron listing names its trigger, statuses are known.
fn listing(args: &Value, path: &JsonPath, invocations: bool) -> Result<Listing> {
    let a: ListArgs = parse(args, path)?;
    let by_event = invocations && a.event_id.is_some();
    if a.kind == EventKind::Cron && a.trigger_name.is_none() && !by_event {
        return Err(parse_failed(
            path.clone(),
            "the key 'trigger_name' was not present",
        ));
    }
    if invocations && !a.status.is_empty() {
        return Err(parse_failed(
            path.key("status"),
            "get_scheduled_event_invocations does not take a status",
        ));
    }
    if !invocations && a.event_id.is_some() {
        return Err(parse_failed(
            path.key("event_id"),
            "get_scheduled_events does not take an event_id",
        ));
    }
    for (i, s) in a.status.iter().enumerate() {
        if !STATUSES.contains(&s.as_str()) {
            return Err(parse_failed(
                path.key("status").index(i),
                format!("unexpected status: {s}"),
            ));
        }
    }
    Ok(Listing {
        kind: a.kind,
        trigger: a.trigger_name,
        event_id: a.event_id,
        statuses: a.status,
        limit: a.limit.map(i64::from),
        offset: a.offset.map(i64::from).unwrap_or(0),
        count: a.get_rows_count,
    })
}

/// `cron trigger with name: <n> does not exist`.
pub fn trigger_missing(name: &str) -> MetadataError {
    MetadataError::new(
        Code::NotExists,
        JsonPath::args(),
        format!("cron trigger with name: {name} does not exist"),
    )
}

impl CronTriggerOp {
    /// Parses the cron trigger operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "create_cron_trigger" => {
                refuse_transforms(args, path)?;
                let a: CreateCron = parse(&without_transforms(args), path)?;
                let entry = CronTriggerEntry {
                    name: a.name,
                    webhook: a.webhook,
                    schedule: a.schedule,
                    payload: a.payload,
                    headers: a.headers,
                    retry_conf: a.retry_conf,
                    include_in_metadata: a.include_in_metadata,
                    comment: a.comment,
                };
                check_entry(&entry, path)?;
                CronTriggerOp::Create {
                    entry: Box::new(entry),
                    replace: a.replace,
                }
            }
            "delete_cron_trigger" => CronTriggerOp::Delete {
                name: parse::<ByName>(args, path)?.name,
            },
            "get_cron_triggers" => {
                let empty = args.as_object().is_none_or(Map::is_empty) || args.is_null();
                if !empty {
                    return Err(parse_failed(
                        path.clone(),
                        "get_cron_triggers takes no arguments",
                    ));
                }
                CronTriggerOp::Get
            }
            _ => return Ok(None),
        }))
    }

    pub fn is_read_only(&self) -> bool {
        matches!(self, CronTriggerOp::Get)
    }

    /// The new document, or the answer of `get_cron_triggers`.
    pub fn apply(&self, metadata: &Metadata) -> Result<(Metadata, Option<Value>)> {
        let args = JsonPath::args();
        let mut next = metadata.clone();
        match self {
            CronTriggerOp::Create { entry, replace } => {
                // Environment and schedule, as the resolver reads them.
                crate::resolve::scheduled::check_cron_trigger(entry).map_err(|e| e.under(&args))?;
                let at = next.cron_triggers.iter().position(|t| t.name == entry.name);
                match (at, replace) {
                    (Some(_), false) => {
                        return Err(MetadataError::new(
                            Code::AlreadyExists,
                            args,
                            format!("cron trigger with name: {} already exists", entry.name),
                        ))
                    }
                    (None, true) => return Err(trigger_missing(&entry.name)),
                    (Some(i), true) => next.cron_triggers[i] = (**entry).clone(),
                    (None, false) => next.cron_triggers.push((**entry).clone()),
                }
            }
            CronTriggerOp::Delete { name } => {
                let before = next.cron_triggers.len();
                next.cron_triggers.retain(|t| &t.name != name);
                if next.cron_triggers.len() == before {
                    return Err(trigger_missing(name));
                }
            }
            CronTriggerOp::Get => {
                let list: Vec<Value> = metadata.cron_triggers.iter().map(listed).collect();
                return Ok((next, Some(json!({"cron_triggers": list}))));
            }
        }
        Ok((next, None))
    }
}

/// A trigger as `get_cron_triggers` lists it: `headers` and `retry_conf` always, defaults
/// filled.
fn listed(t: &CronTriggerEntry) -> Value {
    let mut v = serde_json::to_value(t).unwrap_or(Value::Null);
    if let Some(map) = v.as_object_mut() {
        map.insert("headers".into(), json!(t.headers));
        map.insert("retry_conf".into(), json!(t.retry_conf));
    }
    v
}

/// The rules of a trigger that need nothing else (also checked on import): a name, and a
/// schedule that parses.
pub fn check_entry(entry: &CronTriggerEntry, path: &JsonPath) -> Result<()> {
    if entry.name.is_empty() {
        return Err(parse_failed(
            path.key("name"),
            "a cron trigger's name cannot be empty",
        ));
    }
    crate::resolve::scheduled::schedule(entry)
        .map(|_| ())
        .map_err(|e| e.under(path))
}

impl ScheduledEventOp {
    /// Parses the scheduled event operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "create_scheduled_event" => {
                refuse_transforms(args, path)?;
                let a: CreateEvent = parse(&without_transforms(args), path)?;
                let schedule_at = timestamp(&a.schedule_at).ok_or_else(|| {
                    parse_failed(
                        path.key("schedule_at"),
                        format!("\"{}\" is not an ISO-8601 timestamp", a.schedule_at),
                    )
                })?;
                ScheduledEventOp::Create(Box::new(NewEvent {
                    webhook: a.webhook,
                    schedule_at,
                    payload: a.payload,
                    headers: a.headers,
                    retry_conf: a.retry_conf,
                    comment: a.comment,
                }))
            }
            "delete_scheduled_event" => {
                let a: DeleteEvent = parse(args, path)?;
                ScheduledEventOp::Delete {
                    kind: a.kind,
                    event_id: a.event_id,
                }
            }
            "get_scheduled_events" => ScheduledEventOp::List(listing(args, path, false)?),
            "get_scheduled_event_invocations" => {
                ScheduledEventOp::Invocations(listing(args, path, true)?)
            }
            _ => return Ok(None),
        }))
    }

    pub fn is_read_only(&self) -> bool {
        matches!(
            self,
            ScheduledEventOp::List(_) | ScheduledEventOp::Invocations(_)
        )
    }
}

/// An ISO-8601 timestamp as RFC 3339 in UTC: `T` or a space between date and time, a zone of
/// `Z`, `±hh:mm` or `±hhmm`, none meaning UTC.
pub fn timestamp(text: &str) -> Option<String> {
    use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
    let text = text.trim();
    let normal = text.replacen(' ', "T", 1);
    let parsed = DateTime::parse_from_rfc3339(&normal)
        .map(|t| t.with_timezone(&Utc))
        .or_else(|_| {
            DateTime::parse_from_str(&normal, "%Y-%m-%dT%H:%M:%S%.f%z")
                .map(|t| t.with_timezone(&Utc))
        })
        .or_else(|_| {
            NaiveDateTime::parse_from_str(&normal, "%Y-%m-%dT%H:%M:%S%.f").map(|t| t.and_utc())
        })
        .or_else(|_| NaiveDateTime::parse_from_str(&normal, "%Y-%m-%dT%H:%M").map(|t| t.and_utc()))
        .ok()?;
    Some(parsed.to_rfc3339_opts(SecondsFormat::AutoSi, true))
}

#[cfg(test)]
mod tests {
    use super::timestamp;

    #[test]
    fn timestamps_are_read_in_every_written_form() {
        for (text, expected) in [
            ("2026-03-05T22:00:00Z", "2026-03-05T22:00:00Z"),
            ("2026-03-05 22:00:00", "2026-03-05T22:00:00Z"),
            ("2026-03-05T23:30:00+01:30", "2026-03-05T22:00:00Z"),
            ("2026-03-05T20:00:00-0200", "2026-03-05T22:00:00Z"),
            ("2026-03-05T22:00:00.250Z", "2026-03-05T22:00:00.250Z"),
        ] {
            assert_eq!(timestamp(text).as_deref(), Some(expected), "{text}");
        }
        for bad in ["tomorrow", "2026-13-01T00:00:00Z", "2026-03-05", ""] {
            assert_eq!(timestamp(bad), None, "{bad}");
        }
    }
}
