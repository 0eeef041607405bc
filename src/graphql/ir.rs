//! The plan of a query: what to select from which tables, with values as parameters. Built by
//! [`super::plan`], compiled to SQL by [`crate::translate`]. No SQL text here.

use crate::db_model::PgType;
use crate::metadata::types::QualifiedTable;
use crate::resolve::{CompareOp, RelationshipKind};
use serde_json::Value;

mod mutation;
mod remote_join;
mod table_join;
pub use mutation::*;
pub use remote_join::*;
pub use table_join::*;

/// Where a bound value comes from at execution time.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// A literal from the document.
    Literal(Value),
    /// A request variable (non-null, scalar-typed: it never changes the SQL's shape).
    Variable(String),
    /// A session variable (lower-case name); missing at run time is an error.
    Session(String),
    /// The whole session as a JSON object.
    SessionObject,
    /// A list whose elements are bound separately (`[$a, 2]`), sent as one JSON array.
    Array(Vec<Param>),
    /// The validated output of the action call at this response key.
    ActionOutput(String),
    /// A stream's cursor: the initial value given here at first, then the value the
    /// subscription's last batch ended at (its text, bound as the column's type).
    Cursor(Box<Param>),
}

/// The values of an action call a statement binds, worked out by the engine when it calls
/// the handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionPart {
    /// The arguments, as the handler receives them.
    Input,
    /// The client headers kept for the handler (`forward_client_headers`).
    Headers,
    /// The handler's validated output.
    Output,
    /// The operation's document text.
    Document,
}

impl ActionPart {
    /// The name the value of the call at response key `key` is bound by.
    pub fn name(self, key: &str) -> String {
        let part = match self {
            ActionPart::Input => "input",
            ActionPart::Headers => "headers",
            ActionPart::Output => "output",
            ActionPart::Document => "document",
        };
        // Response keys are GraphQL names: no `#` in them.
        format!("{key}#{part}")
    }
}

/// A value compared with or passed to SQL, with the Postgres type it is cast to.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueExpr {
    pub param: Param,
    /// Postgres type the value is bound as.
    pub cast: PgType,
}

/// Which table a column reference is resolved against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The table being filtered.
    Current,
    /// The table the permission is defined on (`["$", col]`).
    Root,
}

/// A column in a boolean expression, possibly cast (`_cast`) or viewed as text.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnExpr {
    pub scope: Scope,
    /// Postgres column.
    pub column: String,
    /// Cast the column before comparing (`text` for jsonb `_cast`).
    pub cast: Option<PgType>,
}

/// A boolean expression over a table.
#[derive(Debug, Clone, PartialEq)]
pub enum BoolExpr {
    True,
    And(Vec<BoolExpr>),
    Or(Vec<BoolExpr>),
    Not(Box<BoolExpr>),
    /// Column compared with a value.
    Compare {
        column: ColumnExpr,
        op: CompareOp,
        value: ValueExpr,
    },
    /// `IS NULL` / `IS NOT NULL`.
    IsNull {
        column: ColumnExpr,
        /// True for `IS NULL`.
        is_null: bool,
    },
    /// Column compared with another column.
    CompareColumns {
        left: ColumnExpr,
        /// Operator (`=`, `<>`, `>` …).
        op: CompareOp,
        right: ColumnExpr,
    },
    /// A permission filter: inside it, `Scope::Root` means the table it is applied to.
    Permission(Box<BoolExpr>),
    /// Some row of another table, optionally joined to this one, satisfies the inner filter.
    Exists {
        table: QualifiedTable,
        /// (this table's column, other table's column); empty for `_exists`.
        join: Vec<(String, String)>,
        /// Condition on the other table.
        filter: Box<BoolExpr>,
    },
}

/// An ordering direction with nulls placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Direction {
    pub descending: bool,
    pub nulls_first: bool,
}

impl Direction {
    /// From an `order_by` enum value.
    pub fn from_name(name: &str) -> Option<Self> {
        let (descending, nulls_first) = match name {
            "asc" | "asc_nulls_last" => (false, false),
            "asc_nulls_first" => (false, true),
            "desc" | "desc_nulls_first" => (true, true),
            "desc_nulls_last" => (true, false),
            _ => return None,
        };
        Some(Direction {
            descending,
            nulls_first,
        })
    }
}

/// What to order by.
#[derive(Debug, Clone, PartialEq)]
pub enum OrderExpr {
    /// A column of the table.
    Column(String),
    /// Through an object relationship.
    Object {
        table: QualifiedTable,
        /// Join (local, remote).
        join: Vec<(String, String)>,
        /// Target's permission filter.
        filter: Box<BoolExpr>,
        /// Ordering inside the target.
        inner: Box<OrderExpr>,
    },
    /// An aggregate over an array relationship.
    Aggregate {
        table: QualifiedTable,
        /// Join (local, remote).
        join: Vec<(String, String)>,
        /// Target's permission filter.
        filter: Box<BoolExpr>,
        /// `count`, or a function of a column.
        aggregate: OrderAggregate,
    },
}

/// What an aggregate ordering computes over the related rows.
#[derive(Debug, Clone, PartialEq)]
pub enum OrderAggregate {
    /// How many rows.
    Count,
    /// A function of one column.
    Of(AggregateFunction, String),
}

/// The aggregate functions of `<t>_aggregate_fields` besides `count`, named as in SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateFunction {
    Avg,
    Max,
    Min,
    Stddev,
    StddevPop,
    StddevSamp,
    Sum,
    VarPop,
    VarSamp,
    Variance,
}

impl AggregateFunction {
    /// Every function, in name order (the order of the generated types' fields).
    pub const ALL: [AggregateFunction; 10] = [
        AggregateFunction::Avg,
        AggregateFunction::Max,
        AggregateFunction::Min,
        AggregateFunction::Stddev,
        AggregateFunction::StddevPop,
        AggregateFunction::StddevSamp,
        AggregateFunction::Sum,
        AggregateFunction::VarPop,
        AggregateFunction::VarSamp,
        AggregateFunction::Variance,
    ];

    /// The name, both the GraphQL field and the SQL function.
    pub fn name(self) -> &'static str {
        match self {
            AggregateFunction::Avg => "avg",
            AggregateFunction::Max => "max",
            AggregateFunction::Min => "min",
            AggregateFunction::Stddev => "stddev",
            AggregateFunction::StddevPop => "stddev_pop",
            AggregateFunction::StddevSamp => "stddev_samp",
            AggregateFunction::Sum => "sum",
            AggregateFunction::VarPop => "var_pop",
            AggregateFunction::VarSamp => "var_samp",
            AggregateFunction::Variance => "variance",
        }
    }

    /// The function named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Whether it applies only to numeric columns (`max` and `min` take any orderable one).
    pub fn numeric_only(self) -> bool {
        !matches!(self, AggregateFunction::Max | AggregateFunction::Min)
    }

    /// Whether its result has the column's own type (`sum`, `max`, `min`) rather than `Float`.
    pub fn keeps_type(self) -> bool {
        matches!(
            self,
            AggregateFunction::Sum | AggregateFunction::Max | AggregateFunction::Min
        )
    }
}

/// One `ORDER BY` item.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderBy {
    pub expr: OrderExpr,
    pub direction: Direction,
}

/// The rows a selection reads from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A table or view.
    Table(QualifiedTable),
    /// A set-returning function: of the parent row (computed field), or of the client's
    /// arguments alone (a tracked function's root field).
    Function {
        function: QualifiedTable,
        args: Vec<FunctionArg>,
        /// The tracked table whose rows it returns.
        returns: QualifiedTable,
        /// `RETURNS SETOF`; otherwise its one row, which is all nulls when it returned `NULL`
        /// (and then stands for no row).
        set: bool,
    },
    /// A native query's rows: its code (as the metadata holds it) with its arguments, in the
    /// order its parameters are numbered.
    NativeQuery {
        code: crate::sql::template::Template,
        args: Vec<ValueExpr>,
        /// The relation of its logical model.
        returns: QualifiedTable,
    },
}

impl Source {
    /// The tracked table whose rows it yields.
    pub fn table(&self) -> &QualifiedTable {
        match self {
            Source::Table(t)
            | Source::Function { returns: t, .. }
            | Source::NativeQuery { returns: t, .. } => t,
        }
    }
}

/// An argument of a function call.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionArg {
    /// Name (empty: positional).
    pub name: String,
    pub value: FunctionArgValue,
}

/// What is passed to a function argument.
#[derive(Debug, Clone, PartialEq)]
pub enum FunctionArgValue {
    /// The parent row.
    Row,
    Value(ValueExpr),
}

/// Row selection arguments: filter, order, paging.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowArgs {
    /// `where` AND permission filter.
    pub filter: Vec<BoolExpr>,
    pub order_by: Vec<OrderBy>,
    pub distinct_on: Vec<String>,
    /// Limits (several are combined with `least`).
    pub limit: Vec<ValueExpr>,
    pub offset: Option<ValueExpr>,
}

/// A selection of rows as JSON objects.
#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    /// Where the rows come from.
    pub source: Source,
    /// Join to the parent row: (parent column, this column).
    pub join: Vec<(String, String)>,
    pub args: RowArgs,
    /// Output fields (response key, field).
    pub fields: Vec<(String, Field)>,
    /// One object (or null) instead of an array.
    pub single: bool,
}

/// An output field of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    /// A column (with an optional JSON path).
    Column {
        /// Postgres column.
        column: String,
        /// JSON path segments (for json/jsonb columns).
        path: Option<ValueExpr>,
    },
    /// A constant string (`__typename`).
    Constant(String),
    /// Related rows.
    Relationship {
        kind: RelationshipKind,
        select: Box<Select>,
    },
    /// An aggregate over related rows.
    Aggregate(Box<AggregateSelect>),
    /// A scalar computed field.
    Computed {
        function: QualifiedTable,
        args: Vec<FunctionArg>,
        /// Readable only on rows where this holds (a permission expression over the row), else
        /// `null`.
        cell: Option<BoolExpr>,
    },
    /// A remote relationship: the row's join values in a slot for occurrence `occurrence`
    /// (`null` when one is null), answered after the statement.
    RemoteJoin {
        occurrence: usize,
        /// Each join field with where its value comes from.
        values: Vec<(String, JoinValue)>,
    },
}

/// Where a row's join value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum JoinValue {
    /// A column, as stored.
    Column(String),
    /// A scalar computed field that takes nothing from the client.
    Computed {
        function: QualifiedTable,
        args: Vec<FunctionArg>,
    },
}

/// An aggregate selection (`<t>_aggregate`).
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateSelect {
    /// The rows aggregated: a table's, or a tracked function's.
    pub source: Source,
    /// Join to the parent row (relationship aggregates).
    pub join: Vec<(String, String)>,
    pub args: RowArgs,
    pub fields: Vec<(String, AggregateField)>,
}

/// A field of `<t>_aggregate`.
#[derive(Debug, Clone, PartialEq)]
pub enum AggregateField {
    /// `__typename`.
    Constant(String),
    /// `aggregate { … }`.
    Aggregate(Vec<(String, AggregateOp)>),
    /// `nodes { … }`.
    Nodes(Vec<(String, Field)>),
}

/// A field of `<t>_aggregate_fields`.
#[derive(Debug, Clone, PartialEq)]
pub enum AggregateOp {
    /// `__typename`.
    Constant(String),
    /// `count(columns, distinct)`.
    Count {
        /// Columns (empty: rows).
        columns: Vec<String>,
        /// `DISTINCT`.
        distinct: bool,
    },
    /// `sum { a b }` and friends.
    Function {
        function: AggregateFunction,
        /// (response key, what to compute).
        columns: Vec<(String, AggregateColumn)>,
    },
}

/// A field of `<t>_<op>_fields`.
#[derive(Debug, Clone, PartialEq)]
pub enum AggregateColumn {
    /// The aggregate of a column.
    Column(String),
    /// `__typename` (the type's name).
    Typename(String),
}

/// A query root field.
// Plans are built once per cached document, so variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum RootField {
    /// Rows, one row or null.
    Select(Select),
    Aggregate(AggregateSelect),
    /// A constant (`__typename`, `no_queries_available`).
    Constant(Value),
    /// A query action: its handler is called first, then its output is shaped by SQL.
    Action(ActionField),
    /// An asynchronous action's result, read from the action log by id.
    ActionResult(ActionResult),
    /// `<t>_stream` (a subscription's only root field).
    Stream(StreamSelect),
}

/// `<t>_stream`: the next rows after a cursor, in cursor order.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSelect {
    /// The rows: the table under the permission filter and `where`, the fields selected; its
    /// `limit` is the permission's row cap.
    pub select: Select,
    /// The cursor column (Postgres name) and its type.
    pub column: String,
    pub cast: PgType,
    /// `ordering: DESC`: rows with smaller values, largest first.
    pub descending: bool,
    /// `batch_size`.
    pub batch_size: ValueExpr,
    /// Where the batch starts: rows strictly after it ([`Param::Cursor`]).
    pub cursor: ValueExpr,
}

/// An argument value of an action call as the document gives it; variables are read when
/// the call is made.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    /// `null`.
    Null,
    /// A scalar (literal or variable).
    Value(Param),
    /// An enum value.
    Enum(String),
    /// A list.
    List(Vec<ArgValue>),
    /// An input object.
    Object(Vec<(String, ArgValue)>),
}

/// A call to an action's handler.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionCall {
    pub action: String,
    /// Arguments given, by name (arguments left out are not sent).
    pub input: Vec<(String, ArgValue)>,
}

/// A synchronous action root field: the call and the shape of its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionField {
    pub call: ActionCall,
    /// What the response shows of the output.
    pub output: OutputSelect,
}

/// What a response shows of an action's output (an object or a list of objects).
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSelect {
    /// The output is a list of objects.
    pub list: bool,
    /// The selection on each object.
    pub object: OutputObject,
}

/// A selection on an object of an action's output.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputObject {
    /// (response key, field).
    pub fields: Vec<(String, OutputField)>,
    /// Fields relationships join on, with the type of the column each is compared with.
    pub keys: Vec<(String, crate::db_model::PgType)>,
}

/// A field of an action's output object.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputField {
    /// `__typename`.
    Constant(String),
    /// A scalar or enum field, as the handler gave it.
    Value(String),
    /// A nested object (or list of objects) field.
    Object {
        /// The field of the output.
        field: String,
        select: Box<OutputSelect>,
    },
    /// Rows of a table related to the object: the select joins on the object's
    /// [`OutputObject::keys`] (parent column = output field).
    Relationship(Box<Select>),
    /// An aggregate over such rows.
    Aggregate(Box<AggregateSelect>),
}

/// An asynchronous action's result, read by id.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionResult {
    pub action: String,
    /// The id asked for.
    pub id: ValueExpr,
    /// Only a call made with exactly this session is visible (every role but admin).
    pub same_session: bool,
    /// (response key, field).
    pub fields: Vec<(String, ResultField)>,
}

/// A field of an asynchronous action's result object.
#[derive(Debug, Clone, PartialEq)]
pub enum ResultField {
    /// `__typename`.
    Constant(String),
    /// `id`.
    Id,
    /// `created_at`.
    CreatedAt,
    /// `errors`.
    Errors,
    /// `output`, shaped like a synchronous action's.
    Output(OutputSelect),
}

/// The cell rules of the role a plan was made for: per table, the columns it may read only
/// on the rows where a condition (a permission expression over the row) holds. Wherever the
/// plan reads such a column of such a table (selection, `where`, `order_by`, `distinct_on`,
/// aggregates), it reads `null` on the other rows. Only inherited roles have any.
pub type CellRules =
    std::sync::Arc<indexmap::IndexMap<QualifiedTable, indexmap::IndexMap<String, BoolExpr>>>;

/// The data part of a query operation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueryPlan {
    /// Root fields (response key, field) in document order.
    pub fields: Vec<(String, RootField)>,
    /// The role's cell rules.
    pub cells: CellRules,
}

/// What a query reads: the relations it names (tables and views, through selections,
/// relationships, filters and orderings) and whether it calls any function (computed fields,
/// set-returning sources). Decides whether the SQL could observe the `basalt.user` setting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Footprint {
    /// Every relation read.
    pub relations: std::collections::BTreeSet<QualifiedTable>,
    /// A SQL function of the metadata is called.
    pub calls_functions: bool,
    /// A native query's code runs (in a read-only transaction).
    pub runs_code: bool,
}

impl QueryPlan {
    /// The relations and functions this plan reads.
    pub fn footprint(&self) -> Footprint {
        let mut out = Footprint::default();
        for (_, field) in &self.fields {
            match field {
                RootField::Select(s) => out.select(s),
                RootField::Stream(s) => out.select(&s.select),
                RootField::Aggregate(a) => out.aggregate(a),
                RootField::Action(a) => out.output(&a.output),
                RootField::ActionResult(r) => {
                    for (_, f) in &r.fields {
                        if let ResultField::Output(o) = f {
                            out.output(o);
                        }
                    }
                }
                RootField::Constant(_) => {}
            }
        }
        out
    }
}

impl Footprint {
    fn select(&mut self, s: &Select) {
        match &s.source {
            Source::Table(t) => {
                self.relations.insert(t.clone());
            }
            Source::Function { .. } => self.calls_functions = true,
            // A native query's SQL may read anything, and call anything.
            Source::NativeQuery { .. } => {
                self.calls_functions = true;
                self.runs_code = true;
            }
        }
        self.row_args(&s.args);
        for (_, field) in &s.fields {
            match field {
                Field::Relationship { select, .. } => self.select(select),
                Field::Aggregate(a) => self.aggregate(a),
                Field::Computed { .. } => self.calls_functions = true,
                Field::RemoteJoin { values, .. } => self.join_values(values),
                Field::Column { .. } | Field::Constant(_) => {}
            }
        }
    }

    fn join_values(&mut self, values: &[(String, JoinValue)]) {
        if values
            .iter()
            .any(|(_, v)| matches!(v, JoinValue::Computed { .. }))
        {
            self.calls_functions = true;
        }
    }

    fn output(&mut self, o: &OutputSelect) {
        for (_, field) in &o.object.fields {
            match field {
                OutputField::Object { select, .. } => self.output(select),
                OutputField::Relationship(select) => self.select(select),
                OutputField::Aggregate(aggregate) => self.aggregate(aggregate),
                OutputField::Constant(_) | OutputField::Value(_) => {}
            }
        }
    }

    fn aggregate(&mut self, a: &AggregateSelect) {
        match &a.source {
            Source::Table(t) => {
                self.relations.insert(t.clone());
            }
            Source::Function { .. } | Source::NativeQuery { .. } => self.calls_functions = true,
        }
        self.row_args(&a.args);
        for (_, field) in &a.fields {
            if let AggregateField::Nodes(fields) = field {
                for (_, f) in fields {
                    match f {
                        Field::Relationship { select, .. } => self.select(select),
                        Field::Aggregate(inner) => self.aggregate(inner),
                        Field::Computed { .. } => self.calls_functions = true,
                        Field::RemoteJoin { values, .. } => self.join_values(values),
                        Field::Column { .. } | Field::Constant(_) => {}
                    }
                }
            }
        }
    }

    fn row_args(&mut self, args: &RowArgs) {
        for f in &args.filter {
            self.filter(f);
        }
        for o in &args.order_by {
            self.order(&o.expr);
        }
    }

    fn filter(&mut self, f: &BoolExpr) {
        match f {
            BoolExpr::And(items) | BoolExpr::Or(items) => items.iter().for_each(|i| self.filter(i)),
            BoolExpr::Not(inner) | BoolExpr::Permission(inner) => self.filter(inner),
            BoolExpr::Exists { table, filter, .. } => {
                self.relations.insert(table.clone());
                self.filter(filter);
            }
            BoolExpr::True
            | BoolExpr::Compare { .. }
            | BoolExpr::IsNull { .. }
            | BoolExpr::CompareColumns { .. } => {}
        }
    }

    fn order(&mut self, o: &OrderExpr) {
        match o {
            OrderExpr::Column(_) => {}
            OrderExpr::Object {
                table,
                filter,
                inner,
                ..
            } => {
                self.relations.insert(table.clone());
                self.filter(filter);
                self.order(inner);
            }
            OrderExpr::Aggregate { table, filter, .. } => {
                self.relations.insert(table.clone());
                self.filter(filter);
            }
        }
    }
}
