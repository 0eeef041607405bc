//! What the catalog adds to an operation's answer, read once per request: who owns each
//! inconsistent object (`owner`), the capture triggers and the managed objects that drifted
//! (`get_inconsistent_metadata`), and who owns every object (`export_metadata` with
//! `include_owners`).

use super::TransactionError;
use crate::catalog::managed;
use crate::db_model::DbModel;
use crate::metadata::objects::{self, Managed};
use crate::metadata::{Metadata, ObjectId};
use crate::ops::answer::{self, Answer, Item};
use crate::ops::{ManageOp, MetadataOp, Op};
use serde_json::Value;
use tokio_postgres::GenericClient;

/// The management operation `op` is, if it is one.
fn manage(op: &Op) -> Option<&ManageOp> {
    match op {
        Op::Metadata(m) => match m.as_ref() {
            MetadataOp::Manage(manage) => Some(manage),
            _ => None,
        },
        _ => None,
    }
}

/// Adds to `answer` what the ownership rows and the capture triggers say (see the module's
/// notes); `metadata` is the document and `db` the database model the request found.
pub(super) async fn annotate(
    client: &impl GenericClient,
    op: &Op,
    metadata: &Metadata,
    db: &DbModel,
    answer: &mut Answer,
) -> Result<(), TransactionError> {
    let drift = matches!(manage(op), Some(ManageOp::GetInconsistent));
    let owners = matches!(
        manage(op),
        Some(ManageOp::Export {
            include_owners: true
        })
    );
    if drift {
        let captures = crate::resolve::events::capture_drift(metadata, db);
        extend(answer, answer::items(&captures));
    }
    let has_inconsistent = !answer.items_mut().is_empty();
    if !(has_inconsistent || drift || owners) {
        return Ok(());
    }
    let rows = managed::load(client).await?;
    add_owners(&rows, answer);
    if drift {
        let drifted = objects::drift(&rows, metadata);
        extend(answer, drifted.iter().map(Item::from).collect());
    }
    if owners {
        let owners = objects::owners(metadata, &rows);
        match answer {
            Answer::Export(export) => export.owners = Some(owners),
            Answer::DryRun(dry_run) => dry_run.owners = Some(owners),
            _ => {}
        }
    }
    Ok(())
}

/// Reports more inconsistent objects in an answer that lists them; it is then not
/// consistent.
fn extend(answer: &mut Answer, items: Vec<Item>) {
    if items.is_empty() {
        return;
    }
    match answer {
        Answer::Consistency(consistency) => consistency.extend(items),
        Answer::DryRun(dry_run) => {
            dry_run.inconsistent_objects.extend(items);
            dry_run.is_consistent = Some(false);
        }
        _ => {}
    }
}

/// Says who owns each inconsistent object of an answer (`owner`: the resource that declares
/// it, or `"api"`), so an operator knows where to fix it.
fn add_owners(rows: &[Managed], answer: &mut Answer) {
    let owners: std::collections::BTreeMap<&str, Value> = rows
        .iter()
        .map(|r| (r.key.as_str(), r.owner.to_json()))
        .collect();
    for item in answer.items_mut() {
        let key = ObjectId::of_item(&item.kind, &item.definition).map(|id| id.to_string());
        item.owner = Some(
            key.and_then(|k| owners.get(k.as_str()).cloned())
                .unwrap_or_else(|| Value::String("api".to_owned())),
        );
    }
}
