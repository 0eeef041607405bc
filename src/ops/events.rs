//! Event triggers: `create_event_trigger` (with `replace`) and `delete_event_trigger` edit the
//! document; `invoke_event_trigger` and `redeliver_event` act on the event log, so they are
//! parsed here and carried out by the catalog in the request's transaction ([`EventLogOp`]).
//! See `docs/metadata-api.md`, "Event triggers", and `docs/events.md`. Must not do IO, read the
//! clock, or edit anything but the `Metadata` it returns.

use super::{resolved_table, tracked_entry};
use crate::metadata::error::{already_exists, not_exists_in_metadata, Code, MetadataError, Result};
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::{self, Resolution};
use serde::Deserialize;
use serde_json::Value;

/// A metadata operation on event triggers.
#[derive(Debug, Clone)]
pub enum EventTriggerOp {
    /// `create_event_trigger`.
    Create {
        table: QualifiedTable,
        trigger: Box<EventTriggerEntry>,
        /// Replace a trigger of the same name (on the same table), or create it.
        replace: bool,
    },
    /// `delete_event_trigger`.
    Delete { name: String },
}

/// An operation on the event log, run by the catalog.
#[derive(Debug, Clone)]
pub enum EventLogOp {
    /// `invoke_event_trigger`: a `MANUAL` event with the caller's payload.
    Invoke {
        name: String,
        /// `event.data`, verbatim.
        payload: Value,
    },
    /// `redeliver_event`: back to pending, attempts reset.
    Redeliver { event_id: String },
}

#[derive(Deserialize)]
struct Create {
    name: Name,
    table: QualifiedTable,
    #[serde(default)]
    webhook: Option<String>,
    #[serde(default)]
    webhook_from_env: Option<String>,
    #[serde(default)]
    insert: Option<OperationSpec>,
    #[serde(default)]
    update: Option<OperationSpec>,
    #[serde(default)]
    delete: Option<OperationSpec>,
    #[serde(default)]
    enable_manual: bool,
    #[serde(default)]
    retry_conf: RetryConf,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(default)]
    replace: bool,
}

#[derive(Deserialize)]
struct ByName {
    name: String,
}

#[derive(Deserialize)]
struct Invoke {
    name: String,
    payload: Value,
}

#[derive(Deserialize)]
struct Redeliver {
    event_id: String,
}

/// Where the trigger `name` is: its table and position.
pub fn find_trigger<'a>(
    metadata: &'a Metadata,
    name: &str,
) -> Option<(&'a TableEntry, &'a EventTriggerEntry)> {
    metadata.tables.iter().find_map(|entry| {
        entry
            .event_triggers
            .iter()
            .find(|t| t.name.0 == name)
            .map(|t| (&**entry, t))
    })
}

fn not_found(name: &str) -> MetadataError {
    not_exists_in_metadata(
        JsonPath::args().key("name"),
        format!("event trigger with name \"{name}\" not exists"),
    )
}

impl EventTriggerOp {
    /// Parses the trigger operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "create_event_trigger" => {
                let a: Create = parse(args, path)?;
                let trigger = EventTriggerEntry {
                    name: a.name,
                    definition: EventTriggerDefinition {
                        enable_manual: a.enable_manual,
                        insert: a.insert,
                        update: a.update,
                        delete: a.delete,
                    },
                    retry_conf: a.retry_conf,
                    webhook: a.webhook,
                    webhook_from_env: a.webhook_from_env,
                    headers: a.headers,
                };
                super::manage::check_event_trigger(&trigger, path, path)?;
                check_retry_conf(&trigger.retry_conf, &path.key("retry_conf"))?;
                EventTriggerOp::Create {
                    table: a.table,
                    trigger: Box::new(trigger),
                    replace: a.replace,
                }
            }
            "delete_event_trigger" => {
                let a: ByName = parse(args, path)?;
                EventTriggerOp::Delete { name: a.name }
            }
            _ => return Ok(None),
        }))
    }

    pub fn apply(&self, metadata: &Metadata, cache: &Resolution) -> Result<Metadata> {
        let mut next = metadata.clone();
        let args = JsonPath::args();
        match self {
            EventTriggerOp::Create {
                table,
                trigger,
                replace,
            } => {
                tracked_entry(&mut next, table, &args.key("table"))?;
                let name = &trigger.name.0;
                match find_trigger(metadata, name) {
                    Some(_) if !replace => {
                        return Err(already_exists(
                            args,
                            format!("Event trigger with name \"{name}\" already exists"),
                        ))
                    }
                    Some((entry, _)) if entry.table != *table => {
                        return Err(MetadataError::new(
                            Code::NotSupported,
                            args,
                            "cannot replace table or schema for trigger",
                        ))
                    }
                    _ => {}
                }
                resolved_table(cache, table, &args.key("table"))?;
                // The resolver's own check: columns in the table, environment variables set.
                let db_table = cache
                    .resolved
                    .tables
                    .get(table)
                    .map(|t| &t.db)
                    .ok_or_else(|| not_found(name))?;
                resolve::events::check_event_trigger(table, db_table, trigger)
                    .map_err(|e| e.under(&args))?;
                let entry = tracked_entry(&mut next, table, &args.key("table"))?;
                match entry.event_triggers.iter_mut().find(|t| t.name.0 == *name) {
                    Some(slot) => *slot = (**trigger).clone(),
                    None => entry.event_triggers.push((**trigger).clone()),
                }
            }
            EventTriggerOp::Delete { name } => {
                let table = find_trigger(metadata, name)
                    .map(|(entry, _)| entry.table.clone())
                    .ok_or_else(|| not_found(name))?;
                if let Some(entry) = next.table_mut(&table) {
                    entry.event_triggers.retain(|t| t.name.0 != *name);
                }
            }
        }
        Ok(next)
    }
}

/// Whether a string or key anywhere in `value` contains NUL.
fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

fn check_retry_conf(retry: &RetryConf, path: &JsonPath) -> Result<()> {
    for (key, value) in [
        ("interval_sec", retry.interval_sec),
        ("timeout_sec", retry.timeout_sec),
    ] {
        if value == 0 {
            return Err(crate::metadata::error::parse_failed(
                path.key(key),
                format!("{key} must be greater than 0"),
            ));
        }
    }
    Ok(())
}

impl EventLogOp {
    /// Parses the event-log operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "invoke_event_trigger" => {
                let a: Invoke = parse(args, path)?;
                // The log is `jsonb`, which cannot hold `\u0000`: refused here, not by Postgres.
                if holds_nul(&a.payload) {
                    return Err(crate::metadata::error::parse_failed(
                        path.key("payload"),
                        "the payload cannot contain the character \\u0000",
                    ));
                }
                EventLogOp::Invoke {
                    name: a.name,
                    payload: a.payload,
                }
            }
            "redeliver_event" => {
                let a: Redeliver = parse(args, path)?;
                // Postgres text cannot hold NUL, so no event has such an id.
                if a.event_id.contains('\0') {
                    return Err(not_exists_in_metadata(
                        path.key("event_id"),
                        "event not found",
                    ));
                }
                EventLogOp::Redeliver {
                    event_id: a.event_id,
                }
            }
            _ => return Ok(None),
        }))
    }

    /// For `invoke_event_trigger`: the trigger's table, once its rules allow a manual event.
    pub fn manual_target(metadata: &Metadata, name: &str) -> Result<QualifiedTable> {
        let (entry, trigger) = find_trigger(metadata, name).ok_or_else(|| not_found(name))?;
        if !trigger.definition.enable_manual {
            return Err(MetadataError::new(
                Code::NotSupported,
                JsonPath::args().key("name"),
                "manual mode is not enabled for event trigger",
            ));
        }
        Ok(entry.table.clone())
    }
}
