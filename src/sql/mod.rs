//! SQL text helpers. The only place identifiers and literals are quoted; nothing here knows
//! GraphQL or metadata.

/// Quotes an identifier for Postgres: wraps it in `"` and doubles any `"` inside.
pub fn quote_ident(ident: &str) -> String {
    let mut out = String::with_capacity(ident.len() + 2);
    out.push('"');
    for c in ident.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Quotes `schema.name` as two identifiers.
pub fn quote_qualified(schema: &str, name: &str) -> String {
    format!("{}.{}", quote_ident(schema), quote_ident(name))
}

/// A scalar subquery returning `[[value, description], …]` (as JSON) for the rows of an enum
/// table, ordered by value. `description` is the optional second text column.
pub fn enum_rows_select(schema: &str, table: &str, key: &str, description: Option<&str>) -> String {
    let description = description
        .map(|c| format!("{}::text", quote_ident(c)))
        .unwrap_or_else(|| "NULL::text".to_owned());
    format!(
        "(SELECT COALESCE(json_agg(json_build_array({key}::text, {description}) ORDER BY {key}), '[]'::json) FROM {table})",
        key = quote_ident(key),
        table = quote_qualified(schema, table),
    )
}

/// Combines scalar subqueries into one statement returning a JSON array of their results.
pub fn json_array_of(selects: &[String]) -> String {
    format!("SELECT json_build_array({})", selects.join(", "))
}

/// `EXPLAIN <statement>`.
pub fn explain(statement: &str) -> String {
    format!("EXPLAIN {statement}")
}

/// `CREATE DATABASE "<name>"`.
pub fn create_database(name: &str) -> String {
    format!("CREATE DATABASE {}", quote_ident(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_and_escaped() {
        assert_eq!(quote_ident("author"), "\"author\"");
        assert_eq!(quote_ident("we\"ird"), "\"we\"\"ird\"");
        assert_eq!(quote_qualified("my schema", "t"), "\"my schema\".\"t\"");
    }
}
