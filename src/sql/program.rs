//! A write as a program: an ordered list of statements run in one transaction, where the rows
//! one step returns become parameters of later steps ([`StepValue`]). The translator builds it
//! whole, before anything runs, so a mutation's SQL is a value that can be cached, printed and
//! snapshotted; `execute` runs any program the same way.

pub use super::ast::{Rows, StepValue};
use super::print::SqlText;
use serde_json::Value;
use std::fmt;

/// When a step runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Guard {
    Always,
    /// Only if that earlier step returned a row (rows nested under a row an upsert skipped are
    /// skipped with it).
    RowFrom(usize),
    /// Only if the record holds rows of that kind.
    Recorded {
        record: usize,
        rows: Rows,
    },
    /// Only if that earlier level step ran and touched rows ([`Output::Level`]).
    Touched(usize),
}

/// The permission whose check a step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckKind {
    /// The insert permission's `check`.
    Insert,
    /// The update permission's `check`.
    Update,
}

impl CheckKind {
    /// `insert` or `update`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::Insert => "insert",
            CheckKind::Update => "update",
        }
    }
}

/// What the rows of a step mean.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Rows of `(ctid, inserted, row)`, added to a record. With `required`, the step must
    /// return a row (the parent of a nested insert); none is an error naming that table.
    Written {
        /// The record the rows go to.
        record: usize,
        /// The table, when a row is required.
        required: Option<String>,
    },
    /// Rows of `(ctid)` of updated rows, added to a record.
    Updated {
        /// The record the rows go to.
        record: usize,
    },
    /// One boolean: `false` fails the program with a permission error.
    Check(CheckKind),
    /// The program's answer: the first cell of the first row as JSON, `null` without rows.
    Answer,
    /// One element of a list answer ([`Program::list`]): the first cell of the first row as
    /// JSON. The count of affected rows starts again after it.
    Element,
    /// One row describing the rows a statement wrote or selected (a level of a nested update):
    /// their number (`integer`), whether they all passed the statement's permission check
    /// (`boolean`, `NULL` without one), their `ctid`s (a `json` array of text, `NULL` unless
    /// `record`), then one `json` array per key column, named by the column: the columns'
    /// values as text, which later steps bind ([`StepValue::Keys`], [`Loop`]).
    Level {
        /// The rows count toward `affected_rows` (written, not only selected).
        counted: bool,
        /// `false` in the check column fails the program with this permission's error.
        check: Option<CheckKind>,
        /// The record the `ctid`s go to (a later step checks those rows).
        record: Option<usize>,
    },
}

/// Steps run once for each row a level step touched, in the order it returned them: the
/// inserts of a nested update's `_insert`, whose mapped columns come from each parent row
/// ([`StepValue::Each`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Loop {
    /// The level step whose rows are iterated.
    pub over: usize,
    /// The steps of the body, a range of [`Program::steps`] holding no loop and no answer.
    pub steps: std::ops::Range<usize>,
}

/// One statement of a program.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub sql: SqlText,
    pub guard: Guard,
    pub output: Output,
    /// Planned for its values each time it runs, never prepared: a statement over the rows
    /// related to an earlier step's (a level of a nested update) binds an array of keys that
    /// may hold one key or thousands, and a plan made once for any array guesses its size; a
    /// poor guess scans a whole index range to find one related row.
    pub plan_each_run: bool,
}

/// A write: its steps in order. The last step is the answer, or with `list` the answer is the
/// list of the [`Output::Element`]s.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Program {
    pub steps: Vec<Step>,
    /// How many records (sets of written rows) the steps fill.
    pub records: usize,
    /// Ranges of steps run once per row of a level step.
    pub loops: Vec<Loop>,
    /// The answer is a JSON array of the elements the steps answered.
    pub list: bool,
}

/// A mutation operation, ready to run: the statement that sets the session for the
/// transaction, then each root field in document order.
#[derive(Debug, Clone, PartialEq)]
pub struct MutationProgram {
    /// `SELECT set_config('basalt.user', $1, true)`, `$1` the session JSON.
    pub session: SqlText,
    /// The whole operation as one statement (its one root field's answer), run without an
    /// explicit transaction: one round trip instead of a transaction around the session, the
    /// write, its checks and its answer. Set when the operation has a single database root
    /// field whose write, checks and answer mean the same in one statement (the translator
    /// decides, see `translate/mutation.rs`); the fields' programs stay, for the other cases
    /// (remote fields beside it, a trace context to record).
    pub single: Option<SqlText>,
    /// (response key, what the field does).
    pub fields: Vec<(String, FieldProgram)>,
}

/// One mutation root field.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldProgram {
    /// A constant answer (`__typename`).
    Constant(Value),
    /// A write and its answer.
    Write(Program),
    /// A synchronous action: its handler is called at this field's turn, then the program
    /// shapes the output.
    Action(Program),
}

impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Guard::Always => f.write_str("always"),
            Guard::RowFrom(step) => write!(f, "if step {step} returned a row"),
            Guard::Recorded { record, rows } => write!(f, "if record {record} has {rows:?} rows"),
            Guard::Touched(step) => write!(f, "if step {step} touched rows"),
        }
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Output::Written {
                record,
                required: None,
            } => write!(f, "written rows → record {record}"),
            Output::Written {
                record,
                required: Some(table),
            } => write!(
                f,
                "written rows → record {record}, a row of {table} required"
            ),
            Output::Updated { record } => write!(f, "updated rows → record {record}"),
            Output::Check(kind) => write!(f, "{} check", kind.as_str()),
            Output::Answer => f.write_str("answer"),
            Output::Element => f.write_str("list element"),
            Output::Level {
                counted,
                check,
                record,
            } => {
                f.write_str(if *counted {
                    "rows written"
                } else {
                    "rows selected"
                })?;
                if let Some(kind) = check {
                    write!(f, ", {} check", kind.as_str())?;
                }
                if let Some(record) = record {
                    write!(f, " → record {record}")?;
                }
                Ok(())
            }
        }
    }
}
