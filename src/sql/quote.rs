//! Identifier and literal quoting: the only place names are made safe to print.

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

/// Quotes a string literal for Postgres (`standard_conforming_strings` on, the default since
/// 9.1): wraps it in `'` and doubles any `'` inside. For DDL only, where parameters cannot be
/// used; values of queries are always bind parameters.
pub fn quote_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        if c == '\'' {
            out.push('\'');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_and_escaped() {
        assert_eq!(quote_ident("author"), "\"author\"");
        assert_eq!(quote_ident("we\"ird"), "\"we\"\"ird\"");
        assert_eq!(quote_qualified("my schema", "t"), "\"my schema\".\"t\"");
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(quote_literal("a\\b$$"), "'a\\b$$'");
    }
}
