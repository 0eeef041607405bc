//! Event triggers in the metadata transaction (`docs/events.md`): the capture triggers kept in
//! step with the document after every write, the events of triggers that go away archived,
//! and the two operations on the event log (`invoke_event_trigger`, `redeliver_event`).

use super::draft::Draft;
use super::TransactionError;
use crate::capture;
use crate::catalog::events as log;
use crate::db_model::CaptureTrigger;
use crate::metadata::error::{Code, MetadataError};
use crate::metadata::path::JsonPath;
use crate::metadata::types::Metadata;
use crate::ops::answer::{Answer, EventCreated};
use crate::ops::events::EventLogOp;
use serde_json::json;
use std::collections::BTreeSet;
use tokio_postgres::Transaction;

/// After the operations of a write: installs the capture triggers the new document needs,
/// replaces stale ones, drops the rest, and archives the undelivered events of triggers that
/// are gone (`before`: the document the transaction found). The draft's database model then
/// describes the captures as they now are. DDL runs only for what differs, so a write that
/// does not touch triggers costs one comparison in memory.
pub(super) async fn sync(
    tx: &Transaction<'_>,
    before: &Metadata,
    draft: &mut Draft,
) -> Result<(), TransactionError> {
    let desired = crate::resolve::events::desired_captures(&draft.metadata, &draft.db);
    let existing = &draft.db.capture_triggers;
    let mut statements = Vec::new();
    let wanted: BTreeSet<&str> = desired.iter().map(|c| c.name.as_str()).collect();
    for old in existing {
        let keep = desired.iter().any(|c| {
            c.name == old.name && c.table.schema == old.schema && c.table.name == old.table
        });
        if !keep {
            let table = crate::names::QualifiedName::new(&old.schema, &old.table);
            let mut drop = capture::drop(&old.name, Some(&table));
            if wanted.contains(old.name.as_str()) {
                drop.truncate(1); // moved to another table: keep the function, re-created below
            }
            statements.extend(drop);
        }
    }
    for name in &draft.db.capture_functions {
        let has_trigger = existing.iter().any(|t| t.name == *name);
        if !wanted.contains(name.as_str()) && !has_trigger {
            statements.extend(capture::drop(name, None));
        }
    }
    for c in &desired {
        let current = existing.iter().any(|t| {
            t.name == c.name
                && t.schema == c.table.schema
                && t.table == c.table.name
                && t.hash.as_deref() == Some(c.hash.as_str())
        });
        if !current {
            statements.extend(c.create());
        }
    }
    for statement in &statements {
        tx.batch_execute(statement).await?;
    }
    let triggers: Vec<CaptureTrigger> = desired
        .iter()
        .map(|c| CaptureTrigger {
            name: c.name.clone(),
            schema: c.table.schema.clone(),
            table: c.table.name.clone(),
            hash: Some(c.hash.clone()),
        })
        .collect();
    let functions: BTreeSet<String> = desired.iter().map(|c| c.name.clone()).collect();
    // Copied only when the captures changed: the model is shared with the state before.
    if draft.db.capture_triggers != triggers || draft.db.capture_functions != functions {
        let db = std::sync::Arc::make_mut(&mut draft.db);
        db.capture_triggers = triggers;
        db.capture_functions = functions;
    }
    let names = |m: &Metadata| -> BTreeSet<String> {
        m.tables
            .iter()
            .flat_map(|e| e.event_triggers.iter().map(|t| t.name.0.clone()))
            .collect()
    };
    let gone: Vec<String> = names(before)
        .difference(&names(&draft.metadata))
        .cloned()
        .collect();
    if !gone.is_empty() {
        log::archive(tx, &gone).await?;
    }
    Ok(())
}

/// Runs an operation on the event log, as the draft's caller.
pub(super) async fn run(
    tx: &Transaction<'_>,
    draft: &Draft,
    op: &EventLogOp,
) -> Result<Answer, TransactionError> {
    let metadata = &draft.metadata;
    match op {
        EventLogOp::Invoke { name, payload } => {
            let table = EventLogOp::manual_target(metadata, name)?;
            let event = json!({"op": "MANUAL", "data": payload,
                               "session_variables": draft.session.to_json(), "trace_context": null});
            let event_id = log::record(tx, &table, name, &event).await?;
            Ok(Answer::Event(EventCreated { event_id }))
        }
        EventLogOp::Redeliver { event_id } => {
            let not_found = || {
                MetadataError::new(
                    Code::NotExists,
                    JsonPath::args().key("event_id"),
                    "event not found",
                )
            };
            let Some(event) = log::lock_event(tx, event_id).await? else {
                return Err(not_found().into());
            };
            if crate::ops::events::find_trigger(metadata, &event.trigger).is_none() {
                return Err(not_found().into());
            }
            if event.being_delivered {
                return Err(MetadataError::new(
                    Code::Busy,
                    JsonPath::args().key("event_id"),
                    "event is already being processed",
                )
                .into());
            }
            log::rearm(tx, event_id).await?;
            Ok(Answer::success())
        }
    }
}
