//! Relationships and their `using` clauses (foreign key or manual mapping), with the
//! API's messages for a `using` that names both or neither (see `docs/metadata-api.md`,
//! "Relationships"). Pure serde types: must not depend on anything outside `metadata`.

use super::*;
use indexmap::IndexMap;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A relationship with its `using` clause of kind `U`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelationshipEntry<U> {
    /// Field name on the owning table.
    pub name: GraphQLName,
    /// How rows are related.
    pub using: U,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Column mapping given by hand (views, or no foreign key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualConfiguration {
    /// The related table.
    pub remote_table: QualifiedTable,
    /// Local column → remote column.
    pub column_mapping: IndexMap<String, String>,
}

/// `using` of an object relationship.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjRelUsing {
    /// A column of this table carrying a single-column foreign key.
    ForeignKey(String),
    /// An explicit mapping.
    Manual(ManualConfiguration),
}

/// Target of an array relationship's foreign key: a column of the other table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArrayForeignKey {
    /// The table holding the foreign key.
    pub table: QualifiedTable,
    /// Its column referencing this table.
    pub column: String,
}

/// `using` of an array relationship.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArrRelUsing {
    /// A foreign key on another table pointing here.
    ForeignKey(ArrayForeignKey),
    /// An explicit mapping.
    Manual(ManualConfiguration),
}

const FK_KEY: &str = "foreign_key_constraint_on";
const MANUAL_KEY: &str = "manual_configuration";

/// Splits a `using` object into its one allowed key, with the messages of
/// `docs/metadata-api.md`, "`create_object_relationship`", for both or neither.
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
