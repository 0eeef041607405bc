//! The event log in `basalt_catalog` (`docs/events.md`): its tables and the helper the
//! capture triggers call, keeping the capture triggers in step with the document in the same
//! transaction as every metadata write, archiving the events of triggers that go away, and
//! the two operations on the log itself (`invoke_event_trigger`, `redeliver_event`).

use super::{CatalogError, Work};
use crate::capture;
use crate::db_model::CaptureTrigger;
use crate::metadata::error::{Code, MetadataError};
use crate::metadata::path::JsonPath;
use crate::metadata::types::{Metadata, QualifiedTable};
use crate::ops::events::EventLogOp;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use tokio_postgres::Transaction;

/// The channel capture triggers and event operations notify, waking the delivery workers.
pub const EVENTS_CHANNEL: &str = "basalt_events";

/// Catalog migration: the event log, the invocation log, and the capture helper.
pub(super) const MIGRATION: &str = r#"
    CREATE TABLE basalt_catalog.event_log (
        id            text PRIMARY KEY DEFAULT gen_random_uuid()::text,
        schema_name   text NOT NULL,
        table_name    text NOT NULL,
        trigger_name  text NOT NULL,
        payload       jsonb NOT NULL,
        delivered     boolean NOT NULL DEFAULT false,
        error         boolean NOT NULL DEFAULT false,
        tries         integer NOT NULL DEFAULT 0,
        created_at    timestamp DEFAULT (now() AT TIME ZONE 'utc'),
        locked        timestamptz,
        next_retry_at timestamp,
        archived      boolean NOT NULL DEFAULT false
    );
    -- The workers' queue: undelivered events in capture order.
    CREATE INDEX event_log_pending ON basalt_catalog.event_log (created_at)
        WHERE delivered = false AND error = false AND archived = false;
    CREATE INDEX event_log_trigger ON basalt_catalog.event_log (trigger_name);
    CREATE TABLE basalt_catalog.event_invocation_logs (
        id           text PRIMARY KEY DEFAULT gen_random_uuid()::text,
        event_id     text REFERENCES basalt_catalog.event_log (id) ON DELETE CASCADE,
        trigger_name text,
        status       integer,
        request      json,
        response     json,
        created_at   timestamp DEFAULT (now() AT TIME ZONE 'utc')
    );
    CREATE INDEX event_invocation_logs_event ON basalt_catalog.event_invocation_logs (event_id);
    CREATE INDEX event_invocation_logs_created ON basalt_catalog.event_invocation_logs (created_at);

    -- Called by every capture trigger: one row per change, with the session of the Basalt
    -- request that made it (NULL from elsewhere) and its trace context.
    CREATE FUNCTION basalt_catalog.insert_event_log(
        schema_name text, table_name text, trigger_name text, op text, row_data json
    ) RETURNS text LANGUAGE plpgsql AS $$
    DECLARE
        event_id text := gen_random_uuid()::text;
        session json := nullif(current_setting('basalt.user', true), '')::json;
        trace json := nullif(current_setting('basalt.tracecontext', true), '')::json;
    BEGIN
        INSERT INTO basalt_catalog.event_log (id, schema_name, table_name, trigger_name, payload)
        VALUES (event_id, schema_name, table_name, trigger_name,
                jsonb_build_object('op', op, 'data', row_data,
                                   'session_variables', session, 'trace_context', trace));
        PERFORM pg_notify('basalt_events', '');
        RETURN event_id;
    END
    $$;
"#;

/// After the operations of a write: installs the capture triggers the new document needs,
/// replaces stale ones, drops the rest, and archives the undelivered events of triggers that
/// are gone. `work.db` then describes the captures as they now are. DDL runs only for what
/// differs, so a write that does not touch triggers costs one comparison in memory.
pub(super) async fn sync(
    tx: &Transaction<'_>,
    before: &Metadata,
    work: &mut Work,
) -> Result<(), CatalogError> {
    let desired = crate::resolve::events::desired_captures(&work.metadata, &work.db);
    let existing = &work.db.capture_triggers;
    let mut statements = Vec::new();
    let wanted: BTreeSet<&str> = desired.iter().map(|c| c.name.as_str()).collect();
    for old in existing {
        let keep = desired.iter().any(|c| {
            c.name == old.name && c.table.schema == old.schema && c.table.name == old.table
        });
        if !keep {
            let table = QualifiedTable::new(&old.schema, &old.table);
            let mut drop = capture::drop(&old.name, Some(&table));
            if wanted.contains(old.name.as_str()) {
                drop.truncate(1); // moved to another table: keep the function, re-created below
            }
            statements.extend(drop);
        }
    }
    for name in &work.db.capture_functions {
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
    if work.db.capture_triggers != triggers || work.db.capture_functions != functions {
        let db = std::sync::Arc::make_mut(&mut work.db);
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
        .difference(&names(&work.metadata))
        .cloned()
        .collect();
    if !gone.is_empty() {
        tx.execute(
            "UPDATE basalt_catalog.event_log SET archived = true
             WHERE trigger_name = ANY($1) AND delivered = false AND archived = false",
            &[&gone],
        )
        .await?;
    }
    Ok(())
}

/// Runs an operation on the event log; `session` is the caller's (recorded on manual events).
pub(super) async fn run(
    tx: &Transaction<'_>,
    metadata: &Metadata,
    op: &EventLogOp,
    session: &Value,
) -> Result<Value, CatalogError> {
    match op {
        EventLogOp::Invoke { name, payload } => {
            let table = EventLogOp::manual_target(metadata, name)?;
            let event = json!({"op": "MANUAL", "data": payload,
                               "session_variables": session, "trace_context": null});
            let row = tx
                .query_one(
                    "INSERT INTO basalt_catalog.event_log (schema_name, table_name, trigger_name, payload)
                     VALUES ($1, $2, $3, $4) RETURNING id",
                    &[&table.schema, &table.name, name, &event],
                )
                .await?;
            notify(tx).await?;
            let id: String = row.try_get(0)?;
            Ok(json!({"event_id": id}))
        }
        EventLogOp::Redeliver { event_id } => {
            let row = tx
                .query_opt(
                    "SELECT trigger_name, locked IS NOT NULL FROM basalt_catalog.event_log
                     WHERE id = $1 AND archived = false FOR UPDATE",
                    &[event_id],
                )
                .await?;
            let not_found = || {
                MetadataError::new(
                    Code::NotExists,
                    JsonPath::args().key("event_id"),
                    "event not found",
                )
            };
            let Some(row) = row else {
                return Err(not_found().into());
            };
            let trigger: String = row.try_get(0)?;
            if crate::ops::events::find_trigger(metadata, &trigger).is_none() {
                return Err(not_found().into());
            }
            if row.try_get::<_, bool>(1)? {
                return Err(MetadataError::new(
                    Code::Busy,
                    JsonPath::args().key("event_id"),
                    "event is already being processed",
                )
                .into());
            }
            tx.execute(
                "UPDATE basalt_catalog.event_log
                 SET delivered = false, error = false, tries = 0, next_retry_at = NULL
                 WHERE id = $1",
                &[event_id],
            )
            .await?;
            notify(tx).await?;
            Ok(json!({"message": "success"}))
        }
    }
}

async fn notify(tx: &Transaction<'_>) -> Result<(), CatalogError> {
    tx.execute("SELECT pg_notify($1, '')", &[&EVENTS_CHANNEL])
        .await?;
    Ok(())
}
