//! Runs a [`Program`] inside the request's transaction: each step's guard, its parameters
//! (including what earlier steps returned), its rows read as its [`Output`] says.

use super::{bind, rows, rows_planned_each_run, Binding, Connection, ExecuteError, RawJson};
use crate::sql::program::{Guard, Output, Program, Rows};
use bytes::Bytes;
use serde_json::{Map, Value};

/// The rows one record holds.
#[derive(Debug, Default)]
struct Record {
    inserted: Vec<String>,
    updated: Vec<String>,
}

/// What a level step touched: how many rows, and their key columns' values as text.
#[derive(Debug, Default)]
struct Level {
    rows: usize,
    keys: Map<String, Value>,
}

/// What the steps run so far produced: the input of later steps' parameters and guards.
#[derive(Debug)]
pub struct Progress {
    /// For each step: whether it returned a row, and the first row's JSON when it has one.
    first_rows: Vec<Option<Option<Map<String, Value>>>>,
    /// For each level step that ran: what it touched.
    levels: Vec<Option<Level>>,
    records: Vec<Record>,
    /// Rows written so far, and that count when the last list element was answered.
    written: usize,
    answered: usize,
    /// The loop being run: its level step and the row it is at.
    current: Option<(usize, usize)>,
}

impl Progress {
    fn new(program: &Program) -> Self {
        Progress {
            first_rows: vec![None; program.steps.len()],
            levels: (0..program.steps.len()).map(|_| None).collect(),
            records: (0..program.records).map(|_| Record::default()).collect(),
            written: 0,
            answered: 0,
            current: None,
        }
    }

    /// The JSON of the first row step `step` returned, if it ran, returned a row and asked for
    /// its JSON.
    pub fn first_row(&self, step: usize) -> Option<&Map<String, Value>> {
        self.first_rows.get(step)?.as_ref()?.as_ref()
    }

    fn returned_row(&self, step: usize) -> bool {
        matches!(self.first_rows.get(step), Some(Some(_)))
    }

    /// The `ctid`s of a record's rows of a kind.
    pub fn ctids(&self, record: usize, rows: Rows) -> impl Iterator<Item = &str> {
        let record = self.records.get(record);
        let inserted = record
            .filter(|_| rows != Rows::Updated)
            .map(|r| r.inserted.as_slice())
            .unwrap_or_default();
        let updated = record
            .filter(|_| rows != Rows::Inserted)
            .map(|r| r.updated.as_slice())
            .unwrap_or_default();
        inserted.iter().chain(updated).map(String::as_str)
    }

    /// How many rows the program wrote since it answered its last list element.
    pub fn affected(&self) -> usize {
        self.written - self.answered
    }

    /// The values of a key column of the rows a level step touched (`null` when it did not
    /// run).
    pub fn keys(&self, step: usize, column: &str) -> Value {
        self.level(step)
            .and_then(|l| l.keys.get(column))
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// A key column of the row the running loop is at.
    pub fn each(&self, column: &str) -> Value {
        self.current
            .and_then(|(step, row)| self.level(step)?.keys.get(column)?.get(row).cloned())
            .unwrap_or(Value::Null)
    }

    fn level(&self, step: usize) -> Option<&Level> {
        self.levels.get(step)?.as_ref()
    }

    fn allows(&self, guard: &Guard) -> bool {
        match guard {
            Guard::Always => true,
            Guard::RowFrom(step) => self.returned_row(*step),
            Guard::Recorded { record, rows } => self.ctids(*record, *rows).next().is_some(),
            Guard::Touched(step) => self.level(*step).is_some_and(|l| l.rows > 0),
        }
    }
}

/// The JSON of a cell, `null` for SQL NULL.
fn json_cell(row: &tokio_postgres::Row, index: usize) -> Result<Bytes, ExecuteError> {
    let cell: Option<RawJson> = row.try_get(index)?;
    Ok(cell
        .map(|c| c.0)
        .unwrap_or_else(|| Bytes::from_static(b"null")))
}

/// What running one step gave.
enum Flow {
    Next,
    Element(Bytes),
    Answer(Bytes),
}

/// Runs a program and returns its answer.
pub async fn run(
    conn: Connection<'_, deadpool_postgres::Transaction<'_>>,
    program: &Program,
    binding: &Binding<'_>,
) -> Result<Bytes, ExecuteError> {
    let mut progress = Progress::new(program);
    let mut elements = Vec::new();
    let mut index = 0;
    while index < program.steps.len() {
        if let Some(body) = program.loops.iter().find(|l| l.steps.start == index) {
            let rows = progress.level(body.over).map_or(0, |l| l.rows);
            for row in 0..rows {
                progress.current = Some((body.over, row));
                // Each pass starts afresh: guards read only what this pass returned.
                for step in body.steps.clone() {
                    progress.first_rows[step] = None;
                }
                for step in body.steps.clone() {
                    run_step(conn, program, step, &mut progress, binding).await?;
                }
            }
            progress.current = None;
            index = body.steps.end.max(index + 1);
            continue;
        }
        match run_step(conn, program, index, &mut progress, binding).await? {
            Flow::Next => {}
            Flow::Element(bytes) => elements.push(bytes),
            Flow::Answer(bytes) => return Ok(bytes),
        }
        index += 1;
    }
    if program.list {
        return Ok(json_list(&elements));
    }
    Err(ExecuteError::Unexpected(
        "the program ended without an answer".into(),
    ))
}

/// `[e1,e2,…]` from the elements' JSON bytes.
fn json_list(elements: &[Bytes]) -> Bytes {
    let mut out = Vec::with_capacity(2 + elements.iter().map(|e| e.len() + 1).sum::<usize>());
    out.push(b'[');
    for (i, e) in elements.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(e);
    }
    out.push(b']');
    Bytes::from(out)
}

/// Runs step `index` if its guard allows, and records what it returned.
async fn run_step(
    conn: Connection<'_, deadpool_postgres::Transaction<'_>>,
    program: &Program,
    index: usize,
    progress: &mut Progress,
    binding: &Binding<'_>,
) -> Result<Flow, ExecuteError> {
    let step = &program.steps[index];
    if !progress.allows(&step.guard) {
        return Ok(Flow::Next);
    }
    let values = bind(&step.sql.params, binding, Some(progress))?;
    let result = if step.plan_each_run {
        rows_planned_each_run(conn, &step.sql.sql, &values).await?
    } else {
        rows(conn, &step.sql.sql, &values).await?
    };
    match &step.output {
        Output::Written { record, required } => {
            let mut first = None;
            for (i, row) in result.iter().enumerate() {
                let ctid: String = row.try_get(0)?;
                let inserted: bool = row.try_get(1)?;
                let json: Option<Value> = row.try_get(2)?;
                if i == 0 {
                    first = Some(json.and_then(|v| match v {
                        Value::Object(map) => Some(map),
                        _ => None,
                    }));
                }
                if let Some(r) = progress.records.get_mut(*record) {
                    if inserted {
                        r.inserted.push(ctid);
                    } else {
                        r.updated.push(ctid);
                    }
                }
            }
            progress.written += result.len();
            if let (Some(table), None | Some(None)) = (required, &first) {
                return Err(ExecuteError::ParentNotInserted(table.clone()));
            }
            progress.first_rows[index] = first;
        }
        Output::Updated { record } => {
            for row in &result {
                let ctid: String = row.try_get(0)?;
                if let Some(r) = progress.records.get_mut(*record) {
                    r.updated.push(ctid);
                }
            }
            progress.written += result.len();
            progress.first_rows[index] = (!result.is_empty()).then_some(None);
        }
        Output::Level {
            counted,
            check,
            record,
        } => {
            let Some(row) = result.first() else {
                return Err(ExecuteError::Unexpected(
                    "a level step returned no row".into(),
                ));
            };
            let count: i32 = row.try_get(0)?;
            let rows = usize::try_from(count).unwrap_or_default();
            let passed: Option<bool> = row.try_get(1)?;
            if let (Some(kind), Some(false)) = (check, passed) {
                return Err(ExecuteError::CheckFailed(*kind));
            }
            if let Some(r) = record.and_then(|r| progress.records.get_mut(r)) {
                let ctids: Option<Value> = row.try_get(2)?;
                if let Some(Value::Array(ctids)) = ctids {
                    let text = ctids.into_iter().filter_map(|c| match c {
                        Value::String(s) => Some(s),
                        _ => None,
                    });
                    r.updated.extend(text);
                }
            }
            let mut keys = Map::new();
            for (i, column) in row.columns().iter().enumerate().skip(3) {
                let values: Option<Value> = row.try_get(i)?;
                keys.insert(column.name().to_owned(), values.unwrap_or(Value::Null));
            }
            if *counted {
                progress.written += rows;
            }
            progress.levels[index] = Some(Level { rows, keys });
        }
        Output::Check(kind) => {
            let passed: bool = match result.first() {
                Some(row) => row.try_get(0)?,
                None => true,
            };
            if !passed {
                return Err(ExecuteError::CheckFailed(*kind));
            }
        }
        Output::Element => {
            let element = match result.first() {
                Some(row) => json_cell(row, 0)?,
                None => Bytes::from_static(b"null"),
            };
            progress.answered = progress.written;
            return Ok(Flow::Element(element));
        }
        Output::Answer => {
            return Ok(Flow::Answer(match result.first() {
                Some(row) => json_cell(row, 0)?,
                None => Bytes::from_static(b"null"),
            }));
        }
    }
    Ok(Flow::Next)
}
