//! Mutations as programs. Each root field becomes a [`Program`] ([`super::steps`] builds its
//! steps, [`super::update`] those of updates), and an operation of one root field may also
//! become one statement ([`MutationProgram::single`]).

use super::filter::conjunction;
use super::select::{output, Written};
use super::steps::{count_of, from_parent, insert_statement, through_cte, Builder, Returning};
use super::update::{update, UpdateReturning};
use super::{name, session_gate, session_param, set_session, State};
use crate::graphql::ir::*;
use crate::sql::ast::{self, Expr, Ident, ParamSource, Select as SqlSelect, SelectItem, Statement};
use crate::sql::print::print;
use crate::sql::program::{
    CheckKind, FieldProgram, Guard, MutationProgram, Output, Program, Rows, StepValue,
};
use crate::sql::SqlText;

/// A mutation plan as a program: the session statement, each root field's program, and the
/// one-statement form when the operation has one.
pub fn mutation(plan: &MutationPlan) -> MutationProgram {
    let fields: Vec<(String, FieldProgram)> = plan
        .fields
        .iter()
        .map(|(key, field)| {
            let program = match field {
                MutationField::Constant(v) => FieldProgram::Constant(v.clone()),
                MutationField::Write { action, output } => {
                    FieldProgram::Write(write(action, output, &plan.cells))
                }
                MutationField::Action(f) => FieldProgram::Action(answer_only(print(
                    &super::action::answer(key, f, &plan.cells),
                ))),
                MutationField::AsyncAction(call) => {
                    FieldProgram::Write(answer_only(print(&super::action::log_call(key, call))))
                }
                MutationField::Function(select) => {
                    FieldProgram::Write(answer_only(print(&function_rows(select, &plan.cells))))
                }
            };
            (key.clone(), program)
        })
        .collect();
    let session = SqlSelect::expr(set_session(Expr::Param(session_param())));
    MutationProgram {
        session: print(&Statement::Select(Box::new(session))),
        single: single(plan),
        fields,
    }
}

/// The whole operation as one statement, when its meaning is the same as its program's: one
/// root field whose write, checks and answer fit one statement (see [`MutationProgram::single`]).
/// The session is set by the write's gate, before its first row; a failed check raises.
/// Inside one statement, reads of other tables see the database as it was before the write,
/// so rules and answers that read any table but the written rows keep the program.
fn single(plan: &MutationPlan) -> Option<SqlText> {
    let [(_, MutationField::Write { action, output })] = plan.fields.as_slice() else {
        return None;
    };
    let gate = Some(session_gate());
    let cells = &plan.cells;
    let mut state = State::new(cells);
    match action {
        // Already one statement over the deleted rows: only the session moves in.
        MutationAction::Delete(plan) => Some(print(&delete(plan, output, gate, cells))),
        MutationAction::Insert(plan) if fits_one_statement(plan) && own_rows(output) => {
            let insert = gated_insert(&mut state, plan);
            let check = plan.check.as_ref().map(|c| (c, CheckKind::Insert));
            Some(through_cte(state, insert, check, output))
        }
        MutationAction::Update(plan)
            if !plan.sets.is_empty()
                && plan.nested.is_none()
                && plan.check.as_ref().is_none_or(row_local)
                && own_rows(output) =>
        {
            let update = update(&mut state, plan, UpdateReturning::AllColumns, gate, None);
            let check = plan.check.as_ref().map(|c| (c, CheckKind::Update));
            Some(through_cte(state, update, check, output))
        }
        MutationAction::Insert(_) | MutationAction::Update(_) | MutationAction::UpdateMany(_) => {
            None
        }
    }
}

/// The `INSERT` of a one-statement insert, behind the session gate, returning every column.
pub(super) fn gated_insert(state: &mut State, plan: &InsertPlan) -> Statement {
    let rows: Vec<Vec<(String, Expr)>> = plan
        .rows
        .iter()
        .map(|r| from_parent(&r.values, None))
        .collect();
    insert_statement(
        state,
        &plan.table,
        &rows,
        plan.on_conflict.as_ref(),
        Returning::AllColumns,
        Some(session_gate()),
    )
}

/// An insert whose rows can be one `VALUES` list behind the session gate: no nested rows,
/// every row giving the same columns (no `DEFAULT`), and checks that read only the row. An
/// upsert fits only without checks (which rows were inserted and which updated decides which
/// check applies).
pub(super) fn fits_one_statement(plan: &InsertPlan) -> bool {
    let Some(first) = plan.rows.first() else {
        return false;
    };
    let columns = |r: &InsertRow| r.values.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>();
    let first_columns = columns(first);
    !first_columns.is_empty()
        && plan
            .rows
            .iter()
            .all(|r| r.parents.is_empty() && r.children.is_empty() && columns(r) == first_columns)
        && match &plan.on_conflict {
            None => plan.check.as_ref().is_none_or(row_local),
            Some(_) => plan.check.is_none() && plan.update_check.is_none(),
        }
}

/// Whether a rule reads nothing but the row it is applied to.
pub(super) fn row_local(rule: &BoolExpr) -> bool {
    match rule {
        BoolExpr::And(items) | BoolExpr::Or(items) => items.iter().all(row_local),
        BoolExpr::Not(inner) | BoolExpr::Permission(inner) => row_local(inner),
        BoolExpr::Exists { .. } => false,
        BoolExpr::True
        | BoolExpr::Compare { .. }
        | BoolExpr::IsNull { .. }
        | BoolExpr::CompareColumns { .. } => true,
    }
}

/// Whether an answer reads only the written rows' own columns.
pub(super) fn own_rows(out: &MutationOutput) -> bool {
    let own = |s: &Select| {
        s.fields
            .iter()
            .all(|(_, f)| matches!(f, Field::Column { .. } | Field::Constant(_)))
            && s.args.filter.iter().all(row_local)
            && s.args.order_by.is_empty()
    };
    match out {
        MutationOutput::Row(s) => own(s),
        MutationOutput::Response(fields) => fields.iter().all(|(_, f)| match f {
            ResponseField::Returning(s) => own(s),
            ResponseField::AffectedRows | ResponseField::Constant(_) => true,
        }),
    }
}

/// A program of one statement whose first cell is the answer.
fn answer_only(sql: crate::sql::SqlText) -> Program {
    Program {
        steps: vec![crate::sql::program::Step {
            sql,
            guard: Guard::Always,
            output: Output::Answer,
            plan_each_run: false,
        }],
        ..Program::default()
    }
}

/// `SELECT <rows>` of a mutation-exposed function: the call sits in the `FROM` clause, so
/// Postgres runs it to completion before the filter, ordering and paging read its rows.
fn function_rows(select: &Select, cells: &CellRules) -> Statement {
    let mut state = State::new(cells);
    let rows = super::select::select(&mut state, select, None);
    Statement::Select(Box::new(SqlSelect::expr(rows)))
}

/// The program of one root field.
fn write(action: &MutationAction, output: &MutationOutput, cells: &CellRules) -> Program {
    let mut builder = Builder {
        cells: cells.clone(),
        ..Builder::default()
    };
    match action {
        MutationAction::Insert(plan) if plan.view => builder.insert_view(plan, output),
        MutationAction::Insert(plan) => {
            let top = builder.insert(plan, None, false, &Guard::Always);
            for (record, plan) in std::mem::take(&mut builder.written) {
                builder.checks(record, plan);
            }
            let ctids = ParamSource::Step(StepValue::Ctids {
                record: top,
                rows: Rows::All,
            });
            builder.answer(output, &Written::Ctids(ctids), Output::Answer);
        }
        MutationAction::Update(plan) => builder.update(plan, output, Output::Answer),
        MutationAction::UpdateMany(plans) => {
            builder.program.list = true;
            for plan in plans {
                builder.update(plan, output, Output::Element);
            }
        }
        MutationAction::Delete(plan) => {
            let sql = print(&delete(plan, output, None, cells));
            builder.push(sql, Guard::Always, Output::Answer);
        }
    }
    builder.program
}

/// `WITH "_deleted" AS (DELETE … RETURNING *) SELECT <answer>` in one statement; `gate` joins
/// the conditions (see [`ast::Insert::gate`]).
fn delete(
    plan: &DeletePlan,
    out: &MutationOutput,
    gate: Option<Expr>,
    cells: &CellRules,
) -> Statement {
    const DELETED: &str = "_deleted";
    let mut state = State::new(cells);
    let alias = state.table_alias(&plan.table);
    let mut where_ = conjunction(&mut state, &plan.filter, &alias);
    where_.extend(gate);
    let delete = Statement::Delete(Box::new(ast::Delete {
        table: name(&plan.table),
        alias: alias.clone(),
        where_,
        returning: vec![SelectItem::new(Expr::Star(alias))],
    }));
    let deleted = Ident::new(DELETED);
    let answer = output(
        &mut state,
        out,
        count_of(&deleted),
        &Written::Cte(deleted.clone()),
    );
    Statement::With(Box::new(ast::With::one(
        deleted,
        delete,
        SqlSelect::expr(answer),
    )))
}
