//! Actions: custom queries and mutations resolved by HTTP handlers, as `create_action` stores
//! them (see `docs/metadata-api.md`, "Actions", and `docs/actions.md`). Pure serde types: must
//! not depend on anything outside `metadata`.

use super::*;
use serde::{Deserialize, Serialize};

/// An action: a root field answered by an HTTP handler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionEntry {
    /// Root field name.
    pub name: GraphQLName,
    /// Handler, types and kind.
    pub definition: ActionDefinition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Roles allowed to call it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<ActionPermission>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionDefinition {
    /// Handler URL (may hold `{{ENV}}` templates).
    pub handler: String,
    /// Output type expression; its base must be a custom object type.
    pub output_type: String,
    /// Forward the client's headers to the handler.
    #[serde(default, skip_serializing_if = "is_false")]
    pub forward_client_headers: bool,
    /// Headers sent to the handler.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<ActionArgument>,
    /// `query` or `mutation`.
    #[serde(rename = "type", default = "mutation")]
    pub action_type: ActionType,
    /// `synchronous` or `asynchronous` (mutations only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ActionKind>,
    /// Handler timeout in seconds (exported only when not 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u32>,
}

fn mutation() -> ActionType {
    ActionType::Mutation
}

/// Root an action extends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionType {
    /// Extends `query_root`.
    Query,
    /// Extends `mutation_root`.
    Mutation,
}

/// Whether a mutation action answers after the handler or at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    /// Answer after the handler.
    Synchronous,
    /// Answer with an id at once.
    Asynchronous,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionArgument {
    pub name: GraphQLName,
    /// Type expression.
    #[serde(rename = "type")]
    pub arg_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A role allowed to call an action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionPermission {
    pub role: Name,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}
