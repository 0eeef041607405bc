//! Boolean expressions: `where` arguments and permission rules (both already in the IR's
//! [`BoolExpr`]), simplified and turned into SQL conditions.

use super::{array, value, State};
use crate::db_model::PgType;
use crate::graphql::ir::*;
use crate::resolve::CompareOp;
use crate::sql::ast::{self, Alias, BinaryOp, Expr, Literal, Quantifier, Select};

/// The join of a related row to its parent: `alias."remote" = parent."local"` per column pair.
pub(super) fn join(columns: &[(String, String)], parent: &Alias, alias: &Alias) -> Vec<Expr> {
    columns
        .iter()
        .map(|(local, remote)| {
            Expr::binary(
                Expr::column(alias, remote),
                BinaryOp::Eq,
                Expr::column(parent, local),
            )
        })
        .collect()
}

/// The simplified filter, unless it is trivially true.
pub(super) fn simplified(filter: &BoolExpr) -> Option<BoolExpr> {
    match simplify(filter) {
        BoolExpr::True => None,
        other => Some(other),
    }
}

/// The conjunction of `filters`, simplified, as `WHERE` conjuncts (none when trivially true).
pub(super) fn conjunction(state: &mut State, filters: &[BoolExpr], alias: &Alias) -> Vec<Expr> {
    simplified(&BoolExpr::And(filters.to_vec()))
        .map(|f| bool_expr(state, &f, alias, alias))
        .into_iter()
        .collect()
}

/// Rows of `alias` whose columns equal one of the tuples the arrays hold side by side, each
/// array given as (column of `alias`, where the array comes from, the column's type):
/// `col = ANY($n::type[])` for one column, `EXISTS (SELECT FROM unnest(…) AS k(…) WHERE …)`
/// for several.
pub(super) fn key_match(
    state: &mut State,
    alias: &Alias,
    keys: &[(String, ast::ParamSource, PgType)],
) -> Expr {
    let array =
        |source: &ast::ParamSource, ty: &PgType| Expr::value(source.clone(), ty.clone().array_of());
    if let [(column, source, ty)] = keys {
        return Expr::Quantified(
            Box::new(Expr::column(alias, column)),
            BinaryOp::Eq,
            Quantifier::Any,
            Box::new(array(source, ty)),
        );
    }
    let tuples = state.alias();
    let columns: Vec<ast::Ident> = (0..keys.len())
        .map(|i| ast::Ident::new(format!("k{i}")))
        .collect();
    let where_ = keys
        .iter()
        .zip(&columns)
        .map(|((column, _, _), k)| {
            Expr::binary(
                Expr::column(alias, column),
                BinaryOp::Eq,
                Expr::Column(tuples.clone(), k.clone()),
            )
        })
        .collect();
    Expr::Exists(Box::new(Select {
        from: Some(ast::From::Unnest {
            arrays: keys.iter().map(|(_, s, ty)| array(s, ty)).collect(),
            alias: tuples,
            columns,
        }),
        where_,
        ..Select::expr(Expr::Literal(Literal::Int(1)))
    }))
}

/// Flattens nested conjunctions, drops `true` conjuncts and unwraps one-element lists, so the
/// SQL stays small and readable. Never changes the meaning.
pub(super) fn simplify(e: &BoolExpr) -> BoolExpr {
    match e {
        BoolExpr::And(parts) => {
            let mut flat = Vec::new();
            for p in parts.iter().map(simplify) {
                match p {
                    BoolExpr::True => {}
                    BoolExpr::And(inner) => flat.extend(inner),
                    other => flat.push(other),
                }
            }
            match flat.len() {
                0 => BoolExpr::True,
                1 => flat.remove(0),
                _ => BoolExpr::And(flat),
            }
        }
        BoolExpr::Or(parts) => {
            let mut parts: Vec<BoolExpr> = parts.iter().map(simplify).collect();
            if parts.contains(&BoolExpr::True) {
                return BoolExpr::True;
            }
            match parts.len() {
                1 => parts.remove(0),
                _ => BoolExpr::Or(parts),
            }
        }
        BoolExpr::Not(inner) => BoolExpr::Not(Box::new(simplify(inner))),
        BoolExpr::Permission(inner) => match simplify(inner) {
            BoolExpr::True => BoolExpr::True,
            other => BoolExpr::Permission(Box::new(other)),
        },
        BoolExpr::Exists {
            table,
            join,
            filter,
        } => BoolExpr::Exists {
            table: table.clone(),
            join: join.clone(),
            filter: Box::new(simplify(filter)),
        },
        other => other.clone(),
    }
}

fn column(state: &mut State, c: &ColumnExpr, current: &Alias, root: &Alias) -> Expr {
    let alias = match c.scope {
        Scope::Current => current,
        Scope::Root => root,
    };
    let column = state.column(alias, &c.column);
    match &c.cast {
        Some(cast) => column.nested().cast(cast.clone()),
        None => column,
    }
}

/// The SQL operator of a comparison.
fn operator(op: CompareOp) -> BinaryOp {
    use CompareOp::*;
    match op {
        Eq | In => BinaryOp::Eq,
        Neq | Nin => BinaryOp::Neq,
        Gt => BinaryOp::Gt,
        Lt => BinaryOp::Lt,
        Gte => BinaryOp::Gte,
        Lte => BinaryOp::Lte,
        Like => BinaryOp::Like,
        Nlike => BinaryOp::NotLike,
        Ilike => BinaryOp::ILike,
        Nilike => BinaryOp::NotILike,
        Similar => BinaryOp::Similar,
        Nsimilar => BinaryOp::NotSimilar,
        Regex => BinaryOp::Regex,
        Iregex => BinaryOp::IRegex,
        Nregex => BinaryOp::NotRegex,
        Niregex => BinaryOp::NotIRegex,
        Contains => BinaryOp::Contains,
        ContainedIn => BinaryOp::ContainedIn,
        HasKey => BinaryOp::HasKey,
        HasKeysAny => BinaryOp::HasKeysAny,
        HasKeysAll => BinaryOp::HasKeysAll,
    }
}

/// An already [`simplify`]-ed expression over the row `current`; inside a permission,
/// `Scope::Root` columns refer to `root`.
pub(super) fn bool_expr(state: &mut State, e: &BoolExpr, current: &Alias, root: &Alias) -> Expr {
    match e {
        BoolExpr::True => Expr::Literal(Literal::Bool(true)),
        BoolExpr::And(parts) => Expr::And(
            parts
                .iter()
                .map(|p| bool_expr(state, p, current, root))
                .collect(),
        ),
        BoolExpr::Or(parts) => Expr::Or(
            parts
                .iter()
                .map(|p| bool_expr(state, p, current, root))
                .collect(),
        ),
        BoolExpr::Not(inner) => Expr::Not(Box::new(bool_expr(state, inner, current, root))),
        BoolExpr::Permission(inner) => {
            state.raw += 1;
            let e = bool_expr(state, inner, current, current);
            state.raw -= 1;
            e
        }
        BoolExpr::IsNull { column: c, is_null } => {
            Expr::IsNull(Box::new(column(state, c, current, root)), !is_null).nested()
        }
        BoolExpr::CompareColumns { left, op, right } => Expr::binary(
            column(state, left, current, root),
            operator(*op),
            column(state, right, current, root),
        )
        .nested(),
        BoolExpr::Compare {
            column: c,
            op,
            value: v,
        } => {
            let left = column(state, c, current, root);
            match op {
                CompareOp::In | CompareOp::Nin => Expr::Quantified(
                    Box::new(left),
                    operator(*op),
                    if *op == CompareOp::In {
                        Quantifier::Any
                    } else {
                        Quantifier::All
                    },
                    Box::new(array(v, &v.cast)),
                ),
                CompareOp::HasKeysAny | CompareOp::HasKeysAll => {
                    Expr::binary(left, operator(*op), array(v, &PgType::Text))
                }
                _ => Expr::binary(left, operator(*op), value(v)),
            }
            .nested()
        }
        BoolExpr::Exists {
            table,
            join: columns,
            filter,
        } => {
            let r = state.table_alias(table);
            let mut where_ = join(columns, current, &r);
            where_.push(bool_expr(state, filter, &r, root));
            Expr::Exists(Box::new(Select {
                from: Some(ast::From::Table {
                    name: super::name(table),
                    alias: r,
                }),
                where_,
                ..Select::expr(Expr::Literal(Literal::Int(1)))
            }))
        }
    }
}
