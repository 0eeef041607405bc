//! Permission rules (resolved by `crate::resolve` into typed [`BoolExp`]s) as IR filters.

use super::Planner;
use crate::graphql::ir::*;
use crate::graphql::model::RoleTable;
use crate::resolve::{BoolExp, ColumnRef, Condition, RuleValue};

impl Planner<'_> {
    /// The role's row filter for a table; `["$", col]` inside it refers to that table.
    pub(super) fn permission_filter(&self, table: &RoleTable) -> Option<BoolExpr> {
        table.filter.as_ref().map(permission)
    }
}

/// A permission rule as an IR filter: inside it, `Scope::Root` means the table it is applied to.
pub fn permission(rule: &BoolExp) -> BoolExpr {
    BoolExpr::Permission(Box::new(permission_expr(rule)))
}

/// A permission rule's expression in the IR.
pub fn permission_expr(rule: &BoolExp) -> BoolExpr {
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
