//! Identities of the objects in the metadata document: [`ObjectId`] (what inconsistencies,
//! dependency errors and drops name), [`PermissionKind`], and the "definition" JSON of a
//! relationship, permission or computed field as the API reports it (inconsistencies,
//! ownership and drift). See `docs/metadata-api.md`. Pure; must not depend on anything
//! outside `metadata`.

use super::types::*;
use serde::Serialize;
use serde_json::{json, Value};

/// Identity of a metadata object, used to compare inconsistencies across versions and to
/// remove objects.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectId {
    /// A tracked table.
    Table(QualifiedTable),
    /// A relationship of a table.
    Relationship(QualifiedTable, String),
    /// A computed field of a table.
    ComputedField(QualifiedTable, String),
    /// A permission of a role on a table.
    Permission(QualifiedTable, String, PermissionKind),
    /// An event trigger on a table.
    EventTrigger(QualifiedTable, String),
    /// A remote schema.
    RemoteSchema(String),
    /// An action.
    Action(String),
    /// The custom types as a whole.
    CustomTypes,
    /// A relationship of a custom object type to a table.
    CustomTypeRelationship(String, String),
}

impl ObjectId {
    /// The tracked table the object is defined on (the table itself for a table).
    pub fn table(&self) -> Option<&QualifiedTable> {
        match self {
            ObjectId::Table(t)
            | ObjectId::Relationship(t, _)
            | ObjectId::ComputedField(t, _)
            | ObjectId::Permission(t, _, _)
            | ObjectId::EventTrigger(t, _) => Some(t),
            ObjectId::RemoteSchema(_)
            | ObjectId::Action(_)
            | ObjectId::CustomTypes
            | ObjectId::CustomTypeRelationship(_, _) => None,
        }
    }

    /// The object as dependency messages name it (`relationship article.author`).
    pub fn describe(&self) -> String {
        match self {
            ObjectId::Table(t) => format!("table {t}"),
            ObjectId::Relationship(t, r) => format!("relationship {t}.{r}"),
            ObjectId::ComputedField(t, c) => format!("computed field {t}.{c}"),
            ObjectId::Permission(t, role, kind) => {
                format!("permission {t}.{role}.{}", kind.as_str())
            }
            ObjectId::EventTrigger(t, n) => format!("event-trigger {t}.{n}"),
            ObjectId::RemoteSchema(n) => format!("remote schema {n}"),
            ObjectId::Action(n) => format!("action {n}"),
            ObjectId::CustomTypes => "custom types".to_owned(),
            ObjectId::CustomTypeRelationship(t, r) => format!("custom type relationship {t}.{r}"),
        }
    }
}

/// The four permission kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionKind {
    /// Insert.
    Insert,
    /// Select.
    Select,
    /// Update.
    Update,
    /// Delete.
    Delete,
}

impl PermissionKind {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionKind::Insert => "insert",
            PermissionKind::Select => "select",
            PermissionKind::Update => "update",
            PermissionKind::Delete => "delete",
        }
    }

    /// The `type` of its permissions in inconsistency reports (`select_permission`).
    pub fn object_type(self) -> &'static str {
        match self {
            PermissionKind::Insert => "insert_permission",
            PermissionKind::Select => "select_permission",
            PermissionKind::Update => "update_permission",
            PermissionKind::Delete => "delete_permission",
        }
    }

    /// All four, in metadata order.
    pub const ALL: [PermissionKind; 4] = [
        PermissionKind::Insert,
        PermissionKind::Select,
        PermissionKind::Update,
        PermissionKind::Delete,
    ];
}

/// The definition object of a relationship as reported in inconsistencies.
pub fn relationship_definition<U: Serialize>(
    table: &QualifiedTable,
    rel: &RelationshipEntry<U>,
) -> Value {
    json!({"table": table, "name": rel.name, "using": rel.using, "comment": rel.comment})
}

/// The definition object of a permission as reported in inconsistencies.
pub fn permission_definition<P: Serialize>(
    table: &QualifiedTable,
    perm: &PermissionEntry<P>,
) -> Value {
    json!({"table": table, "role": perm.role, "permission": perm.permission, "comment": perm.comment})
}

/// The definition object of a computed field as reported in inconsistencies.
pub fn computed_field_definition(table: &QualifiedTable, cf: &ComputedFieldEntry) -> Value {
    json!({"table": table, "name": cf.name, "definition": cf.definition, "comment": cf.comment})
}

/// An object defined on a table, as inconsistency reports name it.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedObject {
    /// Its identity.
    pub id: ObjectId,
    /// `type` on the wire (`object_relation`, `select_permission`, …).
    pub kind: &'static str,
    /// Its definition as it was created.
    pub definition: Value,
}

impl TableEntry {
    /// Everything defined on this table (relationships, computed fields, permissions, event
    /// triggers), in metadata order: what becomes inconsistent with the table when the table
    /// itself is.
    pub fn owned_objects(&self) -> Vec<OwnedObject> {
        let table = &self.table;
        let mut out = Vec::new();
        let mut push = |id, kind, definition| {
            out.push(OwnedObject {
                id,
                kind,
                definition,
            })
        };
        for rel in &self.object_relationships {
            push(
                ObjectId::Relationship(table.clone(), rel.name.0.clone()),
                "object_relation",
                relationship_definition(table, rel),
            );
        }
        for rel in &self.array_relationships {
            push(
                ObjectId::Relationship(table.clone(), rel.name.0.clone()),
                "array_relation",
                relationship_definition(table, rel),
            );
        }
        for cf in &self.computed_fields {
            push(
                ObjectId::ComputedField(table.clone(), cf.name.0.clone()),
                "computed_field",
                computed_field_definition(table, cf),
            );
        }
        let permissions = [
            permissions(table, PermissionKind::Insert, &self.insert_permissions),
            permissions(table, PermissionKind::Select, &self.select_permissions),
            permissions(table, PermissionKind::Update, &self.update_permissions),
            permissions(table, PermissionKind::Delete, &self.delete_permissions),
        ];
        for (id, kind, definition) in permissions.into_iter().flatten() {
            push(id, kind, definition);
        }
        for trigger in &self.event_triggers {
            push(
                ObjectId::EventTrigger(table.clone(), trigger.name.0.clone()),
                "event_trigger",
                event_trigger_definition(table, trigger),
            );
        }
        out
    }
}

/// The definition object of an event trigger as reported in inconsistencies.
pub fn event_trigger_definition(table: &QualifiedTable, trigger: &EventTriggerEntry) -> Value {
    json!({"table": table, "configuration": trigger})
}

/// The permissions of one kind on a table as owned objects: (id, wire type, definition).
fn permissions<P: Serialize>(
    table: &QualifiedTable,
    kind: PermissionKind,
    entries: &[PermissionEntry<P>],
) -> Vec<(ObjectId, &'static str, Value)> {
    let wire = kind.object_type();
    entries
        .iter()
        .map(|p| {
            (
                ObjectId::Permission(table.clone(), p.role.0.clone(), kind),
                wire,
                permission_definition(table, p),
            )
        })
        .collect()
}
