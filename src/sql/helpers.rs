//! Statements and shapes used in more than one place, built as AST values: the JSON of a set of
//! rows, the rows of enum tables, `CREATE DATABASE`.

use super::ast::*;
use super::print::{print, SqlText};
use crate::db_model::PgType;

/// `coalesce(json_agg(expr ORDER BY …), '[]'::json)`: the JSON array of a column of rows,
/// empty rather than null when there are none.
pub fn json_array_agg(expr: Expr, order_by: Vec<OrderBy>) -> Expr {
    let mut agg = Call::builtin("json_agg", vec![expr]);
    agg.order_by = order_by;
    Expr::call(
        "coalesce",
        vec![
            Expr::Call(Box::new(agg)),
            Expr::string("[]").cast(PgType::Json),
        ],
    )
}

/// An enum table whose rows are read: its name, key column and optional description column.
#[derive(Debug, Clone, Copy)]
pub struct EnumTable<'a> {
    pub schema: &'a str,
    pub name: &'a str,
    /// The key column (the enum's values).
    pub key: &'a str,
    /// The text column describing each value, if any.
    pub description: Option<&'a str>,
}

/// One statement returning a JSON array with, for each table, `[[value, description], …]`
/// ordered by value.
pub fn enum_rows(tables: &[EnumTable<'_>]) -> SqlText {
    let selects = tables
        .iter()
        .map(|t| {
            let alias = Alias::numbered(1);
            let key = Expr::column(&alias, t.key);
            let description = match t.description {
                Some(column) => Expr::column(&alias, column).cast(PgType::Text),
                None => Expr::Literal(Literal::Null).cast(PgType::Text),
            };
            let mut agg = Call::builtin(
                "json_agg",
                vec![Expr::call(
                    "json_build_array",
                    vec![key.clone().cast(PgType::Text), description],
                )],
            );
            agg.order_by = vec![OrderBy {
                expr: key,
                order: None,
            }];
            let rows = Expr::call(
                "coalesce",
                vec![
                    Expr::Call(Box::new(agg)),
                    Expr::string("[]").cast(PgType::Json),
                ],
            );
            Expr::Subquery(Box::new(Select {
                from: Some(From::Table {
                    name: QualifiedName::new(t.schema, t.name),
                    alias,
                }),
                ..Select::expr(rows)
            }))
        })
        .collect();
    print(&Statement::Select(Box::new(Select::expr(Expr::call(
        "json_build_array",
        selects,
    )))))
}

/// `CREATE DATABASE "name"`.
pub fn create_database(name: &str) -> SqlText {
    print(&Statement::CreateDatabase(Ident::new(name)))
}

/// `LISTEN "<channel>"`: a session subscribed to the notifications on `channel`.
pub fn listen(channel: &str) -> String {
    format!("LISTEN {}", super::quote::quote_ident(channel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_rows_read_every_table_in_one_statement() {
        let text = enum_rows(&[
            EnumTable {
                schema: "public",
                name: "status",
                key: "value",
                description: Some("comment"),
            },
            EnumTable {
                schema: "my schema",
                name: "kind",
                key: "k\"ey",
                description: None,
            },
        ]);
        assert_eq!(
            text.sql,
            "SELECT json_build_array((SELECT coalesce(json_agg(json_build_array(_t1.\"value\"::text, _t1.\"comment\"::text) ORDER BY _t1.\"value\"), '[]'::json) FROM \"public\".\"status\" AS _t1), (SELECT coalesce(json_agg(json_build_array(_t1.\"k\"\"ey\"::text, NULL::text) ORDER BY _t1.\"k\"\"ey\"), '[]'::json) FROM \"my schema\".\"kind\" AS _t1))"
        );
        assert!(text.params.is_empty());
        assert_eq!(create_database("a\"b").sql, "CREATE DATABASE \"a\"\"b\"");
        assert_eq!(listen("basalt_events"), "LISTEN \"basalt_events\"");
    }
}
