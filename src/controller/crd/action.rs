//! The `Action` kind: a GraphQL query or mutation field answered by an HTTP handler, with the
//! roles allowed to call it (`docs/kubernetes.md`, "Kinds"). Its fields are `create_action`'s
//! and `create_action_permission`'s in camelCase; the types it names come from CustomTypeSets.

use super::{HeaderSpec, ResourceStatus};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
