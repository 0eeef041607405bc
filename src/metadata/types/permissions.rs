//! Permissions of a role on a table. BoolExps and presets stay JSON values, stored exactly as
//! submitted (see `docs/metadata-api.md`, "Permissions"). Pure serde types: must not depend on
//! anything outside `metadata`.

use super::*;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A permission of one role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionEntry<P> {
    /// The role it applies to.
    pub role: Name,
    pub permission: P,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InsertPermission {
    /// Must hold for every inserted row.
    pub check: Value,
    /// Column presets.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub set: Map<String, Value>,
    /// Insertable columns (absent = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<Columns>,
    /// Only for trusted backend requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_only: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectPermission {
    /// Selectable columns.
    pub columns: Columns,
    /// Selectable computed fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub computed_fields: Vec<String>,
    /// Row filter.
    pub filter: Value,
    /// Row cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Aggregate root fields allowed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_aggregations: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdatePermission {
    /// Updatable columns.
    pub columns: Columns,
    /// Rows that may be updated.
    pub filter: Value,
    /// Post-condition on the new row (`null` = none).
    #[serde(default)]
    pub check: Option<Value>,
    /// Column presets.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub set: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeletePermission {
    /// Rows that may be deleted.
    pub filter: Value,
}
