//! TrackedTable: a tracked table or view with its configuration and relationships.

use super::common::*;
use super::{ExportedSpec, Kind};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use crate::metadata::objects::{table_settings, Object};
use crate::metadata::parse::parse;
use crate::metadata::types::{
    ArrRelUsing, CustomRootFields, GraphQLName, ManualConfiguration, Metadata, ObjRelUsing,
    TableEntry,
};
use crate::metadata::MetadataError;
use serde_json::{json, Map, Value};

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
    /// Relationships to remote schemas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub remote_relationships: Vec<RemoteRelationshipSpec>,
}

/// A relationship to a remote schema: a field of the table's type answered by the remote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RemoteRelationshipSpec {
    /// Field name on the table's type.
    pub name: String,
    /// Where it leads.
    pub definition: RemoteRelationshipDefinitionSpec,
}

/// `definition` of a remote relationship: the remote schema it leads to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteRelationshipDefinitionSpec {
    /// The remote schema, the join columns and the remote field.
    pub to_remote_schema: ToRemoteSchemaSpec,
}

/// The target of a remote relationship.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToRemoteSchemaSpec {
    /// Remote schema name.
    pub remote_schema: String,
    /// The columns whose values fill `$column` in the arguments.
    #[schemars(length(min = 1))]
    pub lhs_fields: Vec<String>,
    /// The remote field with its argument templates, as the metadata API takes it (verbatim).
    #[schemars(schema_with = "preserved_object")]
    pub remote_field: Value,
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
    /// `select_stream`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select_stream: Option<String>,
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
    /// `update_many`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_many: Option<String>,
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

fn relationship_using_object(using: &ObjectRelationshipUsing) -> Value {
    let mut map = Map::new();
    put(
        &mut map,
        "foreign_key_constraint_on",
        &using.foreign_key_constraint_on,
    );
    if let Some(m) = &using.manual_configuration {
        map.insert("manual_configuration".into(), manual(m));
    }
    Value::Object(map)
}

fn relationship_using_array(using: &ArrayRelationshipUsing) -> Value {
    let mut map = Map::new();
    if let Some(fk) = &using.foreign_key_constraint_on {
        map.insert(
            "foreign_key_constraint_on".into(),
            json!({"table": table_name(&fk.table), "column": fk.column}),
        );
    }
    if let Some(m) = &using.manual_configuration {
        map.insert("manual_configuration".into(), manual(m));
    }
    Value::Object(map)
}

fn manual(m: &ManualConfigurationSpec) -> Value {
    json!({"remote_table": table_name(&m.remote_table), "column_mapping": m.column_mapping})
}

impl TrackedTableSpec {
    /// The metadata API form of a TrackedTable (a table entry with its relationships).
    pub fn to_json(&self) -> Value {
        let mut entry = Map::new();
        entry.insert("table".into(), table_name(&self.table));
        entry.insert("is_enum".into(), json!(self.is_enum));
        if let Some(config) = &self.configuration {
            let mut roots = Map::new();
            if let Some(r) = &config.custom_root_fields {
                put(&mut roots, "select", &r.select);
                put(&mut roots, "select_by_pk", &r.select_by_pk);
                put(&mut roots, "select_aggregate", &r.select_aggregate);
                put(&mut roots, "select_stream", &r.select_stream);
                put(&mut roots, "insert", &r.insert);
                put(&mut roots, "insert_one", &r.insert_one);
                put(&mut roots, "update", &r.update);
                put(&mut roots, "update_by_pk", &r.update_by_pk);
                put(&mut roots, "update_many", &r.update_many);
                put(&mut roots, "delete", &r.delete);
                put(&mut roots, "delete_by_pk", &r.delete_by_pk);
            }
            let columns = config
                .custom_column_names
                .clone()
                .unwrap_or_else(|| json!({}));
            entry.insert(
                "configuration".into(),
                json!({"custom_root_fields": roots, "custom_column_names": columns}),
            );
        }
        let objects: Vec<Value> = self
            .object_relationships
            .iter()
            .map(|r| {
                let mut m = Map::new();
                m.insert("name".into(), json!(r.name));
                m.insert("using".into(), relationship_using_object(&r.using));
                put(&mut m, "comment", &r.comment);
                Value::Object(m)
            })
            .collect();
        let arrays: Vec<Value> = self
            .array_relationships
            .iter()
            .map(|r| {
                let mut m = Map::new();
                m.insert("name".into(), json!(r.name));
                m.insert("using".into(), relationship_using_array(&r.using));
                put(&mut m, "comment", &r.comment);
                Value::Object(m)
            })
            .collect();
        if !objects.is_empty() {
            entry.insert("object_relationships".into(), Value::Array(objects));
        }
        if !arrays.is_empty() {
            entry.insert("array_relationships".into(), Value::Array(arrays));
        }
        let remotes: Vec<Value> = self
            .remote_relationships
            .iter()
            .map(|r| {
                let t = &r.definition.to_remote_schema;
                json!({"name": r.name, "definition": {"to_remote_schema": {
                    "remote_schema": t.remote_schema, "lhs_fields": t.lhs_fields,
                    "remote_field": t.remote_field}}})
            })
            .collect();
        if !remotes.is_empty() {
            entry.insert("remote_relationships".into(), Value::Array(remotes));
        }
        Value::Object(entry)
    }

    /// A TrackedTable as a metadata table entry (validated like `replace_metadata` would).
    pub fn entry(&self) -> Result<TableEntry, MetadataError> {
        parse(&self.to_json(), &spec_path())
    }

    /// The catalog objects a TrackedTable declares: the table's settings, then each relationship.
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        let entry = self.entry()?;
        let mut out = vec![Object::Table(Box::new(table_settings(&entry)))];
        for r in &entry.object_relationships {
            out.push(Object::ObjectRelationship(entry.table.clone(), r.clone()));
        }
        for r in &entry.array_relationships {
            out.push(Object::ArrayRelationship(entry.table.clone(), r.clone()));
        }
        for r in &entry.remote_relationships {
            out.push(Object::RemoteRelationship(entry.table.clone(), r.clone()));
        }
        Ok(out)
    }
}

fn root_fields(r: &CustomRootFields) -> Map<String, Value> {
    let mut m = Map::new();
    let name = |n: &Option<GraphQLName>| n.as_ref().map(|n| json!(n.0));
    put_value(&mut m, "select", name(&r.select));
    put_value(&mut m, "selectByPk", name(&r.select_by_pk));
    put_value(&mut m, "selectAggregate", name(&r.select_aggregate));
    put_value(&mut m, "selectStream", name(&r.select_stream));
    put_value(&mut m, "insert", name(&r.insert));
    put_value(&mut m, "insertOne", name(&r.insert_one));
    put_value(&mut m, "update", name(&r.update));
    put_value(&mut m, "updateByPk", name(&r.update_by_pk));
    put_value(&mut m, "updateMany", name(&r.update_many));
    put_value(&mut m, "delete", name(&r.delete));
    put_value(&mut m, "deleteByPk", name(&r.delete_by_pk));
    m
}

fn manual_spec(m: &ManualConfiguration) -> Value {
    json!({"manualConfiguration": {"remoteTable": qualified(&m.remote_table), "columnMapping": m.column_mapping}})
}

fn relationship_spec(name: &GraphQLName, using: Value, comment: &Option<String>) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(name.0));
    m.insert("using".into(), using);
    put_value(&mut m, "comment", text(comment));
    Value::Object(m)
}

fn spec_of(e: &TableEntry) -> Value {
    let mut spec = Map::new();
    spec.insert("table".into(), qualified(&e.table));
    if e.is_enum {
        spec.insert("isEnum".into(), json!(true));
    }
    let mut configuration = Map::new();
    let roots = root_fields(&e.configuration.custom_root_fields);
    if !roots.is_empty() {
        configuration.insert("customRootFields".into(), Value::Object(roots));
    }
    if !e.configuration.custom_column_names.is_empty() {
        configuration.insert(
            "customColumnNames".into(),
            json!(e.configuration.custom_column_names),
        );
    }
    if !configuration.is_empty() {
        spec.insert("configuration".into(), Value::Object(configuration));
    }
    let objects: Vec<Value> = e
        .object_relationships
        .iter()
        .map(|r| {
            let using = match &r.using {
                ObjRelUsing::ForeignKey(column) => json!({"foreignKeyConstraintOn": column}),
                ObjRelUsing::Manual(m) => manual_spec(m),
            };
            relationship_spec(&r.name, using, &r.comment)
        })
        .collect();
    let arrays: Vec<Value> = e
        .array_relationships
        .iter()
        .map(|r| {
            let using = match &r.using {
                ArrRelUsing::ForeignKey(fk) => json!({"foreignKeyConstraintOn":
                    {"table": qualified(&fk.table), "column": fk.column}}),
                ArrRelUsing::Manual(m) => manual_spec(m),
            };
            relationship_spec(&r.name, using, &r.comment)
        })
        .collect();
    if !objects.is_empty() {
        spec.insert("objectRelationships".into(), Value::Array(objects));
    }
    if !arrays.is_empty() {
        spec.insert("arrayRelationships".into(), Value::Array(arrays));
    }
    // Always the current form: a relationship written with the legacy keys is the same one.
    let remotes: Vec<Value> = e
        .remote_relationships
        .iter()
        .map(|r| {
            let t = r.definition.target();
            json!({"name": r.name, "definition": {"toRemoteSchema": {
                "remoteSchema": t.remote_schema, "lhsFields": t.lhs_fields,
                "remoteField": t.remote_field}}})
        })
        .collect();
    if !remotes.is_empty() {
        spec.insert("remoteRelationships".into(), Value::Array(remotes));
    }
    Value::Object(spec)
}

impl Kind for TrackedTable {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        metadata
            .tables
            .iter()
            .map(|e| ExportedSpec::new(table_parts(&e.table), spec_of(e)))
            .collect()
    }
}
