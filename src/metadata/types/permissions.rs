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
    /// Which query root fields of the table the role gets (`None`: all the other rules
    /// allow; empty: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_root_fields: Option<Vec<QueryRootField>>,
    /// Which subscription root fields of the table the role gets (as `query_root_fields`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_root_fields: Option<Vec<SubscriptionRootField>>,
}

/// A query root field of a table, as `query_root_fields` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryRootField {
    Select,
    SelectByPk,
    SelectAggregate,
}

/// A subscription root field of a table, as `subscription_root_fields` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubscriptionRootField {
    Select,
    SelectByPk,
    SelectAggregate,
    SelectStream,
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
