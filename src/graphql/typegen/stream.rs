//! `<t>_stream` and its input types: `<t>_stream_cursor_input`, `<t>_stream_cursor_value_input`
//! (one nullable field per column that can be a cursor) and the `cursor_ordering` enum.

use super::TypeBuilder;
use crate::graphql::model::RoleTable;
use crate::graphql::types::*;

impl TypeBuilder<'_> {
    /// `<t>_stream(batch_size: Int!, cursor: [<t>_stream_cursor_input]!, where: <t>_bool_exp):
    /// [<t>!]!`, with the types its arguments use.
    pub(super) fn stream_field(&mut self, field: Name, t: &RoleTable) -> FieldDef {
        let tn = &t.type_name;
        self.add(TypeDef::Enum {
            name: Name::new_static("cursor_ordering"),
            description: Some(Name::new_static("ordering argument of a cursor")),
            values: vec![
                EnumValueDef {
                    name: Name::new_static("ASC"),
                    description: Some(Name::new_static("ascending ordering of the cursor")),
                },
                EnumValueDef {
                    name: Name::new_static("DESC"),
                    description: Some(Name::new_static("descending ordering of the cursor")),
                },
            ],
        });
        let value_input = format!("{tn}_stream_cursor_value_input");
        let values = t
            .columns
            .iter()
            .filter(|(_, c)| c.cursor)
            .map(|(name, c)| InputValueDef::new(name.as_str(), TypeRef::named(c.scalar.as_str())))
            .collect();
        self.input(value_input.clone(), values);
        let cursor_input = format!("{tn}_stream_cursor_input");
        self.input(
            cursor_input.clone(),
            vec![
                InputValueDef::new("initial_value", TypeRef::non_null(value_input)),
                InputValueDef::new("ordering", TypeRef::named("cursor_ordering")),
            ],
        );
        FieldDef::new(field, TypeRef::list_of_non_null(tn.as_str()))
            .arg(InputValueDef::new(
                "batch_size",
                TypeRef::non_null(Name::new_static("Int")),
            ))
            .arg(InputValueDef::new(
                "cursor",
                TypeRef::NonNull(Box::new(TypeRef::List(Box::new(TypeRef::named(
                    cursor_input,
                ))))),
            ))
            .arg(InputValueDef::new(
                "where",
                TypeRef::named(format!("{tn}_bool_exp")),
            ))
            .describe(format!(
                "fetch data from the table in a streaming manner: \"{}\"",
                t.name
            ))
    }
}
