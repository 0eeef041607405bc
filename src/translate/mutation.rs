//! SQL of mutations: one statement per step, run in one transaction by the engine. Written
//! rows are remembered by `ctid` so checks and `returning` read exactly them.

use super::{simplify, Builder, SqlText};
use crate::graphql::ir::*;
use crate::metadata::types::QualifiedTable;
use serde_json::Value;

/// An `INSERT` with resolved values (nested keys already filled in).
#[derive(Debug, Clone)]
pub struct InsertStatement<'a> {
    /// Table.
    pub table: &'a QualifiedTable,
    /// Rows of (column, value).
    pub rows: &'a [Vec<(String, SetValue)>],
    /// Upsert.
    pub on_conflict: Option<&'a OnConflict>,
    /// Also return each row as JSON (for nested inserts).
    pub want_row: bool,
    /// Return every column instead (views, which have no `ctid`).
    pub all_columns: bool,
}

impl Builder {
    fn set_value(&mut self, v: &SetValue) {
        match v {
            SetValue::Value(v) => self.value(v),
            SetValue::Now => self.push("now()"),
            // Filled in by the engine before translation; a leftover is a bug, so write NULL.
            SetValue::Parent { cast, .. } => self.push(&format!("NULL::{cast}")),
        }
    }

    fn ctid_list(&mut self, ctids: &[String]) {
        let value = ValueExpr {
            param: Param::Literal(Value::Array(
                ctids.iter().map(|c| Value::String(c.clone())).collect(),
            )),
            cast: "tid[]".into(),
        };
        self.value(&value);
    }
}

/// `INSERT … [ON CONFLICT …] RETURNING ctid, inserted?, row`: one result row per written row.
pub fn insert(statement: &InsertStatement<'_>) -> SqlText {
    insert_into(Builder::new(), statement).finish()
}

fn insert_into(mut b: Builder, statement: &InsertStatement<'_>) -> Builder {
    let alias = b.alias();
    let mut columns: Vec<&String> = Vec::new();
    for row in statement.rows {
        for (c, _) in row {
            if !columns.contains(&c) {
                columns.push(c);
            }
        }
    }
    b.push("INSERT INTO ");
    b.table(statement.table);
    b.push(" AS ");
    b.push(&alias);
    if columns.is_empty() {
        b.push(" DEFAULT VALUES");
    } else {
        b.push(" (");
        for (i, c) in columns.iter().enumerate() {
            if i > 0 {
                b.push(", ");
            }
            b.ident(c);
        }
        b.push(") VALUES ");
        for (r, row) in statement.rows.iter().enumerate() {
            if r > 0 {
                b.push(", ");
            }
            b.push("(");
            for (i, c) in columns.iter().enumerate() {
                if i > 0 {
                    b.push(", ");
                }
                match row.iter().find(|(name, _)| name == *c) {
                    Some((_, v)) => b.set_value(v),
                    None => b.push("DEFAULT"),
                }
            }
            b.push(")");
        }
    }
    if let Some(oc) = statement.on_conflict {
        b.push(" ON CONFLICT ON CONSTRAINT ");
        b.ident(&oc.constraint);
        if oc.update_columns.is_empty() {
            b.push(" DO NOTHING");
        } else {
            b.push(" DO UPDATE SET ");
            let mut first = true;
            for c in &oc.update_columns {
                if !first {
                    b.push(", ");
                }
                first = false;
                b.ident(c);
                b.push(" = EXCLUDED.");
                b.ident(c);
            }
            for (c, v) in &oc.presets {
                b.push(", ");
                b.ident(c);
                b.push(" = ");
                b.set_value(v);
            }
            let filter = simplify(&BoolExpr::And(oc.filter.clone()));
            if filter != BoolExpr::True {
                b.push(" WHERE ");
                b.bool_expr(&filter, &alias, &alias);
            }
        }
    }
    if statement.all_columns {
        b.push(&format!(" RETURNING {alias}.*"));
    } else {
        b.push(&format!(
            " RETURNING {alias}.ctid::text, ({alias}.xmax::text = '0') AS inserted, "
        ));
        if statement.want_row {
            b.push(&format!("row_to_json({alias}.*)"));
        } else {
            b.push("NULL::json");
        }
    }
    b
}

/// `UPDATE … SET … WHERE … RETURNING ctid`.
pub fn update(plan: &UpdatePlan) -> SqlText {
    update_into(Builder::new(), plan, false).finish()
}

fn update_into(mut b: Builder, plan: &UpdatePlan, all_columns: bool) -> Builder {
    let alias = b.alias();
    b.push("UPDATE ");
    b.table(&plan.table);
    b.push(" AS ");
    b.push(&alias);
    b.push(" SET ");
    for (i, (column, op, value)) in plan.sets.iter().enumerate() {
        if i > 0 {
            b.push(", ");
        }
        b.ident(column);
        b.push(" = ");
        let current = format!("{alias}.{}", crate::sql::quote_ident(column));
        match op {
            UpdateOp::Set => b.set_value(value),
            UpdateOp::Inc => {
                b.push(&format!("{current} + "));
                b.set_value(value);
            }
            UpdateOp::Append => {
                b.push(&format!("{current} || "));
                b.set_value(value);
            }
            UpdateOp::Prepend => {
                b.set_value(value);
                b.push(&format!(" || {current}"));
            }
            UpdateOp::DeleteKey | UpdateOp::DeleteElem => {
                b.push(&format!("{current} - "));
                b.set_value(value);
            }
            UpdateOp::DeleteAtPath => {
                b.push(&format!("{current} #- "));
                b.set_value(value);
            }
        }
    }
    let filter = simplify(&BoolExpr::And(plan.filter.clone()));
    if filter != BoolExpr::True {
        b.push(" WHERE ");
        b.bool_expr(&filter, &alias, &alias);
    }
    if all_columns {
        b.push(&format!(" RETURNING {alias}.*"));
    } else {
        b.push(&format!(" RETURNING {alias}.ctid::text"));
    }
    b
}

const WRITTEN: &str = "_written";

/// Views have no `ctid`: the write, its check and its answer form one statement over the rows
/// the write returns. Result: one row of (check passed, answer).
fn through_view(
    write: impl FnOnce(Builder) -> Builder,
    check: Option<&BoolExpr>,
    output: &MutationOutput,
) -> SqlText {
    let mut b = Builder::new();
    b.push(&format!("WITH \"{WRITTEN}\" AS ("));
    let mut b = write(b);
    b.push(") SELECT ");
    match check.map(simplify) {
        Some(rule) if rule != BoolExpr::True => {
            let alias = b.alias();
            b.push("(SELECT coalesce(bool_and(");
            b.bool_expr(&rule, &alias, &alias);
            b.push(&format!("), true) FROM \"{WRITTEN}\" AS {alias})"));
        }
        _ => b.push("true"),
    }
    b.push(", ");
    let restrict = |s: &mut Select| s.source = Source::Written(WRITTEN.to_owned());
    b.output(
        output,
        &format!("(SELECT count(*) FROM \"{WRITTEN}\")"),
        &restrict,
    );
    b.finish()
}

/// An insert into a view with its check and answer (see [`through_view`]).
pub fn insert_view(
    statement: &InsertStatement<'_>,
    check: Option<&BoolExpr>,
    output: &MutationOutput,
) -> SqlText {
    let statement = InsertStatement {
        all_columns: true,
        ..statement.clone()
    };
    through_view(|b| insert_into(b, &statement), check, output)
}

/// An update of a view with its check and answer (see [`through_view`]).
pub fn update_view(plan: &UpdatePlan, output: &MutationOutput) -> SqlText {
    through_view(|b| update_into(b, plan, true), plan.check.as_ref(), output)
}

/// Whether every written row satisfies `check`: one boolean.
pub fn check(table: &QualifiedTable, check: &BoolExpr, ctids: &[String]) -> SqlText {
    let mut b = Builder::new();
    let alias = b.alias();
    b.push("SELECT coalesce(bool_and(");
    let check = simplify(check);
    b.bool_expr(&check, &alias, &alias);
    b.push("), true) FROM ");
    b.table(table);
    b.push(" AS ");
    b.push(&alias);
    b.push(" WHERE ");
    b.push(&alias);
    b.push(".ctid = ANY(");
    b.ctid_list(ctids);
    b.push(")");
    b.finish()
}

impl Builder {
    /// The JSON answer of a mutation field over the written rows (`select.source` already
    /// points at them, or `ctids` restricts it).
    fn output(&mut self, output: &MutationOutput, affected: &str, restrict: &dyn Fn(&mut Select)) {
        match output {
            MutationOutput::Row(select) => {
                let mut select = select.clone();
                restrict(&mut select);
                self.select(&select, None);
            }
            MutationOutput::Response(fields) => {
                self.object(fields.len(), |b, i| {
                    let (key, field) = &fields[i];
                    b.literal(key);
                    b.push(", ");
                    match field {
                        ResponseField::AffectedRows => b.push(affected),
                        ResponseField::Constant(s) => b.literal(s),
                        ResponseField::Returning(select) => {
                            let mut select = select.clone();
                            restrict(&mut select);
                            b.select(&select, None);
                        }
                    }
                });
            }
        }
    }
}

/// The answer of an insert or update: rows by `ctid`, under the select permission.
pub fn response(output: &MutationOutput, affected: usize, ctids: &[String]) -> SqlText {
    let mut b = Builder::new();
    let ctid_value = ValueExpr {
        param: Param::Literal(Value::Array(
            ctids.iter().map(|c| Value::String(c.clone())).collect(),
        )),
        cast: "tid[]".into(),
    };
    let restrict = move |s: &mut Select| s.args.filter.push(BoolExpr::CtidIn(ctid_value.clone()));
    b.push("SELECT ");
    b.output(output, &format!("{affected}"), &restrict);
    b.finish()
}

/// `WITH deleted AS (DELETE … RETURNING *) SELECT <answer>` in one statement.
pub fn delete(plan: &DeletePlan, output: &MutationOutput) -> SqlText {
    const DELETED: &str = "_deleted";
    let mut b = Builder::new();
    let alias = b.alias();
    b.push(&format!("WITH \"{DELETED}\" AS (DELETE FROM "));
    b.table(&plan.table);
    b.push(" AS ");
    b.push(&alias);
    let filter = simplify(&BoolExpr::And(plan.filter.clone()));
    if filter != BoolExpr::True {
        b.push(" WHERE ");
        b.bool_expr(&filter, &alias, &alias);
    }
    b.push(&format!(" RETURNING {alias}.*) SELECT "));
    let restrict = |s: &mut Select| s.source = Source::Written(DELETED.to_owned());
    b.output(
        output,
        &format!("(SELECT count(*) FROM \"{DELETED}\")"),
        &restrict,
    );
    b.finish()
}
