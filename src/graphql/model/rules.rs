//! A role's permission rules (resolved by `crate::resolve` into typed [`BoolExp`]s) as IR
//! filters, and its cell rules as the plans carry them ([`cell_rules`]).

use super::RoleTable;
use crate::graphql::ir::*;
use crate::resolve::{BoolExp, ColumnRef, Condition, RuleValue};
use indexmap::IndexMap;

/// The cell rules of the tables a role may select (empty for every role but inherited ones),
/// built once with its model.
pub(super) fn cell_rules<'t>(tables: impl Iterator<Item = &'t RoleTable>) -> CellRules {
    let rules: IndexMap<_, IndexMap<String, BoolExpr>> = tables
        .filter(|t| !t.cells.is_empty())
        .map(|t| {
            let cells = t
                .cells
                .iter()
                .map(|(column, rule)| (column.clone(), permission(rule)))
                .collect();
            (t.name.clone(), cells)
        })
        .collect();
    std::sync::Arc::new(rules)
}

/// A permission rule as an IR filter: inside it, `Scope::Root` means the table it is applied to.
pub fn permission(rule: &BoolExp) -> BoolExpr {
    BoolExpr::Permission(Box::new(permission_expr(rule)))
}

/// A permission rule's expression in the IR.
fn permission_expr(rule: &BoolExp) -> BoolExpr {
    match rule {
        BoolExp::And(parts) => BoolExpr::And(parts.iter().map(permission_expr).collect()),
        BoolExp::Or(parts) => BoolExpr::Or(parts.iter().map(permission_expr).collect()),
        BoolExp::Not(inner) => BoolExpr::Not(Box::new(permission_expr(inner))),
        BoolExp::Exists { table, filter } => BoolExpr::Exists {
            table: table.clone(),
            join: Vec::new(),
            filter: Box::new(permission_expr(filter)),
        },
        BoolExp::Related {
            target,
            mapping,
            filter,
        } => BoolExpr::Exists {
            table: target.clone(),
            join: mapping.clone(),
            filter: Box::new(permission_expr(filter)),
        },
        BoolExp::Column { column, conditions } => {
            let column = ColumnExpr {
                scope: Scope::Current,
                column: column.clone(),
                cast: None,
            };
            BoolExpr::And(conditions.iter().map(|c| condition(&column, c)).collect())
        }
    }
}

fn condition(column: &ColumnExpr, condition: &Condition) -> BoolExpr {
    match condition {
        Condition::IsNull(is_null) => BoolExpr::IsNull {
            column: column.clone(),
            is_null: *is_null,
        },
        Condition::Compare { op, value, cast } => BoolExpr::Compare {
            column: column.clone(),
            op: *op,
            value: ValueExpr {
                param: match value {
                    RuleValue::Literal(v) => Param::Literal(v.clone()),
                    RuleValue::Session(name) => Param::Session(name.clone()),
                },
                cast: cast.clone(),
            },
        },
        Condition::CompareColumn { op, other } => {
            let (scope, name) = match other {
                ColumnRef::Current(name) => (Scope::Current, name),
                ColumnRef::Root(name) => (Scope::Root, name),
            };
            BoolExpr::CompareColumns {
                left: column.clone(),
                op: *op,
                right: ColumnExpr {
                    scope,
                    column: name.clone(),
                    cast: None,
                },
            }
        }
    }
}
