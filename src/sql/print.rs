//! The one printer: an [`ast::Statement`](super::ast::Statement) becomes SQL text plus its
//! parameters, numbered `$1`, `$2`, … in the order they appear in the text (after any
//! registered up front). No other module formats SQL.

use super::ast::*;
use super::names::Quoted;
use super::quote::quote_ident;

/// Printed SQL with its parameters: `$n` in `sql` is `params[n - 1]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlText {
    pub sql: String,
    /// Its parameters, in number order.
    pub params: Vec<Param>,
}

/// Prints a statement; parameters are numbered in text order, one per use of a value (so a
/// statement made of copies of another, one per request, binds each copy's values in turn).
pub fn print(statement: &Statement) -> SqlText {
    printed(Vec::new(), statement, true)
}

/// Prints a query whose first parameters are `leading` (`$1` … `$k`, referred to in the
/// statement by [`Expr::ParamRef`]); the statement's own parameters follow in text order, a
/// session variable used several times bound once (see [`Printer::number`]).
pub fn print_with(leading: Vec<Param>, statement: &Statement) -> SqlText {
    printed(leading, statement, false)
}

fn printed(leading: Vec<Param>, statement: &Statement, one_per_use: bool) -> SqlText {
    let mut printer = Printer {
        sql: String::new(),
        params: leading,
        cohort: false,
        one_per_use,
    };
    printer.statement(statement);
    SqlText {
        sql: printer.sql,
        params: printer.params,
    }
}

/// A query run for many subscribers at once (a live-query cohort group), and what each
/// subscriber binds.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiplexedSql {
    /// `SELECT _c."cohort", _r.data FROM unnest((SELECT $1::int[]), (SELECT $2::text[]), …) AS _c("cohort", "p1",
    /// …) LEFT JOIN LATERAL (<query>) AS _r ON true`: `$1` holds the cohort ids, `$i + 1` the
    /// values of the query's parameter `i` for each cohort, aligned with `$1`.
    pub sql: String,
    /// The query's parameters (what each cohort binds), in number order.
    pub params: Vec<Param>,
    /// It runs a native query's code: it runs in a read-only transaction.
    pub read_only: bool,
}

/// The alias of the cohort rows in a multiplexed statement.
const COHORT: &str = "_c";

/// Prints a query for many cohorts at once (see [`MultiplexedSql`]). The query is printed as
/// [`print_with`] would, except that each parameter `$i` reads column `"p<i>"` of the cohort
/// row, which carries the same text a parameter would, so its casts and meaning are unchanged.
/// The query's single output column must be named `data`.
pub fn print_multiplexed(leading: Vec<Param>, query: &Select) -> MultiplexedSql {
    let mut inner = Printer {
        sql: String::new(),
        params: leading,
        cohort: true,
        one_per_use: false,
    };
    inner.select(query);
    let count = inner.params.len();
    // Each array is read through a scalar subquery, so that the planner sees no array
    // constant in a custom plan: custom and generic plans then cost the same and Postgres
    // keeps the generic one, instead of planning the statement again for every batch size.
    // The query's outputs after `data` (a stream's `cursor`) follow it.
    let mut sql = format!("SELECT {COHORT}.\"cohort\", _r.data");
    for item in query.list.iter().skip(1) {
        if let Some(ColumnAlias::Bare(name)) = &item.alias {
            sql.push_str(&format!(", _r.{name}"));
        }
    }
    sql.push_str(" FROM unnest((SELECT $1::int[])");
    for i in 1..=count {
        sql.push_str(&format!(", (SELECT ${}::text[])", i + 1));
    }
    sql.push_str(&format!(") AS {COHORT}(\"cohort\""));
    for i in 1..=count {
        sql.push_str(&format!(", \"p{i}\""));
    }
    sql.push_str(") LEFT JOIN LATERAL (");
    sql.push_str(&inner.sql);
    sql.push_str(") AS _r ON true");
    MultiplexedSql {
        sql,
        params: inner.params,
        read_only: false,
    }
}

/// `EXPLAIN <statement>` for an already printed statement, with the same parameters.
pub fn explain(statement: &SqlText) -> SqlText {
    SqlText {
        sql: format!("EXPLAIN {}", statement.sql),
        params: statement.params.clone(),
    }
}

struct Printer {
    sql: String,
    params: Vec<Param>,
    /// Parameters print as columns of the cohort row (`_c."p3"`), not `$3`.
    cohort: bool,
    /// Every use of a session variable is a parameter of its own (see [`print`]).
    one_per_use: bool,
}

impl Printer {
    fn push(&mut self, s: &str) {
        self.sql.push_str(s);
    }

    fn display(&mut self, value: &impl std::fmt::Display) {
        use std::fmt::Write;
        // Writing to a String cannot fail.
        let _ = write!(self.sql, "{value}");
    }

    /// `items` separated by `separator`.
    fn list<T>(&mut self, items: &[T], separator: &str, mut each: impl FnMut(&mut Self, &T)) {
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.push(separator);
            }
            each(self, item);
        }
    }

    fn statement(&mut self, statement: &Statement) {
        match statement {
            Statement::Select(select) => self.select(select),
            Statement::Insert(insert) => self.insert(insert),
            Statement::Update(update) => self.update(update),
            Statement::Delete(delete) => self.delete(delete),
            Statement::With(with) => {
                self.push("WITH ");
                self.list(&with.ctes, ", ", |p, (name, statement)| {
                    p.display(name);
                    p.push(" AS (");
                    p.statement(statement);
                    p.push(")");
                });
                self.push(" ");
                self.select(&with.body);
            }
            Statement::CreateDatabase(name) => {
                self.push("CREATE DATABASE ");
                self.display(name);
            }
        }
    }

    fn select(&mut self, s: &Select) {
        self.push("SELECT ");
        if !s.distinct_on.is_empty() {
            self.push("DISTINCT ON (");
            self.list(&s.distinct_on, ", ", Self::expr);
            self.push(") ");
        }
        self.list(&s.list, ", ", Self::select_item);
        if let Some(from) = &s.from {
            self.push(" FROM ");
            self.from(from);
        }
        self.where_(&s.where_);
        if !s.order_by.is_empty() {
            self.push(" ORDER BY ");
            self.list(&s.order_by, ", ", Self::order_by);
        }
        match (&s.limit, s.with_ties) {
            (Some(limit), true) => {
                // `FETCH` comes after `OFFSET`.
                if let Some(offset) = &s.offset {
                    self.push(" OFFSET ");
                    self.expr(offset);
                }
                self.push(" FETCH FIRST (");
                self.expr(limit);
                self.push(") ROWS WITH TIES");
            }
            (limit, _) => {
                if let Some(limit) = limit {
                    self.push(" LIMIT ");
                    self.expr(limit);
                }
                if let Some(offset) = &s.offset {
                    self.push(" OFFSET ");
                    self.expr(offset);
                }
            }
        }
        if s.lock {
            self.push(" FOR UPDATE");
        }
    }

    fn where_(&mut self, conjuncts: &[Expr]) {
        if !conjuncts.is_empty() {
            self.push(" WHERE ");
            self.list(conjuncts, " AND ", Self::expr);
        }
    }

    fn select_item(&mut self, item: &SelectItem) {
        self.expr(&item.expr);
        match &item.alias {
            None => {}
            Some(ColumnAlias::Quoted(name)) => {
                self.push(" AS ");
                self.display(name);
            }
            Some(ColumnAlias::Bare(name)) => {
                self.push(" AS ");
                self.display(name);
            }
        }
    }

    fn returning(&mut self, items: &[SelectItem]) {
        if !items.is_empty() {
            self.push(" RETURNING ");
            self.list(items, ", ", Self::select_item);
        }
    }

    fn order_by(&mut self, item: &OrderBy) {
        self.expr(&item.expr);
        if let Some(order) = item.order {
            self.push(match (order.descending, order.nulls_first) {
                (false, false) => " ASC NULLS LAST",
                (false, true) => " ASC NULLS FIRST",
                (true, true) => " DESC NULLS FIRST",
                (true, false) => " DESC NULLS LAST",
            });
        }
    }

    fn from(&mut self, from: &From) {
        match from {
            From::Table { name, alias } => {
                self.display(&Quoted(name));
                self.alias(alias);
            }
            From::Named { name, alias } => {
                self.display(name);
                if let Some(alias) = alias {
                    self.alias(alias);
                }
            }
            From::Function { call, alias } => {
                self.call(call);
                self.alias(alias);
            }
            From::Subquery { select, alias } => {
                self.push("(");
                self.select(select);
                self.push(")");
                self.alias(alias);
            }
            From::Code { pieces, alias } => {
                self.push("(");
                for piece in pieces {
                    match piece {
                        CodePiece::Text(text) => self.push(text),
                        CodePiece::Value(e) => self.expr(e),
                    }
                }
                // A trailing `--` comment of the code ends here.
                self.push("\n)");
                self.alias(alias);
            }
            From::JsonElements { json, alias } => {
                self.push("jsonb_array_elements(");
                self.expr(json);
                self.push(") WITH ORDINALITY");
                self.alias(alias);
                self.push("(");
                self.push(&quote_ident(ELEMENT));
                self.push(", ");
                self.push(&quote_ident(POSITION));
                self.push(")");
            }
            From::Values {
                rows,
                alias,
                columns,
            } => {
                self.push("(VALUES ");
                self.list(rows, ", ", |p, row| {
                    p.push("(");
                    p.list(row, ", ", Self::expr);
                    p.push(")");
                });
                self.push(")");
                self.alias(alias);
                self.push("(");
                self.list(columns, ", ", |p, c| p.display(c));
                self.push(")");
            }
            From::Unnest {
                arrays,
                alias,
                columns,
            } => {
                self.push("unnest(");
                self.list(arrays, ", ", Self::expr);
                self.push(")");
                self.alias(alias);
                self.push("(");
                self.list(columns, ", ", |p, c| p.display(c));
                self.push(")");
            }
        }
    }

    /// The number of `param`: a session variable already bound is bound once (every use of
    /// `x-svc-user-id` is the same `$n`), so Postgres sees equal expressions where a rule
    /// repeats one, and can factor them (`a OR (a AND b)` is `a`) as it plans. Other values get
    /// a parameter each.
    fn number(&mut self, param: &Param) -> usize {
        if let (ParamSource::Session(_), false) = (&param.source, self.one_per_use) {
            if let Some(i) = self.params.iter().position(|p| p == param) {
                return i + 1;
            }
        }
        self.params.push(param.clone());
        self.params.len()
    }

    /// Parameter `n`: `$n`, or the cohort row's column in a multiplexed query.
    fn param(&mut self, n: usize) {
        if self.cohort {
            self.push(COHORT);
            self.push(".\"p");
            self.display(&n);
            self.push("\"");
        } else {
            self.push("$");
            self.display(&n);
        }
    }

    fn alias(&mut self, alias: &Alias) {
        self.push(" AS ");
        self.display(alias);
    }

    fn insert(&mut self, i: &Insert) {
        self.push("INSERT INTO ");
        self.display(&Quoted(&i.table));
        self.alias(&i.alias);
        if i.columns.is_empty() {
            self.push(" DEFAULT VALUES");
        } else {
            self.push(" (");
            self.list(&i.columns, ", ", |p, c| p.display(c));
            self.push(") ");
            if i.gate.is_some() {
                self.push("SELECT * FROM (");
            }
            self.push("VALUES ");
            self.list(&i.rows, ", ", |p, row| {
                p.push("(");
                p.list(row, ", ", |p, v| match v {
                    InsertValue::Expr(e) => p.expr(e),
                    InsertValue::Default => p.push("DEFAULT"),
                });
                p.push(")");
            });
            if let Some(gate) = &i.gate {
                self.push(") AS _values WHERE ");
                self.expr(gate);
            }
        }
        if let Some(oc) = &i.on_conflict {
            self.push(" ON CONFLICT ON CONSTRAINT ");
            self.display(&oc.constraint);
            match &oc.update {
                None => self.push(" DO NOTHING"),
                Some(update) => {
                    self.push(" DO UPDATE SET ");
                    self.assignments(&update.set);
                    self.where_(&update.where_);
                }
            }
        }
        self.returning(&i.returning);
    }

    fn assignments(&mut self, set: &[(Ident, Expr)]) {
        self.list(set, ", ", |p, (column, value)| {
            p.display(column);
            p.push(" = ");
            p.expr(value);
        });
    }

    fn update(&mut self, u: &Update) {
        self.push("UPDATE ");
        self.display(&Quoted(&u.table));
        self.alias(&u.alias);
        self.push(" SET ");
        self.assignments(&u.set);
        self.where_(&u.where_);
        self.returning(&u.returning);
    }

    fn delete(&mut self, d: &Delete) {
        self.push("DELETE FROM ");
        self.display(&Quoted(&d.table));
        self.alias(&d.alias);
        self.where_(&d.where_);
        self.returning(&d.returning);
    }

    fn call(&mut self, call: &Call) {
        match &call.function {
            Function::Builtin(name) => self.push(name),
            Function::Qualified(name) => self.display(&Quoted(name)),
        }
        self.push("(");
        if call.distinct {
            self.push("DISTINCT ");
        }
        self.list(&call.args, ", ", |p, arg| match arg {
            Arg::Value(e) => p.expr(e),
            Arg::Named(name, e) => {
                p.display(name);
                p.push(" => ");
                p.expr(e);
            }
            Arg::Star => p.push("*"),
        });
        if !call.order_by.is_empty() {
            self.push(" ORDER BY ");
            self.list(&call.order_by, ", ", Self::order_by);
        }
        self.push(")");
        if !call.filter.is_empty() {
            self.push(" FILTER (WHERE ");
            self.list(&call.filter, " AND ", Self::expr);
            self.push(")");
        }
    }

    fn literal(&mut self, literal: &Literal) {
        match literal {
            Literal::Str(s) => {
                self.sql.push('\'');
                self.push(&s.replace('\'', "''"));
                self.sql.push('\'');
            }
            Literal::Int(n) => self.display(n),
            Literal::Bool(true) => self.push("true"),
            Literal::Bool(false) => self.push("false"),
            Literal::Null => self.push("NULL"),
        }
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Column(alias, column) => {
                self.display(alias);
                self.push(".");
                self.push(&quote_ident(&column.0));
            }
            Expr::AliasColumn(alias, column) => {
                self.display(alias);
                self.push(".");
                self.display(column);
            }
            Expr::Row(alias) => self.display(alias),
            Expr::Star(alias) => {
                self.display(alias);
                self.push(".*");
            }
            Expr::Param(param) => {
                let n = self.number(param);
                self.param(n);
            }
            Expr::ParamRef(n) => self.param(*n),
            Expr::Literal(literal) => self.literal(literal),
            Expr::Cast(inner, ty) => {
                self.expr(inner);
                self.push("::");
                self.display(ty);
            }
            Expr::Nested(inner) => {
                self.push("(");
                self.expr(inner);
                self.push(")");
            }
            Expr::Binary(left, op, right) => {
                self.expr(left);
                self.push(" ");
                self.push(op.as_str());
                self.push(" ");
                self.expr(right);
            }
            Expr::And(parts) | Expr::Or(parts) => {
                let or = matches!(e, Expr::Or(_));
                if parts.is_empty() {
                    self.push(if or { "false" } else { "true" });
                    return;
                }
                self.push("(");
                self.list(parts, if or { " OR " } else { " AND " }, Self::expr);
                self.push(")");
            }
            Expr::Not(inner) => {
                self.push("NOT ");
                self.expr(inner);
            }
            Expr::IsNull(inner, negated) => {
                self.expr(inner);
                self.push(if *negated { " IS NOT NULL" } else { " IS NULL" });
            }
            Expr::Quantified(left, op, quantifier, right) => {
                self.expr(left);
                self.push(" ");
                self.push(op.as_str());
                self.push(match quantifier {
                    Quantifier::Any => " ANY(",
                    Quantifier::All => " ALL(",
                });
                self.expr(right);
                self.push(")");
            }
            Expr::Exists(select) => {
                self.push("EXISTS (");
                self.select(select);
                self.push(")");
            }
            Expr::Subquery(select) => {
                self.push("(");
                self.select(select);
                self.push(")");
            }
            Expr::Array(select) => {
                self.push("ARRAY(");
                self.select(select);
                self.push(")");
            }
            Expr::Element(array, n) => {
                self.push("(");
                self.expr(array);
                self.display(&format_args!(")[{n}]"));
            }
            Expr::Tuple(items) => {
                self.push("(");
                self.list(items, ", ", Self::expr);
                self.push(")");
            }
            Expr::Call(call) => self.call(call),
            Expr::Case {
                when,
                then,
                otherwise,
            } => {
                self.push("CASE WHEN ");
                self.expr(when);
                self.push(" THEN ");
                self.expr(then);
                self.push(" ELSE ");
                self.expr(otherwise);
                self.push(" END");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db_model::PgType;

    #[test]
    fn parameters_are_numbered_in_text_order_after_leading_ones() {
        let session = Param {
            source: ParamSource::SessionObject,
            encoding: crate::db_model::Encoding::Json,
        };
        let t = Alias::numbered(1);
        let select = Select {
            list: vec![SelectItem::bare(
                Expr::call(
                    "json_build_object",
                    vec![Expr::string("it's"), Expr::column(&t, "we\"ird")],
                ),
                "data",
            )],
            from: Some(From::Table {
                name: QualifiedName::new("public", "t"),
                alias: t.clone(),
            }),
            where_: vec![
                Expr::binary(
                    Expr::column(&t, "id"),
                    BinaryOp::Eq,
                    Expr::value(ParamSource::Variable("id".into()), PgType::Integer),
                )
                .nested(),
                Expr::Or(Vec::new()),
            ],
            limit: Some(Expr::call("least", vec![Expr::ParamRef(1)])),
            ..Select::default()
        };
        let text = print_with(vec![session], &Statement::Select(Box::new(select)));
        assert_eq!(
            text.sql,
            "SELECT json_build_object('it''s', _t1.\"we\"\"ird\") AS data FROM \"public\".\"t\" AS _t1 WHERE (_t1.\"id\" = $2::integer) AND false LIMIT least($1)"
        );
        assert_eq!(text.params.len(), 2);
        assert_eq!(text.params[1].source, ParamSource::Variable("id".into()));
    }
}
