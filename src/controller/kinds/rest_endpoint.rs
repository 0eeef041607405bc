//! RestEndpoint: a query of a collection served at a URL (`/api/rest/<url>`).

use super::common::*;
use super::{ExportedSpec, Kind};
use crate::metadata::objects::Object;
use crate::metadata::types::{Metadata, RestEndpoint as RestEndpointEntry, RestMethod};
use crate::metadata::{Code, MetadataError};
use crate::ops::RestOp;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// A query of a QueryCollection served as a REST endpoint.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "RestEndpoint",
    namespaced,
    status = "ResourceStatus",
    shortname = "brest",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Endpoint","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".spec.url"}"#,
    printcolumn = r#"{"name":"Methods","type":"string","jsonPath":".spec.methods"}"#,
    printcolumn = r#"{"name":"Query","type":"string","jsonPath":".spec.definition.query.queryName","priority":1}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RestEndpointSpec {
    /// Endpoint name, unique in the catalog (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("name is immutable"))]
    pub name: String,
    /// The URL template below `/api/rest/` (`members/:id`).
    pub url: String,
    /// The HTTP methods it answers.
    #[x_kube(validation = Rule::new("size(self) > 0").message("methods must not be empty"))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub methods: Vec<MethodSpec>,
    /// The query it runs.
    pub definition: RestDefinitionSpec,
    /// Free text (shown in the OpenAPI document).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// An HTTP method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum MethodSpec {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

/// `definition` of an endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RestDefinitionSpec {
    /// The query of a collection.
    pub query: RestQuerySpec,
}

/// A query of a collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestQuerySpec {
    /// The collection.
    pub collection_name: String,
    /// The query's name in it.
    pub query_name: String,
}

impl RestEndpointSpec {
    /// The `create_rest_endpoint` arguments a RestEndpoint stands for.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("url".into(), json!(self.url));
        m.insert("methods".into(), json!(self.methods));
        m.insert(
            "definition".into(),
            json!({"query": {"collection_name": self.definition.query.collection_name,
                "query_name": self.definition.query.query_name}}),
        );
        put(&mut m, "comment", &self.comment);
        Value::Object(m)
    }

    /// The endpoint, shape-checked by the metadata API's own parser.
    pub fn entry(&self) -> Result<RestEndpointEntry, MetadataError> {
        let path = spec_path();
        match RestOp::parse("create_rest_endpoint", &self.to_json(), &path)? {
            Some(RestOp::Create(entry)) => Ok(entry),
            // The parser answers `create_rest_endpoint` with `Create`; anything else is a bug.
            _ => Err(MetadataError::new(
                Code::Unexpected,
                path,
                "create_rest_endpoint did not parse as an endpoint",
            )),
        }
    }
}

fn spec_of(e: &RestEndpointEntry) -> Value {
    let methods: Vec<&str> = e.methods.iter().map(|m| RestMethod::as_str(*m)).collect();
    let mut spec = Map::new();
    spec.insert("name".into(), json!(e.name));
    spec.insert("url".into(), json!(e.url));
    spec.insert("methods".into(), json!(methods));
    spec.insert(
        "definition".into(),
        json!({"query": {"collectionName": e.definition.query.collection_name,
            "queryName": e.definition.query.query_name}}),
    );
    put_value(&mut spec, "comment", text(&e.comment));
    Value::Object(spec)
}

impl Kind for RestEndpoint {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        Ok(vec![Object::RestEndpoint(self.spec.entry()?)])
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        metadata
            .rest_endpoints
            .iter()
            .map(|e| ExportedSpec::new(vec![e.name.clone()], spec_of(e)))
            .collect()
    }
}
