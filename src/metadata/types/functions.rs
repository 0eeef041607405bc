//! Tracked functions: a Postgres function returning rows of a tracked table, exposed as a root
//! field (see `docs/functions.md`). Pure serde types: must not depend on anything outside
//! `metadata`.

use super::*;
use serde::{de, Deserialize, Deserializer, Serialize};

/// One tracked function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FunctionEntry {
    pub function: QualifiedFunction,
    #[serde(default, skip_serializing_if = "FunctionConfiguration::is_empty")]
    pub configuration: FunctionConfiguration,
    /// Roles granted the function, in grant order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<FunctionPermission>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The document's form of an entry: an object, or (in a version 1 document) a bare function
/// name meaning an entry with defaults.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryObject {
    function: QualifiedFunction,
    #[serde(default)]
    configuration: FunctionConfiguration,
    #[serde(default)]
    permissions: Vec<FunctionPermission>,
    #[serde(default)]
    comment: Option<String>,
}

impl<'de> Deserialize<'de> for FunctionEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        let is_name = value.is_string()
            || value
                .as_object()
                .is_some_and(|m| m.contains_key("name") && !m.contains_key("function"));
        if is_name {
            let function = QualifiedFunction::deserialize(value).map_err(de::Error::custom)?;
            return Ok(FunctionEntry {
                function,
                configuration: FunctionConfiguration::default(),
                permissions: Vec::new(),
                comment: None,
            });
        }
        let e = EntryObject::deserialize(value).map_err(de::Error::custom)?;
        Ok(FunctionEntry {
            function: e.function,
            configuration: e.configuration,
            permissions: e.permissions,
            comment: e.comment,
        })
    }
}

/// How a tracked function is exposed. Keys are written in this order, only when set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionConfiguration {
    /// The argument that receives the session as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_argument: Option<String>,
    /// Where the field goes; absent: inferred from the volatility at every build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposed_as: Option<ExposedAs>,
    #[serde(default, skip_serializing_if = "FunctionRootFields::is_empty")]
    pub custom_root_fields: FunctionRootFields,
    /// Base name of the field, the aggregate field and the arguments type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_name: Option<GraphQLName>,
}

impl FunctionConfiguration {
    pub fn is_empty(&self) -> bool {
        self == &FunctionConfiguration::default()
    }
}

/// Exact names of a tracked function's root fields (`null` = unset).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionRootFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<GraphQLName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_aggregate: Option<GraphQLName>,
}

impl FunctionRootFields {
    pub fn is_empty(&self) -> bool {
        self.function.is_none() && self.function_aggregate.is_none()
    }
}

/// The root a tracked function's field is placed under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExposedAs {
    Query,
    Mutation,
}

/// A role granted a tracked function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionPermission {
    pub role: Name,
}
