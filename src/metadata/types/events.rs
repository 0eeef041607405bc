//! Event triggers (`docs/events.md`), remote schemas (`docs/remote-schemas.md`) and their
//! webhook headers. Pure serde types: must not depend on anything outside `metadata`.

use super::*;
use serde::{Deserialize, Serialize};

/// A webhook header: literal value or read from the environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Header {
    /// `{"name","value"}`.
    Value { name: String, value: String },
    /// `{"name","value_from_env"}`.
    FromEnv {
        name: String,
        /// Environment variable holding the value.
        value_from_env: String,
    },
}

/// An event trigger: which row changes of its table go to which webhook, and how retried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventTriggerEntry {
    pub name: Name,
    /// Which operations fire it.
    pub definition: EventTriggerDefinition,
    /// Retry policy (defaults filled in).
    #[serde(default)]
    pub retry_conf: RetryConf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// Environment variable holding the webhook URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_from_env: Option<String>,
    /// Headers sent with each delivery.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
}

/// The operations of an event trigger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventTriggerDefinition {
    /// Whether `invoke_event_trigger` may fire it.
    #[serde(default)]
    pub enable_manual: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert: Option<OperationSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<OperationSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<OperationSpec>,
}

/// Columns listened to and sent for one operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationSpec {
    /// Columns whose change fires.
    pub columns: Columns,
    /// Columns in the payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Columns>,
}

/// Delivery retry policy (`docs/events.md`, "Retries and states").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryConf {
    /// Retries after the first failure.
    #[serde(default)]
    pub num_retries: u32,
    /// Seconds between attempts.
    #[serde(default = "ten")]
    pub interval_sec: u32,
    /// HTTP timeout per attempt, seconds.
    #[serde(default = "sixty")]
    pub timeout_sec: u32,
}

fn ten() -> u32 {
    10
}
fn sixty() -> u32 {
    60
}

impl Default for RetryConf {
    fn default() -> Self {
        RetryConf {
            num_retries: 0,
            interval_sec: 10,
            timeout_sec: 60,
        }
    }
}

/// A remote GraphQL server whose root fields join the schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSchemaEntry {
    pub name: Name,
    /// Where and how to reach it.
    pub definition: RemoteSchemaDefinition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Relationships from its object types to tables, by type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_relationships: Vec<RemoteTypeRelationships>,
}

/// How to reach a remote schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSchemaDefinition {
    /// URL (may hold `{{ENV}}` templates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Environment variable holding the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_from_env: Option<String>,
    /// Request timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u32>,
    /// Headers sent to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    /// Forward the client's headers.
    #[serde(default, skip_serializing_if = "is_false")]
    pub forward_client_headers: bool,
}
