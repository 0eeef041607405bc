//! A handler's answer checked against the action's declared output type before anything is
//! made of it (`docs/actions.md`, "Answers"): the right shape at the top (an object,
//! or an array for a list type), every non-null field present, scalars of the built-in types
//! of the right JSON kind, enum values among the enum's, nested objects and lists checked the
//! same way. Extra fields are ignored; custom and Postgres scalars take any JSON value.

use crate::graphql::types::TypeRef;
use crate::resolve::actions::ResolvedCustomTypes;
use serde_json::Value;

/// Why an output does not fit its type; the message is what the client gets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    /// The declared output type does not read (the metadata checks make this unreachable).
    #[error("the output type \"{0}\" does not read")]
    UnreadableOutputType(String),
    /// The type of a field of a custom object does not read (likewise).
    #[error("the type of field \"{0}\" does not read")]
    UnreadableFieldType(String),
    /// An object where a list type was declared.
    #[error("expecting array for the action webhook response")]
    ExpectedArray,
    /// An array where an object type was declared.
    #[error("expecting object for action webhook response")]
    ExpectedObject,
    /// `null` (or nothing) for a non-null field.
    #[error("expecting not null value for field \"{0}\"")]
    Null(String),
    /// A value of the wrong kind: what was expected, and the field.
    #[error("expecting {expected} for field \"{field}\"")]
    Wrong {
        /// `a list`, `an Int`, `a value of enum "Mood"`, …
        expected: String,
        /// The field (empty at the top).
        field: String,
    },
}

/// Checks an output against the type expression `output_type`.
pub fn check(
    body: &Value,
    output_type: &str,
    custom: &ResolvedCustomTypes,
) -> Result<(), OutputError> {
    let ty = TypeRef::parse(output_type)
        .ok_or_else(|| OutputError::UnreadableOutputType(output_type.to_owned()))?;
    match (ty.nullable(), body) {
        (TypeRef::List(_), Value::Object(_)) => return Err(OutputError::ExpectedArray),
        (TypeRef::Named(_), Value::Array(_)) => return Err(OutputError::ExpectedObject),
        _ => {}
    }
    value(body, &ty, custom, "")
}

fn wrong(expected: impl Into<String>, field: &str) -> Result<(), OutputError> {
    Err(OutputError::Wrong {
        expected: expected.into(),
        field: field.to_owned(),
    })
}

/// Checks a value of type `ty`; `field` names it in messages (empty at the top).
fn value(
    v: &Value,
    ty: &TypeRef,
    custom: &ResolvedCustomTypes,
    field: &str,
) -> Result<(), OutputError> {
    if v.is_null() {
        return if ty.is_non_null() {
            Err(OutputError::Null(field.to_owned()))
        } else {
            Ok(())
        };
    }
    match ty.nullable() {
        TypeRef::List(element) => match v {
            Value::Array(items) => items
                .iter()
                .try_for_each(|item| value(item, element, custom, field)),
            _ => wrong("a list", field),
        },
        TypeRef::Named(name) => named(v, name, custom, field),
        TypeRef::NonNull(_) => Err(OutputError::UnreadableFieldType(field.to_owned())),
    }
}

/// Checks a non-null value of the named type `name`.
fn named(
    v: &Value,
    name: &str,
    custom: &ResolvedCustomTypes,
    field: &str,
) -> Result<(), OutputError> {
    let wrong = |expected: &str| wrong(expected, field);
    match name {
        "Int" if v.as_i64().is_some_and(|n| i32::try_from(n).is_ok()) => Ok(()),
        "Int" => wrong("an Int"),
        "Float" if v.is_number() => Ok(()),
        "Float" => wrong("a Float"),
        "String" if v.is_string() => Ok(()),
        "String" => wrong("a String"),
        "Boolean" if v.is_boolean() => Ok(()),
        "Boolean" => wrong("a Boolean"),
        "ID" if v.is_string() || v.as_i64().is_some() => Ok(()),
        "ID" => wrong("an ID"),
        _ => {
            if let Some(e) = custom.enumeration(name) {
                let known = v
                    .as_str()
                    .is_some_and(|s| e.values.iter().any(|x| x.value.0 == s));
                return if known {
                    Ok(())
                } else {
                    wrong(&format!("a value of enum \"{name}\""))
                };
            }
            let Some(object) = custom.object(name) else {
                // Custom and Postgres scalars: any JSON value.
                return Ok(());
            };
            let Value::Object(map) = v else {
                return wrong(&format!("an object of type \"{name}\""));
            };
            for f in &object.fields {
                let ty = TypeRef::parse(&f.field_type)
                    .ok_or_else(|| OutputError::UnreadableFieldType(f.name.0.to_string()))?;
                let inner = map.get(&f.name.0).unwrap_or(&Value::Null);
                value(inner, &ty, custom, &f.name.0)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::types::CustomTypes;
    use serde_json::json;

    fn custom() -> ResolvedCustomTypes {
        let types: CustomTypes = serde_json::from_value(json!({
            "objects": [
                {"name": "Result", "fields": [
                    {"name": "ok", "type": "Boolean!"},
                    {"name": "count", "type": "Int"},
                    {"name": "mood", "type": "Mood"},
                    {"name": "tags", "type": "[String!]"},
                    {"name": "inner", "type": "Inner"},
                    {"name": "extra", "type": "jsonb"}
                ]},
                {"name": "Inner", "fields": [{"name": "n", "type": "Float!"}]}
            ],
            "enums": [{"name": "Mood", "values": [{"value": "happy"}, {"value": "sad"}]}]
        }))
        .unwrap();
        ResolvedCustomTypes {
            types,
            relationships: Default::default(),
        }
    }

    #[test]
    fn outputs_are_checked_against_the_declared_type() {
        let c = custom();
        let good = json!({"ok": true, "count": 3, "mood": "sad", "tags": ["a"],
                          "inner": {"n": 1.5}, "extra": {"any": [1]}, "ignored": 1});
        assert_eq!(check(&good, "Result!", &c), Ok(()));
        assert_eq!(check(&json!([good.clone()]), "[Result!]!", &c), Ok(()));
        let cases = [
            (
                json!([good.clone()]),
                "Result",
                "expecting object for action webhook response",
            ),
            (
                good.clone(),
                "[Result]",
                "expecting array for the action webhook response",
            ),
            (
                json!({"count": 1}),
                "Result",
                "expecting not null value for field \"ok\"",
            ),
            (
                json!({"ok": "yes"}),
                "Result",
                "expecting a Boolean for field \"ok\"",
            ),
            (
                json!({"ok": true, "count": 1.5}),
                "Result",
                "expecting an Int for field \"count\"",
            ),
            (
                json!({"ok": true, "mood": "angry"}),
                "Result",
                "expecting a value of enum \"Mood\" for field \"mood\"",
            ),
            (
                json!({"ok": true, "tags": [null]}),
                "Result",
                "expecting not null value for field \"tags\"",
            ),
            (
                json!({"ok": true, "inner": {}}),
                "Result",
                "expecting not null value for field \"n\"",
            ),
            (
                json!([null]),
                "[Result!]",
                "expecting not null value for field \"\"",
            ),
        ];
        for (body, ty, message) in cases {
            assert_eq!(
                check(&body, ty, &c).map_err(|e| e.to_string()),
                Err(message.to_owned()),
                "{body} as {ty}"
            );
        }
    }
}
