//! QueryCollection: a named set of GraphQL queries (for the allow-list).

use super::common::*;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use super::{ExportedSpec, Kind};
use crate::metadata::objects::Object;
use crate::metadata::parse::parse;
use crate::metadata::types::{CollectionEntry, Metadata};
use crate::metadata::MetadataError;
use serde_json::{json, Map, Value};

/// A named set of GraphQL queries.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "QueryCollection",
    namespaced,
    status = "ResourceStatus",
    shortname = "bqc",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Collection","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct QueryCollectionSpec {
    /// Collection name (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("name is immutable"))]
    pub name: String,
    /// The queries.
    pub definition: CollectionDefinitionSpec,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// `definition` of a collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CollectionDefinitionSpec {
    /// Named GraphQL documents.
    pub queries: Vec<CollectionQuerySpec>,
}

/// A named GraphQL document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CollectionQuerySpec {
    /// Name.
    pub name: String,
    /// Document text.
    pub query: String,
}

impl QueryCollectionSpec {
    /// A QueryCollection as a collection entry (queries must parse, as for the API).
    pub fn entry(&self) -> Result<CollectionEntry, MetadataError> {
        let queries: Vec<Value> = self
            .definition
            .queries
            .iter()
            .map(|q| json!({"name": q.name, "query": q.query}))
            .collect();
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("definition".into(), json!({"queries": queries}));
        put(&mut m, "comment", &self.comment);
        let entry: CollectionEntry = parse(&Value::Object(m), &spec_path())?;
        crate::ops::check_collection(&entry, &spec_path())?;
        Ok(entry)
    }

    /// The catalog object a QueryCollection declares.
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        Ok(vec![Object::Collection(self.entry()?)])
    }
}

fn spec_of(c: &CollectionEntry) -> Value {
    let queries: Vec<Value> = c
        .definition
        .queries
        .iter()
        .map(|q| json!({"name": q.name.0, "query": q.query}))
        .collect();
    let mut spec = Map::new();
    spec.insert("name".into(), json!(c.name.0));
    spec.insert("definition".into(), json!({"queries": queries}));
    put_value(&mut spec, "comment", text(&c.comment));
    Value::Object(spec)
}

impl Kind for QueryCollection {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        metadata
            .query_collections
            .iter()
            .map(|c| ExportedSpec::new(vec![c.name.0.clone()], spec_of(c)))
            .collect()
    }
}
