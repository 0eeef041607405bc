//! Updates as program steps: `update_<t>`, `update_<t>_by_pk`, each element of
//! `update_<t>_many`, and nested updates.
//!
//! A nested update runs one statement per level, depth first, each seeing what the steps
//! before it wrote (one statement could not: its parts share one snapshot and may not write a
//! row twice). A level is a statement over a CTE (`WITH "_written" AS (UPDATE|DELETE …
//! RETURNING …)`, or a locking `SELECT`) that answers one row: how many rows it touched, its
//! permission check, and the key columns the levels under it need, as arrays that later steps
//! bind ([`StepValue::Keys`]). `_insert` runs the nested-insert steps once per parent row
//! ([`Loop`]). The answer is read last, by the root rows' primary key.

use super::filter::{bool_expr, conjunction, key_match, simplified};
use super::select::Written;
use super::steps::{all_true, ctid, set_value, through_cte, Builder, ParentRow, WRITTEN};
use super::{name, State};
use crate::db_model::PgType;
use crate::graphql::ir::*;
use crate::metadata::types::QualifiedTable;
use crate::sql::ast::{
    self, Alias, BinaryOp, Expr, Ident, Literal, ParamSource, Select as SqlSelect, SelectItem,
    Statement,
};
use crate::sql::print::print;
use crate::sql::program::{CheckKind, Guard, Loop, Output, Rows, StepValue};
use crate::sql::SqlText;

/// What an `UPDATE` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UpdateReturning {
    /// `ctid` as text.
    Ctid,
    /// Every column.
    AllColumns,
    /// Every column, then `ctid`.
    AllWithCtid,
}

/// The rows a nested level relates to: those matching the key arrays its parent level step
/// returned, through the relationship's mapping.
#[derive(Debug, Clone, Copy)]
pub(super) struct Related<'a> {
    /// The parent level step.
    step: usize,
    /// (parent column, this table's column, its type).
    mapping: &'a [(String, String, PgType)],
}

/// `UPDATE … SET … WHERE … RETURNING …`; `gate` and the `related` rows join the conditions
/// (see [`ast::Insert::gate`]).
pub(super) fn update(
    state: &mut State,
    plan: &UpdatePlan,
    returning: UpdateReturning,
    gate: Option<Expr>,
    related: Option<&Related>,
) -> Statement {
    let alias = state.table_alias(&plan.table);
    let set = plan
        .sets
        .iter()
        .map(|(column, op, v)| {
            let current = Expr::column(&alias, column);
            let v = set_value(v, None);
            let value = match op {
                UpdateOp::Set => v,
                UpdateOp::Inc => Expr::binary(current, BinaryOp::Plus, v),
                UpdateOp::Append => Expr::binary(current, BinaryOp::Concat, v),
                UpdateOp::Prepend => Expr::binary(v, BinaryOp::Concat, current),
                UpdateOp::DeleteKey | UpdateOp::DeleteElem => {
                    Expr::binary(current, BinaryOp::Minus, v)
                }
                UpdateOp::DeleteAtPath => Expr::binary(current, BinaryOp::DeletePath, v),
            };
            (Ident::new(column.as_str()), value)
        })
        .collect();
    let mut where_: Vec<Expr> = related
        .map(|r| related_rows(state, &alias, r))
        .into_iter()
        .collect();
    where_.extend(conjunction(state, &plan.filter, &alias));
    where_.extend(gate);
    let returning = match returning {
        UpdateReturning::Ctid => vec![SelectItem::new(ctid(&alias).cast(PgType::Text))],
        UpdateReturning::AllColumns => vec![SelectItem::new(Expr::Star(alias.clone()))],
        UpdateReturning::AllWithCtid => vec![
            SelectItem::new(Expr::Star(alias.clone())),
            SelectItem::new(ctid(&alias)),
        ],
    };
    Statement::Update(Box::new(ast::Update {
        table: name(&plan.table),
        alias: alias.clone(),
        set,
        where_,
        returning,
    }))
}

/// The condition on `alias` that keeps the rows related to the parent level's rows.
fn related_rows(state: &mut State, alias: &Alias, related: &Related) -> Expr {
    let keys: Vec<(String, ParamSource, PgType)> = related
        .mapping
        .iter()
        .map(|(parent, column, ty)| {
            let values = StepValue::Keys {
                step: related.step,
                column: parent.clone(),
            };
            (column.clone(), ParamSource::Step(values), ty.clone())
        })
        .collect();
    key_match(state, alias, &keys)
}

/// Whether a rule reads rows of `table` besides the one it is applied to (a statement writing
/// `table` would show such a read the rows as they were before it).
fn reads_table(rule: &BoolExpr, table: &QualifiedTable) -> bool {
    match rule {
        BoolExpr::And(items) | BoolExpr::Or(items) => items.iter().any(|i| reads_table(i, table)),
        BoolExpr::Not(inner) | BoolExpr::Permission(inner) => reads_table(inner, table),
        BoolExpr::Exists {
            table: t, filter, ..
        } => t == table || reads_table(filter, table),
        BoolExpr::True
        | BoolExpr::Compare { .. }
        | BoolExpr::IsNull { .. }
        | BoolExpr::CompareColumns { .. } => false,
    }
}

/// Adds the parent-side columns the entries need to `keys`, once each.
fn add_parent_columns(keys: &mut Vec<String>, entries: &[NestedEntry]) {
    for entry in entries {
        for column in entry.parent_columns() {
            if !keys.contains(column) {
                keys.push(column.clone());
            }
        }
    }
}

/// The row a level step answers (see [`Output::Level`]), over the rows of `rows`.
fn level_list(
    state: &mut State,
    rows: &Alias,
    check: Option<&BoolExpr>,
    ctids: bool,
    keys: &[String],
) -> Vec<SelectItem> {
    let mut count = ast::Call::builtin("count", Vec::new());
    count.args = vec![ast::Arg::Star];
    let check = match check {
        Some(rule) => all_true(
            simplified(rule)
                .map(|r| bool_expr(state, &r, rows, rows))
                .unwrap_or(Expr::Literal(Literal::Bool(true))),
        ),
        None => Expr::Literal(Literal::Null).cast(PgType::Boolean),
    };
    let ctids = if ctids {
        Expr::call("json_agg", vec![ctid(rows).cast(PgType::Text)])
    } else {
        Expr::Literal(Literal::Null).cast(PgType::Json)
    };
    let mut list = vec![
        SelectItem::new(Expr::Call(Box::new(count)).cast(PgType::Integer)),
        SelectItem::new(check),
        SelectItem::new(ctids),
    ];
    for key in keys {
        let values = Expr::call("json_agg", vec![Expr::column(rows, key).cast(PgType::Text)]);
        list.push(SelectItem::named(values, key));
    }
    list
}

/// A level over the rows a data-modifying statement returns: `WITH "_written" AS (<write>)
/// SELECT <level row> FROM "_written"`.
fn level_over_cte(
    mut state: State,
    write: Statement,
    check: Option<&BoolExpr>,
    ctids: bool,
    keys: &[String],
) -> SqlText {
    let written = Ident::new(WRITTEN);
    let rows = state.alias();
    let list = level_list(&mut state, &rows, check, ctids, keys);
    let body = SqlSelect {
        list,
        from: Some(ast::From::Named {
            name: written.clone(),
            alias: Some(rows),
        }),
        ..SqlSelect::default()
    };
    print(&Statement::With(Box::new(ast::With::one(
        written, write, body,
    ))))
}

impl<'p> Builder<'p> {
    /// The steps of an update (a root field, or one element of `update_<t>_many`) and its
    /// answer, output as `kind` ([`Output::Answer`] or [`Output::Element`]).
    pub(super) fn update(&mut self, plan: &'p UpdatePlan, out: &MutationOutput, kind: Output) {
        if let Some(entries) = &plan.nested {
            self.nested_update(plan, entries, out, kind);
            return;
        }
        // Operators given, but nothing in them and no presets: no row is touched.
        if plan.sets.is_empty() {
            self.nothing(out, kind);
            return;
        }
        if plan.view {
            let mut state = State::new(&self.cells);
            let update = update(&mut state, plan, UpdateReturning::AllColumns, None, None);
            let check = plan.check.as_ref().map(|c| (c, CheckKind::Update));
            let sql = through_cte(state, update, check, out);
            self.push(sql, Guard::Always, kind);
            return;
        }
        let record = self.record();
        let mut state = State::new(&self.cells);
        let sql = print(&update(&mut state, plan, UpdateReturning::Ctid, None, None));
        self.push(sql, Guard::Always, Output::Updated { record });
        if let Some(rule) = &plan.check {
            self.check(&plan.table, rule, record, Rows::Updated, CheckKind::Update);
        }
        let ctids = ParamSource::Step(StepValue::Ctids {
            record,
            rows: Rows::All,
        });
        self.answer(out, &Written::Ctids(ctids), kind);
    }

    /// An update with `_nested`: the root level (written, or only selected when it has
    /// nothing to write), its entries depth first, then the answer by the root rows' keys.
    fn nested_update(
        &mut self,
        plan: &'p UpdatePlan,
        entries: &'p [NestedEntry],
        out: &MutationOutput,
        kind: Output,
    ) {
        let mut keys: Vec<String> = plan.key.iter().map(|(c, _)| c.clone()).collect();
        add_parent_columns(&mut keys, entries);
        let root = if plan.sets.is_empty() {
            self.level_select(&plan.table, &plan.filter, plan.view, None, &keys)
        } else {
            self.level_update(plan, None, &keys)
        };
        self.entries(entries, root);
        let written = plan
            .key
            .iter()
            .map(|(column, ty)| {
                let values = StepValue::Keys {
                    step: root,
                    column: column.clone(),
                };
                (column.clone(), ParamSource::Step(values), ty.clone())
            })
            .collect();
        self.answer(out, &Written::Keys(written), kind);
    }

    /// The entries over the rows level step `parent` touched, in order: each entry's own
    /// statement, the entries under it, then its inserts.
    fn entries(&mut self, entries: &'p [NestedEntry], parent: usize) {
        for entry in entries {
            let related = Related {
                step: parent,
                mapping: &entry.mapping,
            };
            let mut keys = Vec::new();
            add_parent_columns(&mut keys, &entry.nested);
            let level = match &entry.step {
                EntryStep::Nothing => None,
                EntryStep::Update(plan) => Some(self.level_update(plan, Some(related), &keys)),
                EntryStep::Delete(plan) => {
                    self.level_delete(plan, related);
                    None
                }
                EntryStep::Select {
                    table,
                    filter,
                    view,
                } => Some(self.level_select(table, filter, *view, Some(related), &keys)),
            };
            if let Some(level) = level {
                self.entries(&entry.nested, level);
            }
            if let Some(insert) = &entry.insert {
                self.insert_per_parent(insert, parent);
            }
        }
    }

    /// The guard of a level: the root level always runs, others when their parent touched rows.
    fn level_guard(related: Option<&Related>) -> Guard {
        related.map_or(Guard::Always, |r| Guard::Touched(r.step))
    }

    /// An `UPDATE` level. Its check runs in the statement, over the rows it returns, unless the
    /// check reads the updated table itself: then a later step checks the rows by `ctid`.
    fn level_update(
        &mut self,
        plan: &UpdatePlan,
        related: Option<Related>,
        keys: &[String],
    ) -> usize {
        let guard = Self::level_guard(related.as_ref());
        let separate = plan
            .check
            .as_ref()
            .filter(|rule| !plan.view && reads_table(rule, &plan.table));
        let record = separate.map(|_| self.record());
        let mut state = State::new(&self.cells);
        let returning = match record {
            Some(_) => UpdateReturning::AllWithCtid,
            None => UpdateReturning::AllColumns,
        };
        let write = update(&mut state, plan, returning, None, related.as_ref());
        let in_statement = plan.check.as_ref().filter(|_| separate.is_none());
        let sql = level_over_cte(state, write, in_statement, record.is_some(), keys);
        let output = Output::Level {
            counted: true,
            check: in_statement.map(|_| CheckKind::Update),
            record,
        };
        let step = self.push(sql, guard, output);
        self.program.steps[step].plan_each_run = related.is_some();
        if let (Some(rule), Some(record)) = (separate, record) {
            self.check(&plan.table, rule, record, Rows::Updated, CheckKind::Update);
        }
        step
    }

    /// A `DELETE` level.
    fn level_delete(&mut self, plan: &DeletePlan, related: Related) -> usize {
        let mut state = State::new(&self.cells);
        let alias = state.table_alias(&plan.table);
        let mut where_ = vec![related_rows(&mut state, &alias, &related)];
        where_.extend(conjunction(&mut state, &plan.filter, &alias));
        let write = Statement::Delete(Box::new(ast::Delete {
            table: name(&plan.table),
            alias: alias.clone(),
            where_,
            returning: vec![SelectItem::new(Expr::Star(alias))],
        }));
        let sql = level_over_cte(state, write, None, false, &[]);
        let output = Output::Level {
            counted: true,
            check: None,
            record: None,
        };
        let step = self.push(sql, Guard::Touched(related.step), output);
        self.program.steps[step].plan_each_run = true;
        step
    }

    /// A level that only selects its rows, locking them (views are read without a lock).
    fn level_select(
        &mut self,
        table: &QualifiedTable,
        filter: &[BoolExpr],
        view: bool,
        related: Option<Related>,
        keys: &[String],
    ) -> usize {
        let guard = Self::level_guard(related.as_ref());
        let mut state = State::new(&self.cells);
        let alias = state.table_alias(table);
        let mut where_: Vec<Expr> = related
            .map(|r| related_rows(&mut state, &alias, &r))
            .into_iter()
            .collect();
        where_.extend(conjunction(&mut state, filter, &alias));
        let locked = SqlSelect {
            list: vec![SelectItem::new(Expr::Star(alias.clone()))],
            from: Some(ast::From::Table {
                name: name(table),
                alias,
            }),
            where_,
            lock: !view,
            ..SqlSelect::default()
        };
        let rows = state.alias();
        let list = level_list(&mut state, &rows, None, false, keys);
        let statement = SqlSelect {
            list,
            from: Some(ast::From::Subquery {
                select: Box::new(locked),
                alias: rows,
            }),
            ..SqlSelect::default()
        };
        let sql = print(&Statement::Select(Box::new(statement)));
        let output = Output::Level {
            counted: false,
            check: None,
            record: None,
        };
        let step = self.push(sql, guard, output);
        self.program.steps[step].plan_each_run = related.is_some();
        step
    }

    /// `_insert`: the nested-insert steps once per row level step `parent` touched, the mapped
    /// columns taken from that row, then the checks over every row they inserted.
    fn insert_per_parent(&mut self, plan: &'p InsertPlan, parent: usize) {
        let start = self.program.steps.len();
        self.insert(plan, Some(ParentRow::Each), false, &Guard::Always);
        let end = self.program.steps.len();
        if end > start {
            self.program.loops.push(Loop {
                over: parent,
                steps: start..end,
            });
        }
        for (record, plan) in std::mem::take(&mut self.written) {
            self.checks(record, plan);
        }
    }
}
