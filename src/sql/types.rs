//! How Postgres types are spelled in generated SQL (casts, row types), and the JSON text of a
//! `json`/`jsonb` result cell.

use super::names::Quoted;
use crate::db_model::PgType;
use std::fmt;

impl fmt::Display for PgType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PgType::Text => f.write_str("text"),
            PgType::Integer => f.write_str("integer"),
            PgType::BigInt => f.write_str("bigint"),
            PgType::Boolean => f.write_str("boolean"),
            PgType::Json => f.write_str("json"),
            PgType::Jsonb => f.write_str("jsonb"),
            PgType::Tid => f.write_str("tid"),
            PgType::Array(inner) => write!(f, "{inner}[]"),
            PgType::Qualified(name) => write!(f, "{}", Quoted(name)),
            PgType::Catalog(spelled) => f.write_str(spelled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db_model::Encoding;
    use crate::names::QualifiedName;

    #[test]
    fn catalog_types_know_their_encoding() {
        let json = PgType::from_catalog("jsonb", "pg_catalog", "jsonb", None);
        assert_eq!(
            (json.to_string(), json.encoding()),
            ("jsonb".into(), Encoding::Json)
        );
        let array = PgType::from_catalog(
            "character varying(20)[]",
            "pg_catalog",
            "_varchar",
            Some("varchar"),
        );
        assert_eq!(array.to_string(), "character varying(20)[]");
        assert_eq!(array.encoding(), Encoding::PgArray);
        // A user type called jsonb is not json: its spelling is qualified and it binds as text.
        let mine = PgType::from_catalog("app.jsonb", "app", "jsonb", None);
        assert_eq!(mine.encoding(), Encoding::Text);
        let row = PgType::Qualified(QualifiedName::new("my schema", "t"));
        assert_eq!(row.to_string(), "\"my schema\".\"t\"");
    }
}

/// The JSON text of a `json` or `jsonb` result cell, borrowed from the row: for parsing
/// straight into a typed value (no `serde_json::Value` in between) or passing on untouched.
#[derive(Debug, Clone, Copy)]
pub struct JsonText<'a>(pub &'a [u8]);

impl<'a> tokio_postgres::types::FromSql<'a> for JsonText<'a> {
    fn from_sql(
        ty: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        // jsonb's binary form starts with a version byte.
        if *ty == tokio_postgres::types::Type::JSONB {
            return Ok(JsonText(raw.get(1..).unwrap_or_default()));
        }
        Ok(JsonText(raw))
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        *ty == tokio_postgres::types::Type::JSON || *ty == tokio_postgres::types::Type::JSONB
    }
}
