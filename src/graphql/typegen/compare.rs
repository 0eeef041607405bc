//! `<S>_comparison_exp`: the comparison operators a column's scalar offers in `where`
//! (`graphql-api.md` §4), and `jsonb_cast_exp`.

use super::TypeBuilder;
use crate::graphql::model::RoleColumn;
use crate::graphql::types::*;
use crate::sql::PgType;
use indexmap::IndexMap;

impl TypeBuilder<'_> {
    /// `<S>_comparison_exp` for a column's scalar.
    pub(super) fn comparison(&mut self, column: &RoleColumn) -> String {
        let s = column.scalar.clone();
        let name = format!("{s}_comparison_exp");
        if self.types.get(&name).is_some() {
            return name;
        }
        self.scalar(&s);
        let mut fields = IndexMap::new();
        let mut add = |n: &str, ty: TypeRef| {
            fields.insert(n.to_owned(), InputValueDef::new(n, ty));
        };
        let enum_column = self.is_enum_type(&s);
        let json_only = s == "json";
        if enum_column {
            add("_eq", TypeRef::named(&s));
            add("_in", TypeRef::nullable_list_of_non_null(&s));
            add("_is_null", TypeRef::named("Boolean"));
            add("_neq", TypeRef::named(&s));
            add("_nin", TypeRef::nullable_list_of_non_null(&s));
        } else if json_only {
            add("_is_null", TypeRef::named("Boolean"));
        } else {
            let jsonb = s == "jsonb";
            let text = matches!(s.as_str(), "String" | "bpchar" | "citext" | "name");
            if jsonb {
                self.jsonb_cast();
                add("_cast", TypeRef::named("jsonb_cast_exp"));
                add("_contained_in", TypeRef::named("jsonb"));
                add("_contains", TypeRef::named("jsonb"));
            }
            add("_eq", TypeRef::named(&s));
            add("_gt", TypeRef::named(&s));
            add("_gte", TypeRef::named(&s));
            if jsonb {
                add("_has_key", TypeRef::named("String"));
                add(
                    "_has_keys_all",
                    TypeRef::nullable_list_of_non_null("String"),
                );
                add(
                    "_has_keys_any",
                    TypeRef::nullable_list_of_non_null("String"),
                );
            }
            if text {
                add("_ilike", TypeRef::named("String"));
            }
            add("_in", TypeRef::nullable_list_of_non_null(&s));
            if text {
                add("_iregex", TypeRef::named("String"));
            }
            add("_is_null", TypeRef::named("Boolean"));
            if text {
                add("_like", TypeRef::named("String"));
            }
            add("_lt", TypeRef::named(&s));
            add("_lte", TypeRef::named(&s));
            add("_neq", TypeRef::named(&s));
            if text {
                for op in [
                    "_nilike",
                    "_niregex",
                    "_nlike",
                    "_nregex",
                    "_nsimilar",
                    "_regex",
                    "_similar",
                ] {
                    add(op, TypeRef::named("String"));
                }
            }
            add("_nin", TypeRef::nullable_list_of_non_null(&s));
        }
        self.types.add(TypeDef::Input {
            name: name.clone(),
            description: Some(format!("Boolean expression to compare columns of type \"{s}\". All fields are combined with logical 'AND'.")),
            fields,
        });
        name
    }

    pub(super) fn jsonb_cast(&mut self) {
        if self.types.get("jsonb_cast_exp").is_some() {
            return;
        }
        let string = RoleColumn {
            column: String::new(),
            scalar: "String".to_owned(),
            pg_type: PgType::Text,
            nullable: true,
            numeric: false,
            orderable: true,
            json: false,
        };
        self.comparison(&string);
        let mut fields = IndexMap::new();
        fields.insert(
            "String".to_owned(),
            InputValueDef::new("String", TypeRef::named("String_comparison_exp")),
        );
        self.types.add(TypeDef::Input {
            name: "jsonb_cast_exp".to_owned(),
            description: None,
            fields,
        });
    }
}
