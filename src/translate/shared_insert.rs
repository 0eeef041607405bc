//! Concurrent inserts of one plan as one statement ([`shared_insert`]): each request's insert
//! and answer as CTEs of their own, so that nothing has to match a written row to its request.

use super::mutation::{fits_one_statement, gated_insert, own_rows};
use super::steps::{checked_answer, WRITTEN};
use super::State;
use crate::graphql::ir::*;
use crate::sql::ast::{
    self, Alias, Expr, Ident, Literal, Select as SqlSelect, SelectItem, Statement,
};
use crate::sql::print::print;
use crate::sql::program::CheckKind;
use crate::sql::SqlText;

/// One statement that makes the inserts of `copies` concurrent requests of a plan, each in
/// CTEs of its own, so that nothing has to match a written row to its request:
/// `WITH "_written0" AS (<insert>), "_answer0" AS (SELECT <answer> AS data), "_written1" AS …
/// SELECT "_copies".* FROM (VALUES (0, (SELECT … "_answer0")), (1, …)) AS "_copies"("cohort",
/// "data")`, one row per copy. Each copy is the plan's one statement
/// ([`crate::sql::program::MutationProgram::single`]) as a pair of CTEs, with its parameters in the same order: the
/// statement's parameters are the one statement's, repeated once per copy (the caller binds
/// each request's values in turn). A failed check or constraint fails every copy.
///
/// Only for a plan whose one statement is an insert without `ON CONFLICT` (two copies updating
/// one row would leave which update wins to Postgres); `None` otherwise. Every copy sets the
/// session: the caller gives one statement only requests of one session (see
/// [`crate::execute::SharedStatement`]).
pub fn shared_insert(plan: &MutationPlan, copies: usize) -> Option<SqlText> {
    let (insert, output) = shareable_insert(plan)?;
    let mut state = State::new(&plan.cells);
    let mut ctes = Vec::with_capacity(2 * copies);
    let mut rows = Vec::with_capacity(copies);
    for copy in 0..copies {
        let written = Ident::new(format!("{WRITTEN}{copy}"));
        let answer = Ident::new(format!("_answer{copy}"));
        let write = gated_insert(&mut state, insert);
        let check = insert.check.as_ref().map(|c| (c, CheckKind::Insert));
        let data = checked_answer(&mut state, &written, check, output);
        let data = SqlSelect {
            list: vec![SelectItem::bare(data, "data")],
            ..SqlSelect::default()
        };
        ctes.push((written, write));
        ctes.push((answer.clone(), Statement::Select(Box::new(data))));
        let alias = state.alias();
        let read = SqlSelect {
            from: Some(ast::From::Named {
                name: answer,
                alias: Some(alias.clone()),
            }),
            ..SqlSelect::expr(Expr::column(&alias, "data"))
        };
        let cohort = i64::try_from(copy).unwrap_or(i64::MAX);
        rows.push(vec![
            Expr::Literal(Literal::Int(cohort)),
            Expr::Subquery(Box::new(read)),
        ]);
    }
    let copies_alias = Alias::fixed("_copies");
    let body = SqlSelect {
        list: vec![SelectItem::new(Expr::Star(copies_alias.clone()))],
        from: Some(ast::From::Values {
            rows,
            alias: copies_alias,
            columns: vec![Alias::fixed("cohort"), Alias::fixed("data")],
        }),
        ..SqlSelect::default()
    };
    Some(print(&Statement::With(Box::new(ast::With { ctes, body }))))
}

/// Whether concurrent requests of the plan can share a statement ([`shared_insert`]).
pub fn shares_inserts(plan: &MutationPlan) -> bool {
    shareable_insert(plan).is_some()
}

/// The plan's one insert and its answer, when [`shared_insert`] can copy them: one root field,
/// an insert that is one statement, without `ON CONFLICT`.
fn shareable_insert(plan: &MutationPlan) -> Option<(&InsertPlan, &MutationOutput)> {
    let [(_, MutationField::Write { action, output })] = plan.fields.as_slice() else {
        return None;
    };
    let MutationAction::Insert(insert) = action else {
        return None;
    };
    (insert.on_conflict.is_none() && fits_one_statement(insert) && own_rows(output))
        .then_some((insert, output))
}
