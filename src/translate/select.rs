//! Selections: rows as JSON arrays or objects, aggregates, nested relationships, computed
//! fields and ordering, each as one scalar subquery.

use super::filter::{bool_expr, join, key_match, simplified};
use super::{array, name, value, State};
use crate::db_model::PgType;
use crate::graphql::ir::*;
use crate::resolve::RelationshipKind;
use crate::sql::ast::{
    self, Alias, Arg, BinaryOp, Call, Expr, From as FromItem, Ident, Literal, Order,
    Select as SqlSelect, SelectItem,
};
use crate::sql::helpers::json_array_agg;

/// Most key/value pairs in one `json_build_object` call (Postgres allows 100 arguments).
const MAX_PAIRS: usize = 50;

/// Which rows the top select of a mutation's answer reads instead of its planned source.
#[derive(Debug, Clone)]
pub(super) enum Written {
    Planned,
    /// The planned source, restricted to these `ctid`s (rows written by earlier steps).
    Ctids(ast::ParamSource),
    /// The rows a data-modifying CTE of the same statement returned.
    Cte(Ident),
    /// No rows: nothing was written (an update with nothing to set, an insert of no rows).
    Nothing,
    /// The planned source, restricted to the rows whose key columns hold one of the tuples
    /// (column, array of its values, column type), as a nested update reads its rows back.
    Keys(Vec<(String, ast::ParamSource, PgType)>),
}

/// `json_build_object(k1, v1, …)`, or past the argument limit an ordered `json_object_agg`
/// over `VALUES`.
pub(super) fn json_object(pairs: Vec<(&str, Expr)>) -> Expr {
    if pairs.len() <= MAX_PAIRS {
        let mut args = Vec::with_capacity(pairs.len() * 2);
        for (key, value) in pairs {
            args.push(Expr::string(key));
            args.push(value);
        }
        return Expr::call("json_build_object", args);
    }
    let kv = Alias::fixed("_kv");
    let column = |c: &'static str| Expr::AliasColumn(kv.clone(), Alias::fixed(c));
    let mut agg = Call::builtin("json_object_agg", vec![column("k"), column("v")]);
    agg.order_by = vec![ast::OrderBy {
        expr: column("o"),
        order: None,
    }];
    let rows = pairs
        .into_iter()
        .enumerate()
        .map(|(i, (key, value))| {
            vec![
                Expr::string(key),
                Expr::call("to_json", vec![value]),
                Expr::Literal(Literal::Int(i as i64)),
            ]
        })
        .collect();
    Expr::Subquery(Box::new(SqlSelect {
        from: Some(FromItem::Values {
            rows,
            alias: kv,
            columns: vec![Alias::fixed("k"), Alias::fixed("v"), Alias::fixed("o")],
        }),
        ..SqlSelect::expr(Expr::Call(Box::new(agg)))
    }))
}

pub(super) fn order(d: Direction) -> Option<Order> {
    Some(Order {
        descending: d.descending,
        nulls_first: d.nulls_first,
    })
}

/// A subquery yielding the JSON of a selection (array, or object/null when single).
pub(super) fn select(state: &mut State, s: &Select, parent: Option<&Alias>) -> Expr {
    select_rows(state, s, parent, &Written::Planned)
}

/// [`select`] over the rows `written` names.
pub(super) fn select_rows(
    state: &mut State,
    s: &Select,
    parent: Option<&Alias>,
    written: &Written,
) -> Expr {
    let alias = state.table_alias(s.source.table());
    if s.single {
        let list = vec![SelectItem::new(row_object(state, &s.fields, &alias))];
        let (from, where_) =
            from_where(state, &s.source, &s.join, &s.args, parent, &alias, written);
        let no_distinct = Distinct {
            exprs: Vec::new(),
            positions: Vec::new(),
        };
        let (order_by, _, offset) = order_and_page(state, &s.args, &alias, &no_distinct);
        return Expr::Subquery(Box::new(SqlSelect {
            list,
            from: Some(from),
            where_,
            order_by,
            limit: Some(Expr::Literal(Literal::Int(1))),
            offset,
            ..SqlSelect::default()
        }));
    }
    let outer = state.alias();
    let rows = json_array_agg(
        Expr::column(&outer, "__j"),
        aggregate_order(&s.args, &outer),
    );
    // With an OFFSET, rows are paged in a subquery first: Postgres computes a row's select list
    // before the OFFSET skips it, so nested selections of skipped rows would be built for
    // nothing (a page of 20 authors at offset 5000 would build 5020 article lists).
    // A `DISTINCT ON` column behind a cell rule is named by its position in the select list
    // (see [`distinct_on`]), which a paged subquery's `alias.*` would move: no paging then.
    let positional = (s.args.distinct_on.iter()).any(|c| state.has_cell_rule(&alias, c));
    let paged = match (&s.source, &s.args.offset, written) {
        _ if positional => None,
        (_, _, Written::Cte(_)) => None,
        (Source::Table(table), Some(_), _) => Some(name(table)),
        _ => None,
    };
    if let Some(table) = &paged {
        state.paged.push((alias.clone(), table.clone()));
    }
    let mut list = vec![SelectItem::named(
        row_object(state, &s.fields, &alias),
        "__j",
    )];
    list.extend(order_keys(state, &s.args, &alias));
    let (from, where_) = from_where(state, &s.source, &s.join, &s.args, parent, &alias, written);
    let mut distinct_list = match paged {
        None => std::mem::take(&mut list),
        Some(_) => paged_columns(&list, &alias),
    };
    let distinct = distinct_on(state, &s.args, &alias, &mut distinct_list);
    let (order_by, limit, offset) = order_and_page(state, &s.args, &alias, &distinct);
    let distinct_on = distinct.exprs;
    let inner = match paged {
        None => SqlSelect {
            distinct_on,
            list: distinct_list,
            from: Some(from),
            where_,
            order_by,
            limit,
            offset,
            lock: false,
            with_ties: false,
        },
        Some(_) => SqlSelect {
            from: Some(FromItem::Subquery {
                select: Box::new(SqlSelect {
                    distinct_on,
                    list: distinct_list,
                    from: Some(from),
                    where_,
                    order_by,
                    limit,
                    offset,
                    lock: false,
                    with_ties: false,
                }),
                alias,
            }),
            list,
            ..SqlSelect::default()
        },
    };
    Expr::Subquery(Box::new(SqlSelect {
        from: Some(FromItem::Subquery {
            select: Box::new(inner),
            alias: outer,
        }),
        ..SqlSelect::expr(rows)
    }))
}

/// What a paged subquery of `alias` yields: the columns `list` (the rows' selection) reads by
/// name, or the whole row (`alias.*`) when it reads it whole (a computed field's row
/// argument) or reads no column. Fewer columns make each row the OFFSET skips cheaper.
fn paged_columns(list: &[SelectItem], alias: &Alias) -> Vec<SelectItem> {
    let mut columns: Vec<Ident> = Vec::new();
    let mut whole = false;
    for item in list {
        item.expr.walk(&mut |e| match e {
            Expr::Column(a, column) if a == alias && !columns.contains(column) => {
                columns.push(column.clone());
            }
            Expr::Row(a) | Expr::Star(a) | Expr::AliasColumn(a, _) if a == alias => whole = true,
            _ => {}
        });
    }
    if whole || columns.is_empty() {
        return vec![SelectItem::new(Expr::Star(alias.clone()))];
    }
    columns
        .into_iter()
        .map(|column| SelectItem::new(Expr::Column(alias.clone(), column)))
        .collect()
}

/// The `DISTINCT ON` of a selection.
struct Distinct {
    /// The expressions.
    exprs: Vec<Expr>,
    /// Columns read through a cell rule, with the position in the select list they are
    /// projected at: `DISTINCT ON` and `ORDER BY` name them by position, since Postgres
    /// requires the two to match and each printed rule binds its own parameters.
    positions: Vec<(String, i64)>,
}

/// `DISTINCT ON` columns; those read through a cell rule are added to `list`.
fn distinct_on(
    state: &mut State,
    args: &RowArgs,
    alias: &Alias,
    list: &mut Vec<SelectItem>,
) -> Distinct {
    let mut positions = Vec::new();
    let exprs = args
        .distinct_on
        .iter()
        .enumerate()
        .map(|(i, c)| match state.column(alias, c) {
            plain @ Expr::Column(..) => plain,
            guarded => {
                list.push(SelectItem::named(guarded, &format!("__d{i}")));
                let position = list.len() as i64;
                positions.push((c.clone(), position));
                Expr::Literal(Literal::Int(position))
            }
        })
        .collect();
    Distinct { exprs, positions }
}

/// Each `ORDER BY` expression projected as `"__oN"`, so the outer aggregate keeps the order.
fn order_keys(state: &mut State, args: &RowArgs, alias: &Alias) -> Vec<SelectItem> {
    args.order_by
        .iter()
        .enumerate()
        .map(|(i, o)| SelectItem::named(order_expr(state, &o.expr, alias), &format!("__o{i}")))
        .collect()
}

/// The aggregate's `ORDER BY` over the projected `"__oN"` keys.
fn aggregate_order(args: &RowArgs, outer: &Alias) -> Vec<ast::OrderBy> {
    args.order_by
        .iter()
        .enumerate()
        .map(|(i, o)| ast::OrderBy {
            expr: Expr::column(outer, &format!("__o{i}")),
            order: order(o.direction),
        })
        .collect()
}

/// `FROM source AS alias` and the `WHERE` conjuncts: the join to the parent row, then the
/// filters that are not trivially true.
pub(super) fn from_where(
    state: &mut State,
    source: &Source,
    join_columns: &[(String, String)],
    args: &RowArgs,
    parent: Option<&Alias>,
    alias: &Alias,
    written: &Written,
) -> (FromItem, Vec<Expr>) {
    let from = match (source, written) {
        (_, Written::Cte(cte)) => FromItem::Named {
            name: cte.clone(),
            alias: Some(alias.clone()),
        },
        (Source::Table(t), _) => FromItem::Table {
            name: name(t),
            alias: alias.clone(),
        },
        (Source::Function { function, args, .. }, _) => FromItem::Function {
            call: Box::new(call(state, function, args, parent)),
            alias: alias.clone(),
        },
        (Source::NativeQuery { code, args, .. }, _) => FromItem::Code {
            pieces: code_pieces(code, args),
            alias: alias.clone(),
        },
    };
    let mut where_ = match parent {
        Some(parent) => join(join_columns, parent, alias),
        None => Vec::new(),
    };
    // A function returning one row answers `NULL` as a row of nulls: no row.
    if let (Source::Function { set: false, .. }, Written::Planned) = (source, written) {
        where_.push(Expr::Not(Box::new(Expr::IsNull(
            Box::new(Expr::Row(alias.clone())),
            false,
        ))));
    }
    for f in args.filter.iter().filter_map(simplified) {
        where_.push(bool_expr(state, &f, alias, alias));
    }
    if let Written::Keys(keys) = written {
        where_.push(key_match(state, alias, keys));
    }
    if let Written::Nothing = written {
        where_.push(Expr::Literal(ast::Literal::Bool(false)));
    }
    if let Written::Ctids(ctids) = written {
        where_.push(
            Expr::Quantified(
                Box::new(Expr::AliasColumn(alias.clone(), Alias::fixed("ctid"))),
                BinaryOp::Eq,
                ast::Quantifier::Any,
                Box::new(Expr::value(ctids.clone(), PgType::Tid.array_of())),
            )
            .nested(),
        );
    }
    (from, where_)
}

/// `ORDER BY` (the `DISTINCT ON` columns first when no order is given), `LIMIT` (several limits
/// combine with `least`) and `OFFSET`.
fn order_and_page(
    state: &mut State,
    args: &RowArgs,
    alias: &Alias,
    distinct: &Distinct,
) -> (Vec<ast::OrderBy>, Option<Expr>, Option<Expr>) {
    let position = |c: &str| {
        distinct
            .positions
            .iter()
            .find(|(d, _)| d == c)
            .map(|(_, p)| Expr::Literal(Literal::Int(*p)))
    };
    let mut order_by = Vec::new();
    if args.order_by.is_empty() {
        for c in &args.distinct_on {
            order_by.push(ast::OrderBy {
                expr: position(c).unwrap_or_else(|| state.column(alias, c)),
                order: order(Direction {
                    descending: false,
                    nulls_first: false,
                }),
            });
        }
    }
    for o in &args.order_by {
        let by_position = match &o.expr {
            OrderExpr::Column(c) => position(c),
            _ => None,
        };
        order_by.push(ast::OrderBy {
            expr: by_position.unwrap_or_else(|| order_expr(state, &o.expr, alias)),
            order: order(o.direction),
        });
    }
    let constants: Option<Vec<i64>> = args.limit.iter().map(page_constant).collect();
    let limit = match (args.limit.as_slice(), constants) {
        ([], _) => None,
        (_, Some(constants)) => constants
            .into_iter()
            .min()
            .map(|n| Expr::Literal(Literal::Int(n))),
        ([one], None) => Some(value(one)),
        (several, None) => Some(Expr::call("least", several.iter().map(value).collect())),
    };
    let offset = args.offset.as_ref().map(|o| match page_constant(o) {
        Some(n) => Expr::Literal(Literal::Int(n)),
        None => value(o),
    });
    (order_by, limit, offset)
}

/// A `LIMIT` or `OFFSET` written in the document or a permission: an integer printed into
/// the statement (the one exception to values as parameters). A parameter there hides the
/// row count from Postgres's generic plan (it assumes a tenth of the table), whose estimate
/// then never beats the custom plans', so Postgres would plan the statement again on every
/// execution. Printed from an `i64`, it cannot carry SQL; the statement is per document anyway.
fn page_constant(v: &ValueExpr) -> Option<i64> {
    match &v.param {
        Param::Literal(serde_json::Value::Number(n)) => n.as_i64(),
        _ => None,
    }
}

/// A native query's code with each placeholder its argument's bound value.
fn code_pieces(code: &crate::sql::template::Template, args: &[ValueExpr]) -> Vec<ast::CodePiece> {
    use crate::sql::template::Piece;
    let names = code.arguments();
    code.pieces
        .iter()
        .map(|piece| match piece {
            Piece::Text(text) => ast::CodePiece::Text(text.clone()),
            Piece::Argument(name) => {
                let arg = names
                    .iter()
                    .position(|n| n == name)
                    .and_then(|i| args.get(i));
                ast::CodePiece::Value(arg.map_or(Expr::Literal(Literal::Null), value))
            }
        })
        .collect()
}

/// A function call with the row `row` (or `NULL` without one) for the row argument.
fn call(
    state: &State,
    function: &crate::metadata::types::QualifiedTable,
    args: &[FunctionArg],
    row: Option<&Alias>,
) -> Call {
    let args = args
        .iter()
        .map(|arg| {
            let value = match &arg.value {
                FunctionArgValue::Row => match row {
                    None => Expr::Literal(Literal::Null),
                    Some(row) => match state.paged.iter().find(|(a, _)| a == row) {
                        Some((_, table)) => {
                            Expr::Row(row.clone()).cast(PgType::Qualified(table.clone()))
                        }
                        None => Expr::Row(row.clone()),
                    },
                },
                FunctionArgValue::Value(v) => value(v),
            };
            if arg.name.is_empty() {
                Arg::Value(value)
            } else {
                Arg::Named(Ident::new(arg.name.as_str()), value)
            }
        })
        .collect();
    Call {
        function: ast::Function::Qualified(name(function)),
        args,
        distinct: false,
        order_by: Vec::new(),
        filter: Vec::new(),
    }
}

/// The JSON object of a row's fields.
pub(super) fn row_object(state: &mut State, fields: &[(String, Field)], alias: &Alias) -> Expr {
    let pairs = fields
        .iter()
        .map(|(key, f)| (key.as_str(), field(state, f, alias)))
        .collect();
    json_object(pairs)
}

fn field(state: &mut State, field: &Field, alias: &Alias) -> Expr {
    match field {
        Field::Column { column, path: None } => state.column(alias, column),
        Field::Column {
            column,
            path: Some(path),
        } => Expr::binary(
            state.column(alias, column),
            BinaryOp::JsonPath,
            array(path, &PgType::Text),
        )
        .nested(),
        Field::Constant(s) => Expr::string(s),
        Field::Relationship {
            kind: RelationshipKind::Object | RelationshipKind::Array,
            select: s,
        } => select(state, s, Some(alias)),
        Field::Aggregate(a) => aggregate(state, a, Some(alias)),
        Field::Computed {
            function,
            args,
            cell,
        } => {
            let value = Expr::Call(Box::new(call(state, function, args, Some(alias))));
            match cell {
                Some(rule) if state.raw == 0 => state.guard(rule.clone(), alias, value),
                _ => value,
            }
        }
        Field::RemoteJoin { occurrence, values } => {
            let values: Vec<(&str, Expr)> = values
                .iter()
                .map(|(name, value)| {
                    let value = match value {
                        JoinValue::Column(c) => Expr::column(alias, c),
                        JoinValue::Computed { function, args } => {
                            Expr::Call(Box::new(call(state, function, args, Some(alias))))
                        }
                    };
                    (name.as_str(), value)
                })
                .collect();
            remote_join_slot(*occurrence, values)
        }
    }
}

/// A remote relationship's slot: `{"__basalt_join_<occurrence>": {<field>: <value>, …}}`, or
/// `null` when a join value is null (the field is then `null`, and nothing is sent). The
/// values are read as stored, whatever the role may select: they are sent, not returned.
fn remote_join_slot(occurrence: usize, values: Vec<(&str, Expr)>) -> Expr {
    let any_null = Expr::Or(
        values
            .iter()
            .map(|(_, v)| Expr::IsNull(Box::new(v.clone()), false))
            .collect(),
    );
    let key = format!("{}{occurrence}", crate::graphql::ir::join_slot_key());
    let slot = json_object(vec![(key.as_str(), json_object(values))]);
    Expr::Case {
        when: Box::new(any_null),
        then: Box::new(Expr::null()),
        otherwise: Box::new(slot),
    }
}

/// `<t>_aggregate`: one subquery over the (paged) rows, projecting the columns the aggregate
/// functions read as `"__aN"` and each node as `"__j"`. A selection that reads no rows (only
/// `__typename`s) is a constant object: without an aggregate call the subquery would yield one
/// row per table row.
pub(super) fn aggregate(state: &mut State, a: &AggregateSelect, parent: Option<&Alias>) -> Expr {
    if !reads_rows(a) {
        return constant_aggregate(a);
    }
    let alias = state.table_alias(a.source.table());
    let outer = state.alias();
    let mut projected: Vec<&String> = Vec::new();
    for (_, f) in &a.fields {
        let AggregateField::Aggregate(ops) = f else {
            continue;
        };
        for (_, op) in ops {
            let columns: Vec<&String> = match op {
                AggregateOp::Count { columns, .. } => columns.iter().collect(),
                AggregateOp::Function { columns, .. } => columns
                    .iter()
                    .filter_map(|(_, c)| match c {
                        AggregateColumn::Column(c) => Some(c),
                        AggregateColumn::Typename(_) => None,
                    })
                    .collect(),
                AggregateOp::Constant(_) => Vec::new(),
            };
            for c in columns {
                if !projected.contains(&c) {
                    projected.push(c);
                }
            }
        }
    }
    let slot = |c: &str| {
        let i = projected.iter().position(|p| *p == c).unwrap_or(0);
        Expr::column(&outer, &format!("__a{i}"))
    };
    let nodes = || {
        json_array_agg(
            Expr::column(&outer, "__j"),
            aggregate_order(&a.args, &outer),
        )
    };
    let object = aggregate_object(a, &nodes, &slot);
    let mut list = vec![SelectItem::named(Expr::Literal(Literal::Int(1)), "__one")];
    for (i, c) in projected.iter().enumerate() {
        list.push(SelectItem::named(
            state.column(&alias, c),
            &format!("__a{i}"),
        ));
    }
    if let Some((_, AggregateField::Nodes(nodes))) = a
        .fields
        .iter()
        .find(|(_, f)| matches!(f, AggregateField::Nodes(_)))
    {
        list.push(SelectItem::named(row_object(state, nodes, &alias), "__j"));
    }
    list.extend(order_keys(state, &a.args, &alias));
    let (from, where_) = from_where(
        state,
        &a.source,
        &a.join,
        &a.args,
        parent,
        &alias,
        &Written::Planned,
    );
    let distinct = distinct_on(state, &a.args, &alias, &mut list);
    let (order_by, limit, offset) = order_and_page(state, &a.args, &alias, &distinct);
    let inner = SqlSelect {
        distinct_on: distinct.exprs,
        list,
        from: Some(from),
        where_,
        order_by,
        limit,
        offset,
        lock: false,
        with_ties: false,
    };
    Expr::Subquery(Box::new(SqlSelect {
        from: Some(FromItem::Subquery {
            select: Box::new(inner),
            alias: outer,
        }),
        ..SqlSelect::expr(object)
    }))
}

/// Whether an aggregate selection computes anything over the rows (`nodes`, `count`, `sum`, …).
fn reads_rows(a: &AggregateSelect) -> bool {
    a.fields.iter().any(|(_, f)| match f {
        AggregateField::Constant(_) => false,
        AggregateField::Nodes(_) => true,
        AggregateField::Aggregate(ops) => ops.iter().any(|(_, op)| match op {
            AggregateOp::Constant(_) => false,
            AggregateOp::Count { .. } => true,
            AggregateOp::Function { columns, .. } => columns
                .iter()
                .any(|(_, c)| matches!(c, AggregateColumn::Column(_))),
        }),
    })
}

/// The JSON object of an aggregate selection made only of `__typename`s: neither `nodes` nor a
/// column slot is ever read.
fn constant_aggregate(a: &AggregateSelect) -> Expr {
    aggregate_object(a, &Expr::null, &|_| Expr::null())
}

/// The JSON object of `<t>_aggregate`'s fields, with `nodes` and the projected column `slot`s
/// as the caller computes them.
fn aggregate_object(
    a: &AggregateSelect,
    nodes: &dyn Fn() -> Expr,
    slot: &dyn Fn(&str) -> Expr,
) -> Expr {
    let pairs = a
        .fields
        .iter()
        .map(|(key, f)| {
            let value = match f {
                AggregateField::Constant(s) => Expr::string(s),
                AggregateField::Nodes(_) => nodes(),
                AggregateField::Aggregate(ops) => json_object(
                    ops.iter()
                        .map(|(key, op)| (key.as_str(), aggregate_op(op, slot)))
                        .collect(),
                ),
            };
            (key.as_str(), value)
        })
        .collect();
    json_object(pairs)
}

/// One field of `<t>_aggregate_fields` over the projected columns.
fn aggregate_op(op: &AggregateOp, slot: &dyn Fn(&str) -> Expr) -> Expr {
    match op {
        AggregateOp::Constant(s) => Expr::string(s),
        AggregateOp::Count { columns, distinct } => {
            let mut count = Call::builtin("count", Vec::new());
            match (columns.as_slice(), distinct) {
                ([], _) => count.args = vec![Arg::Star],
                ([c], distinct) => {
                    count.args = vec![Arg::Value(slot(c))];
                    count.distinct = *distinct;
                }
                (cs, true) => {
                    count.args = vec![Arg::Value(Expr::Tuple(
                        cs.iter().map(|c| slot(c)).collect(),
                    ))];
                    count.distinct = true;
                }
                (cs, false) => {
                    count.args = vec![Arg::Star];
                    count.filter = cs
                        .iter()
                        .map(|c| Expr::IsNull(Box::new(slot(c)), true))
                        .collect();
                }
            }
            Expr::Call(Box::new(count))
        }
        AggregateOp::Function { function, columns } => {
            let function = function.name();
            json_object(
                columns
                    .iter()
                    .map(|(key, column)| {
                        let value = match column {
                            AggregateColumn::Column(c) => Expr::call(function, vec![slot(c)]),
                            AggregateColumn::Typename(t) => Expr::string(t),
                        };
                        (key.as_str(), value)
                    })
                    .collect(),
            )
        }
    }
}

/// An `ORDER BY` expression: a column, a column through object relationships, or an aggregate
/// over an array relationship, each under the target's permission filter.
fn order_expr(state: &mut State, e: &OrderExpr, alias: &Alias) -> Expr {
    match e {
        OrderExpr::Column(c) => state.column(alias, c),
        OrderExpr::Object {
            table,
            join: columns,
            filter,
            inner,
        } => {
            let r = state.table_alias(table);
            let value = order_expr(state, inner, &r);
            Expr::Subquery(Box::new(SqlSelect {
                limit: Some(Expr::Literal(Literal::Int(1))),
                ..related(state, table, columns, filter, alias, r, value)
            }))
        }
        OrderExpr::Aggregate {
            table,
            join: columns,
            filter,
            aggregate,
        } => {
            let r = state.table_alias(table);
            let value = match aggregate {
                OrderAggregate::Count => Expr::Call(Box::new(Call {
                    args: vec![Arg::Star],
                    ..Call::builtin("count", Vec::new())
                })),
                OrderAggregate::Of(function, c) => {
                    Expr::call(function.name(), vec![state.column(&r, c)])
                }
            };
            Expr::Subquery(Box::new(related(
                state, table, columns, filter, alias, r, value,
            )))
        }
    }
}

/// `SELECT value FROM table AS r WHERE <join to parent> AND <filter>`: a value computed over the
/// rows related to the parent row, under the related table's permission filter.
fn related(
    state: &mut State,
    table: &crate::metadata::types::QualifiedTable,
    columns: &[(String, String)],
    filter: &BoolExpr,
    parent: &Alias,
    r: Alias,
    value: Expr,
) -> SqlSelect {
    let mut where_ = join(columns, parent, &r);
    where_.extend(simplified(filter).map(|f| bool_expr(state, &f, &r, &r)));
    SqlSelect {
        from: Some(FromItem::Table {
            name: name(table),
            alias: r,
        }),
        where_,
        ..SqlSelect::expr(value)
    }
}

/// The JSON answer of a mutation field over the rows `written` names, with `affected` as
/// `affected_rows`.
pub(super) fn output(
    state: &mut State,
    output: &MutationOutput,
    affected: Expr,
    written: &Written,
) -> Expr {
    match output {
        MutationOutput::Row(s) => select_rows(state, s, None, written),
        MutationOutput::Response(fields) => {
            let pairs = fields
                .iter()
                .map(|(key, field)| {
                    let value = match field {
                        ResponseField::AffectedRows => affected.clone(),
                        ResponseField::Constant(s) => Expr::string(s),
                        ResponseField::Returning(s) => select_rows(state, s, None, written),
                    };
                    (key.as_str(), value)
                })
                .collect();
            json_object(pairs)
        }
    }
}
