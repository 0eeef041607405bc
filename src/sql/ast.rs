//! The SQL Basalt generates, as values: a hand-made subset of Postgres's grammar with only the
//! nodes the translator uses. Nothing here is text yet; [`super::print`] is the one printer.
//! Names from the catalog are [`Ident`]s and [`QualifiedName`]s (always quoted when printed);
//! names Basalt invents are [`Alias`]es; values are [`Param`]s, never literals, except the
//! response keys and type names a JSON object is built with.

pub use super::names::{Alias, Ident, QualifiedName};
use crate::db_model::PgType;
use serde_json::Value;

/// A whole statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Select(Box<Select>),
    Insert(Box<Insert>),
    Update(Box<Update>),
    Delete(Box<Delete>),
    /// `WITH "name" AS (<write>) SELECT …`: a data-modifying CTE read by the select.
    With(Box<With>),
    /// `CREATE DATABASE "name"`.
    CreateDatabase(Ident),
}

/// `WITH "name1" AS (<statement1>), "name2" AS (<statement2>), … <body>`.
#[derive(Debug, Clone, PartialEq)]
pub struct With {
    /// The CTEs, in order: each a name and what it runs (an `INSERT`, `UPDATE` or `DELETE`
    /// with `RETURNING`, or a `SELECT` over earlier ones).
    pub ctes: Vec<(Ident, Statement)>,
    /// The select reading them.
    pub body: Select,
}

impl With {
    /// `WITH "name" AS (<statement>) <body>`.
    pub fn one(name: Ident, statement: Statement, body: Select) -> Self {
        With {
            ctes: vec![(name, statement)],
            body,
        }
    }
}

/// `SELECT [DISTINCT ON (…)] list [FROM …] [WHERE …] [ORDER BY …] [LIMIT …] [OFFSET …]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Select {
    pub distinct_on: Vec<Expr>,
    /// Output expressions.
    pub list: Vec<SelectItem>,
    pub from: Option<From>,
    /// Conjuncts, printed `a AND b` after `WHERE`.
    pub where_: Vec<Expr>,
    pub order_by: Vec<OrderBy>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// `FOR UPDATE`: lock the rows read.
    pub lock: bool,
    /// The limit is `FETCH FIRST (<limit>) ROWS WITH TIES`: rows equal to the last one in
    /// `ORDER BY` come too.
    pub with_ties: bool,
}

impl Select {
    /// `SELECT <expr>` with nothing else.
    pub fn expr(expr: Expr) -> Self {
        Select {
            list: vec![SelectItem::new(expr)],
            ..Select::default()
        }
    }
}

/// An output expression, optionally named.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectItem {
    pub expr: Expr,
    pub alias: Option<ColumnAlias>,
}

impl SelectItem {
    /// An unnamed output.
    pub fn new(expr: Expr) -> Self {
        SelectItem { expr, alias: None }
    }

    /// An output named by a quoted identifier (`AS "__j"`).
    pub fn named(expr: Expr, name: &str) -> Self {
        SelectItem {
            expr,
            alias: Some(ColumnAlias::Quoted(Ident::new(name))),
        }
    }

    /// An output named by a fixed bare name (`AS data`).
    pub fn bare(expr: Expr, name: &'static str) -> Self {
        SelectItem {
            expr,
            alias: Some(ColumnAlias::Bare(Alias::fixed(name))),
        }
    }
}

/// The name of an output column.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnAlias {
    /// `AS "name"`.
    Quoted(Ident),
    /// `AS name`.
    Bare(Alias),
}

/// A piece of a native query's code.
#[derive(Debug, Clone, PartialEq)]
pub enum CodePiece {
    /// SQL text, printed as written.
    Text(String),
    /// What a placeholder stands for.
    Value(Expr),
}

/// A source of rows.
#[derive(Debug, Clone, PartialEq)]
pub enum From {
    /// `"schema"."table" AS alias`.
    Table { name: QualifiedName, alias: Alias },
    /// `"cte" [AS alias]`: rows of a `WITH` of the same statement.
    Named { name: Ident, alias: Option<Alias> },
    /// `"schema"."function"(args) AS alias`.
    Function { call: Box<Call>, alias: Alias },
    /// `(SELECT …) AS alias`.
    Subquery { select: Box<Select>, alias: Alias },
    /// `(<code>) AS alias`: a native query's SQL (metadata an admin wrote, printed as it is)
    /// with each placeholder the expression given for it (a bound parameter).
    Code {
        pieces: Vec<CodePiece>,
        alias: Alias,
    },
    /// `jsonb_array_elements(json) WITH ORDINALITY AS alias("$v", "$o")`: the elements of
    /// a JSON array ([`ELEMENT`]) with their 1-based positions ([`POSITION`]).
    JsonElements {
        /// The `jsonb` array.
        json: Box<Expr>,
        alias: Alias,
    },
    /// `(VALUES (…), (…)) AS alias(c1, c2)`.
    Values {
        rows: Vec<Vec<Expr>>,
        alias: Alias,
        columns: Vec<Alias>,
    },
    /// `unnest(a1, a2, …) AS alias("c1", "c2", …)`: arrays side by side as rows.
    Unnest {
        arrays: Vec<Expr>,
        alias: Alias,
        columns: Vec<Ident>,
    },
}

/// The element column of [`From::JsonElements`].
pub const ELEMENT: &str = "$v";

/// The position column of [`From::JsonElements`].
pub const POSITION: &str = "$o";

/// Sort direction and null placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    /// `DESC` rather than `ASC`.
    pub descending: bool,
    /// `NULLS FIRST` rather than `NULLS LAST`.
    pub nulls_first: bool,
}

/// One `ORDER BY` item.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderBy {
    pub expr: Expr,
    /// How; Postgres's default (ascending, nulls last) when absent.
    pub order: Option<Order>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Function {
    /// A built-in, printed bare (`json_build_object`, `count`).
    Builtin(&'static str),
    /// A catalog function, quoted and qualified.
    Qualified(QualifiedName),
}

/// A function call, with the aggregate clauses Basalt uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub function: Function,
    pub args: Vec<Arg>,
    /// `DISTINCT` before the arguments (aggregates).
    pub distinct: bool,
    /// `ORDER BY` after the arguments (aggregates).
    pub order_by: Vec<OrderBy>,
    /// `FILTER (WHERE a AND b)` (aggregates).
    pub filter: Vec<Expr>,
}

impl Call {
    /// `function(args)`.
    pub fn builtin(function: &'static str, args: Vec<Expr>) -> Self {
        Call {
            function: Function::Builtin(function),
            args: args.into_iter().map(Arg::Value).collect(),
            distinct: false,
            order_by: Vec::new(),
            filter: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A positional value.
    Value(Expr),
    /// `"name" => value`.
    Named(Ident, Expr),
    /// `*` (`count(*)`).
    Star,
}

/// Binary operators, printed between their operands without parentheses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `=`.
    Eq,
    /// `<>`.
    Neq,
    /// `>`.
    Gt,
    /// `<`.
    Lt,
    /// `>=`.
    Gte,
    /// `<=`.
    Lte,
    /// `LIKE`.
    Like,
    /// `NOT LIKE`.
    NotLike,
    /// `ILIKE`.
    ILike,
    /// `NOT ILIKE`.
    NotILike,
    /// `SIMILAR TO`.
    Similar,
    /// `NOT SIMILAR TO`.
    NotSimilar,
    /// `~`.
    Regex,
    /// `~*`.
    IRegex,
    /// `!~`.
    NotRegex,
    /// `!~*`.
    NotIRegex,
    /// `@>`.
    Contains,
    /// `<@`.
    ContainedIn,
    /// `?`.
    HasKey,
    /// `?|`.
    HasKeysAny,
    /// `?&`.
    HasKeysAll,
    /// `#>` (JSON at a path).
    JsonPath,
    /// `#-` (JSON without a path).
    DeletePath,
    /// `+`.
    Plus,
    /// `-`.
    Minus,
    /// `||`.
    Concat,
}

impl BinaryOp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Eq => "=",
            Neq => "<>",
            Gt => ">",
            Lt => "<",
            Gte => ">=",
            Lte => "<=",
            Like => "LIKE",
            NotLike => "NOT LIKE",
            ILike => "ILIKE",
            NotILike => "NOT ILIKE",
            Similar => "SIMILAR TO",
            NotSimilar => "NOT SIMILAR TO",
            Regex => "~",
            IRegex => "~*",
            NotRegex => "!~",
            NotIRegex => "!~*",
            Contains => "@>",
            ContainedIn => "<@",
            HasKey => "?",
            HasKeysAny => "?|",
            HasKeysAll => "?&",
            JsonPath => "#>",
            DeletePath => "#-",
            Plus => "+",
            Minus => "-",
            Concat => "||",
        }
    }
}

/// `ANY` or `ALL` of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantifier {
    /// `op ANY(array)`.
    Any,
    /// `op ALL(array)`.
    All,
}

/// Constants that are not values of the request.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `'text'`, quotes doubled: response keys and type names only.
    Str(String),
    /// An integer.
    Int(i64),
    /// `true` / `false`.
    Bool(bool),
    /// `NULL`.
    Null,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// `alias."column"`.
    Column(Alias, Ident),
    /// `alias.name` with a bare name: system columns (`ctid`) and `VALUES` columns.
    AliasColumn(Alias, Alias),
    /// A whole row by its alias (`_t1`), e.g. as a function argument.
    Row(Alias),
    /// `alias.*`.
    Star(Alias),
    /// A bound value, printed `$n`; the number is given by the printer in text order.
    Param(Param),
    /// A parameter registered before printing (see [`super::print::print_with`]), by its
    /// 1-based number.
    ParamRef(usize),
    /// A constant.
    Literal(Literal),
    /// `expr::type`.
    Cast(Box<Expr>, PgType),
    /// `(expr)`.
    Nested(Box<Expr>),
    /// `left op right`.
    Binary(Box<Expr>, BinaryOp, Box<Expr>),
    /// `(a AND b …)`; `true` when empty.
    And(Vec<Expr>),
    /// `(a OR b …)`; `false` when empty.
    Or(Vec<Expr>),
    /// `NOT expr`.
    Not(Box<Expr>),
    /// `expr IS NULL`, or `IS NOT NULL` when negated.
    IsNull(Box<Expr>, bool),
    /// `left op ANY(right)` / `left op ALL(right)`.
    Quantified(Box<Expr>, BinaryOp, Quantifier, Box<Expr>),
    /// `EXISTS (select)`.
    Exists(Box<Select>),
    /// `(select)`.
    Subquery(Box<Select>),
    /// `ARRAY(select)`.
    Array(Box<Select>),
    /// `(array)[n]`: one element of an array, 1-based.
    Element(Box<Expr>, i64),
    /// `(a, b)`: a row constructor.
    Tuple(Vec<Expr>),
    /// A function call.
    Call(Box<Call>),
    /// `CASE WHEN when THEN then ELSE otherwise END`.
    Case {
        when: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
}

impl Select {
    /// Calls `f` on every expression of the select, those of its sources and subqueries
    /// included, each before the expressions inside it.
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        self.distinct_on.iter().for_each(|e| e.walk(f));
        self.list.iter().for_each(|item| item.expr.walk(f));
        if let Some(from) = &self.from {
            from.walk(f);
        }
        self.where_.iter().for_each(|e| e.walk(f));
        self.order_by.iter().for_each(|o| o.expr.walk(f));
        self.limit
            .iter()
            .chain(&self.offset)
            .for_each(|e| e.walk(f));
    }
}

impl From {
    /// [`Select::walk`] over the expressions of a source.
    fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        match self {
            From::Table { .. } | From::Named { .. } => {}
            From::Function { call, .. } => call.walk(f),
            From::Subquery { select, .. } => select.walk(f),
            From::Code { pieces, .. } => pieces.iter().for_each(|p| {
                if let CodePiece::Value(e) = p {
                    e.walk(f)
                }
            }),
            From::JsonElements { json, .. } => json.walk(f),
            From::Values { rows, .. } => rows.iter().flatten().for_each(|e| e.walk(f)),
            From::Unnest { arrays, .. } => arrays.iter().for_each(|e| e.walk(f)),
        }
    }
}

impl Call {
    /// [`Select::walk`] over a call's arguments and aggregate clauses.
    fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        for arg in &self.args {
            match arg {
                Arg::Value(e) | Arg::Named(_, e) => e.walk(f),
                Arg::Star => {}
            }
        }
        self.order_by.iter().for_each(|o| o.expr.walk(f));
        self.filter.iter().for_each(|e| e.walk(f));
    }
}

impl Expr {
    /// [`Select::walk`] from one expression: `f` sees it, then each expression inside it.
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Column(..)
            | Expr::AliasColumn(..)
            | Expr::Row(_)
            | Expr::Star(_)
            | Expr::Param(_)
            | Expr::ParamRef(_)
            | Expr::Literal(_) => {}
            Expr::Cast(e, _) | Expr::Nested(e) | Expr::Not(e) | Expr::IsNull(e, _) => e.walk(f),
            Expr::Binary(left, _, right) | Expr::Quantified(left, _, _, right) => {
                left.walk(f);
                right.walk(f);
            }
            Expr::And(all) | Expr::Or(all) | Expr::Tuple(all) => all.iter().for_each(|e| e.walk(f)),
            Expr::Exists(select) | Expr::Subquery(select) | Expr::Array(select) => select.walk(f),
            Expr::Element(array, _) => array.walk(f),
            Expr::Call(call) => call.walk(f),
            Expr::Case {
                when,
                then,
                otherwise,
            } => {
                when.walk(f);
                then.walk(f);
                otherwise.walk(f);
            }
        }
    }

    /// `alias."column"`.
    pub fn column(alias: &Alias, column: &str) -> Self {
        Expr::Column(alias.clone(), Ident::new(column))
    }

    /// A value of type `ty`: `$n::ty`.
    pub fn value(source: ParamSource, ty: PgType) -> Self {
        Expr::Cast(
            Box::new(Expr::Param(Param {
                source,
                encoding: ty.encoding(),
            })),
            ty,
        )
    }

    /// `NULL`.
    pub fn null() -> Self {
        Expr::Literal(Literal::Null)
    }

    /// A string constant.
    pub fn string(s: &str) -> Self {
        Expr::Literal(Literal::Str(s.to_owned()))
    }

    /// `function(args)` of a built-in.
    pub fn call(function: &'static str, args: Vec<Expr>) -> Self {
        Expr::Call(Box::new(Call::builtin(function, args)))
    }

    /// `left op right`.
    pub fn binary(left: Expr, op: BinaryOp, right: Expr) -> Self {
        Expr::Binary(Box::new(left), op, Box::new(right))
    }

    /// `expr::ty`.
    pub fn cast(self, ty: PgType) -> Self {
        Expr::Cast(Box::new(self), ty)
    }

    /// `(expr)`.
    pub fn nested(self) -> Self {
        Expr::Nested(Box::new(self))
    }
}

/// A bound value: where it comes from and how it is encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Where the value comes from at execution time.
    pub source: ParamSource,
    /// How it becomes text.
    pub encoding: crate::db_model::Encoding,
}

/// Where a bound value comes from when the statement runs.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamSource {
    /// A constant of the plan (a literal of the document, a preset, a permission's value).
    Literal(Value),
    /// A request variable.
    Variable(String),
    /// A session variable (lower-case name); missing at run time is an error.
    Session(String),
    /// The whole session as a JSON object.
    SessionObject,
    /// A list whose elements are bound separately, sent as one JSON array.
    Array(Vec<ParamSource>),
    /// Something an earlier step of the same program produced.
    Step(StepValue),
    /// A value the executor is handed, by this name, when it runs the statement: one worked
    /// out while the operation runs (an action handler's answer, say).
    Provided(String),
    /// A stream's cursor, bound from the inner source at first; the live module replaces the
    /// value as the stream advances.
    Cursor(Box<ParamSource>),
}

/// `INSERT INTO … AS alias (columns) VALUES … | DEFAULT VALUES [ON CONFLICT …] RETURNING …`.
#[derive(Debug, Clone, PartialEq)]
pub struct Insert {
    pub table: QualifiedName,
    pub alias: Alias,
    /// Columns written; empty means `DEFAULT VALUES`.
    pub columns: Vec<Ident>,
    /// One list per row, aligned with `columns`.
    pub rows: Vec<Vec<InsertValue>>,
    /// When set, the rows are `SELECT * FROM (VALUES …) WHERE gate`: a condition on no row,
    /// which Postgres evaluates once, before the first row is written (a one-statement
    /// mutation sets the session there, so triggers and defaults see it). Needs every row to
    /// give every column (no `DEFAULT`).
    pub gate: Option<Expr>,
    pub on_conflict: Option<OnConflict>,
    pub returning: Vec<SelectItem>,
}

/// A value in a `VALUES` row.
#[derive(Debug, Clone, PartialEq)]
pub enum InsertValue {
    Expr(Expr),
    /// `DEFAULT`.
    Default,
}

/// `ON CONFLICT ON CONSTRAINT "c" DO NOTHING | DO UPDATE SET … [WHERE …]`.
#[derive(Debug, Clone, PartialEq)]
pub struct OnConflict {
    pub constraint: Ident,
    /// `None` for `DO NOTHING`.
    pub update: Option<ConflictUpdate>,
}

/// The `DO UPDATE` part of an upsert.
#[derive(Debug, Clone, PartialEq)]
pub struct ConflictUpdate {
    /// `"c" = expr` assignments.
    pub set: Vec<(Ident, Expr)>,
    /// Conjuncts after `WHERE`.
    pub where_: Vec<Expr>,
}

/// `UPDATE … AS alias SET … [WHERE …] RETURNING …`.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub table: QualifiedName,
    pub alias: Alias,
    /// `"c" = expr` assignments.
    pub set: Vec<(Ident, Expr)>,
    /// Conjuncts after `WHERE`.
    pub where_: Vec<Expr>,
    pub returning: Vec<SelectItem>,
}

/// `DELETE FROM … AS alias [WHERE …] RETURNING …`.
#[derive(Debug, Clone, PartialEq)]
pub struct Delete {
    pub table: QualifiedName,
    pub alias: Alias,
    /// Conjuncts after `WHERE`.
    pub where_: Vec<Expr>,
    pub returning: Vec<SelectItem>,
}

/// Which rows of a record (the rows one write of a program recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// Rows an `INSERT` created.
    Inserted,
    /// Rows an upsert or an `UPDATE` changed.
    Updated,
    /// Both.
    All,
}

/// A value an earlier step of a program produced, bound as a parameter of a later one (see
/// [`super::program`]).
#[derive(Debug, Clone, PartialEq)]
pub enum StepValue {
    /// A column of the first row a step returned (its `row_to_json` cell); JSON `null` when the
    /// step returned no row or did not run.
    Column { step: usize, column: String },
    /// The `ctid`s held by a record, as an array.
    Ctids { record: usize, rows: Rows },
    /// How many rows the program has written since it answered its last list element (see
    /// [`super::program::Output::Element`]): the `affected_rows` of the answer being built.
    Affected,
    /// One key column of the rows a level step touched, as an array of the values' text (see
    /// [`super::program::Output::Level`]).
    Keys { step: usize, column: String },
    /// A key column of the row the enclosing loop is at (see [`super::program::Loop`]).
    Each { column: String },
}
