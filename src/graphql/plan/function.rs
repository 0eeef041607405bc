//! Root fields of tracked functions (`docs/functions.md`, "How a call runs"): the call's
//! arguments worked out from `args` (positional up to the first omitted one, named after it,
//! omitted ones left to their SQL default), then the rows read like the returned table's
//! under the role's select permission.

use super::Problem;
use super::{Collected, Input, PlanError, Planner, Result};
use crate::graphql::ir::*;
use crate::resolve::functions::ResolvedFunction;
use async_graphql_parser::types::Field as AstField;
use indexmap::IndexMap;
use serde_json::Value;

impl<'a> Planner<'a> {
    /// The rows (or the aggregate, with `aggregate`) of the tracked function `f`.
    pub(super) fn function_root(
        &mut self,
        f: &'a ResolvedFunction,
        fields: &[&AstField],
        args: &IndexMap<String, Input>,
        path: &str,
        aggregate: bool,
    ) -> Result<RootField> {
        let table = self.table(&f.returns, path)?;
        let source = Source::Function {
            function: f.function.clone(),
            args: call_arguments(f, args, path)?,
            returns: f.returns.clone(),
            set: f.set,
        };
        if aggregate {
            let sub: Collected<'_> =
                self.sub_fields(fields, &format!("{}_aggregate", table.type_name), path, 1)?;
            return Ok(RootField::Aggregate(self.aggregate(
                table,
                source,
                Vec::new(),
                args,
                &sub,
                path,
                1,
            )?));
        }
        let sub = self.sub_fields(fields, &table.type_name, path, 1)?;
        Ok(RootField::Select(self.select(
            table,
            source,
            Vec::new(),
            args,
            &sub,
            path,
            !f.set,
            1,
        )?))
    }
}

/// The arguments of a call to `f`: each given one bound as its type (an explicit `null` as
/// `NULL`), the session argument as the session object; positional until the first omitted
/// argument, named after it.
fn call_arguments(
    f: &ResolvedFunction,
    args: &IndexMap<String, Input>,
    path: &str,
) -> Result<Vec<FunctionArg>> {
    let given = args.get("args").and_then(Input::as_object);
    let at = format!("{path}.args.args");
    let mut out = Vec::new();
    let mut named = false;
    for (i, arg) in f.arguments.iter().enumerate() {
        let param = if Some(i) == f.session_argument {
            Param::SessionObject
        } else {
            match given.and_then(|g| g.get(&arg.graphql)) {
                Some(Input::Value(p)) => p.clone(),
                Some(Input::Null) => Param::Literal(Value::Null),
                // An enum table's value, as its argument's GraphQL enum carries it.
                Some(Input::Enum(value)) => Param::Literal(Value::String(value.clone())),
                Some(Input::List(_) | Input::Object(_)) => {
                    return Err(PlanError::at(
                        &format!("{at}.{}", arg.graphql),
                        Problem::WrongValue {
                            ty: arg.sql.type_name.clone(),
                            found: "a list or an object".to_owned(),
                        },
                    ))
                }
                None if arg.sql.has_default => {
                    named = true;
                    continue;
                }
                None => return Err(PlanError::at(&at, Problem::NonDefaultOmitted)),
            }
        };
        if named && arg.sql.name.is_empty() {
            return Err(PlanError::at(&at, Problem::PositionalOmitted));
        }
        out.push(FunctionArg {
            name: match named {
                true => arg.sql.name.clone(),
                false => String::new(),
            },
            value: FunctionArgValue::Value(ValueExpr {
                param,
                cast: arg.sql.cast.clone(),
            }),
        });
    }
    Ok(out)
}
