//! Scheduled triggers in the metadata transaction (`docs/scheduled-triggers.md`): the cron
//! events kept in step with the document after every write (a new trigger gets its first
//! events, a changed one new future events, a removed one loses those still waiting), and the
//! operations on scheduled events, which are catalog data.

use super::draft::Draft;
use super::TransactionError;
use crate::catalog::scheduled::{self as store, Deleted, EventTable, Filter, OneOff};
use crate::metadata::error::{Code, MetadataError};
use crate::metadata::path::JsonPath;
use crate::metadata::types::{CronTriggerEntry, Metadata};
use crate::ops::answer::Answer;
use crate::ops::scheduled::{trigger_missing, EventKind, Listing, ScheduledEventOp};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tokio_postgres::Transaction;

/// After the operations of a write: the cron events of triggers that changed between
/// `before` and `after`, and with `top_up` (`reload_metadata`) those of every trigger. A
/// trigger whose schedule does not parse gets none (the operations refuse such a schedule; an
/// old catalog might hold one).
pub(super) async fn sync(
    tx: &Transaction<'_>,
    before: &Metadata,
    after: &Metadata,
    top_up: bool,
) -> Result<(), TransactionError> {
    if before.cron_triggers == after.cron_triggers && !top_up {
        return Ok(());
    }
    // The database's clock, as the workers read it.
    let now: DateTime<Utc> = tx.query_one("SELECT now()", &[]).await?.get(0);
    let find = |m: &'_ Metadata, name: &str| -> Option<CronTriggerEntry> {
        m.cron_triggers.iter().find(|t| t.name == name).cloned()
    };
    for old in &before.cron_triggers {
        if find(after, &old.name).is_none() {
            store::delete_waiting_cron_events(tx, &old.name, None).await?;
        }
    }
    for new in &after.cron_triggers {
        match find(before, &new.name) {
            Some(old) if old == *new && !top_up => continue,
            Some(old) if old == *new => {}
            Some(_) => {
                store::delete_waiting_cron_events(tx, &new.name, Some(now)).await?;
            }
            // Left over by a trigger of that name deleted before: not this one's.
            None => {
                store::delete_waiting_cron_events(tx, &new.name, None).await?;
            }
        }
        store::generate(tx, new, now).await?;
    }
    Ok(())
}

fn table(kind: EventKind) -> EventTable {
    match kind {
        EventKind::Cron => EventTable::Cron,
        EventKind::OneOff => EventTable::OneOff,
    }
}

/// Runs an operation on scheduled events.
pub(super) async fn run(
    tx: &Transaction<'_>,
    draft: &Draft,
    op: &ScheduledEventOp,
) -> Result<Answer, TransactionError> {
    let args = JsonPath::args();
    match op {
        ScheduledEventOp::Create(event) => {
            // The environment it reads must be there now; it is read again at delivery.
            crate::resolve::scheduled::webhook(&event.webhook, &args.key("webhook"))?;
            crate::resolve::events::resolve_headers(&event.headers, &args.key("headers"))?;
            let at = DateTime::parse_from_rfc3339(&event.schedule_at)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| {
                    MetadataError::new(Code::ParseFailed, args.key("schedule_at"), e.to_string())
                })?;
            let row = OneOff {
                webhook: &event.webhook,
                at,
                retry_conf: json!(event.retry_conf),
                payload: event.payload.as_ref(),
                headers: json!(event.headers),
                comment: event.comment.as_deref(),
            };
            let id = store::insert_one_off(tx, &row).await?;
            Ok(Answer::Value(json!({"message": "success", "event_id": id})))
        }
        ScheduledEventOp::Delete { kind, event_id } => {
            match store::delete_event(tx, table(*kind), event_id).await? {
                Deleted::Deleted => Ok(Answer::success()),
                Deleted::Missing => Err(MetadataError::new(
                    Code::NotExists,
                    args.key("event_id"),
                    format!("scheduled event with id \"{event_id}\" does not exist"),
                )
                .into()),
                Deleted::Locked => Err(MetadataError::new(
                    Code::Busy,
                    args.key("event_id"),
                    "event is already being processed",
                )
                .into()),
            }
        }
        ScheduledEventOp::List(listing) => {
            check_trigger(draft, listing)?;
            let (events, count) =
                store::list_events(tx, table(listing.kind), &filter(listing)).await?;
            Ok(Answer::Value(with_count(
                json!({"events": events}),
                listing,
                count,
            )))
        }
        ScheduledEventOp::Invocations(listing) => {
            if listing.event_id.is_none() {
                check_trigger(draft, listing)?;
            }
            let (invocations, count) =
                store::list_invocations(tx, table(listing.kind), &filter(listing)).await?;
            Ok(Answer::Value(with_count(
                json!({"invocations": invocations}),
                listing,
                count,
            )))
        }
    }
}

/// A cron listing must name a trigger of the metadata.
fn check_trigger(draft: &Draft, listing: &Listing) -> Result<(), MetadataError> {
    match (&listing.kind, &listing.trigger) {
        (EventKind::Cron, Some(name))
            if !draft.metadata.cron_triggers.iter().any(|t| &t.name == name) =>
        {
            Err(trigger_missing(name))
        }
        _ => Ok(()),
    }
}

fn filter(listing: &Listing) -> Filter<'_> {
    Filter {
        trigger: match listing.kind {
            EventKind::Cron => listing.trigger.as_deref(),
            EventKind::OneOff => None,
        },
        event_id: listing.event_id.as_deref(),
        statuses: &listing.statuses,
        limit: listing.limit,
        offset: listing.offset,
    }
}

fn with_count(mut answer: Value, listing: &Listing, count: i64) -> Value {
    if listing.count {
        answer["count"] = json!(count);
    }
    answer
}
