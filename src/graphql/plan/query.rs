//! The query root: each root field becomes a selection, a by-key lookup or an aggregate;
//! introspection fields are set aside for [`crate::graphql::introspection`].

use super::Problem;
use super::{Input, OperationIr, PlanError, Planner, Result};
use crate::graphql::ir::*;
use crate::graphql::model::RootKind;
use crate::resolve::CompareOp;
use async_graphql_parser::types::{Field as AstField, OperationType, SelectionSet};
use indexmap::IndexMap;
use serde_json::Value;

impl<'a> Planner<'a> {
    /// The query root, or the subscription root (the same table fields, no introspection).
    pub(super) fn root(mut self, set: &SelectionSet, subscription: bool) -> Result<OperationIr> {
        self.subscription = subscription;
        let root_type = if subscription {
            "subscription_root"
        } else {
            "query_root"
        };
        let mut collected = Vec::new();
        self.collect_root(set, root_type, &mut collected)?;
        let mut data = QueryPlan::default();
        let mut keys = Vec::new();
        let mut introspection_keys = Vec::new();
        let mut introspection_doc = String::new();
        for (key, fields) in &collected {
            let field = fields[0];
            let name = field.name.node.as_str();
            let path = format!("$.selectionSet.{key}");
            keys.push(key.clone());
            match name {
                "__typename" => {
                    Self::no_selection(field, &path)?;
                    data.fields.push((
                        key.clone(),
                        RootField::Constant(Value::String(root_type.into())),
                    ));
                }
                "__schema" | "__type" if !subscription => {
                    introspection_keys.push(key.clone());
                    // Every field of the key: the answer merges their selections.
                    for field in fields {
                        introspection_doc.push_str(&self.print_root_field(field, &path)?);
                        introspection_doc.push(' ');
                    }
                }
                _ if self.remote_of(name, OperationType::Query).is_some() => {
                    if subscription {
                        return Err(PlanError::at("$", Problem::RemoteSubscription));
                    }
                    let remote = self
                        .remote_of(name, OperationType::Query)
                        .unwrap_or_default();
                    self.remote_root(remote, key, fields, root_type, &path)?;
                }
                "no_queries_available"
                    if !subscription
                        && self
                            .types
                            .object_fields("query_root")
                            .is_some_and(|f| f.contains_key("no_queries_available")) =>
                {
                    Self::no_selection(field, &path)?;
                    let message = "There are no queries available to the current role: it has no select permission on any table.";
                    data.fields.push((
                        key.clone(),
                        RootField::Constant(Value::String(message.into())),
                    ));
                }
                _ if self.action_on(name, root_type).is_some() => {
                    let action = self
                        .action_on(name, root_type)
                        .ok_or_else(|| PlanError::unknown_field(&path, name, root_type))?;
                    let planned = self.action_root(action, fields, &path, root_type)?;
                    data.fields.push((key.clone(), planned));
                }
                _ => {
                    let planned = self.table_root(name, fields, &path, root_type)?;
                    data.fields.push((key.clone(), planned));
                }
            }
        }
        if subscription {
            Self::stream_alone(&data)?;
        }
        let introspection = (!introspection_keys.is_empty()).then(|| {
            (
                introspection_keys,
                format!("query {{ {introspection_doc}}}"),
            )
        });
        let remote = self.remote_parts(OperationType::Query)?;
        Ok(OperationIr {
            data,
            introspection,
            remote,
            keys,
            mutation: None,
            shape_dependent: self.shape_dependent,
            subscription,
            joins: std::mem::take(&mut self.joins),
            table_joins: std::mem::take(&mut self.table_joins),
        })
    }

    /// A root field of a table: rows, one row by primary key, or an aggregate.
    fn table_root<'d>(
        &mut self,
        name: &str,
        fields: &[&'d AstField],
        path: &str,
        root_type: &str,
    ) -> Result<RootField>
    where
        'a: 'd,
    {
        let field = fields[0];
        let roots = if root_type == "subscription_root" {
            &self.model.subscription_roots
        } else {
            &self.model.roots
        };
        let root = roots
            .get(name)
            .cloned()
            .ok_or_else(|| PlanError::unknown_field(path, name, root_type))?;
        let def = self.field_def(root_type, name, path)?;
        let args = self.field_args(&def, field, path)?;
        if let RootKind::NativeQuery(i) = root.kind {
            return self.native_query_root(i, fields, &args, path, root_type, name);
        }
        let table = self.table(&root.table, path)?;
        Ok(match root.kind {
            RootKind::Select => {
                let sub = self.sub_fields(fields, &table.type_name, path, 1)?;
                RootField::Select(self.select(
                    table,
                    Source::Table(root.table.clone()),
                    Vec::new(),
                    &args,
                    &sub,
                    path,
                    false,
                    1,
                )?)
            }
            RootKind::SelectByPk => {
                let sub = self.sub_fields(fields, &table.type_name, path, 1)?;
                let mut select = self.select(
                    table,
                    Source::Table(root.table.clone()),
                    Vec::new(),
                    &IndexMap::new(),
                    &sub,
                    path,
                    true,
                    1,
                )?;
                for column in table.primary_key.iter().flatten() {
                    let (Some(c), Some(Input::Value(param))) =
                        (table.columns.get(column), args.get(column))
                    else {
                        continue;
                    };
                    select.args.filter.push(BoolExpr::Compare {
                        column: ColumnExpr {
                            scope: Scope::Current,
                            column: c.column.clone(),
                            cast: None,
                        },
                        op: CompareOp::Eq,
                        value: ValueExpr {
                            param: param.clone(),
                            cast: c.pg_type.clone(),
                        },
                    });
                }
                RootField::Select(select)
            }
            RootKind::Aggregate => {
                let sub =
                    self.sub_fields(fields, &format!("{}_aggregate", table.type_name), path, 1)?;
                RootField::Aggregate(self.aggregate(
                    table,
                    Source::Table(root.table.clone()),
                    Vec::new(),
                    &args,
                    &sub,
                    path,
                    1,
                )?)
            }
            RootKind::Stream => {
                let sub = self.sub_fields(fields, &table.type_name, path, 1)?;
                RootField::Stream(self.stream(table, &args, &sub, path)?)
            }
            RootKind::NativeQuery(_) => {
                return Err(PlanError::unknown_field(path, name, root_type))
            }
            RootKind::Function(i) | RootKind::FunctionAggregate(i) => {
                let model: &'a crate::graphql::model::RoleModel = self.model;
                let f = model
                    .functions
                    .get(i)
                    .ok_or_else(|| PlanError::unknown_field(path, name, root_type))?;
                let aggregate = matches!(root.kind, RootKind::FunctionAggregate(_));
                self.function_root(f, fields, &args, path, aggregate)?
            }
        })
    }
}
