//! Names in the document: tables and functions (the crate's one [`crate::names::QualifiedName`]),
//! `GraphQLName`, `Name` and column lists. Pure serde types.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::fmt;

/// A table or view name in the document.
pub type QualifiedTable = crate::names::QualifiedName;

/// A function name; same two forms as a table name.
pub type QualifiedFunction = crate::names::QualifiedName;

pub use crate::names::json_kind;

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

impl GraphQLName {
    /// Whether `s` may name a field or type Basalt generates: a valid GraphQL name that does not
    /// start with `__`, which GraphQL reserves for introspection.
    pub fn is_servable(s: &str) -> bool {
        Self::is_valid(s) && !s.starts_with("__")
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
