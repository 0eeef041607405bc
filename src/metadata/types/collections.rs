//! Query collections and the allow-list entries (see `docs/metadata-api.md`, "Query collections and
//! the allow-list"). Pure serde types: must not depend on anything outside `metadata`.

use super::*;
use serde::{Deserialize, Serialize};

/// A named set of GraphQL documents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionEntry {
    pub name: Name,
    pub definition: CollectionDefinition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The queries of a collection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionDefinition {
    /// In insertion order.
    pub queries: Vec<CollectionQuery>,
}

/// One named GraphQL document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionQuery {
    /// Name, unique in its collection.
    pub name: Name,
    /// GraphQL document text.
    pub query: String,
}

/// One allow-listed collection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowlistEntry {
    pub collection: Name,
}
