//! Permission rules as IR filters.

use super::Planner;
use crate::graphql::ir::*;
use crate::graphql::model::RoleTable;
use crate::metadata::types::QualifiedTable;
use crate::schema::{Resolved, ResolvedTable};
use crate::sql::PgType;
use serde_json::Value;

impl Planner<'_> {
    /// The role's row filter for a table; `["$", col]` inside it refers to that table.
    pub(super) fn permission_filter(&self, table: &RoleTable) -> Option<BoolExpr> {
        let filter = table.filter.as_ref()?;
        let resolved = self.resolved_table(&table.name)?;
        Some(BoolExpr::Permission(Box::new(permission_expr(
            self.resolved,
            resolved,
            filter,
        ))))
    }
}

/// Strips the `$`/`_` prefix of a permission operator or connective.
fn operator(key: &str) -> Option<&str> {
    key.strip_prefix('$').or_else(|| key.strip_prefix('_'))
}

/// A session-variable reference or a literal, as a parameter.
fn permission_value(value: &Value) -> Param {
    match value.as_str() {
        Some(s) if crate::schema::is_session_variable(s) => Param::Session(s.to_ascii_lowercase()),
        _ => Param::Literal(value.clone()),
    }
}

/// Translates a permission BoolExp (metadata JSON, already validated) into the IR. Column
/// references without a matching column deny access rather than widen it.
pub fn permission_expr(resolved: &Resolved, table: &ResolvedTable, exp: &Value) -> BoolExpr {
    let Some(map) = exp.as_object() else {
        return BoolExpr::Or(Vec::new());
    };
    let mut all = Vec::new();
    for (key, value) in map {
        let expr = match operator(key) {
            Some("and") => BoolExpr::And(
                value
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|v| permission_expr(resolved, table, v))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            Some("or") => BoolExpr::Or(
                value
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|v| permission_expr(resolved, table, v))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            Some("not") => BoolExpr::Not(Box::new(permission_expr(resolved, table, value))),
            Some("exists") => {
                let target = value
                    .get("_table")
                    .and_then(|t| serde_json::from_value::<QualifiedTable>(t.clone()).ok())
                    .and_then(|t| resolved.tables.get(&t));
                match (target, value.get("_where")) {
                    (Some(t), Some(w)) => BoolExpr::Exists {
                        table: t.name.clone(),
                        join: Vec::new(),
                        filter: Box::new(permission_expr(resolved, t, w)),
                    },
                    _ => BoolExpr::Or(Vec::new()),
                }
            }
            _ => {
                if let Some(c) = table.db.column(key) {
                    let column = ColumnExpr {
                        scope: Scope::Current,
                        column: c.name.clone(),
                        cast: None,
                    };
                    permission_comparison(&column, &c.pg_type(), value)
                } else if let Some(r) = table.relationships.get(key) {
                    match resolved.tables.get(&r.target) {
                        Some(target) => BoolExpr::Exists {
                            table: r.target.clone(),
                            join: r.mapping.clone(),
                            filter: Box::new(permission_expr(resolved, target, value)),
                        },
                        None => BoolExpr::Or(Vec::new()),
                    }
                } else {
                    BoolExpr::Or(Vec::new())
                }
            }
        };
        all.push(expr);
    }
    BoolExpr::And(all)
}

fn permission_comparison(column: &ColumnExpr, pg_type: &PgType, value: &Value) -> BoolExpr {
    let Some(ops) = value.as_object() else {
        return BoolExpr::Compare {
            column: column.clone(),
            op: CompareOp::Eq,
            value: ValueExpr {
                param: permission_value(value),
                cast: pg_type.clone(),
            },
        };
    };
    let mut all = Vec::new();
    for (key, arg) in ops {
        let Some(name) = operator(key) else { continue };
        if name == "is_null" {
            if let Some(b) = arg.as_bool() {
                all.push(BoolExpr::IsNull {
                    column: column.clone(),
                    is_null: b,
                });
            }
            continue;
        }
        if let Some(base) = name
            .strip_prefix('c')
            .filter(|b| matches!(*b, "eq" | "ne" | "neq" | "gt" | "lt" | "gte" | "lte"))
        {
            let Some(op) = CompareOp::from_name(base) else {
                continue;
            };
            let right = match arg {
                Value::String(c) => ColumnExpr {
                    scope: Scope::Current,
                    column: c.clone(),
                    cast: None,
                },
                Value::Array(items) if items.len() == 2 => ColumnExpr {
                    scope: Scope::Root,
                    column: items[1].as_str().unwrap_or_default().to_owned(),
                    cast: None,
                },
                _ => continue,
            };
            all.push(BoolExpr::CompareColumns {
                left: column.clone(),
                op,
                right,
            });
            continue;
        }
        let Some(op) = CompareOp::from_name(name) else {
            all.push(BoolExpr::Or(Vec::new()));
            continue;
        };
        if arg.is_null() {
            continue;
        }
        let cast = if op.takes_text() {
            PgType::Text
        } else {
            pg_type.clone()
        };
        all.push(BoolExpr::Compare {
            column: column.clone(),
            op,
            value: ValueExpr {
                param: permission_value(arg),
                cast,
            },
        });
    }
    BoolExpr::And(all)
}
