//! Selections: row arguments (filter, order, paging), the fields of a row (columns, JSON paths,
//! relationships, computed fields) and aggregates.

use super::Problem;
use super::{Collected, Input, PlanError, Planner, Result};
use crate::db_model::PgType;
use crate::graphql::ir::*;
use crate::graphql::model::{RoleComputed, RoleTable, TableField};
use crate::resolve::{ComputedReturn, RelationshipKind};
use async_graphql_parser::types::Field as AstField;
use indexmap::IndexMap;
use serde_json::Value;

impl<'a> Planner<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn select(
        &mut self,
        table: &'a RoleTable,
        source: Source,
        join: Vec<(String, String)>,
        args: &IndexMap<String, Input>,
        sub: &Collected<'_>,
        path: &str,
        single: bool,
        depth: usize,
    ) -> Result<Select> {
        let row_args = self.row_args(table, args, path)?;
        let fields = self.table_fields(table, sub, path, depth)?;
        Ok(Select {
            source,
            join,
            args: row_args,
            fields,
            single,
        })
    }

    pub(super) fn row_args(
        &mut self,
        table: &'a RoleTable,
        args: &IndexMap<String, Input>,
        path: &str,
    ) -> Result<RowArgs> {
        let mut row = RowArgs::default();
        if let Some(filter) = self.permission_filter(table) {
            row.filter.push(filter);
        }
        if let Some(w) = args.get("where") {
            row.filter
                .push(self.where_expr(table, w, &format!("{path}.args.where"))?);
        }
        if let Some(order) = args.get("order_by") {
            row.order_by = self.order_by(table, order, &format!("{path}.args.order_by"))?;
        }
        if let Some(distinct) = args.get("distinct_on") {
            for item in distinct.as_list() {
                let Input::Enum(name) = item else { continue };
                if let Some(c) = table.columns.get(name) {
                    row.distinct_on.push(c.column.clone());
                }
            }
            let prefix: Vec<Option<&String>> = row
                .order_by
                .iter()
                .take(row.distinct_on.len())
                .map(|o| match &o.expr {
                    OrderExpr::Column(c) => Some(c),
                    _ => None,
                })
                .collect();
            if !row.order_by.is_empty()
                && prefix != row.distinct_on.iter().map(Some).collect::<Vec<_>>()
            {
                return Err(PlanError::at(
                    &format!("{path}.args"),
                    Problem::DistinctOnOrder,
                ));
            }
        }
        if let Some(Input::Value(p)) = args.get("limit") {
            if matches!(p, Param::Literal(v) if v.as_i64().is_some_and(|n| n < 0)) {
                return Err(PlanError::at(
                    &format!("{path}.args.limit"),
                    Problem::Negative,
                ));
            }
            row.limit.push(ValueExpr {
                param: p.clone(),
                cast: PgType::BigInt,
            });
        }
        if let Some(cap) = table.limit {
            row.limit.push(ValueExpr {
                param: Param::Literal(Value::from(cap)),
                cast: PgType::BigInt,
            });
        }
        if let Some(Input::Value(p)) = args.get("offset") {
            row.offset = Some(ValueExpr {
                param: p.clone(),
                cast: PgType::BigInt,
            });
        }
        Ok(row)
    }

    pub(super) fn table_fields(
        &mut self,
        table: &'a RoleTable,
        sub: &Collected<'_>,
        path: &str,
        depth: usize,
    ) -> Result<Vec<(String, Field)>> {
        let mut out = Vec::new();
        for (key, fields) in sub {
            let field = fields[0];
            let name = field.name.node.as_str();
            let fpath = format!("{path}.selectionSet.{key}");
            if name == "__typename" {
                Self::no_selection(field, &fpath)?;
                out.push((key.clone(), Field::Constant(table.type_name.clone())));
                continue;
            }
            let def = self.field_def(&table.type_name, name, &fpath)?;
            let args = self.field_args(&def, field, &fpath)?;
            let kind = table
                .fields
                .get(name)
                .ok_or_else(|| PlanError::unknown_field(&fpath, name, &table.type_name))?;
            let planned = match kind {
                TableField::Column(c) => {
                    Self::no_selection(field, &fpath)?;
                    let path_arg = match args.get("path") {
                        Some(Input::Value(Param::Literal(Value::String(p)))) => Some(ValueExpr {
                            param: Param::Literal(json_path(p, &format!("{fpath}.args.path"))?),
                            cast: PgType::Jsonb,
                        }),
                        // Checked without values: any path fits.
                        Some(Input::Value(Param::Variable(_))) if self.without_values => None,
                        Some(Input::Value(Param::Variable(name))) => {
                            self.shape_dependent = true;
                            let text = self
                                .variable(name, &fpath)?
                                .as_str()
                                .unwrap_or_default()
                                .to_owned();
                            Some(ValueExpr {
                                param: Param::Literal(json_path(
                                    &text,
                                    &format!("{fpath}.args.path"),
                                )?),
                                cast: PgType::Jsonb,
                            })
                        }
                        _ => None,
                    };
                    Field::Column {
                        column: c.column.clone(),
                        path: path_arg,
                    }
                }
                TableField::Relationship(r) => {
                    let target = self.table(&r.target, &fpath)?;
                    let sub = self.sub_fields(fields, &target.type_name, &fpath, depth + 1)?;
                    let single = r.kind == RelationshipKind::Object;
                    let select = self.select(
                        target,
                        Source::Table(r.target.clone()),
                        r.mapping.clone(),
                        &args,
                        &sub,
                        &fpath,
                        single,
                        depth + 1,
                    )?;
                    Field::Relationship {
                        kind: r.kind,
                        select: Box::new(select),
                    }
                }
                TableField::RelationshipAggregate(r) => {
                    let target = self.table(&r.target, &fpath)?;
                    let sub = self.sub_fields(
                        fields,
                        &format!("{}_aggregate", target.type_name),
                        &fpath,
                        depth + 1,
                    )?;
                    Field::Aggregate(Box::new(self.aggregate(
                        target,
                        Source::Table(target.name.clone()),
                        r.mapping.clone(),
                        &args,
                        &sub,
                        &fpath,
                        depth + 1,
                    )?))
                }
                TableField::Computed(cf) => self.computed(cf, fields, &args, &fpath, depth)?,
                TableField::RemoteJoin(join) => {
                    self.remote_join(&table.name, join, field, &def, &fpath, depth)?
                }
                TableField::NativeQuery(r) => {
                    self.native_query_relationship(r, fields, &args, &fpath, depth)?
                }
            };
            out.push((key.clone(), planned));
        }
        Ok(out)
    }

    pub(super) fn computed(
        &mut self,
        cf: &RoleComputed,
        fields: &[&AstField],
        args: &IndexMap<String, Input>,
        path: &str,
        depth: usize,
    ) -> Result<Field> {
        let given = args
            .get("args")
            .and_then(Input::as_object)
            .cloned()
            .unwrap_or_default();
        let all_named = cf.arguments.iter().all(|a| !a.name.is_empty());
        let mut fn_args = Vec::new();
        for (i, arg) in cf.arguments.iter().enumerate() {
            let (name, pg_type) = (&arg.name, &arg.cast);
            let value = if i == cf.table_argument {
                Some(FunctionArgValue::Row)
            } else if Some(i) == cf.session_argument {
                Some(FunctionArgValue::Value(ValueExpr {
                    param: Param::SessionObject,
                    cast: pg_type.clone(),
                }))
            } else {
                match given.get(name) {
                    Some(Input::Value(p)) => Some(FunctionArgValue::Value(ValueExpr {
                        param: p.clone(),
                        cast: pg_type.clone(),
                    })),
                    // Left out of a call by name only when the function has a default for
                    // it: without one, Postgres finds no function to call.
                    Some(Input::Null) | None if !all_named || !arg.has_default => {
                        Some(FunctionArgValue::Value(ValueExpr {
                            param: Param::Literal(Value::Null),
                            cast: pg_type.clone(),
                        }))
                    }
                    _ => None,
                }
            };
            if let Some(value) = value {
                fn_args.push(FunctionArg {
                    name: if all_named {
                        name.clone()
                    } else {
                        String::new()
                    },
                    value,
                });
            }
        }
        match &cf.returns {
            ComputedReturn::Scalar(_) => {
                Self::no_selection(fields[0], path)?;
                Ok(Field::Computed {
                    function: cf.function.clone(),
                    args: fn_args,
                    cell: cf.cell.as_ref().map(super::permission::permission),
                })
            }
            ComputedReturn::Table { table, set } => {
                let target = self.table(table, path)?;
                let sub = self.sub_fields(fields, &target.type_name, path, depth + 1)?;
                let source = Source::Function {
                    function: cf.function.clone(),
                    args: fn_args,
                    returns: table.clone(),
                    set: *set,
                };
                let row_args = if *set { args.clone() } else { IndexMap::new() };
                let select = self.select(
                    target,
                    source,
                    Vec::new(),
                    &row_args,
                    &sub,
                    path,
                    !set,
                    depth + 1,
                )?;
                let kind = if *set {
                    RelationshipKind::Array
                } else {
                    RelationshipKind::Object
                };
                Ok(Field::Relationship {
                    kind,
                    select: Box::new(select),
                })
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn aggregate(
        &mut self,
        table: &'a RoleTable,
        source: Source,
        join: Vec<(String, String)>,
        args: &IndexMap<String, Input>,
        sub: &Collected<'_>,
        path: &str,
        depth: usize,
    ) -> Result<AggregateSelect> {
        let row_args = self.row_args(table, args, path)?;
        let type_name = format!("{}_aggregate", table.type_name);
        let mut fields = Vec::new();
        for (key, group) in sub {
            let field = group[0];
            let name = field.name.node.as_str();
            let fpath = format!("{path}.selectionSet.{key}");
            match name {
                "__typename" => {
                    fields.push((key.clone(), AggregateField::Constant(type_name.clone())))
                }
                "nodes" => {
                    let sub = self.sub_fields(group, &table.type_name, &fpath, depth + 1)?;
                    fields.push((
                        key.clone(),
                        AggregateField::Nodes(self.table_fields(table, &sub, &fpath, depth + 1)?),
                    ));
                }
                "aggregate" => {
                    let fields_type = format!("{}_aggregate_fields", table.type_name);
                    let sub = self.sub_fields(group, &fields_type, &fpath, depth + 1)?;
                    let mut ops = Vec::new();
                    for (okey, ogroup) in &sub {
                        let of = ogroup[0];
                        let oname = of.name.node.as_str();
                        let opath = format!("{fpath}.selectionSet.{okey}");
                        if oname == "__typename" {
                            ops.push((okey.clone(), AggregateOp::Constant(fields_type.clone())));
                            continue;
                        }
                        let def = self.field_def(&fields_type, oname, &opath)?;
                        let oargs = self.field_args(&def, of, &opath)?;
                        if oname == "count" {
                            Self::no_selection(of, &opath)?;
                            let columns = oargs
                                .get("columns")
                                .map(|c| {
                                    c.as_list()
                                        .into_iter()
                                        .filter_map(|i| match i {
                                            Input::Enum(n) => {
                                                table.columns.get(n).map(|c| c.column.clone())
                                            }
                                            _ => None,
                                        })
                                        .collect()
                                })
                                .unwrap_or_default();
                            let distinct = oargs
                                .get("distinct")
                                .and_then(Input::as_bool_literal)
                                .unwrap_or(false);
                            ops.push((okey.clone(), AggregateOp::Count { columns, distinct }));
                            continue;
                        }
                        let op_type = format!("{}_{oname}_fields", table.type_name);
                        let csub = self.sub_fields(ogroup, &op_type, &opath, depth + 2)?;
                        let mut columns = Vec::new();
                        for (ckey, cgroup) in &csub {
                            let cname = cgroup[0].name.node.as_str();
                            let cpath = format!("{opath}.selectionSet.{ckey}");
                            if cname == "__typename" {
                                columns.push((
                                    ckey.clone(),
                                    AggregateColumn::Typename(op_type.clone()),
                                ));
                                continue;
                            }
                            self.field_def(&op_type, cname, &cpath)?;
                            if let Some(c) = table.columns.get(cname) {
                                columns.push((
                                    ckey.clone(),
                                    AggregateColumn::Column(c.column.clone()),
                                ));
                            }
                        }
                        let Some(function) = AggregateFunction::from_name(oname) else {
                            return Err(PlanError::unknown_field(&opath, oname, &fields_type));
                        };
                        ops.push((okey.clone(), AggregateOp::Function { function, columns }));
                    }
                    fields.push((key.clone(), AggregateField::Aggregate(ops)));
                }
                other => return Err(PlanError::unknown_field(&fpath, other, &type_name)),
            }
        }
        Ok(AggregateSelect {
            source,
            join,
            args: row_args,
            fields,
        })
    }
}

/// Parses a JSON select path (`$.a.b[0]`, `a.b`) into a JSON array of text keys.
pub fn json_path(path: &str, at: &str) -> Result<Value> {
    crate::json_path::keys(path)
        .map(|keys| Value::Array(keys.into_iter().map(Value::String).collect()))
        .ok_or_else(|| PlanError::at(at, Problem::JsonPath(path.to_owned())))
}
