//! Postgres types as the generated SQL names them in casts, and how a bound value of each type
//! travels as text. Built from the catalog (introspection) or fixed by the translator; never
//! from request input.

use super::names::QualifiedName;
use std::fmt;

/// A Postgres type. Every value Basalt binds is sent as `text` and cast to one of these, and the
/// type alone decides how the JSON value becomes that text ([`Encoding`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PgType {
    /// `text`.
    Text,
    /// `integer`.
    Integer,
    /// `bigint`.
    BigInt,
    /// `boolean`.
    Boolean,
    /// `json`.
    Json,
    /// `jsonb`.
    Jsonb,
    /// `tid` (a row version's physical location).
    Tid,
    /// An array of the element type, written `<element>[]`.
    Array(Box<PgType>),
    /// A type by schema and name, both quoted (`"public"."author"`): a table's row type, or a
    /// function argument's type when the catalog gave no spelling.
    Qualified(QualifiedName),
    /// Any other type, spelled exactly as Postgres's `format_type` prints it (`character
    /// varying(20)`, `timestamp with time zone`, `"Mood"`): catalog text, quoted by Postgres
    /// where it must be, never request input.
    Catalog(String),
}

/// How a bound JSON value is turned into the text Postgres receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Strings as they are, other values as JSON text.
    Text,
    /// Always JSON text (for `json`/`jsonb`).
    Json,
    /// A Postgres array literal (`{a,"b c"}`) from a JSON array; strings pass unchanged.
    PgArray,
}

impl PgType {
    /// A type from the catalog: its `format_type` spelling, its schema and name, and the name of
    /// its element type when it is an array.
    pub fn from_catalog(formatted: &str, schema: &str, name: &str, element: Option<&str>) -> Self {
        if schema == "pg_catalog" {
            match name {
                "json" => return PgType::Json,
                "jsonb" => return PgType::Jsonb,
                _ => {}
            }
        }
        match (element, formatted.strip_suffix("[]")) {
            (Some(_), Some(inner)) => PgType::Array(Box::new(PgType::Catalog(inner.to_owned()))),
            _ => PgType::Catalog(formatted.to_owned()),
        }
    }

    /// An array of this type.
    pub fn array_of(self) -> Self {
        PgType::Array(Box::new(self))
    }

    /// How values of this type are bound.
    pub fn encoding(&self) -> Encoding {
        match self {
            PgType::Json | PgType::Jsonb => Encoding::Json,
            PgType::Array(_) => Encoding::PgArray,
            _ => Encoding::Text,
        }
    }
}

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
            PgType::Qualified(name) => write!(f, "{name}"),
            PgType::Catalog(spelled) => f.write_str(spelled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
