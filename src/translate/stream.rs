//! `<t>_stream` as one statement: the next rows after the cursor, in cursor order, at most
//! `batch_size` of them (with the rows tied to the last one), and where the batch ends.
//!
//! ```sql
//! SELECT json_build_object('<key>', coalesce(json_agg(_s."__j" ORDER BY _s."__c"), '[]')) AS data,
//!        (array_agg(_s."__c"::text ORDER BY _s."__c" DESC))[1] AS cursor
//! FROM (SELECT <row> AS "__j", t.col AS "__c" FROM t
//!       WHERE <session set> AND <permission> AND <where> AND t.col > $cursor
//!       ORDER BY t.col FETCH FIRST (least($batch, <row cap>)) ROWS WITH TIES) AS _s
//! ```
//!
//! `cursor` is `NULL` when there is no row: the batch is not sent. The cursor travels as the
//! column's text form and is bound back as the column's type, so no value loses precision.

use super::select::{from_where, json_object, order, row_object, Written};
use super::{set_session, value, State};
use crate::db_model::PgType;
use crate::graphql::ir::{CellRules, Direction, StreamSelect};
use crate::sql::ast::{self, Alias, BinaryOp, Expr, Select, SelectItem};
use crate::sql::helpers::json_array_agg;

/// The output column, after `data`, holding where the batch ended.
const CURSOR: &str = "cursor";

/// The output column, after the cursor, telling whether the batch was full (more rows may
/// wait).
const FULL: &str = "full";

/// The statement of a stream field at response key `key`; `$1` is the session.
pub(super) fn stream_select(cells: &CellRules, key: &str, s: &StreamSelect) -> Select {
    let mut state = State::new(cells);
    let alias = state.table_alias(s.select.source.table());
    let (from, mut where_) = from_where(
        &mut state,
        &s.select.source,
        &[],
        &s.select.args,
        None,
        &alias,
        &Written::Planned,
    );
    // The session is set once, before the first row is read.
    let set = Select::expr(set_session(Expr::ParamRef(1)));
    where_.insert(
        0,
        Expr::IsNull(Box::new(Expr::Subquery(Box::new(set))), true),
    );
    let column = state.column(&alias, &s.column);
    let beyond = if s.descending {
        BinaryOp::Lt
    } else {
        BinaryOp::Gt
    };
    where_.push(Expr::binary(column.clone(), beyond, value(&s.cursor)));
    let mut limits: Vec<Expr> = std::iter::once(&s.batch_size)
        .chain(&s.select.args.limit)
        .map(value)
        .collect();
    let limit = if limits.len() == 1 {
        limits.remove(0)
    } else {
        Expr::call("least", limits)
    };
    // Postgres's default null placement for each direction, which an ordinary b-tree index
    // gives in either scan direction (no row with a null cursor matches anyway).
    let direction = Direction {
        descending: s.descending,
        nulls_first: s.descending,
    };
    let rows = SelectItem::named(row_object(&mut state, &s.select.fields, &alias), "__j");
    let inner = Select {
        list: vec![rows, SelectItem::named(column.clone(), "__c")],
        from: Some(from),
        where_,
        order_by: vec![ast::OrderBy {
            expr: column,
            order: order(direction),
        }],
        limit: Some(limit.clone()),
        with_ties: true,
        ..Select::default()
    };
    let batch = Alias::fixed("_s");
    let cursor_of = Expr::column(&batch, "__c");
    let sorted = |descending: bool| {
        vec![ast::OrderBy {
            expr: cursor_of.clone(),
            order: order(Direction {
                descending,
                nulls_first: descending,
            }),
        }]
    };
    let rows = json_array_agg(Expr::column(&batch, "__j"), sorted(s.descending));
    // The last row sent: the largest value ascending, the smallest descending.
    let mut last = ast::Call::builtin("array_agg", vec![cursor_of.clone().cast(PgType::Text)]);
    last.order_by = sorted(!s.descending);
    let last = Expr::Element(Box::new(Expr::Call(Box::new(last))), 1);
    let mut count = ast::Call::builtin("count", Vec::new());
    count.args = vec![ast::Arg::Star];
    // Full when it reached its limit (the batch size, or the permission's limit if lower):
    // more rows may wait.
    let full = Expr::binary(Expr::Call(Box::new(count)), BinaryOp::Gte, limit);
    Select {
        list: vec![
            SelectItem::bare(json_object(vec![(key, rows)]), "data"),
            SelectItem::bare(last, CURSOR),
            SelectItem::bare(full, FULL),
        ],
        from: Some(ast::From::Subquery {
            select: Box::new(inner),
            alias: batch,
        }),
        ..Select::default()
    }
}
