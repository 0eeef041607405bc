//! A tracked table's entry and its configuration: custom root fields and column names (see
//! `docs/metadata-api.md`, "Tables"). Pure serde types: must not depend on anything outside
//! `metadata`.

use super::*;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// The keys a table entry may have; anything else is rejected on import.
pub const TABLE_ENTRY_KEYS: &[&str] = &[
    "table",
    "is_enum",
    "configuration",
    "object_relationships",
    "array_relationships",
    "computed_fields",
    "remote_relationships",
    "insert_permissions",
    "select_permissions",
    "update_permissions",
    "delete_permissions",
    "event_triggers",
];

/// One tracked table or view and everything it owns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableEntry {
    pub table: QualifiedTable,
    /// Whether its rows form a GraphQL enum.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_enum: bool,
    /// Custom root field and column names.
    #[serde(default, skip_serializing_if = "TableConfig::is_empty")]
    pub configuration: TableConfig,
    /// Object (one-to-one) relationships.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub object_relationships: Vec<RelationshipEntry<ObjRelUsing>>,
    /// Array (one-to-many) relationships.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub array_relationships: Vec<RelationshipEntry<ArrRelUsing>>,
    /// Fields computed by SQL functions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub computed_fields: Vec<ComputedFieldEntry>,
    /// Fields answered by a remote schema.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_relationships: Vec<RemoteRelationshipEntry>,
    /// Insert permissions by role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub insert_permissions: Vec<PermissionEntry<InsertPermission>>,
    /// Select permissions by role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub select_permissions: Vec<PermissionEntry<SelectPermission>>,
    /// Update permissions by role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub update_permissions: Vec<PermissionEntry<UpdatePermission>>,
    /// Delete permissions by role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete_permissions: Vec<PermissionEntry<DeletePermission>>,
    /// Event triggers: row changes of this table sent to webhooks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub event_triggers: Vec<EventTriggerEntry>,
}

impl TableEntry {
    /// A freshly tracked table with nothing attached.
    pub fn new(table: QualifiedTable) -> Self {
        TableEntry {
            table,
            is_enum: false,
            configuration: TableConfig::default(),
            object_relationships: Vec::new(),
            array_relationships: Vec::new(),
            computed_fields: Vec::new(),
            remote_relationships: Vec::new(),
            insert_permissions: Vec::new(),
            select_permissions: Vec::new(),
            update_permissions: Vec::new(),
            delete_permissions: Vec::new(),
            event_triggers: Vec::new(),
        }
    }

    /// Whether a relationship (of either kind) has this name.
    pub fn has_relationship(&self, name: &str) -> bool {
        self.object_relationships.iter().any(|r| r.name.0 == name)
            || self.array_relationships.iter().any(|r| r.name.0 == name)
    }

    /// Whether a computed field has this name.
    pub fn has_computed_field(&self, name: &str) -> bool {
        self.computed_fields.iter().any(|c| c.name.0 == name)
    }
}

/// Table configuration (version 2 `track_table`, `set_table_custom_fields`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TableConfig {
    /// Renamed root fields.
    #[serde(default)]
    pub custom_root_fields: CustomRootFields,
    /// Column → GraphQL field name.
    #[serde(default)]
    pub custom_column_names: IndexMap<String, GraphQLName>,
}

impl TableConfig {
    /// True when nothing is customised.
    pub fn is_empty(&self) -> bool {
        self.custom_root_fields.is_empty() && self.custom_column_names.is_empty()
    }
}

/// Custom names for a table's root fields; `None` keeps the default name.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CustomRootFields {
    /// List query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<GraphQLName>,
    /// Query by primary key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select_by_pk: Option<GraphQLName>,
    /// Aggregate query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select_aggregate: Option<GraphQLName>,
    /// Streaming subscription (`<t>_stream`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select_stream: Option<GraphQLName>,
    /// Bulk insert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert: Option<GraphQLName>,
    /// Single insert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert_one: Option<GraphQLName>,
    /// Bulk update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<GraphQLName>,
    /// Update by primary key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_by_pk: Option<GraphQLName>,
    /// Several differently-filtered updates in one field (`update_<t>_many`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_many: Option<GraphQLName>,
    /// Bulk delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<GraphQLName>,
    /// Delete by primary key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_by_pk: Option<GraphQLName>,
}

impl CustomRootFields {
    /// Pairs of (key, custom name) that are set, in the export order (`docs/metadata-api.md`,
    /// "`track_table` (version 2)").
    pub fn entries(&self) -> Vec<(&'static str, &GraphQLName)> {
        [
            ("select", &self.select),
            ("select_by_pk", &self.select_by_pk),
            ("select_aggregate", &self.select_aggregate),
            ("select_stream", &self.select_stream),
            ("insert", &self.insert),
            ("insert_one", &self.insert_one),
            ("update", &self.update),
            ("update_by_pk", &self.update_by_pk),
            ("update_many", &self.update_many),
            ("delete", &self.delete),
            ("delete_by_pk", &self.delete_by_pk),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
        .collect()
    }

    /// True when no root field is renamed.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }
}
