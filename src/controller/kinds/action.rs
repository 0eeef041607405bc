//! The `Action` kind: a GraphQL query or mutation field answered by an HTTP handler, with the
//! roles allowed to call it (`docs/kubernetes.md`, "Kinds"). Its fields are `create_action`'s
//! and `create_action_permission`'s in camelCase; the types it names come from CustomTypeSets.

use super::common::*;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use super::{ExportedSpec, Kind};
use crate::metadata::objects::Object;
use crate::metadata::types::{ActionEntry, ActionPermission, Metadata};
use crate::metadata::{Code, MetadataError};
use crate::ops::actions::ActionOp;
use serde_json::{json, Map, Value};

/// An action: a root field of `query_root` or `mutation_root` whose arguments are sent to an
/// HTTP handler and whose output comes back from it. Its argument and output types are custom
/// types (a CustomTypeSet); the action waits for them. Secrets stay out of the spec: a handler
/// URL may take `{{VARIABLE}}` templates and a header its value from the environment.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "Action",
    namespaced,
    status = "ResourceStatus",
    shortname = "baction",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Action","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Type","type":"string","jsonPath":".spec.definition.type"}"#,
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".spec.definition.kind"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ActionSpec {
    /// Action name: the root field's name, unique in the catalog (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("name is immutable"))]
    pub name: String,
    /// The field's type, arguments and output, and how its handler is called.
    pub definition: ActionDefinitionSpec,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Roles allowed to call the action (admin always may), each listed once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["role"]))]
    pub permissions: Vec<ActionPermissionSpec>,
}

/// Which root an action extends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ActionTypeSpec {
    /// A field of `query_root`, always synchronous.
    Query,
    /// A field of `mutation_root`.
    #[default]
    Mutation,
}

/// Whether a mutation answers after its handler or at once with an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ActionKindSpec {
    /// The handler is called during the request and its output returned.
    Synchronous,
    /// The call is logged and answered with its id; a worker calls the handler.
    Asynchronous,
}

/// `definition` of an action.
#[derive(KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    cel,
    validation = Rule::new("!has(self.kind) || self.type != 'query'")
        .message("kind is for mutations only: a query action is always synchronous")
)]
pub struct ActionDefinitionSpec {
    /// `query` or `mutation`.
    #[serde(rename = "type", default)]
    pub action_type: ActionTypeSpec,
    /// `synchronous` (the metadata API's default where absent) or `asynchronous`; mutations
    /// only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ActionKindSpec>,
    /// Arguments, of scalar, enum or input object types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<ActionArgumentSpec>,
    /// Output type: a custom object type, or a list of it (`ArchiveResult`, `[Item!]!`).
    pub output_type: String,
    /// The handler's URL. `{{VARIABLE}}` templates are read from the environment: set them in
    /// the engine AND the controller.
    pub handler: String,
    /// Headers sent with every call of the handler.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderSpec>,
    /// Whether the headers of the client's request are forwarded to the handler.
    #[serde(default)]
    pub forward_client_headers: bool,
    /// Seconds after which a call of the handler is abandoned (the metadata API's default
    /// where absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self > 0").message("timeout must be greater than 0"))]
    #[schemars(range(max = 4294967295_i64))]
    pub timeout: Option<i64>,
}

/// An argument of an action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ActionArgumentSpec {
    /// Name.
    pub name: String,
    /// Type expression (`Int!`, `[String]`, a custom type's name).
    #[serde(rename = "type")]
    pub arg_type: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A role allowed to call the action.
#[derive(KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionPermissionSpec {
    /// The role (not admin, which may call every action).
    #[x_kube(validation = Rule::new("self != 'admin'").message("the admin role can always run every action"))]
    pub role: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl ActionSpec {
    /// The `create_action` arguments an Action stands for: `{name, definition, comment}`, the body
    /// of `{"type": "create_action", "args": …}` (its permissions are separate requests).
    pub fn to_json(&self) -> Value {
        let d = &self.definition;
        let mut definition = Map::new();
        definition.insert("handler".into(), json!(d.handler));
        definition.insert("output_type".into(), json!(d.output_type));
        definition.insert(
            "forward_client_headers".into(),
            json!(d.forward_client_headers),
        );
        if !d.headers.is_empty() {
            definition.insert("headers".into(), headers_json(&d.headers));
        }
        if !d.arguments.is_empty() {
            let arguments: Vec<Value> = d
                .arguments
                .iter()
                .map(|a| {
                    let mut m = Map::new();
                    m.insert("name".into(), json!(a.name));
                    m.insert("type".into(), json!(a.arg_type));
                    put(&mut m, "description", &a.description);
                    Value::Object(m)
                })
                .collect();
            definition.insert("arguments".into(), Value::Array(arguments));
        }
        definition.insert("type".into(), json!(d.action_type));
        put(&mut definition, "kind", &d.kind);
        put(&mut definition, "timeout", &d.timeout);
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("definition".into(), Value::Object(definition));
        put(&mut m, "comment", &self.comment);
        Value::Object(m)
    }
}

/// The `create_action_permission` arguments of one of an Action's permissions.
pub fn permission_json(action: &str, permission: &ActionPermissionSpec) -> Value {
    let mut m = Map::new();
    m.insert("action".into(), json!(action));
    m.insert("role".into(), json!(permission.role));
    put(&mut m, "comment", &permission.comment);
    Value::Object(m)
}

impl ActionSpec {
    /// An Action as the catalog's action entry (without permissions), parsed and shape-checked by
    /// the metadata API's own `create_action` parser. Whether its types exist and its environment
    /// variables are set is the operation's check when it is applied.
    pub fn entry(&self) -> Result<ActionEntry, MetadataError> {
        let path = spec_path();
        match ActionOp::parse("create_action", &self.to_json(), &path)? {
            Some(ActionOp::Create(entry)) => Ok(*entry),
            // The parser answers `create_action` with `Create`; anything else is a bug.
            _ => Err(MetadataError::new(
                Code::Unexpected,
                path,
                "create_action did not parse as an action",
            )),
        }
    }

    /// An Action's permissions, each parsed by the metadata API's own `create_action_permission`
    /// parser. A role listed twice is refused here, as the second request would be.
    pub fn permissions(&self) -> Result<Vec<ActionPermission>, MetadataError> {
        let mut out: Vec<ActionPermission> = Vec::new();
        for (i, p) in self.permissions.iter().enumerate() {
            let path = spec_path().key("permissions").index(i);
            let args = permission_json(&self.name, p);
            let permission = match ActionOp::parse("create_action_permission", &args, &path)? {
                Some(ActionOp::CreatePermission { permission, .. }) => permission,
                // The parser answers `create_action_permission` so; anything else is a bug.
                _ => {
                    return Err(MetadataError::new(
                        Code::Unexpected,
                        path,
                        "create_action_permission did not parse as an action permission",
                    ))
                }
            };
            if out.iter().any(|q| q.role == permission.role) {
                return Err(MetadataError::new(
                    Code::ParseFailed,
                    path.key("role"),
                    format!("the role \"{}\" is listed more than once", permission.role),
                ));
            }
            out.push(permission);
        }
        Ok(out)
    }

    /// The catalog objects an Action declares: the action, then one per permission.
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        let entry = self.entry()?;
        let permissions = self.permissions()?;
        let name = entry.name.clone();
        let mut out = vec![Object::Action(Box::new(entry))];
        out.extend(
            permissions
                .into_iter()
                .map(|p| Object::ActionPermission(name.clone(), p)),
        );
        Ok(out)
    }
}

/// An action with its permissions, metadata field → CRD field. Header values read from the
/// environment stay the variable's name; `{{VARIABLE}}` templates in the handler stay as
/// written.
fn spec_of(a: &ActionEntry) -> Value {
    let d = &a.definition;
    let mut definition = Map::new();
    definition.insert("type".into(), json!(d.action_type));
    put_value(&mut definition, "kind", d.kind.map(|k| json!(k)));
    if !d.arguments.is_empty() {
        let arguments: Vec<Value> = d
            .arguments
            .iter()
            .map(|arg| {
                let mut m = Map::new();
                m.insert("name".into(), json!(arg.name.0));
                m.insert("type".into(), json!(arg.arg_type));
                put_value(&mut m, "description", text(&arg.description));
                Value::Object(m)
            })
            .collect();
        definition.insert("arguments".into(), Value::Array(arguments));
    }
    definition.insert("outputType".into(), json!(d.output_type));
    definition.insert("handler".into(), json!(d.handler));
    put_value(&mut definition, "headers", headers_spec(&d.headers));
    if d.forward_client_headers {
        definition.insert("forwardClientHeaders".into(), json!(true));
    }
    put_value(&mut definition, "timeout", d.timeout.map(|t| json!(t)));
    let mut spec = Map::new();
    spec.insert("name".into(), json!(a.name.0));
    spec.insert("definition".into(), Value::Object(definition));
    put_value(&mut spec, "comment", text(&a.comment));
    if !a.permissions.is_empty() {
        let permissions: Vec<Value> = a
            .permissions
            .iter()
            .map(|p| {
                let mut m = Map::new();
                m.insert("role".into(), json!(p.role.0));
                put_value(&mut m, "comment", text(&p.comment));
                Value::Object(m)
            })
            .collect();
        spec.insert("permissions".into(), Value::Array(permissions));
    }
    Value::Object(spec)
}

impl Kind for Action {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        metadata
            .actions
            .iter()
            .map(|a| ExportedSpec::new(vec![a.name.0.clone()], spec_of(a)))
            .collect()
    }
}
