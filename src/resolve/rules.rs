//! Permissions as typed rules: each permission's JSON is resolved once, when the schema is
//! resolved, into a [`BoolExp`] whose every name is checked and every column typed, and into
//! typed presets. The GraphQL layer plans from these and never reads permission JSON.

use super::operators::CompareOp;
use crate::db_model::PgType;
use crate::metadata::types::{Columns, QualifiedTable};
use serde_json::Value;

/// A permission's boolean expression (`filter`, `check`, `_exists._where`), resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum BoolExp {
    /// All hold (the keys of one JSON object, or `_and`); true when empty.
    And(Vec<BoolExp>),
    /// Any holds (`_or`); false when empty.
    Or(Vec<BoolExp>),
    /// `_not`.
    Not(Box<BoolExp>),
    /// `_exists`: some row of another table satisfies the inner expression.
    Exists {
        table: QualifiedTable,
        /// Over the other table.
        filter: Box<BoolExp>,
    },
    /// Through a relationship: some related row satisfies the inner expression.
    Related {
        target: QualifiedTable,
        /// (this table's column, related table's column).
        mapping: Vec<(String, String)>,
        /// Over the related table.
        filter: Box<BoolExp>,
    },
    /// Conditions on one column, all of which hold.
    Column {
        column: String,
        conditions: Vec<Condition>,
    },
}

/// A condition on a column.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// `IS NULL` (true) or `IS NOT NULL` (false).
    IsNull(bool),
    /// The column compared with a value bound as `cast`.
    Compare {
        op: CompareOp,
        value: RuleValue,
        /// The type the value is bound as (the column's, or `text` for pattern and key
        /// operators).
        cast: PgType,
    },
    /// The column compared with another column.
    CompareColumn { op: CompareOp, other: ColumnRef },
}

/// A value in a rule: a constant or a session variable resolved per request.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleValue {
    /// A JSON literal.
    Literal(Value),
    /// A session variable (lower-case name).
    Session(String),
}

impl RuleValue {
    /// A session-variable reference (`"X-Svc-User-Id"`, any case) or a literal.
    pub fn of(value: &Value) -> Self {
        match value.as_str() {
            Some(s) if super::is_session_variable(s) => RuleValue::Session(s.to_ascii_lowercase()),
            _ => RuleValue::Literal(value.clone()),
        }
    }
}

/// The other column of a column comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnRef {
    /// A column of the same table as the compared column.
    Current(String),
    /// A column of the table the permission is defined on (`["$", col]`).
    Root(String),
}

/// A column preset of an insert or update permission.
#[derive(Debug, Clone, PartialEq)]
pub struct Preset {
    pub column: String,
    /// The type the value is bound as.
    pub pg_type: PgType,
    /// The value written.
    pub value: PresetValue,
}

/// Where a preset's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum PresetValue {
    /// A literal.
    Static(Value),
    /// A session variable (lower-case name).
    Session(String),
    /// `now()`.
    Now,
}

/// A select permission, resolved.
#[derive(Debug, Clone)]
pub struct SelectRule {
    /// Visible columns.
    pub columns: Columns,
    /// Visible computed fields.
    pub computed_fields: Vec<String>,
    /// Visible rows.
    pub filter: BoolExp,
    /// Row cap.
    pub limit: Option<u32>,
    /// Aggregates allowed.
    pub allow_aggregations: bool,
    /// The query root fields of the table the role gets (`None`: every one the rest allows).
    pub query_root_fields: Option<Vec<crate::metadata::types::QueryRootField>>,
    /// The subscription root fields of the table the role gets (`None`: every one).
    pub subscription_root_fields: Option<Vec<crate::metadata::types::SubscriptionRootField>>,
    /// Fields (columns and scalar computed fields) readable only on the rows where their
    /// condition holds: elsewhere they read as `null`, in every clause. Only an inherited role's
    /// derived rule has any.
    pub cells: indexmap::IndexMap<String, BoolExp>,
}

/// An insert permission, resolved.
#[derive(Debug, Clone)]
pub struct InsertRule {
    /// Insertable columns (absent: all).
    pub columns: Option<Columns>,
    /// Must hold for every inserted row.
    pub check: BoolExp,
    /// Column presets.
    pub presets: Vec<Preset>,
    /// Only for trusted backend requests.
    pub backend_only: bool,
}

/// An update permission, resolved.
#[derive(Debug, Clone)]
pub struct UpdateRule {
    /// Updatable columns.
    pub columns: Columns,
    /// Rows that may be updated.
    pub filter: BoolExp,
    /// Must hold for every updated row, if given.
    pub check: Option<BoolExp>,
    /// Column presets.
    pub presets: Vec<Preset>,
}

/// A delete permission, resolved.
#[derive(Debug, Clone)]
pub struct DeleteRule {
    /// Rows that may be deleted.
    pub filter: BoolExp,
}

/// The permissions of one role on one table (only consistent ones).
#[derive(Debug, Clone, Default)]
pub struct RolePermissions {
    pub insert: Option<InsertRule>,
    pub select: Option<SelectRule>,
    pub update: Option<UpdateRule>,
    pub delete: Option<DeleteRule>,
}
