//! TrackedFunction: a Postgres function returning rows of a tracked table, exposed as a root
//! field, with the roles granted it (`docs/functions.md`, "Kubernetes"). Its fields are
//! `track_function`'s and `create_function_permission`'s in camelCase.

use super::common::*;
use super::{ExportedSpec, Kind};
use crate::metadata::objects::{function_settings, Object};
use crate::metadata::types::{ExposedAs, FunctionEntry, FunctionPermission, Metadata, Name};
use crate::metadata::{Code, MetadataError};
use crate::ops::FunctionOp;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// A tracked function: its rows become a root field (query or mutation), read under the select
/// permission of the table it returns. The function itself comes from a migration.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "TrackedFunction",
    namespaced,
    status = "ResourceStatus",
    shortname = "bfn",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Schema","type":"string","jsonPath":".spec.function.schema"}"#,
    printcolumn = r#"{"name":"Function","type":"string","jsonPath":".spec.function.name"}"#,
    printcolumn = r#"{"name":"ExposedAs","type":"string","jsonPath":".spec.configuration.exposedAs"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TrackedFunctionSpec {
    /// The function (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("function is immutable"))]
    pub function: QualifiedName,
    /// How it is exposed.
    #[serde(default, skip_serializing_if = "FunctionConfigurationSpec::is_empty")]
    pub configuration: FunctionConfigurationSpec,
    /// The field's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Roles granted the function, each listed once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["role"]))]
    pub permissions: Vec<FunctionPermissionSpec>,
}

/// `configuration` of a tracked function.
#[derive(KubeSchema, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionConfigurationSpec {
    /// Base name of the field, its aggregate field and its arguments type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_name: Option<String>,
    /// Exact names of the root fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_root_fields: Option<FunctionRootFieldsSpec>,
    /// The argument that receives the session as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_argument: Option<String>,
    /// `query` or `mutation`; absent: from the function's volatility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposed_as: Option<ExposedAsSpec>,
}

impl FunctionConfigurationSpec {
    fn is_empty(&self) -> bool {
        self == &FunctionConfigurationSpec::default()
    }
}

/// `customRootFields` of a tracked function.
#[derive(KubeSchema, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    cel,
    validation = Rule::new("!has(self.function) || !has(self.functionAggregate) || self.function != self.functionAggregate")
        .message("function and functionAggregate must differ")
)]
pub struct FunctionRootFieldsSpec {
    /// The root field's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// The aggregate field's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_aggregate: Option<String>,
}

/// Where the function's field goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExposedAsSpec {
    Query,
    Mutation,
}

/// A role granted the function.
#[derive(KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionPermissionSpec {
    /// The role (not admin, which may call every function).
    #[x_kube(validation = Rule::new("self != 'admin'").message("the admin role can always call every function"))]
    pub role: String,
}

impl TrackedFunctionSpec {
    /// The `track_function` (version 2) arguments a TrackedFunction stands for (its grants are
    /// separate requests).
    pub fn to_json(&self) -> Value {
        let c = &self.configuration;
        let mut configuration = Map::new();
        put(&mut configuration, "session_argument", &c.session_argument);
        put(&mut configuration, "exposed_as", &c.exposed_as);
        if let Some(fields) = &c.custom_root_fields {
            let mut m = Map::new();
            put(&mut m, "function", &fields.function);
            put(&mut m, "function_aggregate", &fields.function_aggregate);
            configuration.insert("custom_root_fields".into(), Value::Object(m));
        }
        put(&mut configuration, "custom_name", &c.custom_name);
        let mut m = Map::new();
        m.insert(
            "function".into(),
            json!({"schema": self.function.schema, "name": self.function.name}),
        );
        m.insert("configuration".into(), Value::Object(configuration));
        put(&mut m, "comment", &self.comment);
        Value::Object(m)
    }

    /// The function's entry, grants included, parsed by the metadata API's own parsers.
    pub fn entry(&self) -> Result<FunctionEntry, MetadataError> {
        let path = spec_path();
        let Some(FunctionOp::Track(mut entry)) =
            FunctionOp::parse("track_function", &self.to_json(), &path)?
        else {
            // The parser answers `track_function` with `Track`; anything else is a bug.
            return Err(MetadataError::new(
                Code::Unexpected,
                path,
                "track_function did not parse as a function",
            ));
        };
        for (i, p) in self.permissions.iter().enumerate() {
            let at = path.key("permissions").index(i).key("role");
            if p.role.is_empty() || entry.permissions.iter().any(|q| q.role.0 == p.role) {
                return Err(MetadataError::new(
                    Code::ParseFailed,
                    at,
                    format!("the role \"{}\" is empty or listed more than once", p.role),
                ));
            }
            entry.permissions.push(FunctionPermission {
                role: Name(p.role.clone()),
            });
        }
        Ok(entry)
    }

    /// The catalog objects a TrackedFunction declares: the function, then one per grant.
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        let entry = self.entry()?;
        let mut out = vec![Object::Function(Box::new(function_settings(&entry)))];
        out.extend(
            entry
                .permissions
                .into_iter()
                .map(|p| Object::FunctionPermission(entry.function.clone(), p)),
        );
        Ok(out)
    }
}

/// A function entry as a spec, metadata field → CRD field.
fn spec_of(f: &FunctionEntry) -> Value {
    let c = &f.configuration;
    let mut configuration = Map::new();
    put_value(
        &mut configuration,
        "customName",
        c.custom_name.as_ref().map(|n| json!(n.0)),
    );
    if !c.custom_root_fields.is_empty() {
        let mut m = Map::new();
        let fields = &c.custom_root_fields;
        put_value(&mut m, "function", fields.function.as_ref().map(|n| json!(n.0)));
        put_value(
            &mut m,
            "functionAggregate",
            fields.function_aggregate.as_ref().map(|n| json!(n.0)),
        );
        configuration.insert("customRootFields".into(), Value::Object(m));
    }
    put_value(&mut configuration, "sessionArgument", text(&c.session_argument));
    put_value(
        &mut configuration,
        "exposedAs",
        c.exposed_as.map(|e| match e {
            ExposedAs::Query => json!("query"),
            ExposedAs::Mutation => json!("mutation"),
        }),
    );
    let mut spec = Map::new();
    spec.insert(
        "function".into(),
        json!({"schema": f.function.schema, "name": f.function.name}),
    );
    if !configuration.is_empty() {
        spec.insert("configuration".into(), Value::Object(configuration));
    }
    put_value(&mut spec, "comment", text(&f.comment));
    if !f.permissions.is_empty() {
        let roles: Vec<Value> = f
            .permissions
            .iter()
            .map(|p| json!({"role": p.role.0}))
            .collect();
        spec.insert("permissions".into(), Value::Array(roles));
    }
    Value::Object(spec)
}

impl Kind for TrackedFunction {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        metadata
            .functions
            .iter()
            .map(|f| {
                let name = table_parts(&f.function);
                ExportedSpec::new(name, spec_of(f))
            })
            .collect()
    }
}
