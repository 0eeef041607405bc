//! Event triggers resolved against the database and the process environment: the columns
//! they name exist, the webhook URL and header values they read from the environment are set,
//! and their capture triggers are installed in Postgres as Basalt last wrote them. A trigger
//! that passes is deliverable ([`ResolvedEventTrigger`]); one that fails is inconsistent and
//! its events wait. The environment is read here because it is configuration: what the
//! process was started with, the same for every call.

use super::Inconsistency;
use crate::capture::{captures, Capture};
use crate::db_model::{DbModel, DbTable};
use crate::metadata::error::{not_exists_in_database, Code, MetadataError};
use crate::metadata::ids::{event_trigger_definition, ObjectId};
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;

/// A header sent with each delivery, its value resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedHeader {
    pub name: String,
    pub value: String,
    /// The environment variable it came from, if any (its value is then a secret: the
    /// invocation log records the variable's name instead).
    pub from_env: Option<String>,
}

/// A deliverable event trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedEventTrigger {
    pub name: String,
    pub table: QualifiedTable,
    /// Webhook URL (from the environment with `webhook_from_env`).
    pub webhook: String,
    pub headers: Vec<ResolvedHeader>,
    pub retry: RetryConf,
    /// Whether `invoke_event_trigger` may fire it.
    pub enable_manual: bool,
}

fn env(name: &str, path: JsonPath) -> Result<String, MetadataError> {
    std::env::var(name).map_err(|_| {
        MetadataError::new(
            Code::NotFound,
            path,
            format!("environment variable '{name}' not set"),
        )
    })
}

/// The columns an operation spec names that `table` lacks, as a `not-exists` error.
fn check_columns(
    table: &DbTable,
    spec: &OperationSpec,
    path: &JsonPath,
) -> Result<(), MetadataError> {
    let lists = [
        (Some(&spec.columns), "columns"),
        (spec.payload.as_ref(), "payload"),
    ];
    for (columns, key) in lists {
        if let Some(Columns::List(list)) = columns {
            for (i, column) in list.iter().enumerate() {
                if table.column(column).is_none() {
                    return Err(not_exists_in_database(
                        path.key(key).index(i),
                        format!("column \"{column}\" does not exist"),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Whether the trigger's capture can be installed: its columns exist. Errors carry paths
/// relative to the trigger's arguments (`insert.columns[0]` …).
pub fn check_capture(table: &DbTable, trigger: &EventTriggerEntry) -> Result<(), MetadataError> {
    // Captures are `AFTER … FOR EACH ROW` triggers, which Postgres allows on tables (plain,
    // partitioned, foreign) only: on a view the DDL failed inside the request (a 500).
    if !matches!(table.kind.as_str(), "r" | "p" | "f") {
        return Err(MetadataError::new(
            Code::NotSupported,
            JsonPath::root().key("table"),
            format!(
                "event triggers capture changes of tables only; \"{}\" is not a table",
                table.name
            ),
        ));
    }
    let def = &trigger.definition;
    for (key, spec) in [
        ("insert", &def.insert),
        ("update", &def.update),
        ("delete", &def.delete),
    ] {
        if let Some(spec) = spec {
            check_columns(table, spec, &JsonPath::root().key(key))?;
        }
    }
    Ok(())
}

/// The trigger as the workers deliver it: columns checked, environment read.
pub fn check_event_trigger(
    table: &QualifiedTable,
    db_table: &DbTable,
    trigger: &EventTriggerEntry,
) -> Result<ResolvedEventTrigger, MetadataError> {
    check_capture(db_table, trigger)?;
    let root = JsonPath::root();
    let webhook = match (&trigger.webhook, &trigger.webhook_from_env) {
        (Some(url), _) => url.clone(),
        (None, Some(var)) => env(var, root.key("webhook_from_env"))?,
        (None, None) => {
            return Err(MetadataError::new(
                Code::ParseFailed,
                root,
                "must provide webhook or webhook_from_env",
            ))
        }
    };
    let headers = resolve_headers(&trigger.headers, &root.key("headers"))?;
    Ok(ResolvedEventTrigger {
        name: trigger.name.0.clone(),
        table: table.clone(),
        webhook,
        headers,
        retry: trigger.retry_conf.clone(),
        enable_manual: trigger.definition.enable_manual,
    })
}

/// Webhook headers with their values, those from the environment read (`path`: where the
/// list is, for the error of a variable that is not set).
pub fn resolve_headers(
    headers: &[Header],
    path: &JsonPath,
) -> Result<Vec<ResolvedHeader>, MetadataError> {
    let mut out = Vec::with_capacity(headers.len());
    for (i, header) in headers.iter().enumerate() {
        out.push(match header {
            Header::Value { name, value } => ResolvedHeader {
                name: name.clone(),
                value: value.clone(),
                from_env: None,
            },
            Header::FromEnv {
                name,
                value_from_env,
            } => ResolvedHeader {
                name: name.clone(),
                value: env(value_from_env, path.index(i))?,
                from_env: Some(value_from_env.clone()),
            },
        });
    }
    Ok(out)
}

/// The capture triggers the document needs: those of every trigger whose table exists and
/// whose columns do (a trigger whose environment is incomplete still captures; its events
/// wait for delivery).
pub fn desired_captures(metadata: &Metadata, db: &DbModel) -> Vec<Capture> {
    let mut out = Vec::new();
    for entry in &metadata.tables {
        let Some(db_table) = db.table(&entry.table.schema, &entry.table.name) else {
            continue;
        };
        for trigger in &entry.event_triggers {
            if check_capture(db_table, trigger).is_ok() {
                out.extend(captures(&entry.table, trigger));
            }
        }
    }
    out
}

/// The capture triggers of `trigger` missing from Postgres or different from what Basalt
/// would install now (dropped or edited behind its back), by name.
pub fn missing_captures(
    table: &QualifiedTable,
    trigger: &EventTriggerEntry,
    db: &DbModel,
) -> Vec<String> {
    captures(table, trigger)
        .into_iter()
        .filter(|c| {
            !db.capture_triggers.iter().any(|t| {
                t.name == c.name
                    && t.schema == table.schema
                    && t.table == table.name
                    && t.hash.as_deref() == Some(c.hash.as_str())
            })
        })
        .map(|c| c.name)
        .collect()
}

/// Event triggers whose capture triggers were dropped or changed in Postgres behind Basalt's
/// back: the row changes they should record are being missed. Reported with the other
/// inconsistencies; any metadata write, `reload_metadata` included, installs them again.
pub fn capture_drift(metadata: &Metadata, db: &DbModel) -> Vec<Inconsistency> {
    let mut out = Vec::new();
    for entry in &metadata.tables {
        let Some(db_table) = db.table(&entry.table.schema, &entry.table.name) else {
            continue;
        };
        for trigger in &entry.event_triggers {
            if check_capture(db_table, trigger).is_err() {
                continue; // inconsistent for its columns already
            }
            let missing = missing_captures(&entry.table, trigger, db);
            if missing.is_empty() {
                continue;
            }
            out.push(Inconsistency {
                object: ObjectId::event_trigger(&entry.table, trigger.name.0.clone()),
                kind: "event_trigger",
                definition: event_trigger_definition(&entry.table, trigger),
                reason: format!(
                    "the capture trigger {} is missing from Postgres or was changed there; \
                     reload_metadata installs it again",
                    missing.join(", ")
                ),
                conflict: false,
            });
        }
    }
    out
}
