//! Calling action handlers (`docs/actions.md`): one call and the checking of its answer
//! ([`call`], [`output`]), and the arguments of a call as the handler receives them
//! ([`input`]). The engine calls synchronous actions' handlers through it, and
//! `crate::async_actions` the asynchronous ones'.
//! The schema, the plan and the SQL that shape an output are the GraphQL layer's and the
//! translator's; this module does the HTTP.

pub mod call;
pub mod output;

pub use call::{call, forwarded_headers, ActionError, Call};

use crate::graphql::ir::{ArgValue, Param};
use serde_json::{Map, Value};

/// The arguments of a call as JSON, variables read from the request: keyed by argument
/// name, input objects as objects; an argument given as a variable the request left out is
/// left out too (as an argument the document does not name).
pub fn input(args: &[(String, ArgValue)], variables: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    for (name, value) in args {
        if let Some(v) = arg(value, variables) {
            out.insert(name.clone(), v);
        }
    }
    Value::Object(out)
}

/// One argument value; `None` for a variable that was not given.
fn arg(value: &ArgValue, variables: &Map<String, Value>) -> Option<Value> {
    Some(match value {
        ArgValue::Null => Value::Null,
        ArgValue::Enum(e) => Value::String(e.clone()),
        ArgValue::Value(Param::Variable(name)) => variables.get(name)?.clone(),
        ArgValue::Value(Param::Literal(v)) => v.clone(),
        ArgValue::Value(_) => Value::Null,
        ArgValue::List(items) => Value::Array(
            items
                .iter()
                .map(|i| arg(i, variables).unwrap_or(Value::Null))
                .collect(),
        ),
        ArgValue::Object(fields) => Value::Object(
            fields
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), arg(v, variables)?)))
                .collect(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inputs_read_variables_and_leave_out_what_was_not_given() {
        let args = vec![
            (
                "id".to_owned(),
                ArgValue::Value(Param::Variable("id".into())),
            ),
            (
                "reason".to_owned(),
                ArgValue::Value(Param::Variable("missing".into())),
            ),
            ("mood".to_owned(), ArgValue::Enum("happy".into())),
            (
                "filter".to_owned(),
                ArgValue::Object(vec![
                    (
                        "tags".to_owned(),
                        ArgValue::List(vec![ArgValue::Value(Param::Literal(json!("a")))]),
                    ),
                    ("note".to_owned(), ArgValue::Null),
                ]),
            ),
        ];
        let variables = json!({"id": 7}).as_object().cloned().unwrap();
        assert_eq!(
            input(&args, &variables),
            json!({"id": 7, "mood": "happy", "filter": {"tags": ["a"], "note": null}})
        );
    }
}
