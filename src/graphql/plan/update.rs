//! Updates: `update_<t>`, `update_<t>_by_pk` and the elements of `update_<t>_many`, with their
//! write set (the operators' columns and the permission's presets) and their `_nested` entries,
//! each planned with its own table's permissions (`docs/graphql.md`, "Update" and "Nested
//! updates").

use super::insert::{input_value, preset_value};
use super::permission::permission;
use super::Problem;
use super::{Input, PlanError, Planner, Result};
use crate::db_model::PgType;
use crate::graphql::ir::*;
use crate::graphql::model::{MutationKind, RoleRelationship, RoleUpdate, RoleWrite};
use crate::metadata::types::QualifiedTable;
use crate::resolve::RelationshipKind;
use indexmap::IndexMap;

/// The update operators: argument, operator, in the order their values are applied (`_set`
/// last, so its values are the ones written when a client names a column twice).
const OPERATORS: [(&str, UpdateOp); 7] = [
    ("_inc", UpdateOp::Inc),
    ("_append", UpdateOp::Append),
    ("_prepend", UpdateOp::Prepend),
    ("_delete_key", UpdateOp::DeleteKey),
    ("_delete_elem", UpdateOp::DeleteElem),
    ("_delete_at_path", UpdateOp::DeleteAtPath),
    ("_set", UpdateOp::Set),
];

/// The operator arguments as an update refused for having none lists them.
const LISTED: [&str; 7] = [
    "_set",
    "_inc",
    "_append",
    "_prepend",
    "_delete_key",
    "_delete_elem",
    "_delete_at_path",
];

/// Planned operator arguments of one update.
struct WriteSet {
    /// (column, operator, value), presets included.
    sets: Vec<(String, UpdateOp, SetValue)>,
    /// Some operator argument was given (empty or not).
    given: bool,
}

impl<'a> Planner<'a> {
    pub(super) fn update_plan(
        &mut self,
        w: &'a RoleWrite,
        args: &IndexMap<String, Input>,
        kind: MutationKind,
        path: &str,
    ) -> Result<UpdatePlan> {
        let update = w
            .update
            .as_ref()
            .ok_or_else(|| PlanError::at(path, Problem::NoUpdatePermission))?;
        let rows = if kind == MutationKind::UpdateByPk {
            let pk = args
                .get("pk_columns")
                .and_then(Input::as_object)
                .cloned()
                .unwrap_or_default();
            self.by_pk_filter(w, &pk)
        } else {
            self.where_filter(w, args.get("where"), &format!("{path}.args.where"))?
        };
        let args_path = format!("{path}.args");
        self.root_update(w, update, args, rows, &args_path, None)
    }

    /// `update_<t>_many`: each element of `updates` is an update of its own.
    pub(super) fn update_many(
        &mut self,
        w: &'a RoleWrite,
        args: &IndexMap<String, Input>,
        path: &str,
    ) -> Result<Vec<UpdatePlan>> {
        let update = w
            .update
            .as_ref()
            .ok_or_else(|| PlanError::at(path, Problem::NoUpdatePermission))?;
        let elements = args
            .get("updates")
            .map(Input::as_list_owned)
            .unwrap_or_default();
        let mut plans = Vec::with_capacity(elements.len());
        for (i, element) in elements.iter().enumerate() {
            let epath = format!("{path}.args.updates[{i}]");
            let Some(map) = element.as_object() else {
                return Err(PlanError::at(&epath, Problem::ExpectedObject));
            };
            let rows = self.where_filter(w, map.get("where"), &format!("{epath}.where"))?;
            plans.push(self.root_update(w, update, map, rows, &epath, Some(&epath))?);
        }
        Ok(plans)
    }

    /// `where` of a root update over the role's select view of the table.
    fn where_filter(
        &mut self,
        w: &'a RoleWrite,
        input: Option<&Input>,
        path: &str,
    ) -> Result<Vec<BoolExpr>> {
        let Some(input) = input else {
            return Ok(Vec::new());
        };
        let view = self.leak_view(w)?;
        Ok(vec![self.where_expr(view, input, path)?])
    }

    /// An update at the root (a field, or an element of `update_<t>_many`): `args` holds its
    /// operators and `_nested`, `rows` its `where` or key. `operators_path`: where a column
    /// named by two operators is reported (`None`: at the operator's own argument).
    fn root_update(
        &mut self,
        w: &'a RoleWrite,
        update: &RoleUpdate,
        args: &IndexMap<String, Input>,
        rows: Vec<BoolExpr>,
        args_path: &str,
        operators_path: Option<&str>,
    ) -> Result<UpdatePlan> {
        let write = self.write_set(update, args, args_path, operators_path)?;
        let nested_input = args.get("_nested").filter(|n| !matches!(n, Input::Null));
        let nested = match nested_input {
            Some(input) => {
                Some(self.nested_entries(&w.name, input, &format!("{args_path}._nested"))?)
            }
            None => None,
        };
        if !write.given && write.sets.is_empty() && nested.is_none() {
            let listed = self.operator_arguments(w);
            return Err(PlanError::at(
                args_path,
                Problem::NoUpdateOperator(listed.join(", ")),
            ));
        }
        let mut filter: Vec<BoolExpr> =
            update.filter.as_ref().map(permission).into_iter().collect();
        filter.extend(rows);
        let key = match (&nested, &w.key) {
            (None, _) => Vec::new(),
            (Some(_), Some(key)) => key.clone(),
            (Some(_), None) => {
                return Err(PlanError::at(
                    args_path,
                    Problem::NestedNeedsKey(w.name.to_string()),
                ))
            }
        };
        Ok(UpdatePlan {
            table: w.name.clone(),
            filter,
            sets: write.sets,
            check: update.check.as_ref().map(permission),
            view: self.is_view(&w.name),
            nested,
            key,
        })
    }

    /// The arguments a refused update names: the field's operators and `_nested`.
    fn operator_arguments(&self, w: &RoleWrite) -> Vec<&'static str> {
        let (jsonb, numeric) = w
            .update
            .as_ref()
            .map_or((false, false), |u| (u.has_jsonb(), u.has_numeric()));
        let mut listed: Vec<&'static str> = LISTED
            .into_iter()
            .filter(|arg| match *arg {
                "_set" => true,
                "_inc" => numeric,
                _ => jsonb,
            })
            .collect();
        if self.model.takes_nested(w) {
            listed.push("_nested");
        }
        listed
    }

    /// The write set of an update: each operator's columns, then the permission's presets.
    fn write_set(
        &self,
        update: &RoleUpdate,
        args: &IndexMap<String, Input>,
        args_path: &str,
        operators_path: Option<&str>,
    ) -> Result<WriteSet> {
        let mut sets: Vec<(String, UpdateOp, SetValue)> = Vec::new();
        let mut given = false;
        for (arg, op) in OPERATORS {
            let Some(map) = args.get(arg).and_then(Input::as_object) else {
                continue;
            };
            given = true;
            for (field, value) in map {
                let Some(c) = update.columns.get(field) else {
                    continue;
                };
                if sets.iter().any(|(col, _, _)| col == &c.column) {
                    let at = match operators_path {
                        Some(p) => p.to_owned(),
                        None => format!("{args_path}.{arg}"),
                    };
                    return Err(PlanError::at(
                        &at,
                        Problem::ColumnInTwoOperators(field.to_string()),
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
        Ok(WriteSet { sets, given })
    }

    /// The entries of a `_nested` argument over rows of `table`, relationships in byte order
    /// of their names, each relationship's entries in list order.
    fn nested_entries(
        &mut self,
        table: &QualifiedTable,
        input: &Input,
        path: &str,
    ) -> Result<Vec<NestedEntry>> {
        let Some(map) = input.as_object() else {
            return Err(PlanError::at(path, Problem::ExpectedObject));
        };
        let model = self.model;
        let relationships = model
            .nested_updates
            .get(table)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if let Some(unknown) = map
            .keys()
            .find(|k| !relationships.iter().any(|r| &r.name == *k))
        {
            let type_name = self.table(table, path)?.type_name.clone();
            return Err(PlanError::unknown_field(
                &format!("{path}.{unknown}"),
                unknown,
                format!("{type_name}_nested_update_input"),
            ));
        }
        let mut entries = Vec::new();
        for r in relationships {
            let Some(value) = map.get(&r.name).filter(|v| !matches!(v, Input::Null)) else {
                continue;
            };
            let rpath = format!("{path}.{}", r.name);
            match r.kind {
                RelationshipKind::Object => entries.push(self.nested_entry(r, value, &rpath)?),
                RelationshipKind::Array => {
                    for (i, item) in value.as_list().into_iter().enumerate() {
                        entries.push(self.nested_entry(r, item, &format!("{rpath}[{i}]"))?);
                    }
                }
            }
        }
        Ok(entries)
    }

    /// One entry of `_nested` through relationship `r`.
    fn nested_entry(
        &mut self,
        r: &RoleRelationship,
        input: &Input,
        path: &str,
    ) -> Result<NestedEntry> {
        let Some(map) = input.as_object() else {
            return Err(PlanError::at(path, Problem::ExpectedObject));
        };
        let model = self.model;
        let target = self.table(&r.target, path)?;
        let w = model.writes.get(&r.target);
        let delete = map.get("_delete").and_then(Input::as_bool_literal) == Some(true);
        let operators = OPERATORS
            .iter()
            .any(|(arg, _)| map.get(*arg).is_some_and(|v| !matches!(v, Input::Null)));
        let nested_input = map.get("_nested").filter(|v| !matches!(v, Input::Null));
        if delete && (operators || nested_input.is_some()) {
            return Err(PlanError::at(path, Problem::DeleteCombined));
        }
        let mut filter = Vec::new();
        if let Some(input) = map.get("where") {
            filter.push(self.where_expr(target, input, &format!("{path}.where"))?);
        }
        let update = w.and_then(|w| w.update.as_ref());
        let write = match update {
            Some(update) => self.write_set(update, map, path, Some(path))?,
            None if operators => {
                return Err(PlanError::at(path, Problem::NoUpdatePermission));
            }
            None => WriteSet {
                sets: Vec::new(),
                given: false,
            },
        };
        let nested = match nested_input {
            Some(input) => self.nested_entries(&r.target, input, &format!("{path}._nested"))?,
            None => Vec::new(),
        };
        let insert = match map.get("_insert").and_then(Input::as_object) {
            Some(insert) => {
                let data = insert.get("data").cloned().unwrap_or(Input::Null);
                let ipath = format!("{path}._insert.data");
                Some(self.child_rows(r, &data, insert.get("on_conflict"), &ipath)?)
            }
            None => None,
        };
        if !delete
            && !write.given
            && write.sets.is_empty()
            && nested_input.is_none()
            && insert.is_none()
        {
            return Err(PlanError::at(path, Problem::NothingToDo(r.name.clone())));
        }
        let view = self.is_view(&r.target);
        let step = if delete {
            let rule = w.and_then(|w| w.delete.as_ref()).ok_or_else(|| {
                PlanError::at(&format!("{path}._delete"), Problem::NoDeletePermission)
            })?;
            filter.extend(rule.as_ref().map(permission));
            EntryStep::Delete(DeletePlan {
                table: r.target.clone(),
                filter,
            })
        } else if let (Some(update), false) = (update, write.sets.is_empty()) {
            filter.extend(update.filter.as_ref().map(permission));
            EntryStep::Update(UpdatePlan {
                table: r.target.clone(),
                filter,
                sets: write.sets,
                check: update.check.as_ref().map(permission),
                view,
                nested: None,
                key: Vec::new(),
            })
        } else if nested_input.is_some() {
            filter.extend(target.filter.as_ref().map(permission));
            EntryStep::Select {
                table: r.target.clone(),
                filter,
                view,
            }
        } else {
            EntryStep::Nothing
        };
        let casts = self.column_types(&r.target);
        let mapping = r
            .mapping
            .iter()
            .map(|(local, remote)| {
                let ty = casts.get(remote).cloned().unwrap_or(PgType::Text);
                (local.clone(), remote.clone(), ty)
            })
            .collect();
        Ok(NestedEntry {
            relationship: r.name.clone(),
            mapping,
            step,
            nested,
            insert,
        })
    }
}
