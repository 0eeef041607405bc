//! LogicalModel: a named row shape with the roles that may select it, which NativeQuery
//! resources return (`docs/native-queries.md`, "Kubernetes").

use super::common::*;
use super::{ExportedSpec, Kind};
use crate::metadata::objects::{model_settings, Object};
use crate::metadata::types::{LogicalModelEntry, LogicalModelType, Metadata};
use crate::metadata::{Code, MetadataError};
use crate::ops::native_queries::NativeOp;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// A logical model: the fields of the rows native queries return (Postgres types, or other
/// models), and each role's select permission on them.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "LogicalModel",
    namespaced,
    status = "ResourceStatus",
    shortname = "blm",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Model","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Roles","type":"string","jsonPath":".spec.selectPermissions[*].role","priority":1}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct LogicalModelSpec {
    /// Model name: the GraphQL type's (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("name is immutable"))]
    pub name: String,
    /// The GraphQL type's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its fields, each named once.
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub fields: Vec<ModelFieldSpec>,
    /// Roles that may select it, each listed once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["role"]))]
    pub select_permissions: Vec<ModelPermissionSpec>,
}

/// A field of a logical model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelFieldSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "type")]
    pub field_type: ModelTypeSpec,
}

/// What a field holds: exactly one of `scalar`, `logicalModel` and `array`.
#[derive(KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    cel,
    validation = Rule::new("(has(self.scalar) ? 1 : 0) + (has(self.logicalModel) ? 1 : 0) + (has(self.array) ? 1 : 0) == 1")
        .message("a type has exactly one of scalar, logicalModel and array")
)]
pub struct ModelTypeSpec {
    /// A Postgres type (`integer`, `public.mood`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scalar: Option<String>,
    /// One row of another logical model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_model: Option<String>,
    /// A list of rows of another logical model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<ModelArraySpec>,
    /// May be null (default: no).
    #[serde(default)]
    pub nullable: bool,
}

/// The rows of an array field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelArraySpec {
    pub logical_model: String,
    #[serde(default)]
    pub nullable: bool,
}

/// A role's select permission on the model.
#[derive(KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelPermissionSpec {
    /// The role (not admin, which selects everything).
    #[x_kube(validation = Rule::new("self != 'admin'").message("the admin role can always select every model"))]
    pub role: String,
    /// `columns` (`"*"` or scalar field names), `filter` (a BoolExp over them), `limit`.
    pub permission: ModelSelectSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The rules of a model's select permission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelSelectSpec {
    #[schemars(schema_with = "preserved_any")]
    pub columns: Value,
    #[schemars(schema_with = "preserved_object")]
    pub filter: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 4294967295_i64))]
    pub limit: Option<i64>,
}

impl LogicalModelSpec {
    /// The `track_logical_model` arguments the resource stands for.
    pub fn to_json(&self) -> Value {
        let fields: Vec<Value> = self
            .fields
            .iter()
            .map(|f| {
                let t = &f.field_type;
                let mut ty = Map::new();
                put(&mut ty, "scalar", &t.scalar);
                put(&mut ty, "logical_model", &t.logical_model);
                if let Some(a) = &t.array {
                    ty.insert(
                        "array".into(),
                        json!({"logical_model": a.logical_model, "nullable": a.nullable}),
                    );
                }
                ty.insert("nullable".into(), json!(t.nullable));
                let mut m = Map::new();
                m.insert("name".into(), json!(f.name));
                m.insert("type".into(), Value::Object(ty));
                put(&mut m, "description", &f.description);
                Value::Object(m)
            })
            .collect();
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("fields".into(), Value::Array(fields));
        put(&mut m, "description", &self.description);
        Value::Object(m)
    }

    /// The catalog objects the resource declares: the model, then one per permission, each
    /// parsed by the metadata API's own parsers.
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        let path = spec_path();
        let Some(NativeOp::TrackModel(entry)) =
            NativeOp::parse("track_logical_model", &self.to_json(), &path)?
        else {
            return Err(unexpected(path, "track_logical_model"));
        };
        let mut out = vec![Object::LogicalModel(Box::new(model_settings(&entry)))];
        let mut roles: Vec<&str> = Vec::new();
        for (i, p) in self.select_permissions.iter().enumerate() {
            let at = path.key("selectPermissions").index(i);
            if roles.contains(&p.role.as_str()) {
                return Err(MetadataError::new(
                    Code::ParseFailed,
                    at.key("role"),
                    format!("the role \"{}\" is listed more than once", p.role),
                ));
            }
            roles.push(&p.role);
            let mut permission = json!({"columns": p.permission.columns, "filter": p.permission.filter});
            if let Some(limit) = p.permission.limit {
                permission["limit"] = json!(limit);
            }
            let mut args = json!({"name": self.name, "role": p.role, "permission": permission});
            if let Some(comment) = &p.comment {
                args["comment"] = json!(comment);
            }
            let parsed = NativeOp::parse("create_logical_model_select_permission", &args, &at)?;
            let Some(NativeOp::CreatePermission { permission, .. }) = parsed else {
                return Err(unexpected(at, "create_logical_model_select_permission"));
            };
            out.push(Object::LogicalModelPermission(entry.name.clone(), permission));
        }
        Ok(out)
    }
}

fn unexpected(path: JsonPath, op: &str) -> MetadataError {
    // The parser answers each operation with its own variant; anything else is a bug.
    MetadataError::new(Code::Unexpected, path, format!("{op} did not parse as expected"))
}

/// A model entry as a spec, metadata field → CRD field.
fn spec_of(m: &LogicalModelEntry) -> Value {
    let fields: Vec<Value> = m
        .fields
        .iter()
        .map(|f| {
            let ty = match &f.field_type {
                LogicalModelType::Scalar { scalar, nullable } => {
                    json!({"scalar": scalar, "nullable": nullable})
                }
                LogicalModelType::Model { model, nullable } => {
                    json!({"logicalModel": model, "nullable": nullable})
                }
                LogicalModelType::Array {
                    model,
                    element_nullable,
                    nullable,
                } => json!({"array": {"logicalModel": model, "nullable": element_nullable},
                    "nullable": nullable}),
            };
            let mut field = Map::new();
            field.insert("name".into(), json!(f.name.0));
            put_value(&mut field, "description", text(&f.description));
            field.insert("type".into(), ty);
            Value::Object(field)
        })
        .collect();
    let mut spec = Map::new();
    spec.insert("name".into(), json!(m.name.0));
    put_value(&mut spec, "description", text(&m.description));
    spec.insert("fields".into(), Value::Array(fields));
    if !m.select_permissions.is_empty() {
        let permissions: Vec<Value> = m
            .select_permissions
            .iter()
            .map(|p| {
                let mut v = json!({"role": p.role.0, "permission": p.permission});
                if let Some(comment) = &p.comment {
                    v["comment"] = json!(comment);
                }
                v
            })
            .collect();
        spec.insert("selectPermissions".into(), Value::Array(permissions));
    }
    Value::Object(spec)
}

impl Kind for LogicalModel {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        metadata
            .logical_models
            .iter()
            .map(|m| ExportedSpec::new(vec![m.name.0.clone()], spec_of(m)))
            .collect()
    }
}
