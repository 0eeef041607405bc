//! The building blocks of mutation programs: [`Builder`], which appends steps (nested inserts
//! parents first, children after, then their permission checks over exactly the rows written,
//! found again by `ctid`, then the answer), and the statements they run. What an earlier step
//! returns (a parent's key, the written `ctid`s, the row count) reaches later steps as
//! [`StepValue`] parameters, so a whole program is built before anything runs.

use super::filter::{bool_expr, conjunction, simplified};
use super::select::{output, Written};
use super::{name, value, State};
use crate::db_model::PgType;
use crate::graphql::ir::*;
use crate::sql::ast::{
    self, Alias, BinaryOp, ConflictUpdate, Expr, Ident, InsertValue, Literal, ParamSource,
    Quantifier, Select as SqlSelect, SelectItem, Statement,
};
use crate::sql::print::print;
use crate::sql::program::{CheckKind, Guard, Output, Program, Rows, Step, StepValue};
use crate::sql::SqlText;
use serde_json::Value;

/// Builds a program step by step.
#[derive(Debug, Default)]
pub(super) struct Builder<'p> {
    pub(super) program: Program,
    /// Each insert plan's record, in the order its writes complete (nested plans first): the
    /// order its checks run in.
    pub(super) written: Vec<(usize, &'p InsertPlan)>,
    /// The role's cell rules (answers read through them).
    pub(super) cells: CellRules,
}

/// Where the mapped columns of a nested insert's rows come from.
#[derive(Debug, Clone, Copy)]
pub(super) enum ParentRow {
    /// The row an earlier step inserted (its `row_to_json`).
    Step(usize),
    /// The row the enclosing loop is at (a nested update's `_insert`).
    Each,
}

impl<'p> Builder<'p> {
    pub(super) fn push(&mut self, sql: SqlText, guard: Guard, output: Output) -> usize {
        self.program.steps.push(Step {
            sql,
            guard,
            output,
            plan_each_run: false,
        });
        self.program.steps.len() - 1
    }

    pub(super) fn record(&mut self) -> usize {
        self.program.records += 1;
        self.program.records - 1
    }

    /// The steps inserting `plan`'s rows (and their nested rows) into a new record; returns the
    /// record. `parent` is the step that inserted the row this plan's `SetValue::Parent` values
    /// come from. `want_rows`: the rows' JSON is needed (parents of nested inserts).
    pub(super) fn insert(
        &mut self,
        plan: &'p InsertPlan,
        parent: Option<ParentRow>,
        want_rows: bool,
        guard: &Guard,
    ) -> usize {
        let record = self.record();
        let nested = plan
            .rows
            .iter()
            .any(|r| !r.parents.is_empty() || !r.children.is_empty());
        let all_default = plan.rows.iter().all(|r| r.values.is_empty());
        if !nested && !all_default && !plan.rows.is_empty() {
            let rows: Vec<Vec<(String, Expr)>> = plan
                .rows
                .iter()
                .map(|r| from_parent(&r.values, parent))
                .collect();
            let sql = insert(
                &self.cells,
                &plan.table,
                &rows,
                plan.on_conflict.as_ref(),
                want_rows,
            );
            self.push(
                sql,
                guard.clone(),
                Output::Written {
                    record,
                    required: None,
                },
            );
        } else {
            for row in &plan.rows {
                let mut values = from_parent(&row.values, parent);
                for p in &row.parents {
                    let made = self.insert(&p.insert, None, true, guard);
                    let Some(step) = self.first_step_of(made) else {
                        continue;
                    };
                    if let Output::Written { required, .. } = &mut self.program.steps[step].output {
                        *required = Some(p.insert.table.to_string());
                    }
                    for (column, cast, from) in &p.fill {
                        values.retain(|(c, _)| c != column);
                        let from_parent = StepValue::Column {
                            step,
                            column: from.clone(),
                        };
                        values.push((
                            column.clone(),
                            Expr::value(ParamSource::Step(from_parent), cast.clone()),
                        ));
                    }
                }
                let sql = insert(
                    &self.cells,
                    &plan.table,
                    &[values],
                    plan.on_conflict.as_ref(),
                    true,
                );
                let this = self.push(
                    sql,
                    guard.clone(),
                    Output::Written {
                        record,
                        required: None,
                    },
                );
                for c in &row.children {
                    self.insert(
                        &c.insert,
                        Some(ParentRow::Step(this)),
                        false,
                        &Guard::RowFrom(this),
                    );
                }
            }
        }
        self.written.push((record, plan));
        record
    }

    /// The first step writing into `record` (the row a nested parent insert made).
    fn first_step_of(&self, record: usize) -> Option<usize> {
        self.program
            .steps
            .iter()
            .position(|s| matches!(s.output, Output::Written { record: r, .. } if r == record))
    }

    /// The insert and upsert checks of one insert plan's record.
    pub(super) fn checks(&mut self, record: usize, plan: &InsertPlan) {
        if let Some(rule) = &plan.check {
            self.check(&plan.table, rule, record, Rows::Inserted, CheckKind::Insert);
        }
        if let Some(rule) = &plan.update_check {
            self.check(&plan.table, rule, record, Rows::Updated, CheckKind::Update);
        }
    }

    /// Whether every row of `record` of that kind satisfies `rule`: one boolean.
    pub(super) fn check(
        &mut self,
        table: &crate::metadata::types::QualifiedTable,
        rule: &BoolExpr,
        record: usize,
        rows: Rows,
        kind: CheckKind,
    ) {
        let mut state = State::default();
        let alias = state.alias();
        let rule = simplified(rule)
            .map(|r| bool_expr(&mut state, &r, &alias, &alias))
            .unwrap_or(Expr::Literal(Literal::Bool(true)));
        let ctids = Expr::value(
            ParamSource::Step(StepValue::Ctids { record, rows }),
            PgType::Tid.array_of(),
        );
        let statement = SqlSelect {
            from: Some(ast::From::Table {
                name: name(table),
                alias: alias.clone(),
            }),
            where_: vec![Expr::Quantified(
                Box::new(ctid(&alias)),
                BinaryOp::Eq,
                Quantifier::Any,
                Box::new(ctids),
            )],
            ..SqlSelect::expr(all_true(rule))
        };
        let sql = print(&Statement::Select(Box::new(statement)));
        self.push(sql, Guard::Recorded { record, rows }, Output::Check(kind));
    }

    /// The answer of an insert or update: the rows `written` names, under the select
    /// permission; `kind` is [`Output::Answer`] or [`Output::Element`].
    pub(super) fn answer(&mut self, out: &MutationOutput, written: &Written, kind: Output) {
        let mut state = State::new(&self.cells);
        let affected = Expr::value(ParamSource::Step(StepValue::Affected), PgType::Integer);
        let answer = output(&mut state, out, affected, written);
        let sql = print(&Statement::Select(Box::new(SqlSelect::expr(answer))));
        self.push(sql, Guard::Always, kind);
    }

    /// The answer of a write that writes nothing: `affected_rows` 0, no rows (a `_by_pk`
    /// field: `null`). One read, no write.
    pub(super) fn nothing(&mut self, out: &MutationOutput, kind: Output) {
        let mut state = State::new(&self.cells);
        let affected = Expr::value(ParamSource::Literal(Value::from(0)), PgType::Integer);
        let answer = output(&mut state, out, affected, &Written::Nothing);
        let sql = print(&Statement::Select(Box::new(SqlSelect::expr(answer))));
        self.push(sql, Guard::Always, kind);
    }

    /// An insert into a view: views have no `ctid`, so the write, its check and its answer are
    /// one statement (no rows: just the empty answer).
    pub(super) fn insert_view(&mut self, plan: &InsertPlan, out: &MutationOutput) {
        let rows: Vec<Vec<(String, Expr)>> = plan
            .rows
            .iter()
            .map(|r| from_parent(&r.values, None))
            .collect();
        if rows.is_empty() {
            self.nothing(out, Output::Answer);
            return;
        }
        let mut state = State::new(&self.cells);
        let insert = insert_statement(
            &mut state,
            &plan.table,
            &rows,
            None,
            Returning::AllColumns,
            None,
        );
        let check = plan.check.as_ref().map(|c| (c, CheckKind::Insert));
        let sql = through_cte(state, insert, check, out);
        self.push(sql, Guard::Always, Output::Answer);
    }
}

/// `coalesce(bool_and(rule), true)`: whether every row satisfies the rule (true without rows).
pub(super) fn all_true(rule: Expr) -> Expr {
    Expr::call(
        "coalesce",
        vec![
            Expr::call("bool_and", vec![rule]),
            Expr::Literal(Literal::Bool(true)),
        ],
    )
}

pub(super) fn ctid(alias: &Alias) -> Expr {
    Expr::AliasColumn(alias.clone(), Alias::fixed("ctid"))
}

/// A planned column value as SQL; `SetValue::Parent` reads the `parent` row.
pub(super) fn set_value(v: &SetValue, parent: Option<ParentRow>) -> Expr {
    match v {
        SetValue::Value(v) => value(v),
        SetValue::Now => Expr::call("now", Vec::new()),
        SetValue::Parent { column, cast } => match parent {
            Some(ParentRow::Step(step)) => Expr::value(
                ParamSource::Step(StepValue::Column {
                    step,
                    column: column.clone(),
                }),
                cast.clone(),
            ),
            Some(ParentRow::Each) => Expr::value(
                ParamSource::Step(StepValue::Each {
                    column: column.clone(),
                }),
                cast.clone(),
            ),
            // The planner only makes parent values for nested rows, which always have a
            // parent step; without one the column is written as NULL.
            None => Expr::Literal(Literal::Null).cast(cast.clone()),
        },
    }
}

pub(super) fn from_parent(
    values: &[(String, SetValue)],
    parent: Option<ParentRow>,
) -> Vec<(String, Expr)> {
    values
        .iter()
        .map(|(c, v)| (c.clone(), set_value(v, parent)))
        .collect()
}

/// What an `INSERT` returns.
pub(super) enum Returning {
    /// `ctid`, whether the row is new (not upsert-updated), and the row as JSON when wanted.
    Written {
        /// Return the row's JSON rather than `NULL`.
        want_row: bool,
    },
    /// Every column (views, which have no `ctid`).
    AllColumns,
}

/// `INSERT … [ON CONFLICT …] RETURNING ctid, inserted?, row`: one result row per written row.
fn insert(
    cells: &CellRules,
    table: &crate::metadata::types::QualifiedTable,
    rows: &[Vec<(String, Expr)>],
    on_conflict: Option<&OnConflict>,
    want_row: bool,
) -> SqlText {
    let mut state = State::new(cells);
    let statement = insert_statement(
        &mut state,
        table,
        rows,
        on_conflict,
        Returning::Written { want_row },
        None,
    );
    print(&statement)
}

pub(super) fn insert_statement(
    state: &mut State,
    table: &crate::metadata::types::QualifiedTable,
    rows: &[Vec<(String, Expr)>],
    on_conflict: Option<&OnConflict>,
    returning: Returning,
    gate: Option<Expr>,
) -> Statement {
    // An upsert's `where` reads the table's cells as the role may read them.
    let alias = state.table_alias(table);
    let mut columns: Vec<&String> = Vec::new();
    for row in rows {
        for (c, _) in row {
            if !columns.contains(&c) {
                columns.push(c);
            }
        }
    }
    let values = if columns.is_empty() {
        Vec::new()
    } else {
        rows.iter()
            .map(|row| {
                columns
                    .iter()
                    .map(|c| match row.iter().find(|(name, _)| name == *c) {
                        Some((_, v)) => InsertValue::Expr(v.clone()),
                        None => InsertValue::Default,
                    })
                    .collect()
            })
            .collect()
    };
    let on_conflict = on_conflict.map(|oc| ast::OnConflict {
        constraint: Ident::new(oc.constraint.as_str()),
        update: (!oc.update_columns.is_empty()).then(|| {
            let excluded = Alias::fixed("EXCLUDED");
            let mut set: Vec<(Ident, Expr)> = oc
                .update_columns
                .iter()
                .map(|c| (Ident::new(c.as_str()), Expr::column(&excluded, c)))
                .collect();
            for (c, v) in &oc.presets {
                set.push((Ident::new(c.as_str()), set_value(v, None)));
            }
            ConflictUpdate {
                set,
                where_: conjunction(state, &oc.filter, &alias),
            }
        }),
    });
    let returning = match returning {
        Returning::AllColumns => vec![SelectItem::new(Expr::Star(alias.clone()))],
        Returning::Written { want_row } => {
            let xmax = Expr::AliasColumn(alias.clone(), Alias::fixed("xmax")).cast(PgType::Text);
            let row = if want_row {
                Expr::call("row_to_json", vec![Expr::Star(alias.clone())])
            } else {
                Expr::Literal(Literal::Null).cast(PgType::Json)
            };
            vec![
                SelectItem::new(ctid(&alias).cast(PgType::Text)),
                SelectItem::bare(
                    Expr::binary(xmax, BinaryOp::Eq, Expr::string("0")).nested(),
                    "inserted",
                ),
                SelectItem::new(row),
            ]
        }
    };
    Statement::Insert(Box::new(ast::Insert {
        table: name(table),
        alias,
        columns: columns
            .into_iter()
            .map(|c| Ident::new(c.as_str()))
            .collect(),
        rows: values,
        gate,
        on_conflict,
        returning,
    }))
}

/// The rows a write through a view returned, as a CTE.
pub(super) const WRITTEN: &str = "_written";

/// `(SELECT count(*) FROM "<cte>")`.
pub(super) fn count_of(cte: &Ident) -> Expr {
    let mut count = ast::Call::builtin("count", Vec::new());
    count.args = vec![ast::Arg::Star];
    Expr::Subquery(Box::new(SqlSelect {
        from: Some(ast::From::Named {
            name: cte.clone(),
            alias: None,
        }),
        ..SqlSelect::expr(Expr::Call(Box::new(count)))
    }))
}

/// The write, its permission check and its answer as one statement over the rows the write
/// returns (`WITH "_written" AS (write RETURNING *) SELECT …`): how views (which have no
/// `ctid`) are written, and how a one-statement mutation runs. A failed check raises an error
/// from the statement itself (`basalt_catalog.check_failed`), so nothing it wrote is kept.
pub(super) fn through_cte(
    mut state: State,
    write: Statement,
    check: Option<(&BoolExpr, CheckKind)>,
    out: &MutationOutput,
) -> SqlText {
    let written = Ident::new(WRITTEN);
    let answer = checked_answer(&mut state, &written, check, out);
    print(&Statement::With(Box::new(ast::With::one(
        written,
        write,
        SqlSelect::expr(answer),
    ))))
}

/// The answer over the rows the CTE `written` returned, behind the permission check when
/// there is one: `CASE WHEN <every row passes> THEN <answer> ELSE <raise> END`.
pub(super) fn checked_answer(
    state: &mut State,
    written: &Ident,
    check: Option<(&BoolExpr, CheckKind)>,
    out: &MutationOutput,
) -> Expr {
    let answer = output(
        state,
        out,
        count_of(written),
        &Written::Cte(written.clone()),
    );
    match check.and_then(|(rule, kind)| Some((simplified(rule)?, kind))) {
        Some((rule, kind)) => {
            let alias = state.alias();
            let rule = bool_expr(state, &rule, &alias, &alias);
            let passed = Expr::Subquery(Box::new(SqlSelect {
                from: Some(ast::From::Named {
                    name: written.clone(),
                    alias: Some(alias),
                }),
                ..SqlSelect::expr(all_true(rule))
            }));
            Expr::Case {
                when: Box::new(passed),
                then: Box::new(answer),
                otherwise: Box::new(check_failed(kind)),
            }
        }
        None => answer,
    }
}

/// `basalt_catalog.check_failed('<kind>')`: raises the error of a failed permission check
/// (SQLSTATE [`crate::execute::CHECK_FAILED`]), typed `json` to stand in for an answer.
fn check_failed(kind: CheckKind) -> Expr {
    Expr::Call(Box::new(ast::Call {
        function: ast::Function::Qualified(ast::QualifiedName::new(
            "basalt_catalog",
            "check_failed",
        )),
        ..ast::Call::builtin("", vec![Expr::string(kind.as_str())])
    }))
}
