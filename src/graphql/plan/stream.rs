//! `<t>_stream`: the cursor column and its starting value, the order and the batch size, and the
//! rule that a streaming subscription has no other root field (`docs/graphql.md`, "Streaming
//! subscriptions").

use super::Problem;
use super::{Collected, Input, PlanError, Planner, Result};
use crate::db_model::PgType;
use crate::graphql::ir::*;
use crate::graphql::model::RoleTable;
use indexmap::IndexMap;
use serde_json::Value;

impl<'a> Planner<'a> {
    /// The plan of a `<t>_stream` field.
    pub(super) fn stream(
        &mut self,
        table: &'a RoleTable,
        args: &IndexMap<String, Input>,
        sub: &Collected<'_>,
        path: &str,
    ) -> Result<StreamSelect> {
        let batch_size = self.batch_size(args.get("batch_size"), path)?;
        let cursor_path = format!("{path}.args.cursor");
        let mut named: Vec<(&String, &Input, bool)> = Vec::new();
        for item in args.get("cursor").map(Input::as_list).unwrap_or_default() {
            let Some(item) = item.as_object() else {
                continue; // `null` items are ignored
            };
            let descending = matches!(item.get("ordering"), Some(Input::Enum(o)) if o == "DESC");
            let initial = item.get("initial_value").and_then(Input::as_object);
            for (field, value) in initial.into_iter().flatten() {
                if !matches!(value, Input::Null) {
                    named.push((field, value, descending));
                }
            }
        }
        let (field, value, descending) = match named.as_slice() {
            [] => return Err(PlanError::at(&cursor_path, Problem::NoStreamColumn)),
            [one] => *one,
            _ => return Err(PlanError::at(&cursor_path, Problem::SeveralStreamColumns)),
        };
        let column = table
            .columns
            .get(field)
            .filter(|c| c.cursor)
            .ok_or_else(|| {
                PlanError::unknown_field(
                    &format!("{cursor_path}.initial_value.{field}"),
                    field,
                    format!("{}_stream_cursor_value_input", table.type_name),
                )
            })?;
        let initial = match value {
            Input::Value(param) => param.clone(),
            Input::Enum(e) => Param::Literal(Value::String(e.clone())),
            _ => Param::Literal(Value::Null),
        };
        let mut where_only = IndexMap::new();
        if let Some(w) = args.get("where") {
            where_only.insert("where".to_owned(), w.clone());
        }
        let select = self.select(
            table,
            Source::Table(table.name.clone()),
            Vec::new(),
            &where_only,
            sub,
            path,
            false,
            1,
        )?;
        Ok(StreamSelect {
            select,
            column: column.column.clone(),
            cast: column.pg_type.clone(),
            descending,
            batch_size,
            cursor: ValueExpr {
                param: Param::Cursor(Box::new(initial)),
                cast: column.pg_type.clone(),
            },
        })
    }

    /// `batch_size`, which must not be negative. A variable's value is read now, so the plan
    /// depends on it (it is cached with the variables).
    fn batch_size(&mut self, input: Option<&Input>, path: &str) -> Result<ValueExpr> {
        let at = format!("{path}.args.batch_size");
        let value = match input {
            Some(Input::Value(Param::Literal(v))) => v.clone(),
            Some(Input::Value(Param::Variable(name))) => {
                self.shape_dependent = true;
                self.variable(name, &at)?.clone()
            }
            _ => Value::Null,
        };
        match value.as_i64() {
            Some(n) if n >= 0 => Ok(ValueExpr {
                param: Param::Literal(Value::from(n)),
                cast: PgType::Integer,
            }),
            _ => Err(PlanError::at(
                &at,
                Problem::NegativeBatchSize(value.to_string()),
            )),
        }
    }

    /// A subscription with a `_stream` field has no other root field.
    pub(super) fn stream_alone(data: &QueryPlan) -> Result<()> {
        let streams = data
            .fields
            .iter()
            .filter(|(_, f)| matches!(f, RootField::Stream(_)))
            .count();
        match streams {
            0 => Ok(()),
            n if n < data.fields.len() => Err(PlanError::at("$", Problem::StreamBesideLiveQuery)),
            1 => Ok(()),
            _ => Err(PlanError::at("$", Problem::SeveralStreams)),
        }
    }
}
