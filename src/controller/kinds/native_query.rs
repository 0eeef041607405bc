//! NativeQuery: SQL served as a root field, its rows of a LogicalModel's shape
//! (`docs/native-queries.md`, "Kubernetes"). `code` passes byte for byte.

use super::common::*;
use super::{ExportedSpec, Kind};
use crate::metadata::objects::Object;
use crate::metadata::types::{Metadata, NativeQueryEntry};
use crate::metadata::{Code, MetadataError};
use crate::ops::native_queries::NativeOp;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// A native query: read-only SQL with `{{argument}}` placeholders (each bound as a parameter),
/// served as a query root field over its LogicalModel's rows. Helm users escape placeholders in
/// templates (`{{ "{{max_length}}" }}`).
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "NativeQuery",
    plural = "nativequeries",
    namespaced,
    status = "ResourceStatus",
    shortname = "bnq",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"RootField","type":"string","jsonPath":".spec.rootFieldName"}"#,
    printcolumn = r#"{"name":"Returns","type":"string","jsonPath":".spec.returns"}"#,
    printcolumn = r#"{"name":"Type","type":"string","jsonPath":".spec.type","priority":1}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct NativeQuerySpec {
    /// The root field (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("rootFieldName is immutable"))]
    pub root_field_name: String,
    /// The SQL, byte for byte.
    pub code: String,
    /// The LogicalModel of its rows.
    pub returns: String,
    /// `query` (the only kind).
    #[serde(rename = "type", default)]
    pub query_type: QueryTypeSpec,
    /// Its arguments by name (keys verbatim).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arguments: BTreeMap<String, QueryArgumentSpec>,
    /// The field's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What a native query is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum QueryTypeSpec {
    #[default]
    Query,
}

/// An argument of a native query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueryArgumentSpec {
    /// A Postgres type.
    #[serde(rename = "type")]
    pub arg_type: String,
    #[serde(default)]
    pub nullable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl NativeQuerySpec {
    /// The `track_native_query` arguments the resource stands for.
    pub fn to_json(&self) -> Value {
        let arguments: Map<String, Value> = self
            .arguments
            .iter()
            .map(|(name, a)| {
                let mut m = Map::new();
                m.insert("type".into(), json!(a.arg_type));
                m.insert("nullable".into(), json!(a.nullable));
                put(&mut m, "description", &a.description);
                (name.clone(), Value::Object(m))
            })
            .collect();
        let mut m = Map::new();
        m.insert("root_field_name".into(), json!(self.root_field_name));
        m.insert("code".into(), json!(self.code));
        m.insert("returns".into(), json!(self.returns));
        m.insert("arguments".into(), Value::Object(arguments));
        put(&mut m, "description", &self.description);
        Value::Object(m)
    }

    /// The query, parsed and checked by the metadata API's own parser.
    pub fn entry(&self) -> Result<NativeQueryEntry, MetadataError> {
        let path = spec_path();
        match NativeOp::parse("track_native_query", &self.to_json(), &path)? {
            Some(NativeOp::TrackQuery(entry)) => Ok(*entry),
            // The parser answers `track_native_query` so; anything else is a bug.
            _ => Err(MetadataError::new(
                Code::Unexpected,
                path,
                "track_native_query did not parse as a native query",
            )),
        }
    }
}

fn spec_of(q: &NativeQueryEntry) -> Value {
    let mut spec = Map::new();
    spec.insert("rootFieldName".into(), json!(q.root_field_name.0));
    spec.insert("code".into(), json!(q.code));
    spec.insert("returns".into(), json!(q.returns.0));
    if !q.arguments.is_empty() {
        let arguments: Map<String, Value> = q
            .arguments
            .iter()
            .map(|(name, a)| {
                let mut m = Map::new();
                m.insert("type".into(), json!(a.arg_type));
                m.insert("nullable".into(), json!(a.nullable));
                put_value(&mut m, "description", text(&a.description));
                (name.clone(), Value::Object(m))
            })
            .collect();
        spec.insert("arguments".into(), Value::Object(arguments));
    }
    put_value(&mut spec, "description", text(&q.description));
    Value::Object(spec)
}

impl Kind for NativeQuery {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        Ok(vec![Object::NativeQuery(Box::new(self.spec.entry()?))])
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        metadata
            .native_queries
            .iter()
            .map(|q| ExportedSpec::new(vec![q.root_field_name.0.clone()], spec_of(q)))
            .collect()
    }
}
