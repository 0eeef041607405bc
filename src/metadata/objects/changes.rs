//! What a change of the metadata document does, object by object: a dry run's answer.

use super::catalog_objects;
use crate::metadata::types::Metadata;
use serde_json::Value;

/// What a change of the metadata document does, object by object (a dry run's answer).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectChanges {
    /// Objects only in the new document.
    pub added: Vec<Value>,
    /// Objects in both whose definition differs: the new definition, and the old one as
    /// `previous`.
    pub changed: Vec<Value>,
    /// Objects only in the old document.
    pub removed: Vec<Value>,
}

/// Compares two documents object by object, in key order.
pub fn object_changes(before: &Metadata, after: &Metadata) -> ObjectChanges {
    let old = catalog_objects(before);
    let new = catalog_objects(after);
    let mut changes = ObjectChanges::default();
    for (key, object) in &new {
        match old.get(key) {
            None => changes.added.push(object.item()),
            Some(previous) if previous.canonical() != object.canonical() => {
                let mut item = object.item();
                item["previous"] = previous.canonical();
                changes.changed.push(item);
            }
            Some(_) => {}
        }
    }
    for (key, object) in &old {
        if !new.contains_key(key) {
            changes.removed.push(object.item());
        }
    }
    changes
}
