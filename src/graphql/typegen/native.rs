//! The types of native queries (`docs/native-queries.md`, "GraphQL schema"): each logical model
//! a role may select as `<m>` with `<m>_bool_exp`, `<m>_order_by` and `<m>_enum_name`, and each
//! query's root field with its `<q>_arguments`.

use super::{with_args, TypeBuilder, INT};
use crate::graphql::model::{scalar_for_type, RoleTable};
use crate::graphql::types::*;
use crate::resolve::native_queries::ResolvedNativeQuery;
use indexmap::IndexMap;

impl TypeBuilder<'_> {
    /// The types of every logical model the role may select: a table's, with the select-column
    /// enum named `<m>_enum_name`.
    pub(super) fn model_types(&mut self) {
        let models = self.models;
        for t in models.values() {
            self.table_types(t);
            let object = Name::from(t.type_name.as_str());
            if let Some(def) = self.types.types.shift_remove(&object) {
                if let TypeDef::Object { fields, .. } = &*def {
                    self.add(TypeDef::Object {
                        name: object,
                        description: Some(format!("logical model \"{}\"", t.type_name).into()),
                        fields: fields.clone(),
                        interfaces: Vec::new(),
                    });
                }
            }
            let column = Name::from(format!("{}_select_column", t.type_name));
            if let Some(def) = self.types.types.shift_remove(&column) {
                if let TypeDef::Enum { values, .. } = &*def {
                    self.add(TypeDef::Enum {
                        name: format!("{}_enum_name", t.type_name).into(),
                        description: Some(
                            format!("select columns of logical model \"{}\"", t.type_name).into(),
                        ),
                        values: values.clone(),
                    });
                }
            }
        }
    }

    /// The root field of native query `q` over rows of `t`.
    pub(super) fn native_query_field(
        &mut self,
        field: Name,
        q: &ResolvedNativeQuery,
        t: &RoleTable,
    ) -> FieldDef {
        let m = t.type_name.as_str();
        let mut args = Vec::new();
        if !q.arguments.is_empty() {
            let name = format!("{}_arguments", q.root_field);
            let mut fields = IndexMap::new();
            for a in &q.arguments {
                let scalar = scalar_for_type(&a.type_name);
                self.scalar(&scalar);
                let ty = match a.nullable {
                    true => TypeRef::named(scalar),
                    false => TypeRef::non_null(scalar),
                };
                let description = a
                    .description
                    .clone()
                    .unwrap_or_else(|| format!("Native Query argument {}", a.name));
                let arg_name = Name::from(a.name.as_str());
                let mut def = InputValueDef::new(arg_name.clone(), ty);
                def.description = Some(description.into());
                fields.insert(arg_name, def);
            }
            self.add(TypeDef::Input {
                name: name.as_str().into(),
                description: None,
                fields,
            });
            args.push(InputValueDef::new(
                Name::new_static("args"),
                TypeRef::non_null(name),
            ));
        }
        args.extend([
            InputValueDef::new(
                Name::new_static("distinct_on"),
                TypeRef::nullable_list_of_non_null(format!("{m}_enum_name")),
            ),
            InputValueDef::new(Name::new_static("limit"), TypeRef::named(INT)),
            InputValueDef::new(Name::new_static("offset"), TypeRef::named(INT)),
            InputValueDef::new(
                Name::new_static("order_by"),
                TypeRef::nullable_list_of_non_null(format!("{m}_order_by")),
            ),
            InputValueDef::new(
                Name::new_static("where"),
                TypeRef::named(format!("{m}_bool_exp")),
            ),
        ]);
        let def = with_args(FieldDef::new(field, TypeRef::list_of_non_null(m)), args);
        match &q.description {
            Some(d) => def.describe(d.clone()),
            None => def,
        }
    }
}
