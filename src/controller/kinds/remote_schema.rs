//! RemoteSchema: a remote GraphQL server served beside the tables; its status also says what
//! the catalog knows of the server's last introspection.

use super::common::*;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use super::{ExportedSpec, Kind};
use crate::catalog::CatalogError;
use crate::metadata::objects::Object;
use crate::metadata::parse::parse;
use crate::metadata::types::{
    GraphQLName, Metadata, RemoteSchemaEntry, RemoteSchemaRelationshipEntry,
};
use crate::metadata::{Code, MetadataError};
use crate::ops::remote_schemas::RemoteSchemaOp;
use serde_json::{json, Map, Value};

/// A remote GraphQL server whose schema Basalt introspects and serves beside its own. Secrets
/// stay out of the spec: a URL that carries credentials is read from the environment
/// (`urlFromEnv`), and so is a secret header value (`valueFromEnv`).
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "RemoteSchema",
    namespaced,
    status = "RemoteSchemaStatus",
    shortname = "brs",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Schema","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".spec.definition.url","priority":1}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RemoteSchemaSpec {
    /// Remote schema name, unique in the catalog (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("name is immutable"))]
    pub name: String,
    /// Where and how to reach the server.
    pub definition: RemoteSchemaDefinitionSpec,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Relationships from the remote's object types to tables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend(
        "x-kubernetes-list-type" = "map",
        "x-kubernetes-list-map-keys" = ["typeName", "name"]
    ))]
    pub remote_relationships: Vec<RemoteSchemaRelationshipSpec>,
}

/// A relationship from an object type of the remote schema to a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteSchemaRelationshipSpec {
    /// The remote's object type that gets the field.
    pub type_name: String,
    /// Field name.
    pub name: String,
    /// Where it leads.
    pub definition: ToSourceDefinitionSpec,
}

/// `definition` of a remote schema's relationship: the table it leads to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToSourceDefinitionSpec {
    /// The table, the kind of relationship and the field mapping.
    pub to_source: ToSourceSpec,
}

/// The target of a remote schema's relationship.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToSourceSpec {
    /// The database (only `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["default"]))]
    pub source: Option<String>,
    /// The table (`schema` defaults to `public`).
    pub table: QualifiedName,
    /// One row (`object`) or a list (`array`).
    pub relationship_type: RelationshipTypeSpec,
    /// Remote field → column (verbatim).
    #[schemars(schema_with = "preserved_object")]
    pub field_mapping: Value,
}

/// `relationshipType` of a remote schema's relationship.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RelationshipTypeSpec {
    Object,
    Array,
}

/// `definition` of a remote schema: the server's URL and how requests to it are made.
#[derive(KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    cel,
    validation = Rule::new("has(self.url) != has(self.urlFromEnv)")
        .message("exactly one of url and urlFromEnv")
)]
pub struct RemoteSchemaDefinitionSpec {
    /// URL of the GraphQL endpoint. One that carries credentials belongs in `urlFromEnv`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Environment variable holding the URL. Set it in the engine AND the controller: the
    /// controller introspects the server when it applies the resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_from_env: Option<String>,
    /// Headers sent with every request to the server, introspection included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderSpec>,
    /// Whether the headers of the client's request are forwarded to the server.
    #[serde(default)]
    pub forward_client_headers: bool,
    /// Timeout of one request to the server, in seconds (the metadata API's default where
    /// absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self > 0").message("timeoutSeconds must be greater than 0"))]
    #[schemars(range(max = 4294967295_i64))]
    pub timeout_seconds: Option<i64>,
}

/// Status of a RemoteSchema: the status every kind has, plus the remote server's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteSchemaStatus {
    /// The fields every kind has.
    #[serde(flatten)]
    pub common: ResourceStatus,
    /// The server as the catalog last saw it, refreshed after each successful reconcile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteServerStatus>,
}

impl KindStatus for RemoteSchemaStatus {
    fn common(&self) -> &ResourceStatus {
        &self.common
    }
    fn common_mut(&mut self) -> &mut ResourceStatus {
        &mut self.common
    }
}

/// What the catalog knows of a remote server from introspecting its current definition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteServerStatus {
    /// Whether the last introspection succeeded (the engine serves the schema it returned).
    pub reachable: bool,
    /// When the server was last introspected successfully (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_introspected: Option<String>,
    /// Why the last introspection failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When that failure happened (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error_time: Option<String>,
}

impl From<crate::catalog::remote::RemoteStatus> for RemoteServerStatus {
    fn from(r: crate::catalog::remote::RemoteStatus) -> Self {
        RemoteServerStatus {
            reachable: r.error.is_none() && r.introspected_at.is_some(),
            last_introspected: r.introspected_at,
            last_error: r.error,
            last_error_time: r.failed_at,
        }
    }
}

impl RemoteSchemaSpec {
    /// The `add_remote_schema` arguments a RemoteSchema stands for: `{name, definition, comment}`,
    /// the body of `{"type": "add_remote_schema", "args": …}`.
    pub fn to_json(&self) -> Value {
        let d = &self.definition;
        let mut definition = Map::new();
        put(&mut definition, "url", &d.url);
        put(&mut definition, "url_from_env", &d.url_from_env);
        if !d.headers.is_empty() {
            definition.insert("headers".into(), headers_json(&d.headers));
        }
        definition.insert(
            "forward_client_headers".into(),
            json!(d.forward_client_headers),
        );
        put(&mut definition, "timeout_seconds", &d.timeout_seconds);
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("definition".into(), Value::Object(definition));
        put(&mut m, "comment", &self.comment);
        Value::Object(m)
    }

    /// A RemoteSchema as the catalog's remote schema entry, parsed and shape-checked by the
    /// metadata API's own `add_remote_schema` parser. Whether the server answers, and its
    /// environment variables are set, is the operation's check when it is applied:
    /// `add_remote_schema` introspects the server.
    pub fn entry(&self) -> Result<RemoteSchemaEntry, MetadataError> {
        let path = spec_path();
        match RemoteSchemaOp::parse("add_remote_schema", &self.to_json(), &path)? {
            Some(RemoteSchemaOp::Add(entry)) => Ok(*entry),
            // The parser answers `add_remote_schema` with `Add`; anything else is a bug.
            _ => Err(MetadataError::new(
                Code::Unexpected,
                path,
                "add_remote_schema did not parse as a remote schema",
            )),
        }
    }

    /// The catalog objects a RemoteSchema declares: the remote schema, then each of its
    /// relationships (checked by the metadata API's own parser).
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        let entry = self.entry()?;
        let mut out = vec![Object::RemoteSchema(entry.clone())];
        for (i, r) in self.remote_relationships.iter().enumerate() {
            let t = &r.definition.to_source;
            let mut target = Map::new();
            put(&mut target, "source", &t.source);
            target.insert("table".into(), table_name(&t.table));
            target.insert("relationship_type".into(), json!(t.relationship_type));
            target.insert("field_mapping".into(), t.field_mapping.clone());
            let relationship = json!({"name": r.name, "definition": {"to_source": target}});
            let path = spec_path().key("remoteRelationships").index(i);
            let relationship: RemoteSchemaRelationshipEntry = parse(&relationship, &path)?;
            let type_name: GraphQLName = parse(&json!(r.type_name), &path.key("typeName"))?;
            out.push(Object::RemoteSchemaRelationship(
                entry.name.clone(),
                type_name,
                relationship,
            ));
        }
        Ok(out)
    }
}

/// A remote schema, metadata field → CRD field. A URL or header value read from the
/// environment stays the variable's name (`urlFromEnv`, `valueFromEnv`).
fn spec_of(r: &RemoteSchemaEntry) -> Value {
    let d = &r.definition;
    let mut definition = Map::new();
    put_value(&mut definition, "url", text(&d.url));
    put_value(&mut definition, "urlFromEnv", text(&d.url_from_env));
    put_value(&mut definition, "headers", headers_spec(&d.headers));
    if d.forward_client_headers {
        definition.insert("forwardClientHeaders".into(), json!(true));
    }
    put_value(
        &mut definition,
        "timeoutSeconds",
        d.timeout_seconds.map(|t| json!(t)),
    );
    let mut spec = Map::new();
    spec.insert("name".into(), json!(r.name.0));
    spec.insert("definition".into(), Value::Object(definition));
    put_value(&mut spec, "comment", text(&r.comment));
    let relationships: Vec<Value> = r
        .remote_relationships
        .iter()
        .flat_map(|group| {
            group.relationships.iter().map(move |rel| {
                let t = &rel.definition.to_source;
                json!({"typeName": group.type_name, "name": rel.name, "definition": {"toSource": {
                    "table": qualified(&t.table), "relationshipType": t.relationship_type,
                    "fieldMapping": t.field_mapping}}})
            })
        })
        .collect();
    if !relationships.is_empty() {
        spec.insert("remoteRelationships".into(), Value::Array(relationships));
    }
    Value::Object(spec)
}

impl Kind for RemoteSchema {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    /// `status.remote`: whether the last introspection of the definition succeeded, and when
    /// the server was last introspected or last failed (`basalt_catalog.remote_schemas`).
    async fn observe(
        &self,
        pool: &deadpool_postgres::Pool,
        status: &mut RemoteSchemaStatus,
    ) -> Result<(), CatalogError> {
        let client = pool.get().await?;
        let remote = crate::catalog::remote::status(&**client, &self.spec.name).await?;
        status.remote = remote.map(RemoteServerStatus::from);
        Ok(())
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        metadata
            .remote_schemas
            .iter()
            .map(|r| ExportedSpec::new(vec![r.name.0.clone()], spec_of(r)))
            .collect()
    }
}
