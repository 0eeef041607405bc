//! Planning mutation operations: insert (nested, upsert), update, delete and their `_one` /
//! `_by_pk` forms, with the role's insert/update/delete permissions folded in.

use super::ir::*;
use super::model::RoleTable;
use super::mutations::{MutationKind, Preset, PresetValue, RoleWrite};
use super::plan::{permission_expr, Collected, Input, PlanError, Planned, Planner, Result};
use crate::schema::RelationshipKind;
use crate::sql::PgType;
use async_graphql_parser::types::SelectionSet;
use indexmap::IndexMap;
use serde_json::Value;

fn preset_value(p: &Preset) -> SetValue {
    match &p.value {
        PresetValue::Static(v) => SetValue::Value(ValueExpr {
            param: Param::Literal(v.clone()),
            cast: p.pg_type.clone(),
        }),
        PresetValue::Session(name) => SetValue::Value(ValueExpr {
            param: Param::Session(name.clone()),
            cast: p.pg_type.clone(),
        }),
        PresetValue::Now => SetValue::Now,
    }
}

/// A scalar input as a value of a column type.
fn input_value(input: &Input, cast: &PgType) -> SetValue {
    let param = match input {
        Input::Value(p) => p.clone(),
        Input::Enum(e) => Param::Literal(Value::String(e.clone())),
        Input::Null => Param::Literal(Value::Null),
        Input::List(items) => {
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
                        .filter_map(|p| {
                            if let Param::Literal(v) = p {
                                Some(v)
                            } else {
                                None
                            }
                        })
                        .collect(),
                ))
            } else {
                Param::Array(params)
            }
        }
        Input::Object(_) => Param::Literal(Value::Null),
    };
    SetValue::Value(ValueExpr {
        param,
        cast: cast.clone(),
    })
}

impl<'a> Planner<'a> {
    fn write(
        &self,
        table: &crate::metadata::types::QualifiedTable,
        path: &str,
    ) -> Result<&'a RoleWrite> {
        let model: &'a super::model::RoleModel = self.model;
        model.writes.get(table).ok_or_else(|| {
            PlanError::validation(path, format!("table \"{table}\" is not writable"))
        })
    }

    fn permission(
        &self,
        table: &crate::metadata::types::QualifiedTable,
        rule: &Option<Value>,
    ) -> Option<BoolExpr> {
        let rule = rule.as_ref()?;
        let resolved = self.resolved.tables.get(table)?;
        Some(BoolExpr::Permission(Box::new(permission_expr(
            self.resolved,
            resolved,
            rule,
        ))))
    }

    pub(super) fn mutation_root(mut self, set: &SelectionSet) -> Result<Planned> {
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
                MutationKind::Insert | MutationKind::Update | MutationKind::Delete => {
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
                    let rows: Vec<Input> = args
                        .get("objects")
                        .map(|o| o.as_list_owned())
                        .unwrap_or_default();
                    MutationAction::Insert(self.insert_plan(
                        w,
                        &rows,
                        args.get("on_conflict"),
                        &[],
                        &format!("{path}.args.objects"),
                    )?)
                }
                MutationKind::InsertOne => {
                    let rows: Vec<Input> = args.get("object").cloned().into_iter().collect();
                    MutationAction::Insert(self.insert_plan(
                        w,
                        &rows,
                        args.get("on_conflict"),
                        &[],
                        &format!("{path}.args.object"),
                    )?)
                }
                MutationKind::Update | MutationKind::UpdateByPk => {
                    MutationAction::Update(self.update_plan(w, &args, root.kind, &path)?)
                }
                MutationKind::Delete | MutationKind::DeleteByPk => {
                    MutationAction::Delete(self.delete_plan(w, &args, root.kind, &path)?)
                }
            };
            plan.fields
                .push((key.clone(), MutationField::Write { action, output }));
        }
        Ok(Planned {
            data: QueryPlan::default(),
            introspection: None,
            keys,
            mutation: Some(plan),
            shape_dependent: self.shape_dependent,
        })
    }

    fn response(
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

    /// Plans rows for `w`; `filled` are columns the relationship fills (clients may not set them).
    fn insert_plan(
        &mut self,
        w: &'a RoleWrite,
        rows: &[Input],
        on_conflict: Option<&Input>,
        filled: &[String],
        path: &str,
    ) -> Result<InsertPlan> {
        let insert = w.insert.as_ref().ok_or_else(|| {
            PlanError::validation(path, format!("no insert permission on \"{}\"", w.name))
        })?;
        let mut planned = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let rpath = format!("{path}[{i}]");
            let Some(map) = row.as_object_ref() else {
                return Err(PlanError::validation(&rpath, "expected an object"));
            };
            let mut values = Vec::new();
            let mut parents = Vec::new();
            let mut children = Vec::new();
            for (field, value) in map {
                let fpath = format!("{rpath}.{field}");
                if let Some(c) = insert.columns.get(field) {
                    if filled.contains(&c.column) {
                        return Err(PlanError::validation(&fpath, format!("cannot insert into column \"{}\": its value comes from the nested insert's relationship", c.column)));
                    }
                    values.push((c.column.clone(), input_value(value, &c.pg_type)));
                } else if let Some(r) = w.insert_relationships.get(field).cloned() {
                    let target = self.write(&r.target, &fpath)?;
                    let Some(nested) = value.as_object_ref() else {
                        continue;
                    };
                    let data = nested.get("data").cloned().unwrap_or(Input::Null);
                    match r.kind {
                        RelationshipKind::Object if self.is_view(&r.target) => {
                            return Err(PlanError::validation(
                                &fpath,
                                format!(
                                    "nested inserts into the view \"{}\" are not supported",
                                    r.target
                                ),
                            ));
                        }
                        RelationshipKind::Object => {
                            let casts = self.column_types(&w.name);
                            let fill = r
                                .mapping
                                .iter()
                                .map(|(local, remote)| {
                                    (
                                        local.clone(),
                                        casts.get(local).cloned().unwrap_or(PgType::Text),
                                        remote.clone(),
                                    )
                                })
                                .collect();
                            let insert = self.insert_plan(
                                target,
                                &[data],
                                nested.get("on_conflict"),
                                &[],
                                &format!("{fpath}.data"),
                            )?;
                            parents.push(NestedInsert { fill, insert });
                        }
                        RelationshipKind::Array => {
                            let remote_columns: Vec<String> =
                                r.mapping.iter().map(|(_, remote)| remote.clone()).collect();
                            let mut insert = self.insert_plan(
                                target,
                                &data.as_list_owned(),
                                nested.get("on_conflict"),
                                &remote_columns,
                                &format!("{fpath}.data"),
                            )?;
                            let casts = self.column_types(&r.target);
                            for row in &mut insert.rows {
                                for (local, remote) in &r.mapping {
                                    let cast = casts.get(remote).cloned().unwrap_or(PgType::Text);
                                    row.values.push((
                                        remote.clone(),
                                        SetValue::Parent {
                                            column: local.clone(),
                                            cast,
                                        },
                                    ));
                                }
                            }
                            children.push(NestedInsert {
                                fill: Vec::new(),
                                insert,
                            });
                        }
                    }
                } else {
                    return Err(PlanError::unknown_field(
                        &fpath,
                        field,
                        format!("{}_insert_input", w.type_name),
                    ));
                }
            }
            for p in &insert.presets {
                values.retain(|(c, _)| c != &p.column);
                values.push((p.column.clone(), preset_value(p)));
            }
            planned.push(InsertRow {
                values,
                parents,
                children,
            });
        }
        let on_conflict = match on_conflict.and_then(Input::as_object_ref) {
            None => None,
            Some(oc) => Some(self.on_conflict(w, oc, &format!("{path}.on_conflict"))?),
        };
        let update_check = match (&on_conflict, &w.update) {
            (Some(_), Some(u)) => self.permission(&w.name, &u.check),
            _ => None,
        };
        let view = self.is_view(&w.name);
        let nested = !filled.is_empty()
            || planned
                .iter()
                .any(|r| !r.parents.is_empty() || !r.children.is_empty());
        if view && nested {
            return Err(PlanError::validation(
                path,
                format!(
                    "nested inserts into or through the view \"{}\" are not supported",
                    w.name
                ),
            ));
        }
        Ok(InsertPlan {
            table: w.name.clone(),
            rows: planned,
            on_conflict,
            check: self.permission(&w.name, &insert.check),
            update_check,
            view,
        })
    }

    fn is_view(&self, table: &crate::metadata::types::QualifiedTable) -> bool {
        self.resolved
            .tables
            .get(table)
            .is_some_and(|t| t.db.is_view())
    }

    fn column_types(
        &self,
        table: &crate::metadata::types::QualifiedTable,
    ) -> IndexMap<String, PgType> {
        self.resolved
            .tables
            .get(table)
            .map(|t| {
                t.db.columns
                    .iter()
                    .map(|c| (c.name.clone(), c.pg_type()))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn on_conflict(
        &mut self,
        w: &'a RoleWrite,
        oc: &IndexMap<String, Input>,
        path: &str,
    ) -> Result<OnConflict> {
        let update = w
            .update
            .as_ref()
            .ok_or_else(|| PlanError::validation(path, "on_conflict needs an update permission"))?;
        let constraint = match oc.get("constraint") {
            Some(Input::Enum(c)) => c.clone(),
            _ => {
                return Err(PlanError::validation(
                    path,
                    "missing required field 'constraint'",
                ))
            }
        };
        let mut update_columns = Vec::new();
        for item in oc
            .get("update_columns")
            .map(Input::as_list_owned)
            .unwrap_or_default()
        {
            if let Input::Enum(name) = item {
                if let Some(c) = update.columns.get(&name) {
                    update_columns.push(c.column.clone());
                }
            }
        }
        let mut filter: Vec<BoolExpr> = self
            .permission(&w.name, &update.filter)
            .into_iter()
            .collect();
        if let Some(w_input) = oc.get("where") {
            let view = self.leak_view(w)?;
            filter.push(self.where_expr(view, w_input, &format!("{path}.where"))?);
        }
        let presets = if update_columns.is_empty() {
            Vec::new()
        } else {
            update
                .presets
                .iter()
                .map(|p| (p.column.clone(), preset_value(p)))
                .collect()
        };
        Ok(OnConflict {
            constraint,
            update_columns,
            presets,
            filter,
        })
    }

    /// The select view of a written table (an empty one when the role cannot select it, so
    /// `where` offers only the connectives).
    fn leak_view(&self, w: &RoleWrite) -> Result<&'a RoleTable> {
        let model: &'a super::model::RoleModel = self.model;
        model
            .tables
            .get(&w.name)
            .or_else(|| model.write_views.get(&w.name))
            .ok_or_else(|| PlanError::validation("$", format!("table \"{}\" has no view", w.name)))
    }

    fn by_pk_filter(&self, w: &RoleWrite, values: &IndexMap<String, Input>) -> Vec<BoolExpr> {
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

    fn update_plan(
        &mut self,
        w: &'a RoleWrite,
        args: &IndexMap<String, Input>,
        kind: MutationKind,
        path: &str,
    ) -> Result<UpdatePlan> {
        let update = w
            .update
            .as_ref()
            .ok_or_else(|| PlanError::validation(path, "no update permission"))?;
        let mut filter: Vec<BoolExpr> = self
            .permission(&w.name, &update.filter)
            .into_iter()
            .collect();
        if kind == MutationKind::UpdateByPk {
            let pk = args
                .get("pk_columns")
                .and_then(Input::as_object_ref)
                .cloned()
                .unwrap_or_default();
            filter.extend(self.by_pk_filter(w, &pk));
        } else if let Some(input) = args.get("where") {
            let view = self.leak_view(w)?;
            filter.push(self.where_expr(view, input, &format!("{path}.args.where"))?);
        }
        let mut sets: Vec<(String, UpdateOp, SetValue)> = Vec::new();
        let operators = [
            ("_inc", UpdateOp::Inc),
            ("_append", UpdateOp::Append),
            ("_prepend", UpdateOp::Prepend),
            ("_delete_key", UpdateOp::DeleteKey),
            ("_delete_elem", UpdateOp::DeleteElem),
            ("_delete_at_path", UpdateOp::DeleteAtPath),
            ("_set", UpdateOp::Set),
        ];
        for (arg, op) in operators {
            let Some(map) = args.get(arg).and_then(Input::as_object_ref) else {
                continue;
            };
            for (field, value) in map {
                let Some(c) = update.columns.get(field) else {
                    continue;
                };
                if sets.iter().any(|(col, _, _)| col == &c.column) {
                    return Err(PlanError::validation(
                        &format!("{path}.args.{arg}"),
                        format!("column \"{field}\" can be used in only one update operator"),
                    ));
                }
                let cast = match op {
                    UpdateOp::DeleteKey => PgType::Text,
                    UpdateOp::DeleteElem => PgType::Integer,
                    UpdateOp::DeleteAtPath => PgType::Text.array_of(),
                    _ => c.pg_type.clone(),
                };
                sets.push((c.column.clone(), op, input_value(value, &cast)));
            }
        }
        for p in &update.presets {
            sets.retain(|(c, _, _)| c != &p.column);
            sets.push((p.column.clone(), UpdateOp::Set, preset_value(p)));
        }
        if sets.is_empty() {
            return Err(PlanError::validation(&format!("{path}.args"), "at least one of _set, _inc, _append, _prepend, _delete_key, _delete_elem, _delete_at_path is expected"));
        }
        Ok(UpdatePlan {
            table: w.name.clone(),
            filter,
            sets,
            check: self.permission(&w.name, &update.check),
            view: self.is_view(&w.name),
        })
    }

    fn delete_plan(
        &mut self,
        w: &'a RoleWrite,
        args: &IndexMap<String, Input>,
        kind: MutationKind,
        path: &str,
    ) -> Result<DeletePlan> {
        let rule = w
            .delete
            .as_ref()
            .ok_or_else(|| PlanError::validation(path, "no delete permission"))?;
        let mut filter: Vec<BoolExpr> = self.permission(&w.name, rule).into_iter().collect();
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

impl Input {
    /// The object of an input, if it is one.
    pub(super) fn as_object_ref(&self) -> Option<&IndexMap<String, Input>> {
        match self {
            Input::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The elements of a list input (a single value counts as one element).
    pub(super) fn as_list_owned(&self) -> Vec<Input> {
        match self {
            Input::List(items) => items.clone(),
            Input::Null => Vec::new(),
            other => vec![other.clone()],
        }
    }
}
