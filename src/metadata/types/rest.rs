//! REST endpoints: a URL template and HTTP methods bound to one query of a collection (see
//! `docs/rest.md`). Pure serde types: must not depend on anything outside `metadata`.

use super::*;
use serde::{Deserialize, Serialize};

/// One REST endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestEndpoint {
    /// Unique among endpoints; any characters.
    pub name: String,
    /// The URL template below `/api/rest/`, as given (`members/:id`).
    pub url: String,
    /// In first-occurrence order, each once.
    pub methods: Vec<RestMethod>,
    pub definition: RestDefinition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// What an endpoint runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestDefinition {
    pub query: RestQuery,
}

/// A query of a collection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestQuery {
    pub collection_name: Name,
    pub query_name: Name,
}

/// An HTTP method an endpoint answers, in the order OpenAPI and `Allow` list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RestMethod {
    #[serde(rename = "GET")]
    Get,
    #[serde(rename = "POST")]
    Post,
    #[serde(rename = "PUT")]
    Put,
    #[serde(rename = "PATCH")]
    Patch,
    #[serde(rename = "DELETE")]
    Delete,
}

impl RestMethod {
    pub const ALL: [RestMethod; 5] = [
        RestMethod::Get,
        RestMethod::Post,
        RestMethod::Put,
        RestMethod::Patch,
        RestMethod::Delete,
    ];

    /// The method's name, as HTTP spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            RestMethod::Get => "GET",
            RestMethod::Post => "POST",
            RestMethod::Put => "PUT",
            RestMethod::Patch => "PATCH",
            RestMethod::Delete => "DELETE",
        }
    }

    /// The method named `name` (case-sensitive).
    pub fn parse(name: &str) -> Option<Self> {
        RestMethod::ALL.into_iter().find(|m| m.as_str() == name)
    }
}
