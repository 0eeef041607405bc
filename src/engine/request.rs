//! What a request brings to the engine: the GraphQL request itself, who sent it, and how.

use crate::session::Session;
use serde::Deserialize;
use serde_json::{Map, Value};

/// A GraphQL request body.
#[derive(Debug, Clone, Deserialize)]
pub struct GraphqlRequest {
    /// The document's text.
    pub query: String,
    #[serde(default)]
    pub variables: Option<Map<String, Value>>,
    /// The operation to run, required when the document holds several.
    #[serde(default, rename = "operationName")]
    pub operation_name: Option<String>,
}

/// Who sent a request: the session, and the headers remote schemas and action handlers may be
/// forwarded (`forward_client_headers`).
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    pub session: &'a Session,
    /// The client's headers (over WebSocket: the upgrade's and `connection_init`'s).
    pub headers: &'a http::HeaderMap,
}

/// How a request came: what it may carry depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// `POST /v1/graphql`: queries and mutations.
    Post,
    /// `GET /v1/graphql?query=…`: queries only.
    Get,
    /// A WebSocket operation: anything, subscriptions included.
    Socket,
}
