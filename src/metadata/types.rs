//! The metadata document (format version 2, `shared/spec/metadata-format.md`) as Rust types.
//!
//! Serialization is the export format: keys in the spec's order, empty parts omitted. BoolExps
//! and presets stay JSON values, stored exactly as submitted (`$eq` and `_eq` both survive).

use indexmap::IndexMap;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

/// A table or view name: `{"schema","name"}`, or the string shorthand for schema `public`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct QualifiedTable {
    /// Postgres schema.
    pub schema: String,
    /// Relation name.
    pub name: String,
}

impl QualifiedTable {
    /// A name in the given schema.
    pub fn new(schema: impl Into<String>, name: impl Into<String>) -> Self {
        QualifiedTable {
            schema: schema.into(),
            name: name.into(),
        }
    }

    /// The GraphQL base name: the table name in `public`, else `<schema>_<table>`.
    pub fn graphql_base_name(&self) -> String {
        if self.schema == "public" {
            self.name.clone()
        } else {
            format!("{}_{}", self.schema, self.name)
        }
    }
}

/// Messages print the bare name for `public`, else `schema.name`.
impl fmt::Display for QualifiedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.schema == "public" {
            f.write_str(&self.name)
        } else {
            write!(f, "{}.{}", self.schema, self.name)
        }
    }
}

fn public() -> String {
    "public".to_owned()
}

#[derive(Deserialize)]
struct QualifiedObject {
    #[serde(default = "public")]
    schema: String,
    name: String,
}

impl<'de> Deserialize<'de> for QualifiedTable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(name) => Ok(QualifiedTable::new("public", name)),
            Value::Object(map) => {
                let obj = QualifiedObject::deserialize(Value::Object(map))
                    .map_err(de::Error::custom)?;
                Ok(QualifiedTable::new(obj.schema, obj.name))
            }
            other => Err(de::Error::custom(format!(
                "expected a table name (string or object with \"schema\" and \"name\"), encountered {}",
                json_kind(&other)
            ))),
        }
    }
}

/// A function name; same two forms as a table name.
pub type QualifiedFunction = QualifiedTable;

/// The JSON type name of a value, for messages.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "Null",
        Value::Bool(_) => "Boolean",
        Value::Number(_) => "Number",
        Value::String(_) => "String",
        Value::Array(_) => "Array",
        Value::Object(_) => "Object",
    }
}

/// A name valid in GraphQL: `^[_A-Za-z][_0-9A-Za-z]*$`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct GraphQLName(pub String);

impl GraphQLName {
    /// Whether `s` is a valid GraphQL name.
    pub fn is_valid(s: &str) -> bool {
        let mut chars = s.chars();
        match chars.next() {
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
            _ => return false,
        }
        chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    }
}

impl<'de> Deserialize<'de> for GraphQLName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if GraphQLName::is_valid(&s) {
            Ok(GraphQLName(s))
        } else {
            Err(de::Error::custom(format!(
                "\"{s}\" is not a valid GraphQL name"
            )))
        }
    }
}

impl fmt::Display for GraphQLName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A non-empty name (role, collection, query, trigger …).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Name(pub String);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            Err(de::Error::custom("empty string not allowed"))
        } else {
            Ok(Name(s))
        }
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

/// Column list of a permission or trigger: `"*"` (all, including later ones) or explicit names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Columns {
    /// Every column.
    All,
    /// These columns.
    List(Vec<String>),
}

impl Columns {
    /// Whether `column` is included.
    pub fn contains(&self, column: &str) -> bool {
        match self {
            Columns::All => true,
            Columns::List(list) => list.iter().any(|c| c == column),
        }
    }
}

impl Serialize for Columns {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Columns::All => s.serialize_str("*"),
            Columns::List(list) => list.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Columns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) if s == "*" => Ok(Columns::All),
            Value::Array(items) => items
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s),
                    other => Err(de::Error::custom(format!(
                        "expected a column name, encountered {}",
                        json_kind(&other)
                    ))),
                })
                .collect::<Result<_, _>>()
                .map(Columns::List),
            other => Err(de::Error::custom(format!(
                "expected \"*\" or an array of column names, encountered {}",
                json_kind(&other)
            ))),
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The whole metadata document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Always 2 on export.
    #[serde(default = "two")]
    pub version: u32,
    /// Tracked tables and views, in tracking order.
    pub tables: Vec<TableEntry>,
    /// Stitched remote GraphQL servers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_schemas: Vec<RemoteSchemaEntry>,
    /// Named GraphQL documents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query_collections: Vec<CollectionEntry>,
    /// Collections whose queries non-admin roles may run when the allow-list is on.
    #[serde(default, skip_serializing_if = "Vec::is_empty", alias = "allow_list")]
    pub allowlist: Vec<AllowlistEntry>,
    /// Custom queries and mutations resolved by HTTP handlers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<ActionEntry>,
    /// Types used by actions.
    #[serde(default, skip_serializing_if = "CustomTypes::is_empty")]
    pub custom_types: CustomTypes,
}

fn two() -> u32 {
    2
}

impl Default for Metadata {
    fn default() -> Self {
        Metadata {
            version: 2,
            tables: Vec::new(),
            remote_schemas: Vec::new(),
            query_collections: Vec::new(),
            allowlist: Vec::new(),
            actions: Vec::new(),
            custom_types: CustomTypes::default(),
        }
    }
}

impl Metadata {
    /// The entry of a tracked table.
    pub fn table(&self, table: &QualifiedTable) -> Option<&TableEntry> {
        self.tables.iter().find(|t| &t.table == table)
    }

    /// The entry of a tracked table, mutably.
    pub fn table_mut(&mut self, table: &QualifiedTable) -> Option<&mut TableEntry> {
        self.tables.iter_mut().find(|t| &t.table == table)
    }

    /// Tables flagged as enum tables.
    pub fn enum_tables(&self) -> Vec<QualifiedTable> {
        self.tables
            .iter()
            .filter(|t| t.is_enum)
            .map(|t| t.table.clone())
            .collect()
    }

    /// A query collection by name.
    pub fn collection(&self, name: &str) -> Option<&CollectionEntry> {
        self.query_collections.iter().find(|c| c.name.0 == name)
    }
}

/// The keys a table entry may have; anything else is rejected on import.
pub const TABLE_ENTRY_KEYS: &[&str] = &[
    "table",
    "is_enum",
    "configuration",
    "object_relationships",
    "array_relationships",
    "computed_fields",
    "insert_permissions",
    "select_permissions",
    "update_permissions",
    "delete_permissions",
    "event_triggers",
];

/// One tracked table or view and everything it owns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableEntry {
    /// The relation.
    pub table: QualifiedTable,
    /// Whether its rows form a GraphQL enum.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_enum: bool,
    /// Custom root field and column names.
    #[serde(default, skip_serializing_if = "TableConfig::is_empty")]
    pub configuration: TableConfig,
    /// Object (one-to-one) relationships.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub object_relationships: Vec<RelationshipEntry<ObjRelUsing>>,
    /// Array (one-to-many) relationships.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub array_relationships: Vec<RelationshipEntry<ArrRelUsing>>,
    /// Fields computed by SQL functions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub computed_fields: Vec<ComputedFieldEntry>,
    /// Insert permissions by role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub insert_permissions: Vec<PermissionEntry<InsertPermission>>,
    /// Select permissions by role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub select_permissions: Vec<PermissionEntry<SelectPermission>>,
    /// Update permissions by role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub update_permissions: Vec<PermissionEntry<UpdatePermission>>,
    /// Delete permissions by role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete_permissions: Vec<PermissionEntry<DeletePermission>>,
    /// Row-change webhooks (delivered once the event-trigger feature lands).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub event_triggers: Vec<EventTriggerEntry>,
}

impl TableEntry {
    /// A freshly tracked table with nothing attached.
    pub fn new(table: QualifiedTable) -> Self {
        TableEntry {
            table,
            is_enum: false,
            configuration: TableConfig::default(),
            object_relationships: Vec::new(),
            array_relationships: Vec::new(),
            computed_fields: Vec::new(),
            insert_permissions: Vec::new(),
            select_permissions: Vec::new(),
            update_permissions: Vec::new(),
            delete_permissions: Vec::new(),
            event_triggers: Vec::new(),
        }
    }

    /// Whether a relationship (of either kind) has this name.
    pub fn has_relationship(&self, name: &str) -> bool {
        self.object_relationships.iter().any(|r| r.name.0 == name)
            || self.array_relationships.iter().any(|r| r.name.0 == name)
    }

    /// Whether a computed field has this name.
    pub fn has_computed_field(&self, name: &str) -> bool {
        self.computed_fields.iter().any(|c| c.name.0 == name)
    }
}

/// Table configuration (version 2 `track_table`, `set_table_custom_fields`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TableConfig {
    /// Renamed root fields.
    #[serde(default)]
    pub custom_root_fields: CustomRootFields,
    /// Column → GraphQL field name.
    #[serde(default)]
    pub custom_column_names: IndexMap<String, GraphQLName>,
}

impl TableConfig {
    /// True when nothing is customised.
    pub fn is_empty(&self) -> bool {
        self.custom_root_fields.is_empty() && self.custom_column_names.is_empty()
    }
}

/// Custom names for a table's root fields; `None` keeps the default name.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CustomRootFields {
    /// List query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<GraphQLName>,
    /// Query by primary key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select_by_pk: Option<GraphQLName>,
    /// Aggregate query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select_aggregate: Option<GraphQLName>,
    /// Bulk insert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert: Option<GraphQLName>,
    /// Single insert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert_one: Option<GraphQLName>,
    /// Bulk update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<GraphQLName>,
    /// Update by primary key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_by_pk: Option<GraphQLName>,
    /// Bulk delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<GraphQLName>,
    /// Delete by primary key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_by_pk: Option<GraphQLName>,
}

impl CustomRootFields {
    /// Pairs of (key, custom name) that are set, in spec order.
    pub fn entries(&self) -> Vec<(&'static str, &GraphQLName)> {
        [
            ("select", &self.select),
            ("select_by_pk", &self.select_by_pk),
            ("select_aggregate", &self.select_aggregate),
            ("insert", &self.insert),
            ("insert_one", &self.insert_one),
            ("update", &self.update),
            ("update_by_pk", &self.update_by_pk),
            ("delete", &self.delete),
            ("delete_by_pk", &self.delete_by_pk),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
        .collect()
    }

    /// True when no root field is renamed.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }
}

/// A relationship with its `using` clause of kind `U`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelationshipEntry<U> {
    /// Field name on the owning table.
    pub name: GraphQLName,
    /// How rows are related.
    pub using: U,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Column mapping given by hand (views, or no foreign key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManualConfiguration {
    /// The related table.
    pub remote_table: QualifiedTable,
    /// Local column → remote column.
    pub column_mapping: IndexMap<String, String>,
}

/// `using` of an object relationship.
#[derive(Debug, Clone, PartialEq)]
pub enum ObjRelUsing {
    /// A column of this table carrying a single-column foreign key.
    ForeignKey(String),
    /// An explicit mapping.
    Manual(ManualConfiguration),
}

/// Target of an array relationship's foreign key: a column of the other table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrayForeignKey {
    /// The table holding the foreign key.
    pub table: QualifiedTable,
    /// Its column referencing this table.
    pub column: String,
}

/// `using` of an array relationship.
#[derive(Debug, Clone, PartialEq)]
pub enum ArrRelUsing {
    /// A foreign key on another table pointing here.
    ForeignKey(ArrayForeignKey),
    /// An explicit mapping.
    Manual(ManualConfiguration),
}

const FK_KEY: &str = "foreign_key_constraint_on";
const MANUAL_KEY: &str = "manual_configuration";

/// Splits a `using` object into its one allowed key, with the spec's messages for both/neither.
fn exclusive_using<E: de::Error>(value: Value) -> Result<(bool, Value), E> {
    let Value::Object(mut map) = value else {
        return Err(E::custom(format!(
            "expected Object, encountered {}",
            json_kind(&value)
        )));
    };
    match (map.remove(FK_KEY), map.remove(MANUAL_KEY)) {
        (Some(_), Some(_)) => Err(E::custom(
            "only one of foreign_key_constraint_on/manual_configuration should be present",
        )),
        (None, None) => Err(E::custom(
            "atleast one of foreign_key_constraint_on/manual_configuration should be present",
        )),
        (Some(fk), None) => Ok((true, fk)),
        (None, Some(manual)) => Ok((false, manual)),
    }
}

fn using_map(is_fk: bool, value: Value) -> Value {
    let mut map = Map::new();
    map.insert(if is_fk { FK_KEY } else { MANUAL_KEY }.to_owned(), value);
    Value::Object(map)
}

impl<'de> Deserialize<'de> for ObjRelUsing {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (is_fk, inner) = exclusive_using(Value::deserialize(d)?)?;
        if is_fk {
            String::deserialize(inner)
                .map(ObjRelUsing::ForeignKey)
                .map_err(de::Error::custom)
        } else {
            ManualConfiguration::deserialize(inner)
                .map(ObjRelUsing::Manual)
                .map_err(de::Error::custom)
        }
    }
}

impl Serialize for ObjRelUsing {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let value = match self {
            ObjRelUsing::ForeignKey(col) => using_map(true, Value::String(col.clone())),
            ObjRelUsing::Manual(m) => using_map(
                false,
                serde_json::to_value(m).map_err(serde::ser::Error::custom)?,
            ),
        };
        value.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ArrRelUsing {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (is_fk, inner) = exclusive_using(Value::deserialize(d)?)?;
        if is_fk {
            ArrayForeignKey::deserialize(inner)
                .map(ArrRelUsing::ForeignKey)
                .map_err(de::Error::custom)
        } else {
            ManualConfiguration::deserialize(inner)
                .map(ArrRelUsing::Manual)
                .map_err(de::Error::custom)
        }
    }
}

impl Serialize for ArrRelUsing {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (is_fk, inner) = match self {
            ArrRelUsing::ForeignKey(fk) => (true, serde_json::to_value(fk)),
            ArrRelUsing::Manual(m) => (false, serde_json::to_value(m)),
        };
        using_map(is_fk, inner.map_err(serde::ser::Error::custom)?).serialize(s)
    }
}

/// A computed field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComputedFieldEntry {
    /// Field name.
    pub name: GraphQLName,
    /// The SQL function behind it.
    pub definition: ComputedFieldDefinition,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The function of a computed field and how arguments are passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComputedFieldDefinition {
    /// The SQL function.
    pub function: QualifiedFunction,
    /// Argument taking the row (default: the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_argument: Option<String>,
    /// Argument taking the session as JSON (default: not passed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_argument: Option<String>,
}

/// A permission of one role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionEntry<P> {
    /// The role it applies to.
    pub role: Name,
    /// The rules.
    pub permission: P,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Insert rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InsertPermission {
    /// Must hold for every inserted row.
    pub check: Value,
    /// Column presets.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub set: Map<String, Value>,
    /// Insertable columns (absent = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<Columns>,
    /// Only for trusted backend requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_only: Option<bool>,
}

/// Select rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectPermission {
    /// Selectable columns.
    pub columns: Columns,
    /// Selectable computed fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub computed_fields: Vec<String>,
    /// Row filter.
    pub filter: Value,
    /// Row cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Aggregate root fields allowed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_aggregations: bool,
}

/// Update rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdatePermission {
    /// Updatable columns.
    pub columns: Columns,
    /// Rows that may be updated.
    pub filter: Value,
    /// Post-condition on the new row (`null` = none).
    #[serde(default)]
    pub check: Option<Value>,
    /// Column presets.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub set: Map<String, Value>,
}

/// Delete rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeletePermission {
    /// Rows that may be deleted.
    pub filter: Value,
}

/// A webhook header: literal value or read from the environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Header {
    /// `{"name","value"}`.
    Value {
        /// Header name.
        name: String,
        /// Header value.
        value: String,
    },
    /// `{"name","value_from_env"}`.
    FromEnv {
        /// Header name.
        name: String,
        /// Environment variable holding the value.
        value_from_env: String,
    },
}

/// An event trigger (stored and exported; delivery arrives with the event-trigger feature).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventTriggerEntry {
    /// Trigger name.
    pub name: Name,
    /// Which operations fire it.
    pub definition: EventTriggerDefinition,
    /// Retry policy (defaults filled in).
    #[serde(default)]
    pub retry_conf: RetryConf,
    /// Webhook URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// Environment variable holding the webhook URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_from_env: Option<String>,
    /// Headers sent with each delivery.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
}

/// The operations of an event trigger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventTriggerDefinition {
    /// Whether `invoke_event_trigger` may fire it.
    #[serde(default)]
    pub enable_manual: bool,
    /// Insert spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert: Option<OperationSpec>,
    /// Update spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<OperationSpec>,
    /// Delete spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<OperationSpec>,
}

/// Columns listened to and sent for one operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationSpec {
    /// Columns whose change fires.
    pub columns: Columns,
    /// Columns in the payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Columns>,
}

/// Delivery retry policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryConf {
    /// Retries after the first failure.
    #[serde(default)]
    pub num_retries: u32,
    /// Seconds between attempts.
    #[serde(default = "ten")]
    pub interval_sec: u32,
    /// HTTP timeout per attempt, seconds.
    #[serde(default = "sixty")]
    pub timeout_sec: u32,
}

fn ten() -> u32 {
    10
}
fn sixty() -> u32 {
    60
}

impl Default for RetryConf {
    fn default() -> Self {
        RetryConf {
            num_retries: 0,
            interval_sec: 10,
            timeout_sec: 60,
        }
    }
}

/// A remote GraphQL server (stored and exported; stitching arrives with its feature).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteSchemaEntry {
    /// Name.
    pub name: Name,
    /// Where and how to reach it.
    pub definition: RemoteSchemaDefinition,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// How to reach a remote schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteSchemaDefinition {
    /// URL (may hold `{{ENV}}` templates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Environment variable holding the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_from_env: Option<String>,
    /// Request timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u32>,
    /// Headers sent to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    /// Forward the client's headers.
    #[serde(default, skip_serializing_if = "is_false")]
    pub forward_client_headers: bool,
}

/// A named set of GraphQL documents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectionEntry {
    /// Name.
    pub name: Name,
    /// The queries.
    pub definition: CollectionDefinition,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The queries of a collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectionDefinition {
    /// In insertion order.
    pub queries: Vec<CollectionQuery>,
}

/// One named GraphQL document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectionQuery {
    /// Name, unique in its collection.
    pub name: Name,
    /// GraphQL document text.
    pub query: String,
}

/// One allow-listed collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllowlistEntry {
    /// Collection name.
    pub collection: Name,
}

/// An action (stored and exported; execution arrives with the actions feature).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionEntry {
    /// Root field name.
    pub name: GraphQLName,
    /// Handler, types and kind.
    pub definition: ActionDefinition,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Roles allowed to call it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<ActionPermission>,
}

/// An action's definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionDefinition {
    /// Handler URL (may hold `{{ENV}}` templates).
    pub handler: String,
    /// Output type expression; its base must be a custom object type.
    pub output_type: String,
    /// Forward the client's headers to the handler.
    #[serde(default, skip_serializing_if = "is_false")]
    pub forward_client_headers: bool,
    /// Headers sent to the handler.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    /// Arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<ActionArgument>,
    /// `query` or `mutation`.
    #[serde(rename = "type", default = "mutation")]
    pub action_type: ActionType,
    /// `synchronous` or `asynchronous` (mutations only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ActionKind>,
    /// Handler timeout in seconds (exported only when not 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u32>,
}

fn mutation() -> ActionType {
    ActionType::Mutation
}

/// Root an action extends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionType {
    /// Extends `query_root`.
    Query,
    /// Extends `mutation_root`.
    Mutation,
}

/// Whether a mutation action answers after the handler or at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    /// Answer after the handler.
    Synchronous,
    /// Answer with an id at once.
    Asynchronous,
}

/// An action argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionArgument {
    /// Name.
    pub name: GraphQLName,
    /// Type expression.
    #[serde(rename = "type")]
    pub arg_type: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A role allowed to call an action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionPermission {
    /// The role.
    pub role: Name,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The custom GraphQL types (`set_custom_types`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CustomTypes {
    /// Input object types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_objects: Vec<InputObjectType>,
    /// Object types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ObjectType>,
    /// Scalar types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scalars: Vec<ScalarType>,
    /// Enum types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enums: Vec<EnumType>,
}

impl CustomTypes {
    /// True when no custom type is defined.
    pub fn is_empty(&self) -> bool {
        self.input_objects.is_empty()
            && self.objects.is_empty()
            && self.scalars.is_empty()
            && self.enums.is_empty()
    }
}

/// A custom input object type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputObjectType {
    /// Type name.
    pub name: GraphQLName,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fields.
    pub fields: Vec<TypeField>,
}

/// A field of a custom input or object type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeField {
    /// Field name.
    pub name: GraphQLName,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Type expression.
    #[serde(rename = "type")]
    pub field_type: String,
    /// Arguments (not allowed on custom object fields; kept to report them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// A custom object type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectType {
    /// Type name.
    pub name: GraphQLName,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fields.
    pub fields: Vec<TypeField>,
    /// Relationships to tracked tables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relationships: Vec<ObjectRelationship>,
}

/// A relationship from a custom object type to a tracked table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectRelationship {
    /// Field name.
    pub name: GraphQLName,
    /// `object` or `array`.
    #[serde(rename = "type")]
    pub rel_type: ObjectRelationshipType,
    /// The related table.
    pub remote_table: QualifiedTable,
    /// Object field → table column.
    pub field_mapping: IndexMap<String, String>,
}

/// Cardinality of a custom-type relationship.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectRelationshipType {
    /// One row.
    Object,
    /// Many rows.
    Array,
}

/// A custom scalar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalarType {
    /// Type name.
    pub name: GraphQLName,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A custom enum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnumType {
    /// Type name.
    pub name: GraphQLName,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Values.
    pub values: Vec<EnumValue>,
}

/// One enum value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnumValue {
    /// The value.
    pub value: GraphQLName,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Deprecated flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_deprecated: Option<bool>,
}
