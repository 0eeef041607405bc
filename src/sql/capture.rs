//! The DDL of an event trigger's capture (`docs/events.md`, "Capture"): for one row operation,
//! a trigger function `basalt_catalog."<name>"()` that writes the row change into
//! `basalt_catalog.event_log` in the transaction that made it, whoever made it; its comment;
//! an `AFTER <OP> … FOR EACH ROW` trigger calling it; and their drops. Every name is quoted
//! and every string a literal (DDL takes no parameters).

use super::quote::{quote_ident, quote_literal, quote_qualified};
use crate::names::QualifiedName;

/// The row operations a trigger can listen to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RowOp {
    Insert,
    Update,
    Delete,
}

impl RowOp {
    /// The SQL keyword, also the `op` of the event.
    pub fn as_str(self) -> &'static str {
        match self {
            RowOp::Insert => "INSERT",
            RowOp::Update => "UPDATE",
            RowOp::Delete => "DELETE",
        }
    }
}

/// What one capture function records.
#[derive(Debug, Clone, Copy)]
pub struct CaptureFunction<'a> {
    /// The function's name in `basalt_catalog`.
    pub name: &'a str,
    /// The table the trigger is on.
    pub table: &'a QualifiedName,
    /// The event trigger's name.
    pub trigger: &'a str,
    pub op: RowOp,
    /// For an update: the columns whose change fires it (`None`: any change of the row).
    pub changed: Option<&'a [String]>,
    /// The columns sent (`None`: the whole row).
    pub payload: Option<&'a [String]>,
}

/// `CREATE OR REPLACE FUNCTION …`: the capture function.
pub fn function(f: &CaptureFunction<'_>) -> String {
    let (old, new) = match f.op {
        RowOp::Insert => ("NULL".to_owned(), row_json("NEW", f.payload)),
        RowOp::Update => (row_json("OLD", f.payload), row_json("NEW", f.payload)),
        RowOp::Delete => (row_json("OLD", f.payload), "NULL".to_owned()),
    };
    let record = format!(
        "PERFORM basalt_catalog.insert_event_log({}, {}, {}, {}, json_build_object('old', {old}, 'new', {new}));",
        quote_literal(&f.table.schema),
        quote_literal(&f.table.name),
        quote_literal(f.trigger),
        quote_literal(f.op.as_str()),
    );
    let body = match f.op {
        RowOp::Update => format!(
            "BEGIN\n  IF {} THEN\n    {record}\n  END IF;\n  RETURN NULL;\nEND",
            changed(f.changed)
        ),
        _ => format!("BEGIN\n  {record}\n  RETURN NULL;\nEND"),
    };
    // The body is a plain literal, not dollar-quoted: a name can hold any `$tag$`.
    format!(
        "CREATE OR REPLACE FUNCTION {}() RETURNS trigger LANGUAGE plpgsql AS {}",
        quote_qualified("basalt_catalog", f.name),
        quote_literal(&body)
    )
}

/// `COMMENT ON FUNCTION …`: the capture function `name` labelled `comment`.
pub fn comment(name: &str, comment: &str) -> String {
    format!(
        "COMMENT ON FUNCTION {}() IS {}",
        quote_qualified("basalt_catalog", name),
        quote_literal(comment)
    )
}

/// `CREATE OR REPLACE TRIGGER …`: the trigger `name` on `table` calling the function of the
/// same name after each `op` on a row.
pub fn trigger(name: &str, op: RowOp, table: &QualifiedName) -> String {
    format!(
        "CREATE OR REPLACE TRIGGER {} AFTER {} ON {} FOR EACH ROW EXECUTE FUNCTION {}()",
        quote_ident(name),
        op.as_str(),
        quote_qualified(&table.schema, &table.name),
        quote_qualified("basalt_catalog", name),
    )
}

/// The statements removing the capture `name` (its trigger on `table`, when given, then its
/// function); either may be gone already.
pub fn drop(name: &str, table: Option<&QualifiedName>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(t) = table {
        out.push(format!(
            "DROP TRIGGER IF EXISTS {} ON {}",
            quote_ident(name),
            quote_qualified(&t.schema, &t.name)
        ));
    }
    out.push(format!(
        "DROP FUNCTION IF EXISTS {}()",
        quote_qualified("basalt_catalog", name)
    ));
    out
}

/// `row_to_json` of the `payload` columns of `record` (`OLD` or `NEW`), keyed by column
/// name; of the whole row when `None`.
fn row_json(record: &str, payload: Option<&[String]>) -> String {
    let Some(columns) = payload else {
        return format!("row_to_json({record})");
    };
    let fields: Vec<String> = columns
        .iter()
        .map(|c| format!("{record}.{} AS {}", quote_ident(c), quote_ident(c)))
        .collect();
    format!(
        "(SELECT row_to_json(_row) FROM (SELECT {}) AS _row)",
        fields.join(", ")
    )
}

/// The condition under which an update fires: a listed column (or, for `None`, the row)
/// changed.
fn changed(columns: Option<&[String]>) -> String {
    match columns {
        None => "OLD IS DISTINCT FROM NEW".to_owned(),
        Some([]) => "false".to_owned(),
        Some(list) => list
            .iter()
            .map(|c| {
                let c = quote_ident(c);
                format!("OLD.{c} IS DISTINCT FROM NEW.{c}")
            })
            .collect::<Vec<_>>()
            .join(" OR "),
    }
}
