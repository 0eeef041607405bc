//! The schema-qualified name of a table, view or function: one type for every layer (the
//! metadata document, the database model, the SQL AST, the custom resources). Printing it
//! into SQL is the SQL layer's business (`sql::names::Quoted`); here it prints as messages
//! name objects, the bare name in `public` and `schema.name` elsewhere.

use serde::{de, Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::fmt;

/// `{"schema", "name"}`. Read from either the object form (schema defaults to `public`) or a
/// bare string (a name in `public`); written in the object form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct QualifiedName {
    /// Postgres schema.
    pub schema: String,
    /// Name inside the schema.
    pub name: String,
}

impl QualifiedName {
    /// A name in the given schema.
    pub fn new(schema: impl Into<String>, name: impl Into<String>) -> Self {
        QualifiedName {
            schema: schema.into(),
            name: name.into(),
        }
    }

    /// The GraphQL base name of a relation: its name in `public`, else `<schema>_<name>`.
    pub fn graphql_base_name(&self) -> String {
        if self.schema == "public" {
            self.name.clone()
        } else {
            format!("{}_{}", self.schema, self.name)
        }
    }
}

impl fmt::Display for QualifiedName {
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
struct ObjectForm {
    #[serde(default = "public")]
    schema: String,
    name: String,
}

impl<'de> Deserialize<'de> for QualifiedName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(name) => Ok(QualifiedName::new("public", name)),
            Value::Object(map) => {
                let obj =
                    ObjectForm::deserialize(Value::Object(map)).map_err(de::Error::custom)?;
                Ok(QualifiedName::new(obj.schema, obj.name))
            }
            other => Err(de::Error::custom(format!(
                "expected a table name (string or object with \"schema\" and \"name\"), encountered {}",
                json_kind(&other)
            ))),
        }
    }
}

/// Custom resources always carry the object form, so that is the form their schema declares.
impl schemars::JsonSchema for QualifiedName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "QualifiedName".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A table, view or function name; always the object form.",
            "type": "object",
            "properties": {
                "schema": {"description": "Postgres schema.", "default": "public", "type": "string"},
                "name": {"description": "Name.", "type": "string"}
            },
            "required": ["name"]
        })
    }
}

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

#[cfg(test)]
mod tests {
    use super::QualifiedName;
    use serde_json::json;

    #[test]
    fn reads_both_forms_and_prints_like_messages() {
        let short: QualifiedName = serde_json::from_value(json!("author")).unwrap();
        let long: QualifiedName =
            serde_json::from_value(json!({"schema": "shop", "name": "order"})).unwrap();
        let defaulted: QualifiedName = serde_json::from_value(json!({"name": "author"})).unwrap();
        assert_eq!(short, defaulted);
        assert_eq!(
            (short.to_string(), long.to_string()),
            ("author".into(), "shop.order".into())
        );
        assert_eq!(long.graphql_base_name(), "shop_order");
        assert_eq!(
            serde_json::to_value(&short).unwrap(),
            json!({"schema": "public", "name": "author"})
        );
        let err = serde_json::from_value::<QualifiedName>(json!(3)).unwrap_err();
        assert!(err.to_string().contains("encountered Number"), "{err}");
    }
}
