//! The comparison operators of boolean expressions, in one table read by everything that deals
//! with them: permission rules are validated against it (`docs/metadata-api.md`), the
//! `<S>_comparison_exp` types are generated from it (`docs/graphql.md`, "Filtering"), and both kinds of
//! expression are planned and translated through its [`CompareOp`]s.

use crate::db_model::DbColumn;

/// What a column's type allows: the families of `docs/graphql.md`, "Scalars".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeFamily {
    /// A column referring to an enum table (GraphQL only: an enum type).
    Enum,
    /// `json`: no comparisons but `is_null`.
    Json,
    /// `jsonb`: equality, ordering (GraphQL), containment and keys.
    Jsonb,
    /// Text-like types: everything, plus the pattern operators.
    Text,
    /// Every other type.
    Other,
}

impl TypeFamily {
    /// The family of a column's type. Enum-table columns are `Other` here; the GraphQL model
    /// knows which columns refer to enum tables.
    pub fn of(column: &DbColumn) -> Self {
        Self::of_type(&column.type_name)
    }

    /// The family of a type by its `pg_type.typname`.
    pub fn of_type(type_name: &str) -> Self {
        match type_name {
            "json" => TypeFamily::Json,
            "jsonb" => TypeFamily::Jsonb,
            "text" | "varchar" | "bpchar" | "char" | "name" | "citext" => TypeFamily::Text,
            _ => TypeFamily::Other,
        }
    }
}

/// A comparison of a column with a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    /// `=`.
    Eq,
    /// `<>`.
    Neq,
    /// `>`.
    Gt,
    /// `<`.
    Lt,
    /// `>=`.
    Gte,
    /// `<=`.
    Lte,
    /// `= ANY(array)`.
    In,
    /// `<> ALL(array)`.
    Nin,
    /// `LIKE`.
    Like,
    /// `NOT LIKE`.
    Nlike,
    /// `ILIKE`.
    Ilike,
    /// `NOT ILIKE`.
    Nilike,
    /// `SIMILAR TO`.
    Similar,
    /// `NOT SIMILAR TO`.
    Nsimilar,
    /// `~`.
    Regex,
    /// `~*`.
    Iregex,
    /// `!~`.
    Nregex,
    /// `!~*`.
    Niregex,
    /// `@>`.
    Contains,
    /// `<@`.
    ContainedIn,
    /// `?`.
    HasKey,
    /// `?|`.
    HasKeysAny,
    /// `?&`.
    HasKeysAll,
}

/// What an operator does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperatorKind {
    /// Compares the column with a value.
    Compare(CompareOp),
    /// Compares the column with another column (permission rules only).
    CompareColumn(CompareOp),
    /// `IS NULL` when the value is true, `IS NOT NULL` when false.
    IsNull,
    /// Compares the column cast to another type (`_cast: {String: …}`, GraphQL only).
    Cast,
}

/// The value an operator takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// A value of the column's type.
    Same,
    /// A list of values of the column's type.
    ListOfSame,
    /// Text, whatever the column's type.
    Text,
    /// A list of text.
    ListOfText,
    /// A `jsonb` value.
    Jsonb,
    /// A boolean.
    Boolean,
    /// Another column.
    Column,
    /// The comparisons of the cast column.
    Comparisons,
}

/// One operator: its name (without the `_`/`$` prefix), what it does, what it takes, and the
/// type families it applies to in GraphQL `where` arguments and in permission rules.
#[derive(Debug, Clone, Copy)]
pub struct Operator {
    /// Name without prefix (`eq`, `has_keys_any`).
    pub name: &'static str,
    pub kind: OperatorKind,
    pub operand: Operand,
    /// Families whose `<S>_comparison_exp` offers it.
    pub graphql: &'static [TypeFamily],
    /// Families whose columns permission rules may use it on.
    pub permission: &'static [TypeFamily],
}

use TypeFamily::{Enum, Json, Jsonb, Other, Text};

const ALL: &[TypeFamily] = &[Enum, Json, Jsonb, Text, Other];
const EQUALITY: &[TypeFamily] = &[Enum, Jsonb, Text, Other];
const ORDERED: &[TypeFamily] = &[Jsonb, Text, Other];
const SCALAR: &[TypeFamily] = &[Text, Other];
const TEXT: &[TypeFamily] = &[Text];
const JSONB: &[TypeFamily] = &[Jsonb];
const NONE: &[TypeFamily] = &[];

const fn compare(
    name: &'static str,
    op: CompareOp,
    operand: Operand,
    graphql: &'static [TypeFamily],
    permission: &'static [TypeFamily],
) -> Operator {
    Operator {
        name,
        kind: OperatorKind::Compare(op),
        operand,
        graphql,
        permission,
    }
}

const fn column(name: &'static str, op: CompareOp) -> Operator {
    Operator {
        name,
        kind: OperatorKind::CompareColumn(op),
        operand: Operand::Column,
        graphql: NONE,
        permission: SCALAR,
    }
}

/// Every operator, in the order `<S>_comparison_exp` lists its fields.
pub const OPERATORS: &[Operator] = &[
    Operator {
        name: "cast",
        kind: OperatorKind::Cast,
        operand: Operand::Comparisons,
        graphql: JSONB,
        permission: NONE,
    },
    compare(
        "contained_in",
        CompareOp::ContainedIn,
        Operand::Jsonb,
        JSONB,
        JSONB,
    ),
    compare(
        "contains",
        CompareOp::Contains,
        Operand::Jsonb,
        JSONB,
        JSONB,
    ),
    compare("eq", CompareOp::Eq, Operand::Same, EQUALITY, ORDERED),
    compare("gt", CompareOp::Gt, Operand::Same, ORDERED, SCALAR),
    compare("gte", CompareOp::Gte, Operand::Same, ORDERED, SCALAR),
    compare("has_key", CompareOp::HasKey, Operand::Text, JSONB, JSONB),
    compare(
        "has_keys_all",
        CompareOp::HasKeysAll,
        Operand::ListOfText,
        JSONB,
        JSONB,
    ),
    compare(
        "has_keys_any",
        CompareOp::HasKeysAny,
        Operand::ListOfText,
        JSONB,
        JSONB,
    ),
    compare("ilike", CompareOp::Ilike, Operand::Text, TEXT, TEXT),
    compare("in", CompareOp::In, Operand::ListOfSame, EQUALITY, SCALAR),
    compare("iregex", CompareOp::Iregex, Operand::Text, TEXT, TEXT),
    Operator {
        name: "is_null",
        kind: OperatorKind::IsNull,
        operand: Operand::Boolean,
        graphql: ALL,
        permission: ALL,
    },
    compare("like", CompareOp::Like, Operand::Text, TEXT, TEXT),
    compare("lt", CompareOp::Lt, Operand::Same, ORDERED, SCALAR),
    compare("lte", CompareOp::Lte, Operand::Same, ORDERED, SCALAR),
    compare("neq", CompareOp::Neq, Operand::Same, EQUALITY, ORDERED),
    compare("nilike", CompareOp::Nilike, Operand::Text, TEXT, TEXT),
    compare("niregex", CompareOp::Niregex, Operand::Text, TEXT, TEXT),
    compare("nlike", CompareOp::Nlike, Operand::Text, TEXT, TEXT),
    compare("nregex", CompareOp::Nregex, Operand::Text, TEXT, TEXT),
    compare("nsimilar", CompareOp::Nsimilar, Operand::Text, TEXT, TEXT),
    compare("regex", CompareOp::Regex, Operand::Text, TEXT, TEXT),
    compare("similar", CompareOp::Similar, Operand::Text, TEXT, TEXT),
    compare("nin", CompareOp::Nin, Operand::ListOfSame, EQUALITY, SCALAR),
    // Permission rules only: the alias `ne` and the column comparisons
    // (`docs/metadata-api.md`, "Permissions").
    compare("ne", CompareOp::Neq, Operand::Same, NONE, ORDERED),
    column("ceq", CompareOp::Eq),
    column("cne", CompareOp::Neq),
    column("cneq", CompareOp::Neq),
    column("cgt", CompareOp::Gt),
    column("clt", CompareOp::Lt),
    column("cgte", CompareOp::Gte),
    column("clte", CompareOp::Lte),
];

/// The operator named `name` (without its `_`/`$` prefix).
pub fn operator(name: &str) -> Option<&'static Operator> {
    OPERATORS.iter().find(|o| o.name == name)
}

/// The operators `<S>_comparison_exp` offers for a family, in field order.
pub fn graphql_operators(family: TypeFamily) -> impl Iterator<Item = &'static Operator> {
    OPERATORS
        .iter()
        .filter(move |o| o.graphql.contains(&family))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graphql_names(family: TypeFamily) -> Vec<&'static str> {
        graphql_operators(family).map(|o| o.name).collect()
    }

    #[test]
    fn comparison_types_offer_the_spec_groups() {
        assert_eq!(graphql_names(Json), ["is_null"]);
        assert_eq!(graphql_names(Enum), ["eq", "in", "is_null", "neq", "nin"]);
        assert_eq!(
            graphql_names(Other),
            ["eq", "gt", "gte", "in", "is_null", "lt", "lte", "neq", "nin"]
        );
        assert_eq!(
            graphql_names(Jsonb),
            [
                "cast",
                "contained_in",
                "contains",
                "eq",
                "gt",
                "gte",
                "has_key",
                "has_keys_all",
                "has_keys_any",
                "in",
                "is_null",
                "lt",
                "lte",
                "neq",
                "nin"
            ]
        );
        assert_eq!(graphql_names(Text).len(), 19);
    }

    #[test]
    fn permission_rules_follow_the_metadata_spec() {
        let allowed =
            |name: &str, family| operator(name).is_some_and(|o| o.permission.contains(&family));
        // `$eq`/`$ne` also on jsonb; ordering, lists and column comparisons not on json types.
        assert!(allowed("eq", Jsonb) && allowed("ne", Jsonb) && !allowed("eq", Json));
        assert!(!allowed("gt", Jsonb) && !allowed("in", Jsonb) && !allowed("ceq", Jsonb));
        assert!(allowed("like", Text) && !allowed("like", Other));
        assert!(allowed("has_keys_any", Jsonb) && !allowed("contains", Text));
        assert!(
            allowed("is_null", Json) && operator("cast").is_some_and(|o| o.permission.is_empty())
        );
        assert!(operator("nope").is_none());
        assert_eq!(TypeFamily::of_type("citext"), Text);
        assert_eq!(TypeFamily::of_type("char"), Text);
    }
}
