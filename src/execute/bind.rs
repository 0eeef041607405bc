//! Parameter values: where each comes from (the request's variables, its session, an earlier
//! step of a program) and the text Postgres receives for it.

use super::program::Progress;
use super::ExecuteError;
use crate::db_model::Encoding;
use crate::sql::ast::{Param, ParamSource};
use crate::sql::program::StepValue;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// What a request binds parameters from.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// Request variables.
    pub variables: &'a Map<String, Value>,
    /// Session variables (lower-case names).
    pub session: &'a BTreeMap<String, String>,
    /// Values worked out while the operation runs, by name ([`ParamSource::Provided`]);
    /// `None` when it has none.
    pub provided: Option<&'a Provided>,
}

/// Values worked out while an operation runs, by the names its statements bind them by.
pub type Provided = BTreeMap<String, Value>;

/// Text of a JSON value as Postgres expects it in a text parameter.
fn text_of(value: &Value, encoding: Encoding) -> Option<String> {
    match (value, encoding) {
        (Value::Null, _) => None,
        (v, Encoding::Json) => Some(v.to_string()),
        (Value::String(s), Encoding::Text | Encoding::PgArray) => Some(s.clone()),
        (Value::Array(items), Encoding::PgArray) => Some(pg_array(items)),
        (other, Encoding::Text | Encoding::PgArray) => Some(other.to_string()),
    }
}

/// A JSON array as a Postgres array literal: elements double-quoted with `"` and `\` escaped,
/// `NULL` for null, nested arrays as nested braces.
fn pg_array(items: &[Value]) -> String {
    let mut out = String::new();
    push_pg_array(&mut out, items);
    out
}

/// Appends [`pg_array`]'s literal of `items` to `out`.
fn push_pg_array(out: &mut String, items: &[Value]) {
    out.push('{');
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match v {
            Value::Null => out.push_str("NULL"),
            Value::Array(inner) => push_pg_array(out, inner),
            Value::String(s) => push_array_element(out, s),
            other => push_array_element(out, &other.to_string()),
        }
    }
    out.push('}');
}

/// Text values as a Postgres `text[]` literal: every element double-quoted (`"` and `\`
/// escaped), `NULL` for a missing value. Cast in SQL like any text parameter.
pub fn text_array(values: &[Option<String>]) -> String {
    let mut out =
        String::with_capacity(2 + values.iter().flatten().map(|s| s.len() + 3).sum::<usize>());
    out.push('{');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match v {
            None => out.push_str("NULL"),
            Some(s) => push_array_element(&mut out, s),
        }
    }
    out.push('}');
    out
}

/// Appends one element of an array literal: double-quoted, with `"` and `\` escaped.
fn push_array_element(out: &mut String, s: &str) {
    out.push('"');
    let mut rest = s;
    while let Some(at) = rest.find(['"', '\\']) {
        out.push_str(&rest[..at]);
        out.push('\\');
        out.push_str(&rest[at..=at]);
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
    out.push('"');
}

/// Resolves a parameter's source to a JSON value.
fn resolve(
    source: &ParamSource,
    binding: &Binding<'_>,
    progress: Option<&Progress>,
) -> Result<Value, ExecuteError> {
    Ok(match source {
        ParamSource::Literal(v) => v.clone(),
        ParamSource::Variable(name) => binding.variables.get(name).cloned().unwrap_or(Value::Null),
        ParamSource::Session(name) => match binding.session.get(name) {
            Some(v) => Value::String(v.clone()),
            None => return Err(ExecuteError::MissingSessionVariable(name.clone())),
        },
        ParamSource::SessionObject => Value::Object(
            binding
                .session
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        ),
        ParamSource::Array(items) => Value::Array(
            items
                .iter()
                .map(|p| resolve(p, binding, progress))
                .collect::<Result<_, _>>()?,
        ),
        ParamSource::Provided(name) => binding
            .provided
            .and_then(|p| p.get(name))
            .cloned()
            .ok_or_else(|| ExecuteError::Unexpected(format!("no value named \"{name}\"")))?,
        ParamSource::Cursor(initial) => resolve(initial, binding, progress)?,
        ParamSource::Step(value) => {
            let progress = progress.ok_or_else(|| {
                ExecuteError::Unexpected(format!("{value:?} outside of a program"))
            })?;
            step_value(value, progress)
        }
    })
}

fn step_value(value: &StepValue, progress: &Progress) -> Value {
    match value {
        StepValue::Column { step, column } => progress
            .first_row(*step)
            .and_then(|row| row.get(column))
            .cloned()
            .unwrap_or(Value::Null),
        StepValue::Ctids { record, rows } => Value::Array(
            progress
                .ctids(*record, *rows)
                .map(|c| Value::String(c.to_owned()))
                .collect(),
        ),
        StepValue::Affected => Value::from(progress.affected()),
        StepValue::Keys { step, column } => progress.keys(*step, column),
        StepValue::Each { column } => progress.each(column),
    }
}

/// The text values of all parameters. `progress` is the state of the program the statement is a
/// step of, if any.
pub fn bind(
    params: &[Param],
    binding: &Binding<'_>,
    progress: Option<&Progress>,
) -> Result<Vec<Option<String>>, ExecuteError> {
    params
        .iter()
        .map(|p| {
            let value = resolve(&p.source, binding, progress)?;
            // A session variable is text already: `{1,2}` for an array, JSON text for json.
            let encoding = match p.source {
                ParamSource::Session(_) => Encoding::Text,
                _ => p.encoding,
            };
            Ok(text_of(&value, encoding))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn param(source: ParamSource, encoding: Encoding) -> Param {
        Param { source, encoding }
    }

    #[test]
    fn parameters_bind_as_text_or_json() {
        let session: BTreeMap<String, String> =
            [("x-svc-user-id".to_owned(), "7".to_owned())].into();
        let variables = json!({"n": 3, "j": {"a": 1}}).as_object().cloned().unwrap();
        let binding = Binding {
            variables: &variables,
            session: &session,
            provided: None,
        };
        let params = vec![
            param(ParamSource::Variable("n".into()), Encoding::Text),
            param(ParamSource::Variable("j".into()), Encoding::Json),
            param(ParamSource::Literal(json!("it's")), Encoding::Text),
            param(ParamSource::Literal(json!("it's")), Encoding::Json),
            param(
                ParamSource::Session("x-svc-user-id".into()),
                Encoding::PgArray,
            ),
            param(
                ParamSource::Array(vec![
                    ParamSource::Variable("n".into()),
                    ParamSource::Literal(json!(4)),
                ]),
                Encoding::Json,
            ),
            param(ParamSource::Literal(Value::Null), Encoding::Text),
            param(ParamSource::SessionObject, Encoding::Json),
        ];
        let bound = bind(&params, &binding, None).unwrap();
        assert_eq!(
            bound,
            vec![
                Some("3".into()),
                Some("{\"a\":1}".into()),
                Some("it's".into()),
                Some("\"it's\"".into()),
                Some("7".into()),
                Some("[3,4]".into()),
                None,
                Some("{\"x-svc-user-id\":\"7\"}".into()),
            ]
        );
        let arrays = bind(
            &[param(
                ParamSource::Literal(json!(["a b", "q\"uote", "back\\slash", null, 3])),
                Encoding::PgArray,
            )],
            &binding,
            None,
        )
        .unwrap();
        assert_eq!(
            arrays,
            vec![Some(
                r#"{"a b","q\"uote","back\\slash",NULL,"3"}"#.to_owned()
            )]
        );
        let missing = bind(
            &[param(
                ParamSource::Session("x-svc-org".into()),
                Encoding::Text,
            )],
            &binding,
            None,
        )
        .unwrap_err();
        assert!(matches!(missing, ExecuteError::MissingSessionVariable(ref n) if n == "x-svc-org"));
        let outside = bind(
            &[param(
                ParamSource::Step(StepValue::Affected),
                Encoding::Text,
            )],
            &binding,
            None,
        );
        assert!(matches!(outside, Err(ExecuteError::Unexpected(_))));
    }

    #[test]
    fn array_literals_quote_every_element_and_nest() {
        assert_eq!(
            text_array(&[
                Some("a".into()),
                None,
                Some("x\"y\\z\"".into()),
                Some(String::new()),
                Some("é, {b}".into()),
            ]),
            r#"{"a",NULL,"x\"y\\z\"","","é, {b}"}"#
        );
        assert_eq!(text_array(&[]), "{}");
        assert_eq!(
            pg_array(&[json!([1, 2]), json!([null, "\\"]), json!([])]),
            r#"{{"1","2"},{NULL,"\\"},{}}"#
        );
    }
}
