//! NativeQuery: SQL served as a root field, its rows of a LogicalModel's shape
//! (`docs/native-queries.md`, "Kubernetes"). `code` passes byte for byte.

use super::common::*;
use super::{ExportedSpec, Kind};
use crate::metadata::objects::Object;
use crate::metadata::types::{Metadata, NativeQueryEntry, NativeQueryRelationship};
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
    /// Relationships to at most one row of a NativeQuery or TrackedTable each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub object_relationships: Vec<QueryRelationshipSpec>,
    /// Relationships to any number of rows of a NativeQuery or TrackedTable each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub array_relationships: Vec<QueryRelationshipSpec>,
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

/// A relationship of the query's rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueryRelationshipSpec {
    /// The field's name.
    pub name: String,
    /// The join and its target.
    pub using: QueryRelationshipUsingSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The field pairs of a relationship and its one target.
#[derive(KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    cel,
    validation = Rule::new("has(self.remoteNativeQuery) != has(self.remoteTable)")
        .message("a relationship has exactly one of remoteNativeQuery and remoteTable")
)]
pub struct QueryRelationshipUsingSpec {
    /// This query's field → the target's field or column (verbatim).
    #[schemars(schema_with = "preserved_object")]
    pub column_mapping: Value,
    /// The target NativeQuery's root field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_native_query: Option<String>,
    /// The target TrackedTable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_table: Option<QualifiedName>,
}

impl QueryRelationshipSpec {
    fn to_json(&self) -> Value {
        let u = &self.using;
        let mut using = Map::new();
        using.insert("column_mapping".into(), u.column_mapping.clone());
        put(&mut using, "remote_native_query", &u.remote_native_query);
        put_value(&mut using, "remote_table", u.remote_table.as_ref().map(table_name));
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("using".into(), Value::Object(using));
        put(&mut m, "comment", &self.comment);
        Value::Object(m)
    }
}

/// A relationship's spec, from the catalog's entry.
fn relationship_spec(r: &NativeQueryRelationship) -> Value {
    let u = &r.using;
    let mut using = Map::new();
    using.insert("columnMapping".into(), json!(u.column_mapping));
    put(&mut using, "remoteNativeQuery", &u.remote_native_query);
    put_value(&mut using, "remoteTable", u.remote_table.as_ref().map(qualified));
    let mut m = Map::new();
    m.insert("name".into(), json!(r.name.0));
    m.insert("using".into(), Value::Object(using));
    put_value(&mut m, "comment", text(&r.comment));
    Value::Object(m)
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
        let relationships = |list: &[QueryRelationshipSpec]| {
            Value::Array(list.iter().map(QueryRelationshipSpec::to_json).collect())
        };
        m.insert(
            "object_relationships".into(),
            relationships(&self.object_relationships),
        );
        m.insert(
            "array_relationships".into(),
            relationships(&self.array_relationships),
        );
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
    let lists = [
        ("objectRelationships", &q.object_relationships),
        ("arrayRelationships", &q.array_relationships),
    ];
    for (key, list) in lists {
        if !list.is_empty() {
            let specs = list.iter().map(relationship_spec).collect();
            spec.insert(key.into(), Value::Array(specs));
        }
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
