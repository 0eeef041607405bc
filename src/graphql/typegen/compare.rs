//! `<S>_comparison_exp`: the comparison operators a column's scalar offers in `where`
//! (`docs/graphql.md`, "Filtering"), and `jsonb_cast_exp`.

use super::TypeBuilder;
use crate::db_model::PgType;
use crate::graphql::model::RoleColumn;
use crate::graphql::types::*;
use crate::resolve::operators::{self, Operand, TypeFamily};
use indexmap::IndexMap;

impl TypeBuilder<'_> {
    /// `<S>_comparison_exp` for a column's scalar.
    pub(super) fn comparison(&mut self, column: &RoleColumn) -> Name {
        let s = Name::from(column.scalar.as_str());
        let name = format!("{s}_comparison_exp");
        if let Some(known) = self.types.types.get_key_value(name.as_str()) {
            return known.0.clone();
        }
        let name = Name::from(name);
        self.scalar(&s);
        let mut fields = IndexMap::new();
        let array = matches!(column.pg_type, PgType::Array(_));
        for operator in operators::graphql_operators(column.family) {
            // `_in`/`_nin` of arrays would compare an array with the elements of a list of
            // arrays (`text[] = ANY(text[][])` unnests to `text[] = text`): not offered.
            if array && operator.operand == Operand::ListOfSame {
                continue;
            }
            let ty = match operator.operand {
                Operand::Same => TypeRef::named(s.clone()),
                Operand::ListOfSame => TypeRef::nullable_list_of_non_null(s.clone()),
                Operand::Text => TypeRef::named("String"),
                Operand::ListOfText => TypeRef::nullable_list_of_non_null("String"),
                Operand::Jsonb => TypeRef::named("jsonb"),
                Operand::Boolean => TypeRef::named("Boolean"),
                Operand::Comparisons => {
                    self.jsonb_cast();
                    TypeRef::named("jsonb_cast_exp")
                }
                Operand::Column => continue,
            };
            fields.put(InputValueDef::new(format!("_{}", operator.name), ty));
        }
        self.add(TypeDef::Input {
            name: name.clone(),
            description: Some(format!("Boolean expression to compare columns of type \"{s}\". All fields are combined with logical 'AND'.").into()),
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
            cursor: true,
            family: TypeFamily::Text,
        };
        self.comparison(&string);
        let mut fields = IndexMap::new();
        fields.put(InputValueDef::new(
            Name::new_static("String"),
            TypeRef::named(Name::new_static("String_comparison_exp")),
        ));
        self.add(TypeDef::Input {
            name: Name::new_static("jsonb_cast_exp"),
            description: None,
            fields,
        });
    }
}
