//! Runs a [`Program`] inside the request's transaction: each step's guard, its parameters
//! (including what earlier steps returned), its rows read as its [`Output`] says.

use super::{bind, rows, Binding, Connection, ExecuteError, RawJson};
use crate::sql::program::{Guard, Output, Program, Rows};
use bytes::Bytes;
use serde_json::{Map, Value};

/// The rows one record holds.
#[derive(Debug, Default)]
struct Record {
    inserted: Vec<String>,
    updated: Vec<String>,
}

/// What the steps run so far produced: the input of later steps' parameters and guards.
#[derive(Debug)]
pub struct Progress {
    /// For each step: whether it returned a row, and the first row's JSON when it has one.
    first_rows: Vec<Option<Option<Map<String, Value>>>>,
    records: Vec<Record>,
}

impl Progress {
    fn new(program: &Program) -> Self {
        Progress {
            first_rows: vec![None; program.steps.len()],
            records: (0..program.records).map(|_| Record::default()).collect(),
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

    /// How many rows all records hold.
    pub fn affected(&self) -> usize {
        self.records
            .iter()
            .map(|r| r.inserted.len() + r.updated.len())
            .sum()
    }

    fn allows(&self, guard: &Guard) -> bool {
        match guard {
            Guard::Always => true,
            Guard::RowFrom(step) => self.returned_row(*step),
            Guard::Recorded { record, rows } => self.ctids(*record, *rows).next().is_some(),
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

/// Runs a program and returns its answer.
pub async fn run(
    conn: Connection<'_, deadpool_postgres::Transaction<'_>>,
    program: &Program,
    binding: &Binding<'_>,
) -> Result<Bytes, ExecuteError> {
    let mut progress = Progress::new(program);
    for (index, step) in program.steps.iter().enumerate() {
        if !progress.allows(&step.guard) {
            continue;
        }
        let values = bind(&step.sql.params, binding, Some(&progress))?;
        let result = rows(conn, &step.sql.sql, &values).await?;
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
                progress.first_rows[index] = (!result.is_empty()).then_some(None);
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
            Output::Answer => {
                return match result.first() {
                    Some(row) => json_cell(row, 0),
                    None => Ok(Bytes::from_static(b"null")),
                };
            }
        }
    }
    Err(ExecuteError::Unexpected(
        "the program ended without an answer".into(),
    ))
}
