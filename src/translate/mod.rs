//! IR → SQL AST. A query operation becomes one `SELECT` whose single `json` column is the whole
//! `data` object ([`query`]); a mutation becomes a
//! [`MutationProgram`](crate::sql::program::MutationProgram): the session setting and,
//! per root field, a [`Program`](crate::sql::program::Program) of statements ([`mutation`]).
//! Values stay parameters (typed by [`PgType`]); table aliases come from a counter in
//! [`State`], so the SQL of a plan is deterministic. Pure: no IO, no request values, no SQL
//! text (printing is [`crate::sql::print`]'s job). See `docs/architecture.md`.

mod action;
mod filter;
mod mutation;
mod select;
mod shared_insert;
mod steps;
mod stream;
mod table_join;
mod update;

pub use mutation::mutation;
pub use shared_insert::{shared_insert, shares_inserts};
pub use table_join::table_joins;

use crate::db_model::Encoding;
use crate::db_model::PgType;
use crate::graphql::ir::{ActionPart, BoolExpr, CellRules, Param, QueryPlan, RootField, ValueExpr};
use crate::metadata::types::QualifiedTable;
use crate::sql::ast::*;
use crate::sql::print::{print_multiplexed, print_with, MultiplexedSql};
use crate::sql::SqlText;
use serde_json::Value;

/// Per-statement translation state: the alias counter, the aliases that name a paged
/// subquery of a table rather than the table itself, and the role's cell rules with the
/// aliases they apply to.
#[derive(Debug, Default)]
pub(crate) struct State {
    aliases: usize,
    /// A whole-row reference to one of these is cast back to the table's row type.
    paged: Vec<(Alias, QualifiedName)>,
    /// The cell rules of the plan's role.
    cells: CellRules,
    /// Aliases of tables that have cell rules, with the table.
    guarded: Vec<(Alias, QualifiedTable)>,
    /// How many permission filters enclose what is being translated: a permission reads
    /// every column as stored.
    raw: usize,
}

impl State {
    /// A state for a plan with the role's cell rules `cells`.
    fn new(cells: &CellRules) -> Self {
        State {
            cells: cells.clone(),
            ..State::default()
        }
    }

    /// The next table alias (`_t1`, `_t2`, …).
    fn alias(&mut self) -> Alias {
        self.aliases += 1;
        Alias::numbered(self.aliases)
    }

    /// The next table alias, for rows of `table`: its columns are read through the table's
    /// cell rules, if it has any.
    fn table_alias(&mut self, table: &QualifiedTable) -> Alias {
        let alias = self.alias();
        if self.cells.contains_key(table) {
            self.guarded.push((alias.clone(), table.clone()));
        }
        alias
    }

    /// Column `column` of the row `alias` as the role may read it: as stored, or, for a cell
    /// the role may read only on some rows, `CASE WHEN <rule> THEN <column> END`.
    fn column(&mut self, alias: &Alias, column: &str) -> Expr {
        let plain = Expr::column(alias, column);
        match self.cell_rule(alias, |cells| cells.get(column).cloned()) {
            Some(rule) => self.guard(rule, alias, plain),
            None => plain,
        }
    }

    /// Whether the role reads `column` of the row `alias` through a cell rule.
    fn has_cell_rule(&self, alias: &Alias, column: &str) -> bool {
        self.cell_rule(alias, |cells| cells.get(column).cloned())
            .is_some()
    }

    /// The cell rule `pick` chooses for the row `alias`, outside permission filters.
    fn cell_rule(
        &self,
        alias: &Alias,
        pick: impl Fn(&indexmap::IndexMap<String, BoolExpr>) -> Option<BoolExpr>,
    ) -> Option<BoolExpr> {
        if self.raw > 0 {
            return None;
        }
        let (_, table) = self.guarded.iter().find(|(a, _)| a == alias)?;
        pick(self.cells.get(table)?)
    }

    /// `CASE WHEN <rule over alias> THEN value END`.
    fn guard(&mut self, rule: BoolExpr, alias: &Alias, value: Expr) -> Expr {
        let condition = match filter::simplified(&rule) {
            Some(rule) => filter::bool_expr(self, &rule, alias, alias),
            None => return value,
        };
        Expr::Case {
            when: Box::new(condition),
            then: Box::new(value),
            otherwise: Box::new(Expr::Literal(Literal::Null)),
        }
    }
}

/// The `json`-typed session object every query sets as `basalt.user` (`$1`).
fn session_param() -> crate::sql::ast::Param {
    crate::sql::ast::Param {
        source: ParamSource::SessionObject,
        encoding: Encoding::Json,
    }
}

/// `set_config('basalt.user', <session>, true)`: the session, visible to SQL until the end of
/// the transaction.
fn set_session(session: Expr) -> Expr {
    Expr::call(
        "set_config",
        vec![
            Expr::string("basalt.user"),
            session,
            Expr::Literal(Literal::Bool(true)),
        ],
    )
}

/// `(SELECT set_config('basalt.user', $1, true)) IS NOT NULL`: true, and the session set,
/// once, before a write's first row.
fn session_gate() -> Expr {
    let set = Select::expr(set_session(Expr::Param(session_param())));
    Expr::IsNull(Box::new(Expr::Subquery(Box::new(set))), true)
}

/// Compiles a query plan into one statement that sets the session first (`$1` is the session
/// JSON).
pub fn query(plan: &QueryPlan) -> SqlText {
    query_for(plan, true)
}

/// Compiles a query plan into one statement; with `sets_session` it sets `basalt.user` first
/// (`$1` is then the session JSON). A read may leave it out only when nothing it touches can
/// observe the setting (`docs/graphql.md`, "The session inside SQL"): the caller decides, from
/// the plan's footprint.
pub fn query_for(plan: &QueryPlan, sets_session: bool) -> SqlText {
    print_select(query_select(plan), sets_session)
}

/// A query's statement, with the session set first (`$1`) or, without `sets_session`, not.
fn print_select(mut select: Select, sets_session: bool) -> SqlText {
    if !sets_session {
        select.from = None;
        return print_with(Vec::new(), &Statement::Select(Box::new(select)));
    }
    print_with(vec![session_param()], &Statement::Select(Box::new(select)))
}

/// Compiles a read that does not set the session (see [`query_for`]) into one statement
/// that answers many requests at once: the statement of `query_for(plan, false)`, its
/// parameters (the same, in the same order) read from each request's row of the arrays (see
/// [`MultiplexedSql`] and [`crate::execute::SharedStatement`]).
pub fn shared_query(plan: &QueryPlan) -> MultiplexedSql {
    let mut select = query_select(plan);
    select.from = None;
    print_multiplexed(Vec::new(), &select)
}

/// Compiles a live query (a subscription) into one statement that answers many subscribers
/// at once: the same statement as [`query`], with each parameter read from the subscriber's
/// row of the cohort arrays (see [`MultiplexedSql`]).
pub fn live_query(plan: &QueryPlan) -> MultiplexedSql {
    let mut sql = print_multiplexed(vec![session_param()], &query_select(plan));
    sql.read_only = plan.footprint().runs_code;
    sql
}

/// The `SELECT … AS data` of a query plan (a stream's also answers its `cursor`).
fn query_select(plan: &QueryPlan) -> Select {
    if let [(key, RootField::Stream(s))] = plan.fields.as_slice() {
        return stream::stream_select(&plan.cells, key, s);
    }
    let mut state = State::new(&plan.cells);
    let pairs = plan
        .fields
        .iter()
        .map(|(key, field)| (key.as_str(), field_value(&mut state, key, field)))
        .collect();
    session_select(vec![SelectItem::bare(select::json_object(pairs), "data")])
}

/// Compiles a query plan into one statement with one `json` column per field it reads from
/// the database (constant fields are left to the caller), named by its response key: for an
/// operation whose response also holds fields answered elsewhere, so each field's bytes can
/// be placed among them without reading the others back. Answers the statement and the
/// columns' keys, in order. With `sets_session`, as in [`query_for`].
pub fn query_fields(plan: &QueryPlan, sets_session: bool) -> (SqlText, Vec<String>) {
    let mut state = State::new(&plan.cells);
    let mut keys = Vec::new();
    let mut columns = Vec::new();
    for (key, field) in &plan.fields {
        if let RootField::Constant(_) = field {
            continue;
        }
        columns.push(SelectItem::named(field_value(&mut state, key, field), key));
        keys.push(key.clone());
    }
    (print_select(session_select(columns), sets_session), keys)
}

/// The value of a root field in the statement.
fn field_value(state: &mut State, key: &str, field: &RootField) -> Expr {
    match field {
        RootField::Select(s) => select::select(state, s, None),
        RootField::Aggregate(a) => select::aggregate(state, a, None),
        RootField::Action(f) => action::action_field(state, key, f),
        RootField::ActionResult(r) => action::action_result(state, r),
        RootField::Constant(Value::String(s)) => Expr::string(s).cast(PgType::Text),
        RootField::Constant(_) => Expr::Literal(Literal::Null).cast(PgType::Json),
        // A stream is a subscription's only field (see `query_select`); anywhere else it
        // answers no rows.
        RootField::Stream(_) => Expr::string("[]").cast(PgType::Json),
    }
}

/// `SELECT <list> FROM (SELECT set_config(…)) AS _session`: the session set before the list
/// is computed (the caller drops the `FROM` when the statement cannot observe it).
fn session_select(list: Vec<SelectItem>) -> Select {
    Select {
        list,
        from: Some(From::Subquery {
            select: Box::new(Select::expr(set_session(Expr::ParamRef(1)))),
            alias: Alias::fixed("_session"),
        }),
        ..Select::default()
    }
}

/// A table or function name as SQL names it.
fn name(table: &QualifiedTable) -> QualifiedName {
    QualifiedName::new(table.schema.as_str(), table.name.as_str())
}

/// Where a planned value comes from.
fn source(param: &Param) -> ParamSource {
    match param {
        Param::Literal(v) => ParamSource::Literal(v.clone()),
        Param::Variable(name) => ParamSource::Variable(name.clone()),
        Param::Session(name) => ParamSource::Session(name.clone()),
        Param::SessionObject => ParamSource::SessionObject,
        Param::Array(items) => ParamSource::Array(items.iter().map(source).collect()),
        Param::ActionOutput(key) => ParamSource::Provided(ActionPart::Output.name(key)),
        Param::Cursor(initial) => ParamSource::Cursor(Box::new(source(initial))),
    }
}

/// A planned value: `$n::type`.
fn value(v: &ValueExpr) -> Expr {
    Expr::value(source(&v.param), v.cast.clone())
}

/// A list value as a Postgres array of `element`: a JSON array unpacked with
/// `ARRAY(SELECT jsonb_array_elements_text($n::jsonb))::element[]`, or, for a session variable
/// (which carries an array literal such as `{1,2,3}`), `$n::element[]`.
fn array(v: &ValueExpr, element: &PgType) -> Expr {
    if let Param::Session(_) = v.param {
        return Expr::value(source(&v.param), element.clone().array_of());
    }
    let elements = Expr::call(
        "jsonb_array_elements_text",
        vec![Expr::value(source(&v.param), PgType::Jsonb)],
    );
    Expr::Array(Box::new(Select::expr(elements))).cast(element.clone().array_of())
}
