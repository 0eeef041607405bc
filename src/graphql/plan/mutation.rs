//! The mutation root: inserts, updates and deletes with the role's write permissions folded in,
//! and what each field answers.

use super::insert::Rows;
use super::permission::permission;
use super::Problem;
use super::{Collected, Input, OperationIr, PlanError, Planner, Result};
use crate::graphql::ir::*;
use crate::graphql::model::{MutationKind, RoleModel, RoleTable, RoleWrite};
use crate::resolve::CompareOp;
use async_graphql_parser::types::{OperationType, SelectionSet};
use indexmap::IndexMap;
use serde_json::Value;

impl<'a> Planner<'a> {
    pub(super) fn write(
        &self,
        table: &crate::metadata::types::QualifiedTable,
        path: &str,
    ) -> Result<&'a RoleWrite> {
        let model: &'a RoleModel = self.model;
        model
            .writes
            .get(table)
            .ok_or_else(|| PlanError::at(path, Problem::NotWritable(table.to_string())))
    }

    pub(super) fn mutation_root(mut self, set: &SelectionSet) -> Result<OperationIr> {
        let mut collected = Vec::new();
        self.collect_root(set, "mutation_root", &mut collected)?;
        let mut plan = MutationPlan::default();
        let mut keys = Vec::new();
        for (key, fields) in &collected {
            let field = fields[0];
            let name = field.name.node.as_str();
            let path = format!("$.selectionSet.{key}");
            keys.push(key.clone());
            if name == "__typename" {
                Self::no_selection(field, &path)?;
                plan.fields.push((
                    key.clone(),
                    MutationField::Constant(Value::String("mutation_root".into())),
                ));
                continue;
            }
            if let Some(remote) = self.remote_of(name, OperationType::Mutation) {
                self.remote_root(remote, key, fields, "mutation_root", &path)?;
                continue;
            }
            if let Some(action) = self.action_on(name, "mutation_root") {
                let planned = self.action_mutation(action, fields, &path)?;
                plan.fields.push((key.clone(), planned));
                continue;
            }
            let model: &'a RoleModel = self.model;
            if let Some(f) = model
                .function_mutations
                .get(name)
                .and_then(|&i| model.functions.get(i))
            {
                let def = self.field_def("mutation_root", name, &path)?;
                let args = self.field_args(&def, field, &path)?;
                let RootField::Select(select) =
                    self.function_root(f, fields, &args, &path, false)?
                else {
                    return Err(PlanError::unknown_field(&path, name, "mutation_root"));
                };
                plan.fields
                    .push((key.clone(), MutationField::Function(select)));
                continue;
            }
            let root = self
                .model
                .mutations
                .get(name)
                .cloned()
                .ok_or_else(|| PlanError::unknown_field(&path, name, "mutation_root"))?;
            let def = self.field_def("mutation_root", name, &path)?;
            let args = self.field_args(&def, field, &path)?;
            let w = self.write(&root.table, &path)?;
            let t = w.type_name.clone();
            let output = match root.kind {
                MutationKind::Insert
                | MutationKind::Update
                | MutationKind::UpdateMany
                | MutationKind::Delete => {
                    let sub =
                        self.sub_fields(fields, &format!("{t}_mutation_response"), &path, 1)?;
                    self.response(w, &sub, &path)?
                }
                _ => {
                    let sub = self.sub_fields(fields, &t, &path, 1)?;
                    let table = self.table(&w.name, &path)?;
                    MutationOutput::Row(self.select(
                        table,
                        Source::Table(w.name.clone()),
                        Vec::new(),
                        &IndexMap::new(),
                        &sub,
                        &path,
                        true,
                        1,
                    )?)
                }
            };
            let action = match root.kind {
                MutationKind::Insert => {
                    let rows = args
                        .get("objects")
                        .map(|o| o.as_list_owned())
                        .unwrap_or_default();
                    MutationAction::Insert(self.insert_plan(
                        w,
                        &Rows::Many(rows),
                        args.get("on_conflict"),
                        &[],
                        &format!("{path}.args.objects"),
                    )?)
                }
                MutationKind::InsertOne => MutationAction::Insert(self.insert_plan(
                    w,
                    &Rows::One(args.get("object").cloned()),
                    args.get("on_conflict"),
                    &[],
                    &format!("{path}.args.object"),
                )?),
                MutationKind::Update | MutationKind::UpdateByPk => {
                    MutationAction::Update(self.update_plan(w, &args, root.kind, &path)?)
                }
                MutationKind::UpdateMany => {
                    MutationAction::UpdateMany(self.update_many(w, &args, &path)?)
                }
                MutationKind::Delete | MutationKind::DeleteByPk => {
                    MutationAction::Delete(self.delete_plan(w, &args, root.kind, &path)?)
                }
            };
            plan.fields
                .push((key.clone(), MutationField::Write { action, output }));
        }
        let remote = self.remote_parts(OperationType::Mutation)?;
        Ok(OperationIr {
            data: QueryPlan::default(),
            introspection: None,
            remote,
            keys,
            mutation: Some(plan),
            shape_dependent: self.shape_dependent,
            subscription: false,
            joins: std::mem::take(&mut self.joins),
            table_joins: std::mem::take(&mut self.table_joins),
        })
    }

    pub(super) fn response(
        &mut self,
        w: &'a RoleWrite,
        sub: &Collected<'_>,
        path: &str,
    ) -> Result<MutationOutput> {
        let mut out = Vec::new();
        for (key, group) in sub {
            let field = group[0];
            let fpath = format!("{path}.selectionSet.{key}");
            match field.name.node.as_str() {
                "affected_rows" => {
                    Self::no_selection(field, &fpath)?;
                    out.push((key.clone(), ResponseField::AffectedRows));
                }
                "__typename" => out.push((
                    key.clone(),
                    ResponseField::Constant(format!("{}_mutation_response", w.type_name)),
                )),
                "returning" if w.selectable => {
                    let table = self.table(&w.name, &fpath)?;
                    let rsub = self.sub_fields(group, &table.type_name, &fpath, 2)?;
                    let select = self.select(
                        table,
                        Source::Table(w.name.clone()),
                        Vec::new(),
                        &IndexMap::new(),
                        &rsub,
                        &fpath,
                        false,
                        2,
                    )?;
                    out.push((key.clone(), ResponseField::Returning(select)));
                }
                other => {
                    return Err(PlanError::unknown_field(
                        &fpath,
                        other,
                        format!("{}_mutation_response", w.type_name),
                    ))
                }
            }
        }
        Ok(MutationOutput::Response(out))
    }

    /// The select view of a written table (an empty one when the role cannot select it, so
    /// `where` offers only the connectives).
    pub(super) fn leak_view(&self, w: &RoleWrite) -> Result<&'a RoleTable> {
        let model: &'a RoleModel = self.model;
        model
            .tables
            .get(&w.name)
            .or_else(|| model.write_views.get(&w.name))
            .ok_or_else(|| PlanError::at("$", Problem::NoView(w.name.to_string())))
    }

    pub(super) fn by_pk_filter(
        &self,
        w: &RoleWrite,
        values: &IndexMap<String, Input>,
    ) -> Vec<BoolExpr> {
        w.primary_key
            .iter()
            .flatten()
            .filter_map(|(name, c)| match values.get(name) {
                Some(Input::Value(p)) => Some(BoolExpr::Compare {
                    column: ColumnExpr {
                        scope: Scope::Current,
                        column: c.column.clone(),
                        cast: None,
                    },
                    op: CompareOp::Eq,
                    value: ValueExpr {
                        param: p.clone(),
                        cast: c.pg_type.clone(),
                    },
                }),
                _ => None,
            })
            .collect()
    }

    pub(super) fn delete_plan(
        &mut self,
        w: &'a RoleWrite,
        args: &IndexMap<String, Input>,
        kind: MutationKind,
        path: &str,
    ) -> Result<DeletePlan> {
        let rule = w
            .delete
            .as_ref()
            .ok_or_else(|| PlanError::at(path, Problem::NoDeletePermission))?;
        let mut filter: Vec<BoolExpr> = rule.as_ref().map(permission).into_iter().collect();
        if kind == MutationKind::DeleteByPk {
            filter.extend(self.by_pk_filter(w, args));
        } else if let Some(input) = args.get("where") {
            let view = self.leak_view(w)?;
            filter.push(self.where_expr(view, input, &format!("{path}.args.where"))?);
        }
        Ok(DeletePlan {
            table: w.name.clone(),
            filter,
        })
    }
}
