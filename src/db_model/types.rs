//! Postgres's type vocabulary as the database model and every later layer use it: the type of
//! a column, argument or bound value, and how a JSON value of that type is sent as text.
//! Built from the catalog or fixed by the translator; never from request input. How a type is
//! spelled in SQL is the SQL layer's (`sql::types`).

use crate::names::QualifiedName;

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
