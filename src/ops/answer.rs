//! What a metadata operation answers, as typed values: the operations (and the transaction
//! that runs them, which adds what only the catalog knows, such as owners) build them, the
//! HTTP layer serializes them. Each shape is the one `docs/metadata-api.md` gives the
//! operation.

use crate::metadata::objects::Drift;
use crate::metadata::Metadata;
use crate::resolve::inherited::Conflict;
use crate::resolve::{Inconsistency, Resolution};
use serde::Serialize;
use serde_json::{Map, Value};

/// An operation's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Answer {
    /// `{"message": "success"}`.
    Success(Success),
    /// `export_metadata`: the document.
    Export(Export),
    /// Whether the metadata is consistent, and what is not (`get_inconsistent_metadata`,
    /// `reload_metadata`, `replace_metadata` version 2).
    Consistency(Consistency),
    /// `run_sql`.
    Sql(SqlResult),
    /// `invoke_event_trigger`.
    Event(EventCreated),
    /// `bulk`: each operation's answer, in order.
    Bulk(Vec<Answer>),
    /// A request run with `"dry_run": true`.
    DryRun(DryRun),
    /// An answer whose shape the operation builds itself (the reads and the
    /// `create_scheduled_event` of scheduled triggers).
    Value(Value),
}

impl Answer {
    /// `{"message": "success"}`.
    pub fn success() -> Self {
        Answer::Success(Success { message: "success" })
    }

    /// The objects the answer reports as inconsistent (a `bulk`'s answers are not looked
    /// into).
    pub fn items_mut(&mut self) -> Vec<&mut Item> {
        match self {
            Answer::Consistency(c) => c.inconsistent_objects.iter_mut().flatten().collect(),
            Answer::DryRun(d) => d.inconsistent_objects.iter_mut().collect(),
            _ => Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Success {
    message: &'static str,
}

/// The document; with `include_owners`, who owns each object, by object key (a resource, or
/// `"api"`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Export {
    #[serde(flatten)]
    pub metadata: Box<Metadata>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owners: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Consistency {
    /// `"success"` where the operation also reports having run (`reload_metadata`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'static str>,
    pub is_consistent: bool,
    /// Left out (rather than empty) where the operation reports objects only when there are
    /// some (`reload_metadata`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inconsistent_objects: Option<Vec<Item>>,
}

impl Consistency {
    /// Every inconsistency of a resolution, listed even when there is none.
    pub fn of(resolution: &Resolution) -> Self {
        Consistency {
            message: None,
            is_consistent: resolution.inconsistencies.is_empty() && resolution.conflicts.is_empty(),
            inconsistent_objects: Some(all_items(resolution)),
        }
    }

    /// Adds objects found inconsistent outside the resolution (capture triggers, drift).
    pub fn extend(&mut self, more: impl IntoIterator<Item = Item>) {
        let list = self.inconsistent_objects.get_or_insert_with(Vec::new);
        let before = list.len();
        list.extend(more);
        if list.len() > before {
            self.is_consistent = false;
        }
    }
}

/// One inconsistent object: `{"type", "definition", "reason"}`, and who owns it once the
/// catalog has said so.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    #[serde(rename = "type")]
    pub kind: String,
    /// The inherited role, on a permission conflict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the conflict is about, on a permission conflict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity: Option<Value>,
    pub definition: Value,
    pub reason: String,
    /// The resource that declares the object, or `"api"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<Value>,
}

impl From<&Inconsistency> for Item {
    fn from(i: &Inconsistency) -> Self {
        Item {
            kind: i.kind.to_owned(),
            name: None,
            entity: None,
            definition: i.definition.clone(),
            reason: i.reason.clone(),
            owner: None,
        }
    }
}

impl From<&Drift> for Item {
    fn from(d: &Drift) -> Self {
        Item {
            kind: "drift".to_owned(),
            name: None,
            entity: None,
            definition: d.definition(),
            reason: d.reason(),
            owner: None,
        }
    }
}

impl From<&Conflict> for Item {
    fn from(c: &Conflict) -> Self {
        Item {
            kind: Conflict::KIND.to_owned(),
            name: Some(c.role.clone()),
            entity: Some(c.entity.clone()),
            definition: c.definition.clone(),
            reason: c.reason.clone(),
            owner: None,
        }
    }
}

/// The items of a list of inconsistencies.
pub fn items(inconsistencies: &[Inconsistency]) -> Vec<Item> {
    inconsistencies.iter().map(Item::from).collect()
}

/// Every item a resolution reports: its inconsistencies, then its permission conflicts.
pub fn all_items(resolution: &Resolution) -> Vec<Item> {
    let mut out = items(&resolution.inconsistencies);
    out.extend(resolution.conflicts.iter().map(Item::from));
    out
}

/// `TuplesOk` with the column names first and every value as text (`"NULL"` for SQL NULL)
/// when the last statement returned rows, else `CommandOk` with a `null` result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SqlResult {
    pub result_type: &'static str,
    pub result: Option<Vec<Vec<String>>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventCreated {
    pub event_id: String,
}

/// What a request would change, object by object, and the inconsistent objects it would
/// leave that were not there before.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DryRun {
    pub dry_run: bool,
    pub added: Vec<Value>,
    pub changed: Vec<Value>,
    pub removed: Vec<Value>,
    pub inconsistent_objects: Vec<Item>,
    /// Set when the dry-run operation reports consistency itself and more was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_consistent: Option<bool>,
    /// Who owns each object, when the dry-run operation exports owners.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owners: Option<Map<String, Value>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_keep_the_wire_shapes() {
        let item = Item {
            kind: "table".into(),
            name: None,
            entity: None,
            definition: json!({"name": "t"}),
            reason: "gone".into(),
            owner: None,
        };
        let reload = Answer::Consistency(Consistency {
            message: Some("success"),
            is_consistent: true,
            inconsistent_objects: None,
        });
        let mut listed = Consistency {
            message: None,
            is_consistent: true,
            inconsistent_objects: Some(Vec::new()),
        };
        listed.extend([item.clone()]);
        let sql = Answer::Sql(SqlResult {
            result_type: "CommandOk",
            result: None,
        });
        let bulk = Answer::Bulk(vec![Answer::success(), reload, sql]);
        assert_eq!(
            serde_json::to_string(&bulk).unwrap(),
            r#"[{"message":"success"},{"message":"success","is_consistent":true},{"result_type":"CommandOk","result":null}]"#
        );
        assert_eq!(
            serde_json::to_value(Answer::Consistency(listed)).unwrap(),
            json!({"is_consistent": false, "inconsistent_objects": [
                {"type": "table", "definition": {"name": "t"}, "reason": "gone"}]})
        );
        let export = Answer::Export(Export {
            metadata: Box::default(),
            owners: Some(Map::new()),
        });
        let text = serde_json::to_string(&export).unwrap();
        assert!(text.starts_with(r#"{"version":2"#), "{text}");
        assert!(text.ends_with(r#","owners":{}}"#), "{text}");
    }
}
