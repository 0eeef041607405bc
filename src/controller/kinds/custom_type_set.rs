//! CustomTypeSet: GraphQL types for actions (sets are merged by type name).

use super::common::*;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use super::{ExportedSpec, Kind};
use crate::metadata::objects::{CustomType, Object};
use crate::metadata::parse::parse;
use crate::metadata::types::{CustomTypes, GraphQLName, Metadata, TypeField};
use crate::metadata::MetadataError;
use serde_json::{json, Map, Value};

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

fn fields_json(fields: &[TypeFieldSpec]) -> Value {
    Value::Array(
        fields
            .iter()
            .map(|f| {
                let mut m = Map::new();
                m.insert("name".into(), json!(f.name));
                put(&mut m, "description", &f.description);
                m.insert("type".into(), json!(f.field_type));
                Value::Object(m)
            })
            .collect(),
    )
}

impl CustomTypeSetSpec {
    /// The metadata API form of a CustomTypeSet.
    pub fn to_json(&self) -> Value {
        let named = |name: &str, description: &Option<String>| {
            let mut m = Map::new();
            m.insert("name".into(), json!(name));
            put(&mut m, "description", description);
            m
        };
        let input_objects: Vec<Value> = self
            .input_objects
            .iter()
            .map(|t| {
                let mut m = named(&t.name, &t.description);
                m.insert("fields".into(), fields_json(&t.fields));
                Value::Object(m)
            })
            .collect();
        let objects: Vec<Value> = self
            .objects
            .iter()
            .map(|t| {
                let mut m = named(&t.name, &t.description);
                m.insert("fields".into(), fields_json(&t.fields));
                if !t.relationships.is_empty() {
                    let rels: Vec<Value> = t
                        .relationships
                        .iter()
                        .map(|r| {
                            json!({"name": r.name, "type": r.rel_type, "remote_table": table_name(&r.remote_table), "field_mapping": r.field_mapping})
                        })
                        .collect();
                    m.insert("relationships".into(), Value::Array(rels));
                }
                Value::Object(m)
            })
            .collect();
        let scalars: Vec<Value> = self
            .scalars
            .iter()
            .map(|s| Value::Object(named(&s.name, &s.description)))
            .collect();
        let enums: Vec<Value> = self
            .enums
            .iter()
            .map(|e| {
                let mut m = named(&e.name, &e.description);
                let values: Vec<Value> = e
                    .values
                    .iter()
                    .map(|v| {
                        let mut vm = Map::new();
                        vm.insert("value".into(), json!(v.value));
                        put(&mut vm, "description", &v.description);
                        put(&mut vm, "is_deprecated", &v.is_deprecated);
                        Value::Object(vm)
                    })
                    .collect();
                m.insert("values".into(), Value::Array(values));
                Value::Object(m)
            })
            .collect();
        json!({"input_objects": input_objects, "objects": objects, "scalars": scalars, "enums": enums})
    }

    /// A CustomTypeSet as custom types.
    pub fn entry(&self) -> Result<CustomTypes, MetadataError> {
        parse(&self.to_json(), &spec_path())
    }

    /// The catalog objects a CustomTypeSet declares: one per type.
    pub fn objects(&self) -> Result<Vec<Object>, MetadataError> {
        let types = self.entry()?;
        Ok(CustomType::all(&types)
            .into_iter()
            .map(Object::CustomType)
            .collect())
    }
}

fn fields_spec(fields: &[TypeField]) -> Value {
    Value::Array(
        fields
            .iter()
            .map(|f| {
                let mut m = Map::new();
                m.insert("name".into(), json!(f.name.0));
                put_value(&mut m, "description", text(&f.description));
                m.insert("type".into(), json!(f.field_type));
                Value::Object(m)
            })
            .collect(),
    )
}

fn named(name: &GraphQLName, description: &Option<String>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("name".into(), json!(name.0));
    put_value(&mut m, "description", text(description));
    m
}

fn spec_of(t: &CustomTypes) -> Value {
    let inputs: Vec<Value> = t
        .input_objects
        .iter()
        .map(|o| {
            let mut m = named(&o.name, &o.description);
            m.insert("fields".into(), fields_spec(&o.fields));
            Value::Object(m)
        })
        .collect();
    let objects: Vec<Value> = t
        .objects
        .iter()
        .map(|o| {
            let mut m = named(&o.name, &o.description);
            m.insert("fields".into(), fields_spec(&o.fields));
            if !o.relationships.is_empty() {
                let rels: Vec<Value> = o
                    .relationships
                    .iter()
                    .map(|r| {
                        json!({"name": r.name.0, "type": r.rel_type,
                            "remoteTable": qualified(&r.remote_table), "fieldMapping": r.field_mapping})
                    })
                    .collect();
                m.insert("relationships".into(), Value::Array(rels));
            }
            Value::Object(m)
        })
        .collect();
    let scalars: Vec<Value> = t
        .scalars
        .iter()
        .map(|s| Value::Object(named(&s.name, &s.description)))
        .collect();
    let enums: Vec<Value> = t
        .enums
        .iter()
        .map(|e| {
            let mut m = named(&e.name, &e.description);
            let values: Vec<Value> = e
                .values
                .iter()
                .map(|v| {
                    let mut vm = Map::new();
                    vm.insert("value".into(), json!(v.value.0));
                    put_value(&mut vm, "description", text(&v.description));
                    put_value(&mut vm, "isDeprecated", v.is_deprecated.map(|d| json!(d)));
                    Value::Object(vm)
                })
                .collect();
            m.insert("values".into(), Value::Array(values));
            Value::Object(m)
        })
        .collect();
    let mut spec = Map::new();
    for (key, list) in [
        ("inputObjects", inputs),
        ("objects", objects),
        ("scalars", scalars),
        ("enums", enums),
    ] {
        if !list.is_empty() {
            spec.insert(key.into(), Value::Array(list));
        }
    }
    Value::Object(spec)
}

impl Kind for CustomTypeSet {
    fn declared(&self) -> Result<Vec<Object>, MetadataError> {
        self.spec.objects()
    }

    /// Its CRD has no CEL rules.
    fn check_cel(&self) -> Result<(), SpecError> {
        Ok(())
    }

    fn export(metadata: &Metadata) -> Vec<ExportedSpec> {
        match metadata.custom_types.is_empty() {
            true => Vec::new(),
            false => vec![ExportedSpec::new(
                vec!["custom-types".to_owned()],
                spec_of(&metadata.custom_types),
            )],
        }
    }
}
