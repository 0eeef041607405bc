//! The `basalt.dev/v1alpha1` custom resources whose metadata operations exist today
//! (`docs/kubernetes.md`, "Kinds"): TrackedTable, Permission, ComputedField, EventTrigger,
//! RemoteSchema, Action (`crd/action.rs`), CustomTypeSet, QueryCollection and AllowListEntry. Spec
//! fields are the metadata API's argument fields in camelCase; user data (BoolExps, presets,
//! column maps) passes through verbatim.

mod action;

pub use action::*;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
/// (only [`RemoteSchemaStatus`] has any). The reconcile writes the common part for every kind.
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

// ---- TrackedTable ---------------------------------------------------------------------------

/// A tracked table or view with its configuration and relationships.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "TrackedTable",
    namespaced,
    status = "ResourceStatus",
    shortname = "btable",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Schema","type":"string","jsonPath":".spec.table.schema"}"#,
    printcolumn = r#"{"name":"Table","type":"string","jsonPath":".spec.table.name"}"#,
    printcolumn = r#"{"name":"Enum","type":"boolean","jsonPath":".spec.isEnum","priority":1}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TrackedTableSpec {
    /// The relation (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("table is immutable"))]
    pub table: QualifiedName,
    /// Rows form a GraphQL enum.
    #[serde(default)]
    pub is_enum: bool,
    /// Custom root field and column names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<TableConfiguration>,
    /// Object relationships.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub object_relationships: Vec<ObjectRelationshipSpec>,
    /// Array relationships.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub array_relationships: Vec<ArrayRelationshipSpec>,
}

/// `configuration` of a tracked table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TableConfiguration {
    /// Root field names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_root_fields: Option<CustomRootFieldsSpec>,
    /// Column name → GraphQL field name (keys verbatim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object")]
    pub custom_column_names: Option<Value>,
}

/// Custom root field names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomRootFieldsSpec {
    /// `select`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<String>,
    /// `select_by_pk`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select_by_pk: Option<String>,
    /// `select_aggregate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select_aggregate: Option<String>,
    /// `insert`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert: Option<String>,
    /// `insert_one`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert_one: Option<String>,
    /// `update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<String>,
    /// `update_by_pk`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_by_pk: Option<String>,
    /// `delete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<String>,
    /// `delete_by_pk`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_by_pk: Option<String>,
}

/// `manualConfiguration` of a relationship.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManualConfigurationSpec {
    /// Related table.
    pub remote_table: QualifiedName,
    /// Local column → remote column (verbatim).
    #[schemars(schema_with = "preserved_object")]
    pub column_mapping: Value,
}

/// An object relationship.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRelationshipSpec {
    /// Field name.
    pub name: String,
    /// How rows relate.
    pub using: ObjectRelationshipUsing,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// `using` of an object relationship: exactly one key.
#[derive(KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    cel,
    validation = Rule::new("has(self.foreignKeyConstraintOn) != has(self.manualConfiguration)")
        .message("exactly one of foreignKeyConstraintOn and manualConfiguration")
)]
pub struct ObjectRelationshipUsing {
    /// A column of this table carrying a foreign key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_key_constraint_on: Option<String>,
    /// An explicit mapping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_configuration: Option<ManualConfigurationSpec>,
}

/// An array relationship's foreign key: a column of the other table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArrayForeignKeySpec {
    /// The table holding the foreign key.
    pub table: QualifiedName,
    /// Its column.
    pub column: String,
}

/// An array relationship.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArrayRelationshipSpec {
    /// Field name.
    pub name: String,
    /// How rows relate.
    pub using: ArrayRelationshipUsing,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// `using` of an array relationship: exactly one key.
#[derive(KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    cel,
    validation = Rule::new("has(self.foreignKeyConstraintOn) != has(self.manualConfiguration)")
        .message("exactly one of foreignKeyConstraintOn and manualConfiguration")
)]
pub struct ArrayRelationshipUsing {
    /// A foreign key on another table pointing here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_key_constraint_on: Option<ArrayForeignKeySpec>,
    /// An explicit mapping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_configuration: Option<ManualConfigurationSpec>,
}

// ---- Permission ---------------------------------------------------------------------------

/// Which permission operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// `create_insert_permission`.
    Insert,
    /// `create_select_permission`.
    Select,
    /// `create_update_permission`.
    Update,
    /// `create_delete_permission`.
    Delete,
}

/// One permission of one role on one table.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "Permission",
    namespaced,
    status = "ResourceStatus",
    shortname = "bperm",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Table","type":"string","jsonPath":".spec.table.name"}"#,
    printcolumn = r#"{"name":"Role","type":"string","jsonPath":".spec.role"}"#,
    printcolumn = r#"{"name":"Operation","type":"string","jsonPath":".spec.operation"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("self.operation != 'insert' || has(self.permission.check)").message("insert needs permission.check"),
    validation = Rule::new("self.operation != 'select' || (has(self.permission.columns) && has(self.permission.filter))").message("select needs permission.columns and permission.filter"),
    validation = Rule::new("self.operation != 'update' || (has(self.permission.columns) && has(self.permission.filter))").message("update needs permission.columns and permission.filter"),
    validation = Rule::new("self.operation != 'delete' || has(self.permission.filter)").message("delete needs permission.filter"),
    validation = Rule::new("self.operation == 'insert' || !has(self.permission.backendOnly)").message("backendOnly is for insert only"),
    validation = Rule::new("self.operation == 'select' || (!has(self.permission.computedFields) && !has(self.permission.limit) && !has(self.permission.allowAggregations))").message("computedFields, limit and allowAggregations are for select only"),
    validation = Rule::new("self.operation == 'insert' || self.operation == 'update' || !has(self.permission.set)").message("set is for insert and update only"),
    validation = Rule::new("self.operation != 'delete' || (!has(self.permission.columns) && !has(self.permission.check))").message("delete takes only permission.filter"),
    validation = Rule::new("self.operation != 'insert' || !has(self.permission.filter)").message("insert takes permission.check, not permission.filter")
)]
pub struct PermissionSpec {
    /// Table (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("table is immutable"))]
    pub table: QualifiedName,
    /// Role (immutable, not admin).
    #[x_kube(validation = Rule::new("self == oldSelf").message("role is immutable"), validation = Rule::new("self != 'admin'").message("cannot define permission for admin role"))]
    pub role: String,
    /// Operation (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("operation is immutable"))]
    pub operation: Operation,
    /// The rules.
    pub permission: PermissionRules,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Permission rules (which apply depends on `operation`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRules {
    /// BoolExp on written rows (insert, update).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object")]
    pub check: Option<Value>,
    /// Column presets (insert, update).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object")]
    pub set: Option<Value>,
    /// `"*"` or a list of columns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_any")]
    pub columns: Option<Value>,
    /// Insert only for trusted backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_only: Option<bool>,
    /// Selectable computed fields (select).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computed_fields: Option<Vec<String>>,
    /// Row filter (select, update, delete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object")]
    pub filter: Option<Value>,
    /// Row cap (select).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub limit: Option<i64>,
    /// Aggregates allowed (select).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_aggregations: Option<bool>,
}

// ---- ComputedField --------------------------------------------------------------------------

/// A computed field of a table.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "ComputedField",
    namespaced,
    status = "ResourceStatus",
    shortname = "bcf",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Table","type":"string","jsonPath":".spec.table.name"}"#,
    printcolumn = r#"{"name":"Field","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Function","type":"string","jsonPath":".spec.definition.function.name","priority":1}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ComputedFieldSpec {
    /// Table (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("table is immutable"))]
    pub table: QualifiedName,
    /// Field name (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("name is immutable"))]
    pub name: String,
    /// The function and how it is called.
    pub definition: ComputedFieldDefinitionSpec,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// `definition` of a computed field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComputedFieldDefinitionSpec {
    /// The SQL function.
    pub function: QualifiedName,
    /// Argument taking the row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_argument: Option<String>,
    /// Argument taking the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_argument: Option<String>,
}

// ---- EventTrigger ---------------------------------------------------------------------------

/// An event trigger: row changes of a table delivered to a webhook.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "EventTrigger",
    namespaced,
    status = "ResourceStatus",
    shortname = "btrigger",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Trigger","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Table","type":"string","jsonPath":".spec.table.name"}"#,
    printcolumn = r#"{"name":"Webhook","type":"string","jsonPath":".spec.webhook","priority":1}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.webhook) != has(self.webhookFromEnv)").message("exactly one of webhook and webhookFromEnv"),
    validation = Rule::new("has(self.insert) || has(self.update) || has(self.delete) || (has(self.enableManual) && self.enableManual)").message("at least one of insert, update, delete and enableManual")
)]
pub struct EventTriggerSpec {
    /// Trigger name, unique across tables (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("name is immutable"))]
    pub name: String,
    /// The table whose rows it watches (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("table is immutable"))]
    pub table: QualifiedName,
    /// Webhook URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// Environment variable holding the webhook URL (set in the engine and the controller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_from_env: Option<String>,
    /// Inserts that fire it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert: Option<TriggerOperationSpec>,
    /// Updates that fire it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<TriggerOperationSpec>,
    /// Deletes that fire it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<TriggerOperationSpec>,
    /// Headers sent with each delivery.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderSpec>,
    /// Delivery retry policy (the metadata API's defaults where absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_conf: Option<RetryConfSpec>,
    /// Whether `invoke_event_trigger` may fire it.
    #[serde(default)]
    pub enable_manual: bool,
}

/// The columns one operation listens to and sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TriggerOperationSpec {
    /// `"*"` or a list of columns whose change fires the trigger.
    #[schemars(schema_with = "preserved_any")]
    pub columns: Value,
    /// `"*"` or a list of columns sent in the payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_any")]
    pub payload: Option<Value>,
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

/// Delivery retry policy of an event trigger.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryConfSpec {
    /// Retries after the first failed attempt (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 4294967295_i64))]
    pub num_retries: Option<i64>,
    /// Seconds between attempts (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 4294967295_i64))]
    pub interval_sec: Option<i64>,
    /// HTTP timeout of one attempt in seconds (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 4294967295_i64))]
    pub timeout_sec: Option<i64>,
}

// ---- RemoteSchema ---------------------------------------------------------------------------

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

// ---- CustomTypeSet ------------------------------------------------------------------------

/// A set of custom GraphQL types (sets are merged by type name).
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "CustomTypeSet",
    namespaced,
    status = "ResourceStatus",
    shortname = "bct",
    category = "basalt",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct CustomTypeSetSpec {
    /// Input object types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_objects: Vec<InputObjectSpec>,
    /// Object types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ObjectTypeSpec>,
    /// Scalars.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scalars: Vec<ScalarSpec>,
    /// Enums.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enums: Vec<EnumSpec>,
}

/// A field of a custom type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TypeFieldSpec {
    /// Name.
    pub name: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Type expression.
    #[serde(rename = "type")]
    pub field_type: String,
}

/// An input object type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InputObjectSpec {
    /// Name.
    pub name: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fields.
    pub fields: Vec<TypeFieldSpec>,
}

/// An object type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ObjectTypeSpec {
    /// Name.
    pub name: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fields.
    pub fields: Vec<TypeFieldSpec>,
    /// Relationships to tables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relationships: Vec<TypeRelationshipSpec>,
}

/// Cardinality of a custom-type relationship.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RelationshipType {
    /// One row.
    Object,
    /// Many rows.
    Array,
}

/// A relationship of a custom object type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TypeRelationshipSpec {
    /// Name.
    pub name: String,
    /// `object` or `array`.
    #[serde(rename = "type")]
    pub rel_type: RelationshipType,
    /// Related table.
    pub remote_table: QualifiedName,
    /// Field → column (verbatim).
    #[schemars(schema_with = "preserved_object")]
    pub field_mapping: Value,
}

/// A scalar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScalarSpec {
    /// Name.
    pub name: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// An enum type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EnumSpec {
    /// Name.
    pub name: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Values.
    pub values: Vec<EnumValueSpec>,
}

/// An enum value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnumValueSpec {
    /// The value.
    pub value: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_deprecated: Option<bool>,
}

// ---- QueryCollection and AllowListEntry -----------------------------------------------------

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

/// A collection on the allow-list.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "basalt.dev",
    version = "v1alpha1",
    kind = "AllowListEntry",
    plural = "allowlistentries",
    namespaced,
    status = "ResourceStatus",
    shortname = "ballow",
    category = "basalt",
    cel,
    printcolumn = r#"{"name":"Collection","type":"string","jsonPath":".spec.collection"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1}"#,
    printcolumn = r#"{"name":"Drifted","type":"string","jsonPath":".status.conditions[?(@.type==\"Drifted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AllowListEntrySpec {
    /// Collection name (immutable).
    #[x_kube(validation = Rule::new("self == oldSelf").message("collection is immutable"))]
    pub collection: String,
}
