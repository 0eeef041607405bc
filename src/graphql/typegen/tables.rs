//! The types of one selectable table: `<t>` (the row object), `<t>_bool_exp`, `<t>_order_by`,
//! `<t>_select_column`, the `<f>_args` of its computed fields, and the enum types its columns use.

use super::{list_args, with_args, TypeBuilder};
use crate::graphql::model::{
    scalar_for_type, RoleColumn, RoleComputed, RoleRelationship, RoleTable, TableField,
};
use crate::graphql::types::*;
use crate::resolve::{ComputedReturn, RelationshipKind, TypeFamily};
use indexmap::IndexMap;

/// The fields of a table's object, filter and ordering types, gathered field by field.
struct TableTypes {
    object: IndexMap<Name, FieldDef>,
    bool_exp: IndexMap<Name, InputValueDef>,
    order_by: IndexMap<Name, InputValueDef>,
}

impl TableTypes {
    /// The connectives every `<t>_bool_exp` has.
    fn new(tn: &str) -> Self {
        let mut bool_exp = IndexMap::new();
        let own = Name::from(format!("{tn}_bool_exp"));
        for name in ["_and", "_or"] {
            bool_exp.insert(
                Name::new_static(name),
                InputValueDef::new(
                    Name::new_static(name),
                    TypeRef::nullable_list_of_non_null(own.clone()),
                ),
            );
        }
        bool_exp.insert(
            Name::new_static("_not"),
            InputValueDef::new(Name::new_static("_not"), TypeRef::named(own)),
        );
        TableTypes {
            object: IndexMap::new(),
            bool_exp,
            order_by: IndexMap::new(),
        }
    }
}

/// An enum type's values from an enum table's rows.
pub(super) fn enum_values(values: &[(String, Option<String>)]) -> Vec<EnumValueDef> {
    values
        .iter()
        .map(|(v, d)| EnumValueDef {
            name: v.into(),
            description: d.as_deref().map(Name::from),
        })
        .collect()
}

impl TypeBuilder<'_> {
    fn target(&self, name: &crate::metadata::types::QualifiedTable) -> Option<&RoleTable> {
        self.tables.get(name)
    }

    /// Every type of one selectable table.
    pub(super) fn table_types(&mut self, t: &RoleTable) {
        let tn = t.type_name.clone();
        let mut types = TableTypes::new(&tn);
        for (field, value) in &t.fields {
            match value {
                TableField::Column(c) => self.column_field(field, c, &mut types),
                TableField::Relationship(r) => self.relationship_field(field, r, &mut types),
                TableField::RelationshipAggregate(r) => {
                    self.relationship_aggregate_field(field, r, &mut types)
                }
                TableField::Computed(cf) => self.computed_field(field, cf, &mut types),
                // Its type comes from the remote schema, merged after the tables' types.
                TableField::RemoteJoin(_) => {}
                // Only native queries' rows have them, typed by `query_row_types`.
                TableField::NativeQuery(_) => {}
            }
        }
        self.add(TypeDef::Object {
            name: tn.as_str().into(),
            description: Some(format!("columns and relationships of \"{}\"", t.name).into()),
            fields: types.object,
            interfaces: Vec::new(),
        });
        self.add(TypeDef::Input {
            name: format!("{tn}_bool_exp").into(),
            description: Some(format!("Boolean expression to filter rows from the table \"{}\". All fields are combined with a logical 'AND'.", t.name).into()),
            fields: types.bool_exp,
        });
        self.add(TypeDef::Input {
            name: format!("{tn}_order_by").into(),
            description: Some(
                format!("Ordering options when selecting data from \"{}\".", t.name).into(),
            ),
            fields: types.order_by,
        });
        self.add(TypeDef::Enum {
            name: format!("{tn}_select_column").into(),
            description: Some(format!("select columns of table \"{}\"", t.name).into()),
            values: t
                .columns
                .keys()
                .map(|c| EnumValueDef {
                    name: c.into(),
                    description: Some(Name::new_static("column name")),
                })
                .collect(),
        });
        self.aggregate_types(t);
        self.enum_types(t);
    }

    /// The enum type of an enum table, and those of the enum tables its columns refer to.
    fn enum_types(&mut self, t: &RoleTable) {
        if let Some((name, values)) = self.enums.get(&t.name) {
            self.add(TypeDef::Enum {
                name: name.into(),
                description: None,
                values: enum_values(values),
            });
        }
        for (enum_table, (name, values)) in self.enums.iter() {
            let used = t.columns.values().any(|c| &c.scalar == name);
            if used && enum_table != &t.name {
                self.add(TypeDef::Enum {
                    name: name.into(),
                    description: None,
                    values: enum_values(values),
                });
            }
        }
    }

    fn column_field(&mut self, field: &str, c: &RoleColumn, types: &mut TableTypes) {
        let field = Name::from(field);
        self.scalar(&c.scalar);
        let ty = if c.nullable {
            TypeRef::named(&c.scalar)
        } else {
            TypeRef::non_null(&c.scalar)
        };
        let mut def = FieldDef::new(field.clone(), ty);
        if matches!(c.family, TypeFamily::Json | TypeFamily::Jsonb) {
            def = def.arg(InputValueDef {
                name: Name::new_static("path"),
                description: Some(Name::new_static("JSON select path")),
                ty: TypeRef::named(Name::new_static("String")),
                default: None,
            });
        }
        types.object.insert(field.clone(), def);
        let cmp = self.comparison(c);
        types.bool_exp.insert(
            field.clone(),
            InputValueDef::new(field.clone(), TypeRef::named(cmp)),
        );
        types.order_by.insert(
            field.clone(),
            InputValueDef::new(field, TypeRef::named(Name::new_static("order_by"))),
        );
    }

    fn relationship_field(&mut self, field: &str, r: &RoleRelationship, types: &mut TableTypes) {
        let field = Name::from(field);
        let Some(target) = self.target(&r.target) else {
            return;
        };
        let rn = target.type_name.clone();
        let def = match r.kind {
            RelationshipKind::Object => {
                types.order_by.insert(
                    field.clone(),
                    InputValueDef::new(field.clone(), TypeRef::named(format!("{rn}_order_by"))),
                );
                FieldDef::new(field.clone(), TypeRef::named(rn.as_str()))
                    .describe(Name::new_static("An object relationship"))
            }
            RelationshipKind::Array => with_args(
                FieldDef::new(field.clone(), TypeRef::list_of_non_null(rn.as_str())),
                list_args(&rn),
            )
            .describe(Name::new_static("An array relationship")),
        };
        types.object.insert(field.clone(), def);
        types.bool_exp.insert(
            field.clone(),
            InputValueDef::new(field, TypeRef::named(format!("{rn}_bool_exp"))),
        );
    }

    fn relationship_aggregate_field(
        &mut self,
        field: &str,
        r: &RoleRelationship,
        types: &mut TableTypes,
    ) {
        let field = Name::from(field);
        let Some(target) = self.target(&r.target) else {
            return;
        };
        let rn = target.type_name.clone();
        types.object.insert(
            field.clone(),
            with_args(
                FieldDef::new(field.clone(), TypeRef::non_null(format!("{rn}_aggregate"))),
                list_args(&rn),
            )
            .describe(Name::new_static("An aggregate relationship")),
        );
        types.order_by.insert(
            field.clone(),
            InputValueDef::new(field, TypeRef::named(format!("{rn}_aggregate_order_by"))),
        );
    }

    fn computed_field(&mut self, field: &str, cf: &RoleComputed, types: &mut TableTypes) {
        let field = Name::from(field);
        let mut args = Vec::new();
        if let Some(args_type) = &cf.args_type {
            self.function_args(cf, args_type);
            args.push(InputValueDef::new(
                Name::new_static("args"),
                TypeRef::named(args_type.as_str()),
            ));
        }
        let def = match &cf.returns {
            ComputedReturn::Scalar(pg) => {
                let scalar = scalar_for_type(pg);
                self.scalar(&scalar);
                with_args(FieldDef::new(field.clone(), TypeRef::named(scalar)), args)
            }
            ComputedReturn::Table { table, set } => {
                let Some(target) = self.target(table) else {
                    return;
                };
                let rn = target.type_name.clone();
                if *set {
                    args.extend(list_args(&rn));
                    with_args(
                        FieldDef::new(field.clone(), TypeRef::list_of_non_null(rn.as_str())),
                        args,
                    )
                } else {
                    with_args(
                        FieldDef::new(field.clone(), TypeRef::named(rn.as_str())),
                        args,
                    )
                }
            }
        };
        types
            .object
            .insert(field, def.describe(Name::new_static("A computed field")));
    }

    /// `<f>_args`: the arguments of a computed field's function the caller passes.
    fn function_args(&mut self, cf: &RoleComputed, args_type: &str) {
        let mut fields = IndexMap::new();
        for (i, arg) in cf.arguments.iter().enumerate() {
            let (name, pg_type) = (&arg.name, &arg.type_name);
            if i == cf.table_argument || Some(i) == cf.session_argument || name.is_empty() {
                continue;
            }
            let scalar = scalar_for_type(pg_type);
            self.scalar(&scalar);
            let name = Name::from(name.as_str());
            fields.insert(
                name.clone(),
                InputValueDef::new(name, TypeRef::named(scalar)),
            );
        }
        self.add(TypeDef::Input {
            name: args_type.into(),
            description: None,
            fields,
        });
    }
}
