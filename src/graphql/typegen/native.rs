//! The types of native queries (`docs/native-queries.md`, "GraphQL schema"): each logical model
//! a role may select as `<m>` with `<m>_bool_exp`, `<m>_order_by` and `<m>_enum_name`, each
//! query's root field with its `<q>_arguments`, and the `<q>` row type of a query with
//! relationships.

use super::{list_args, with_args, TypeBuilder, INT};
use crate::graphql::model::{scalar_for_type, RoleTable, TableField};
use crate::graphql::types::*;
use crate::resolve::native_queries::ResolvedNativeQuery;
use crate::resolve::RelationshipKind;
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
                    let docs = self.model_docs.get(&t.type_name);
                    let mut fields = fields.clone();
                    for (name, field) in &mut fields {
                        let described = docs.and_then(|d| d.fields.get(name.as_str()));
                        field.description = described.map(|d| Name::from(d.as_str()));
                    }
                    let description = (docs.and_then(|d| d.description.clone()))
                        .unwrap_or_else(|| format!("logical model \"{}\"", t.type_name));
                    self.add(TypeDef::Object {
                        name: object,
                        description: Some(description.into()),
                        fields,
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

    /// The root field of native query `q` over rows of model view `t`.
    pub(super) fn native_query_field(
        &mut self,
        field: Name,
        q: &ResolvedNativeQuery,
        t: &RoleTable,
    ) -> FieldDef {
        let mut args = self.arguments_arg(q);
        args.extend(model_list_args(&t.type_name));
        let def = with_args(
            FieldDef::new(field, TypeRef::list_of_non_null(q.row_type())),
            args,
        );
        match &q.description {
            Some(d) => def.describe(d.clone()),
            None => def,
        }
    }

    /// The `args` argument of native query `q` (none when it takes no argument), with its
    /// `<q>_arguments` input type.
    fn arguments_arg(&mut self, q: &ResolvedNativeQuery) -> Vec<InputValueDef> {
        if q.arguments.is_empty() {
            return Vec::new();
        }
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
        vec![InputValueDef::new(
            Name::new_static("args"),
            TypeRef::non_null(name),
        )]
    }

    /// The `<q>` type of each native query with relationships: its model's fields as the
    /// role sees them, and the relationships whose targets it may read.
    pub(super) fn query_row_types(&mut self) {
        let rows = self.query_rows;
        for row in rows.values() {
            let Some(q) = self
                .native_queries
                .iter()
                .find(|q| q.root_field == row.type_name)
            else {
                continue;
            };
            let model = self.types.get(q.returns.as_str());
            let Some(TypeDef::Object { fields, .. }) = model else {
                continue;
            };
            let mut fields = fields.clone();
            for (name, field) in &row.fields {
                let def = match field {
                    TableField::Relationship(r) => {
                        let Some(target) = self.tables.get(&r.target) else {
                            continue;
                        };
                        let tn = target.type_name.as_str();
                        match r.kind {
                            RelationshipKind::Object => {
                                FieldDef::new(name.as_str(), TypeRef::named(tn))
                                    .describe(Name::new_static("An object relationship"))
                            }
                            RelationshipKind::Array => with_args(
                                FieldDef::new(name.as_str(), TypeRef::list_of_non_null(tn)),
                                list_args(tn),
                            )
                            .describe(Name::new_static("An array relationship")),
                        }
                    }
                    TableField::NativeQuery(r) => {
                        let Some(target) = self.native_queries.get(r.query) else {
                            continue;
                        };
                        let mut args = self.arguments_arg(target);
                        match r.kind {
                            RelationshipKind::Object => with_args(
                                FieldDef::new(name.as_str(), TypeRef::named(target.row_type())),
                                args,
                            )
                            .describe(Name::new_static("An object relationship")),
                            RelationshipKind::Array => {
                                args.extend(model_list_args(&target.returns));
                                with_args(
                                    FieldDef::new(
                                        name.as_str(),
                                        TypeRef::nullable_list_of_non_null(target.row_type()),
                                    ),
                                    args,
                                )
                                .describe(Name::new_static("An array relationship"))
                            }
                        }
                    }
                    _ => continue,
                };
                fields.insert(Name::from(name.as_str()), def);
            }
            let description = (self.model_docs.get(&q.returns))
                .and_then(|d| d.description.clone())
                .unwrap_or_else(|| format!("rows of native query \"{}\"", row.type_name));
            self.add(TypeDef::Object {
                name: Name::from(row.type_name.as_str()),
                description: Some(description.into()),
                fields,
                interfaces: Vec::new(),
            });
        }
    }
}

/// The list arguments over rows of logical model `m`: `distinct_on`, `limit`, `offset`,
/// `order_by`, `where`.
fn model_list_args(m: &str) -> Vec<InputValueDef> {
    vec![
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
    ]
}
