//! Inserts: rows with presets, nested rows through relationships (parents first, children
//! after), upserts.

use super::filter::list_param;
use super::permission::permission;
use super::Problem;
use super::{Input, PlanError, Planner, Result};
use crate::db_model::PgType;
use crate::graphql::ir::*;
use crate::graphql::model::{RoleInsert, RoleRelationship, RoleWrite};
use crate::resolve::RelationshipKind;
use crate::resolve::{Preset, PresetValue};
use indexmap::IndexMap;
use serde_json::Value;

pub(super) fn preset_value(p: &Preset) -> SetValue {
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
pub(super) fn input_value(input: &Input, cast: &PgType) -> SetValue {
    let param = match input {
        Input::Value(p) => p.clone(),
        Input::Enum(e) => Param::Literal(Value::String(e.clone())),
        Input::Null => Param::Literal(Value::Null),
        Input::List(items) => list_param(items),
        Input::Object(_) => Param::Literal(Value::Null),
    };
    SetValue::Value(ValueExpr {
        param,
        cast: cast.clone(),
    })
}

/// The rows of an insert as the request gave them: one object (`object`, an object
/// relationship's `data`) or a list (`objects`, an array relationship's `data`). Decides the
/// path that errors name for each row.
pub(super) enum Rows {
    /// One object, at the argument's own path.
    One(Option<Input>),
    /// A list, each row at `path[i]`.
    Many(Vec<Input>),
}

impl Rows {
    /// Each row with its path under `path`.
    fn each(&self, path: &str) -> Vec<(&Input, String)> {
        match self {
            Rows::One(row) => row.iter().map(|r| (r, path.to_owned())).collect(),
            Rows::Many(rows) => rows
                .iter()
                .enumerate()
                .map(|(i, r)| (r, format!("{path}[{i}]")))
                .collect(),
        }
    }
}

impl<'a> Planner<'a> {
    /// Plans rows for `w`; `filled` are columns the relationship fills (clients may not set them).
    pub(super) fn insert_plan(
        &mut self,
        w: &'a RoleWrite,
        rows: &Rows,
        on_conflict: Option<&Input>,
        filled: &[String],
        path: &str,
    ) -> Result<InsertPlan> {
        let insert = w
            .insert
            .as_ref()
            .ok_or_else(|| PlanError::at(path, Problem::NoInsertPermission(w.name.to_string())))?;
        let mut planned = Vec::new();
        for (row, rpath) in rows.each(path) {
            planned.push(self.insert_row(w, insert, row, filled, &rpath)?);
        }
        let on_conflict = match on_conflict.and_then(Input::as_object) {
            None => None,
            Some(oc) => Some(self.on_conflict(w, oc, &format!("{path}.on_conflict"))?),
        };
        let update_check = match (&on_conflict, &w.update) {
            (Some(_), Some(u)) => u.check.as_ref().map(permission),
            _ => None,
        };
        let view = self.is_view(&w.name);
        let nested = !filled.is_empty()
            || planned
                .iter()
                .any(|r| !r.parents.is_empty() || !r.children.is_empty());
        if view && nested {
            return Err(PlanError::at(
                path,
                Problem::NestedThroughView(w.name.to_string()),
            ));
        }
        Ok(InsertPlan {
            table: w.name.clone(),
            rows: planned,
            on_conflict,
            check: insert.check.as_ref().map(permission),
            update_check,
            view,
        })
    }

    /// One row: its column values (presets last), and its rows through relationships.
    fn insert_row(
        &mut self,
        w: &'a RoleWrite,
        insert: &RoleInsert,
        row: &Input,
        filled: &[String],
        rpath: &str,
    ) -> Result<InsertRow> {
        let Some(map) = row.as_object() else {
            return Err(PlanError::at(rpath, Problem::ExpectedObject));
        };
        let mut planned = InsertRow {
            values: Vec::new(),
            parents: Vec::new(),
            children: Vec::new(),
        };
        // (column, path of the field that gave it), to name the field in errors.
        let mut given: Vec<(&str, String)> = Vec::new();
        for (field, value) in map {
            let fpath = format!("{rpath}.{field}");
            if let Some(c) = insert.columns.get(field) {
                if filled.contains(&c.column) {
                    return Err(from_relationship(&fpath, &c.column));
                }
                planned
                    .values
                    .push((c.column.clone(), input_value(value, &c.pg_type)));
                given.push((c.column.as_str(), fpath));
            } else if let Some(r) = w.insert_relationships.get(field) {
                self.nested_insert(w, r, value, &fpath, &mut planned)?;
            } else {
                return Err(PlanError::unknown_field(
                    &fpath,
                    field,
                    format!("{}_insert_input", w.type_name),
                ));
            }
        }
        // A column an object relationship's new row fills is never also taken from the client
        // (whatever the field order) or from a preset: one would silently replace the other.
        for parent in &planned.parents {
            for (column, _, _) in &parent.fill {
                if let Some((_, fpath)) = given.iter().find(|(c, _)| c == column) {
                    return Err(from_relationship(fpath, column));
                }
            }
        }
        let relationship_filled = |column: &String| {
            filled.contains(column)
                || planned
                    .parents
                    .iter()
                    .any(|p| p.fill.iter().any(|f| &f.0 == column))
        };
        if let Some(p) = insert
            .presets
            .iter()
            .find(|p| relationship_filled(&p.column))
        {
            return Err(PlanError::at(
                rpath,
                Problem::PresetThroughRelationship(p.column.to_string()),
            ));
        }
        for p in &insert.presets {
            planned.values.retain(|(c, _)| c != &p.column);
            planned.values.push((p.column.clone(), preset_value(p)));
        }
        Ok(planned)
    }

    /// Rows inserted through relationship `r` of `w`: a parent (object relationship) whose key
    /// fills this row's columns, or children (array relationship) that take this row's key.
    fn nested_insert(
        &mut self,
        w: &'a RoleWrite,
        r: &RoleRelationship,
        value: &Input,
        fpath: &str,
        row: &mut InsertRow,
    ) -> Result<()> {
        let target = self.write(&r.target, fpath)?;
        let Some(nested) = value.as_object() else {
            return Ok(());
        };
        let data = nested.get("data").cloned().unwrap_or(Input::Null);
        match r.kind {
            RelationshipKind::Object if self.is_view(&r.target) => {
                return Err(PlanError::at(
                    fpath,
                    Problem::NestedIntoView(r.target.to_string()),
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
                    &Rows::One(Some(data)),
                    nested.get("on_conflict"),
                    &[],
                    &format!("{fpath}.data"),
                )?;
                row.parents.push(NestedInsert { fill, insert });
            }
            RelationshipKind::Array => {
                let insert = self.child_rows(
                    r,
                    &data,
                    nested.get("on_conflict"),
                    &format!("{fpath}.data"),
                )?;
                row.children.push(NestedInsert {
                    fill: Vec::new(),
                    insert,
                });
            }
        }
        Ok(())
    }

    /// Rows of `data` inserted through array relationship `r`, each with the mapped columns
    /// taken from the parent row it belongs to ([`SetValue::Parent`]).
    pub(super) fn child_rows(
        &mut self,
        r: &RoleRelationship,
        data: &Input,
        on_conflict: Option<&Input>,
        path: &str,
    ) -> Result<InsertPlan> {
        let target = self.write(&r.target, path)?;
        let remote_columns: Vec<String> =
            r.mapping.iter().map(|(_, remote)| remote.clone()).collect();
        let mut insert = self.insert_plan(
            target,
            &Rows::Many(data.as_list_owned()),
            on_conflict,
            &remote_columns,
            path,
        )?;
        let casts = self.column_types(&r.target);
        for child in &mut insert.rows {
            for (local, remote) in &r.mapping {
                let cast = casts.get(remote).cloned().unwrap_or(PgType::Text);
                child.values.push((
                    remote.clone(),
                    SetValue::Parent {
                        column: local.clone(),
                        cast,
                    },
                ));
            }
        }
        Ok(insert)
    }

    pub(super) fn is_view(&self, table: &crate::metadata::types::QualifiedTable) -> bool {
        self.resolved
            .tables
            .get(table)
            .is_some_and(|t| t.db.is_view())
    }

    pub(super) fn column_types(
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

    pub(super) fn on_conflict(
        &mut self,
        w: &'a RoleWrite,
        oc: &IndexMap<String, Input>,
        path: &str,
    ) -> Result<OnConflict> {
        let update = w
            .update
            .as_ref()
            .ok_or_else(|| PlanError::at(path, Problem::OnConflictNeedsUpdate))?;
        let constraint = match oc.get("constraint") {
            Some(Input::Enum(c)) => c.clone(),
            _ => {
                return Err(PlanError::at(
                    path,
                    Problem::MissingField("constraint".into()),
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
                // Once each: `SET "a" = …, "a" = …` is an error in Postgres.
                match update.columns.get(&name) {
                    Some(c) if !update_columns.contains(&c.column) => {
                        update_columns.push(c.column.clone())
                    }
                    _ => {}
                }
            }
        }
        let mut filter: Vec<BoolExpr> =
            update.filter.as_ref().map(permission).into_iter().collect();
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
}

/// A column given by the client although a nested insert's relationship fills it.
fn from_relationship(path: &str, column: &str) -> PlanError {
    PlanError::at(path, Problem::ColumnFromRelationship(column.to_string()))
}
