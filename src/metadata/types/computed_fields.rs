//! Computed fields: a SQL function exposed as a field of a table (see `docs/metadata-api.md`,
//! "Computed fields"). Pure serde types: must not depend on anything outside `metadata`.

use super::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputedFieldEntry {
    pub name: GraphQLName,
    /// The SQL function behind it.
    pub definition: ComputedFieldDefinition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The function of a computed field and how arguments are passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputedFieldDefinition {
    /// The SQL function.
    pub function: QualifiedFunction,
    /// Argument taking the row (default: the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_argument: Option<String>,
    /// Argument taking the session as JSON (default: not passed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_argument: Option<String>,
}
