//! Logical models (named row shapes with select permissions) and native queries (SQL code
//! whose rows have a logical model's shape), see `docs/native-queries.md`. Pure serde types:
//! must not depend on anything outside `metadata`.

use super::*;
use serde::{de, Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// A logical model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogicalModelEntry {
    pub name: GraphQLName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub fields: Vec<LogicalModelField>,
    /// Sorted by role on export.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub select_permissions: Vec<LogicalModelPermission>,
}

/// A field of a logical model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogicalModelField {
    pub name: GraphQLName,
    #[serde(rename = "type")]
    pub field_type: LogicalModelType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What a field holds, with whether it may be null (default: not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogicalModelType {
    /// A Postgres type, by the name `to_regtype` reads (`integer`, `public.mood`).
    Scalar { scalar: String, nullable: bool },
    /// One row of another logical model.
    Model { model: String, nullable: bool },
    /// A list of rows of another logical model (`element_nullable`: its rows may be null).
    Array {
        model: String,
        element_nullable: bool,
        nullable: bool,
    },
}

impl LogicalModelType {
    /// The Postgres type of a scalar field.
    pub fn scalar(&self) -> Option<&str> {
        match self {
            LogicalModelType::Scalar { scalar, .. } => Some(scalar),
            _ => None,
        }
    }

    /// The logical model a nested field refers to.
    pub fn model(&self) -> Option<&str> {
        match self {
            LogicalModelType::Model { model, .. } | LogicalModelType::Array { model, .. } => {
                Some(model)
            }
            LogicalModelType::Scalar { .. } => None,
        }
    }

    pub fn nullable(&self) -> bool {
        match self {
            LogicalModelType::Scalar { nullable, .. }
            | LogicalModelType::Model { nullable, .. }
            | LogicalModelType::Array { nullable, .. } => *nullable,
        }
    }
}

impl Serialize for LogicalModelType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let value = match self {
            LogicalModelType::Scalar { scalar, nullable } => {
                serde_json::json!({"scalar": scalar, "nullable": nullable})
            }
            LogicalModelType::Model { model, nullable } => {
                serde_json::json!({"logical_model": model, "nullable": nullable})
            }
            LogicalModelType::Array {
                model,
                element_nullable,
                nullable,
            } => {
                serde_json::json!({"array": {"logical_model": model, "nullable": element_nullable},
                "nullable": nullable})
            }
        };
        value.serialize(s)
    }
}

/// The object form of a type: exactly one of `scalar`, `logical_model`, `array`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TypeObject {
    #[serde(default)]
    scalar: Option<String>,
    #[serde(default)]
    logical_model: Option<String>,
    #[serde(default)]
    array: Option<Box<TypeObject>>,
    #[serde(default)]
    nullable: bool,
}

impl TypeObject {
    fn into_type<E: de::Error>(self) -> Result<LogicalModelType, E> {
        match (self.scalar, self.logical_model, self.array) {
            (Some(scalar), None, None) => Ok(LogicalModelType::Scalar {
                scalar,
                nullable: self.nullable,
            }),
            (None, Some(model), None) => Ok(LogicalModelType::Model {
                model,
                nullable: self.nullable,
            }),
            (None, None, Some(element)) => {
                match (element.logical_model, element.scalar, element.array) {
                    (Some(model), None, None) => Ok(LogicalModelType::Array {
                        model,
                        element_nullable: element.nullable,
                        nullable: self.nullable,
                    }),
                    (None, Some(_), None) => {
                        Err(E::custom("arrays of scalar types are not supported"))
                    }
                    (None, None, Some(_)) => Err(E::custom("nested arrays are not supported")),
                    _ => Err(E::custom(
                        "an array holds exactly one of \"logical_model\", \"scalar\" or \"array\"",
                    )),
                }
            }
            _ => Err(E::custom(
                "a type has exactly one of \"scalar\", \"logical_model\" or \"array\"",
            )),
        }
    }
}

/// A field as the document writes it: the object form, or the legacy flat form
/// `{"name", "type": "<scalar>", "nullable"}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FieldForm {
    name: GraphQLName,
    #[serde(rename = "type")]
    field_type: serde_json::Value,
    #[serde(default)]
    nullable: Option<bool>,
    #[serde(default)]
    description: Option<String>,
}

impl<'de> Deserialize<'de> for LogicalModelField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let form = FieldForm::deserialize(d)?;
        let field_type = match form.field_type {
            serde_json::Value::String(scalar) => LogicalModelType::Scalar {
                scalar,
                nullable: form.nullable.unwrap_or(false),
            },
            object @ serde_json::Value::Object(_) => {
                if form.nullable.is_some() {
                    return Err(de::Error::custom(
                        "\"nullable\" goes inside the type in the object form",
                    ));
                }
                TypeObject::deserialize(object)
                    .map_err(de::Error::custom)?
                    .into_type()?
            }
            other => {
                return Err(de::Error::custom(format!(
                    "expected a type object or a scalar's name, encountered {}",
                    json_kind(&other)
                )))
            }
        };
        Ok(LogicalModelField {
            name: form.name,
            field_type,
            description: form.description,
        })
    }
}

/// A role's select permission on a logical model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogicalModelPermission {
    pub role: Name,
    pub permission: LogicalModelSelect,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The rules of a logical model's select permission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogicalModelSelect {
    /// `"*"` or scalar field names.
    pub columns: Columns,
    /// A BoolExp over the model's scalar fields, stored as submitted.
    pub filter: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// A native query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NativeQueryEntry {
    pub root_field_name: GraphQLName,
    /// As tracked, byte for byte.
    pub code: String,
    /// The logical model of its rows.
    pub returns: GraphQLName,
    /// By name (keys verbatim), sorted on export.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arguments: BTreeMap<String, NativeQueryArgument>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub object_relationships: Vec<NativeQueryRelationship>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub array_relationships: Vec<NativeQueryRelationship>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// An argument of a native query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NativeQueryArgument {
    /// A Postgres type name.
    #[serde(rename = "type")]
    pub arg_type: String,
    #[serde(default)]
    pub nullable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A relationship of a native query's rows to another native query's or a table's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NativeQueryRelationship {
    pub name: GraphQLName,
    pub using: NativeQueryRelationshipUsing,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The join of a native query relationship: field pairs, and exactly one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NativeQueryRelationshipUsing {
    /// Local field → the target's field or column, in the order written.
    pub column_mapping: indexmap::IndexMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_native_query: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_table: Option<QualifiedTable>,
    /// Accepted and ignored (never exported).
    #[serde(default, skip_serializing)]
    pub insertion_order: Option<serde_json::Value>,
}
