//! `where` and `order_by` arguments: the role's `<t>_bool_exp` and `<t>_order_by` inputs as IR,
//! with the permission filters of related tables folded in.

use super::{Input, PlanError, Planner, Result};
use crate::db_model::PgType;
use crate::graphql::ir::*;
use crate::graphql::model::{RoleTable, TableField};
use crate::resolve::operators::{self, Operand, OperatorKind};
use crate::resolve::RelationshipKind;
use serde_json::Value;

impl<'a> Planner<'a> {
    pub(super) fn where_expr(
        &mut self,
        table: &'a RoleTable,
        input: &Input,
        path: &str,
    ) -> Result<BoolExpr> {
        let Some(map) = input.as_object() else {
            return Ok(BoolExpr::True);
        };
        let mut all = Vec::new();
        for (key, value) in map {
            let kpath = format!("{path}.{key}");
            match key.as_str() {
                "_and" | "_or" => {
                    let parts = value
                        .as_list()
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| self.where_expr(table, v, &format!("{kpath}[{i}]")))
                        .collect::<Result<Vec<_>>>()?;
                    all.push(if key == "_and" {
                        BoolExpr::And(parts)
                    } else {
                        BoolExpr::Or(parts)
                    });
                }
                "_not" => {
                    if !matches!(value, Input::Null) {
                        all.push(BoolExpr::Not(Box::new(
                            self.where_expr(table, value, &kpath)?,
                        )));
                    }
                }
                _ => match table.fields.get(key) {
                    Some(TableField::Column(c)) => {
                        let column = ColumnExpr {
                            scope: Scope::Current,
                            column: c.column.clone(),
                            cast: None,
                        };
                        all.push(comparison(&column, &c.pg_type, value));
                    }
                    Some(TableField::Relationship(r)) => {
                        let target = self.table(&r.target, &kpath)?;
                        let mut inner = Vec::new();
                        if let Some(f) = self.permission_filter(target) {
                            inner.push(f);
                        }
                        inner.push(self.where_expr(target, value, &kpath)?);
                        all.push(BoolExpr::Exists {
                            table: r.target.clone(),
                            join: r.mapping.clone(),
                            filter: Box::new(BoolExpr::And(inner)),
                        });
                    }
                    _ => {
                        return Err(PlanError::unknown_field(
                            &kpath,
                            key,
                            format!("{}_bool_exp", table.type_name),
                        ))
                    }
                },
            }
        }
        Ok(BoolExpr::And(all))
    }

    pub(super) fn order_by(
        &mut self,
        table: &'a RoleTable,
        input: &Input,
        path: &str,
    ) -> Result<Vec<OrderBy>> {
        let mut out = Vec::new();
        for (i, item) in input.as_list().into_iter().enumerate() {
            let Some(map) = item.as_object() else {
                continue;
            };
            for (key, value) in map {
                self.order_item(
                    table,
                    key,
                    value,
                    &format!("{path}[{i}].{key}"),
                    &mut out,
                    &mut |e| e,
                )?;
            }
        }
        Ok(out)
    }

    pub(super) fn order_item(
        &mut self,
        table: &'a RoleTable,
        key: &str,
        value: &Input,
        path: &str,
        out: &mut Vec<OrderBy>,
        wrap: &mut dyn FnMut(OrderExpr) -> OrderExpr,
    ) -> Result<()> {
        let direction = |v: &Input| match v {
            Input::Enum(d) => Direction::from_name(d),
            _ => None,
        };
        match table.fields.get(key) {
            Some(TableField::Column(c)) => {
                if let Some(d) = direction(value) {
                    out.push(OrderBy {
                        expr: wrap(OrderExpr::Column(c.column.clone())),
                        direction: d,
                    });
                }
            }
            Some(TableField::Relationship(r)) if r.kind == RelationshipKind::Object => {
                let target = self.table(&r.target, path)?;
                let filter = Box::new(self.permission_filter(target).unwrap_or(BoolExpr::True));
                let Some(map) = value.as_object() else {
                    return Ok(());
                };
                for (k, v) in map {
                    let (t, j, f) = (r.target.clone(), r.mapping.clone(), filter.clone());
                    let mut nested = |inner: OrderExpr| {
                        wrap(OrderExpr::Object {
                            table: t.clone(),
                            join: j.clone(),
                            filter: f.clone(),
                            inner: Box::new(inner),
                        })
                    };
                    self.order_item(target, k, v, &format!("{path}.{k}"), out, &mut nested)?;
                }
            }
            Some(TableField::RelationshipAggregate(r)) => {
                let target = self.table(&r.target, path)?;
                let filter = Box::new(self.permission_filter(target).unwrap_or(BoolExpr::True));
                let Some(map) = value.as_object() else {
                    return Ok(());
                };
                for (function, v) in map {
                    if function == "count" {
                        if let Some(d) = direction(v) {
                            let expr = OrderExpr::Aggregate {
                                table: r.target.clone(),
                                join: r.mapping.clone(),
                                filter: filter.clone(),
                                aggregate: OrderAggregate::Count,
                            };
                            out.push(OrderBy {
                                expr: wrap(expr),
                                direction: d,
                            });
                        }
                        continue;
                    }
                    let (Some(columns), Some(function)) =
                        (v.as_object(), AggregateFunction::from_name(function))
                    else {
                        continue;
                    };
                    for (column, dir) in columns {
                        let (Some(c), Some(d)) = (target.columns.get(column), direction(dir))
                        else {
                            continue;
                        };
                        let expr = OrderExpr::Aggregate {
                            table: r.target.clone(),
                            join: r.mapping.clone(),
                            filter: filter.clone(),
                            aggregate: OrderAggregate::Of(function, c.column.clone()),
                        };
                        out.push(OrderBy {
                            expr: wrap(expr),
                            direction: d,
                        });
                    }
                }
            }
            _ => {
                return Err(PlanError::unknown_field(
                    path,
                    key,
                    format!("{}_order_by", table.type_name),
                ))
            }
        }
        Ok(())
    }
}

/// Comparisons of one column from a `<S>_comparison_exp` input.
fn comparison(column: &ColumnExpr, pg_type: &PgType, input: &Input) -> BoolExpr {
    let Some(ops) = input.as_object() else {
        return BoolExpr::True;
    };
    let mut all = Vec::new();
    for (name, value) in ops {
        // The input type only offers the operators of the column's family.
        let Some(operator) = operators::operator(name.trim_start_matches('_')) else {
            continue;
        };
        let op = match operator.kind {
            OperatorKind::IsNull => {
                if let Some(b) = value.as_bool_literal() {
                    all.push(BoolExpr::IsNull {
                        column: column.clone(),
                        is_null: b,
                    });
                }
                continue;
            }
            OperatorKind::Cast => {
                if let Some(text) = value.as_object().and_then(|casts| casts.get("String")) {
                    let cast = ColumnExpr {
                        cast: Some(PgType::Text),
                        ..column.clone()
                    };
                    all.push(comparison(&cast, &PgType::Text, text));
                }
                continue;
            }
            OperatorKind::CompareColumn(_) => continue,
            OperatorKind::Compare(op) => op,
        };
        let param = match value {
            Input::Null => continue,
            Input::Value(p) => p.clone(),
            Input::Enum(e) => Param::Literal(Value::String(e.clone())),
            Input::List(items) => list_param(items),
            Input::Object(_) => continue,
        };
        let cast = match operator.operand {
            Operand::Text | Operand::ListOfText => PgType::Text,
            _ => pg_type.clone(),
        };
        all.push(BoolExpr::Compare {
            column: column.clone(),
            op,
            value: ValueExpr { param, cast },
        });
    }
    BoolExpr::And(all)
}

/// One parameter for a list: a JSON array literal when every element is literal.
pub(super) fn list_param(items: &[Input]) -> Param {
    let params: Vec<Param> = items
        .iter()
        .map(|i| match i {
            Input::Value(p) => p.clone(),
            Input::Enum(e) => Param::Literal(Value::String(e.clone())),
            _ => Param::Literal(Value::Null),
        })
        .collect();
    if params.iter().all(|p| matches!(p, Param::Literal(_))) {
        Param::Literal(Value::Array(
            params
                .into_iter()
                .filter_map(|p| match p {
                    Param::Literal(v) => Some(v),
                    _ => None,
                })
                .collect(),
        ))
    } else {
        Param::Array(params)
    }
}
