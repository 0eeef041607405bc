//! What every kind shares: the status every resource has ([`ResourceStatus`], and
//! [`KindStatus`] for a kind that adds its own), the schema helpers for fields kept as
//! written, headers (`HeaderSpec`, used by three kinds), and the helpers mapping specs to
//! the metadata API and back.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

pub use super::SpecError;
pub use crate::metadata::path::JsonPath;
pub use crate::metadata::types::{Header, QualifiedTable};

/// Schema of opaque JSON objects (BoolExp, presets, column maps): kept as written.
pub fn preserved_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// Schema of `"*"`-or-list fields: untyped, so both shapes stay one-to-one with the metadata API.
pub fn preserved_any(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"x-kubernetes-preserve-unknown-fields": true})
}

pub use crate::names::QualifiedName;

/// Status shared by every kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceStatus {
    /// `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Catalog version written (or verified) for this generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_resource_version: Option<i64>,
    /// Catalog objects this resource owns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub object_keys: Vec<String>,
    /// Hash of the canonical desired definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_hash: Option<String>,
    /// When the desired state was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_time: Option<String>,
    /// Last handled value of `basalt.dev/sync-requested-at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_request: Option<String>,
    /// Ready, Consistent and Drifted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The status of a kind: the fields every kind has ([`ResourceStatus`]), plus the kind's own
/// (only [`super::RemoteSchemaStatus`] has any). The reconcile writes the common part for every
/// kind.
pub trait KindStatus:
    Clone + Default + PartialEq + std::fmt::Debug + Serialize + Send + Sync + 'static
{
    /// The fields every kind has.
    fn common(&self) -> &ResourceStatus;
    /// The same, to update.
    fn common_mut(&mut self) -> &mut ResourceStatus;
}

impl KindStatus for ResourceStatus {
    fn common(&self) -> &ResourceStatus {
        self
    }
    fn common_mut(&mut self) -> &mut ResourceStatus {
        self
    }
}

/// A header sent with each request (an event delivery, a call to a remote schema or an
/// action's handler): a literal value, or an environment variable's for secrets.
#[derive(KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    cel,
    validation = Rule::new("has(self.value) != has(self.valueFromEnv)")
        .message("exactly one of value and valueFromEnv")
)]
pub struct HeaderSpec {
    /// Header name.
    pub name: String,
    /// Literal value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Environment variable holding the value (a token, say): set it in the engine AND the
    /// controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from_env: Option<String>,
}

/// Inserts `key: value` when the value is present.
pub(super) fn put<T: serde::Serialize>(map: &mut Map<String, Value>, key: &str, value: &Option<T>) {
    if let Some(v) = value {
        if let Ok(v) = serde_json::to_value(v) {
            map.insert(key.to_owned(), v);
        }
    }
}

pub(super) fn table_name(name: &QualifiedName) -> Value {
    json!({"schema": name.schema, "name": name.name})
}

pub(super) fn spec_path() -> JsonPath {
    JsonPath::root().key("spec")
}

/// Headers in the metadata API's form: `{name, value}` or `{name, value_from_env}`.
pub(super) fn headers_json(headers: &[HeaderSpec]) -> Value {
    Value::Array(
        headers
            .iter()
            .map(|h| {
                let mut hm = Map::new();
                hm.insert("name".into(), json!(h.name));
                put(&mut hm, "value", &h.value);
                put(&mut hm, "value_from_env", &h.value_from_env);
                Value::Object(hm)
            })
            .collect(),
    )
}

pub(super) fn qualified(t: &QualifiedTable) -> Value {
    json!({"schema": t.schema, "name": t.name})
}

pub(super) fn put_value(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value.filter(|v| !v.is_null()) {
        map.insert(key.to_owned(), v);
    }
}

pub(super) fn text(s: &Option<String>) -> Option<Value> {
    s.as_ref().map(|s| json!(s))
}

/// Headers, metadata field → CRD field (`None` when there are none). Values read from the
/// environment stay the variable's name: the catalog never holds them.
pub(super) fn headers_spec(headers: &[Header]) -> Option<Value> {
    if headers.is_empty() {
        return None;
    }
    let list = headers
        .iter()
        .map(|h| match h {
            Header::Value { name, value } => json!({"name": name, "value": value}),
            Header::FromEnv {
                name,
                value_from_env,
            } => json!({"name": name, "valueFromEnv": value_from_env}),
        })
        .collect();
    Some(Value::Array(list))
}

/// A table's part of an exported resource's name: its name, after its schema unless it is
/// `public`.
pub(super) fn table_parts(t: &QualifiedTable) -> Vec<String> {
    if t.schema == "public" {
        vec![t.name.clone()]
    } else {
        vec![t.schema.clone(), t.name.clone()]
    }
}
