//! The GraphQL types of a role, generated from its model (`docs/graphql.md`, "What a role's schema
//! contains"): the query root ([`build`]), each table's object, filter, ordering and select-column
//! types ([`tables`]), comparison types ([`compare`]), aggregate types ([`aggregates`]) and the
//! mutation root with its inputs ([`mutations`]). Pure. See `docs/architecture.md`.

mod actions;
mod aggregates;
mod compare;
mod functions;
mod mutations;
mod native;
mod nested;
mod stream;
mod tables;

use super::model::{EnumTables, RoleModel, RoleTable, RootField, RootKind};
use super::types::*;
use crate::metadata::types::QualifiedTable;
use indexmap::IndexMap;
use std::collections::HashMap;
use std::sync::Arc;

/// Generates the GraphQL types of one role.
struct TypeBuilder<'a> {
    tables: &'a IndexMap<QualifiedTable, RoleTable>,
    /// The tracked functions the role may call ([`RootKind::Function`] positions).
    functions: &'a [crate::resolve::functions::ResolvedFunction],
    /// The native queries the role may run ([`RootKind::NativeQuery`] positions).
    native_queries: &'a [crate::resolve::native_queries::ResolvedNativeQuery],
    /// What the role may select of their logical models, by name.
    models: &'a IndexMap<String, RoleTable>,
    /// The rows of the native queries with relationships, by root field name.
    query_rows: &'a IndexMap<String, RoleTable>,
    /// The descriptions of the logical models, by name.
    model_docs: &'a IndexMap<String, crate::graphql::model::ModelDocs>,
    enums: &'a EnumTables,
    types: TypeSystem,
    /// Finished definitions of the roles built before, by name.
    known: &'a HashMap<Name, Arc<TypeDef>>,
}

pub use actions::{action_type_clashes, async_result_fields};

/// The type system of a role: its query root first, then every type its fields use (the
/// mutation and subscription roots among them when the role has fields there).
pub fn build(model: &RoleModel) -> TypeSystem {
    build_sharing(model, &HashMap::new())
}

/// [`build`], holding the definition in `known` (the finished types of roles built before)
/// of every type that comes out equal to it. Each type is compared as soon as it is complete
/// and a duplicate dropped at once, so a role whose view of most tables equals another's
/// costs little more than its differences, whichever role was built first.
pub fn build_sharing(model: &RoleModel, known: &HashMap<Name, Arc<TypeDef>>) -> TypeSystem {
    let mut builder = TypeBuilder {
        tables: &model.tables,
        functions: &model.functions,
        native_queries: &model.native_queries,
        models: &model.models,
        query_rows: &model.query_rows,
        model_docs: &model.model_docs,
        enums: &model.enums,
        types: TypeSystem::default(),
        known,
    };
    builder.types.query_root = "query_root".to_owned();
    builder.order_by_enum();
    let mut root_fields = builder.query_root_fields(&model.roots);
    for t in model.tables.values() {
        builder.table_types(t);
    }
    builder.model_types();
    builder.query_row_types();
    let mut has_mutations = builder.mutation_types(model);
    let actions = builder.action_roots(&model.actions, &model.custom_types);
    // Live queries: the same table fields as the query root, and asynchronous actions'
    // results.
    let mut subscription_fields = builder.query_root_fields(&model.subscription_roots);
    subscription_fields.extend(actions.subscription);
    if !subscription_fields.is_empty() {
        builder.add(TypeDef::Object {
            name: Name::new_static("subscription_root"),
            description: None,
            fields: subscription_fields,
            interfaces: Vec::new(),
        });
        builder.types.subscription_root = Some("subscription_root".to_owned());
    }
    root_fields.extend(actions.query);
    let mut mutation_fields = actions.mutation;
    mutation_fields.extend(builder.function_mutation_fields(model));
    if root_fields.is_empty() {
        let name = Name::new_static("no_queries_available");
        root_fields.insert(
            name.clone(),
            FieldDef::new(name, TypeRef::non_null(Name::new_static("String"))),
        );
    }
    builder.add(TypeDef::Object {
        name: Name::new_static("query_root"),
        description: None,
        fields: root_fields,
        interfaces: Vec::new(),
    });
    if !mutation_fields.is_empty() {
        builder.add(TypeDef::Object {
            name: Name::new_static("mutation_root"),
            description: None,
            fields: IndexMap::new(),
            interfaces: Vec::new(),
        });
        if let Some(root) = builder.types.get_mut("mutation_root") {
            if let TypeDef::Object { fields, .. } = root {
                fields.extend(mutation_fields);
            }
            // The only type changed after it was added: its members in order again.
            sort_members(root);
        }
        has_mutations = true;
    }
    if has_mutations {
        builder.types.mutation_root = Some("mutation_root".to_owned());
    }
    // The root first, as introspection clients expect it near the top, then the rest by name.
    let mut ordered = TypeSystem {
        types: IndexMap::with_capacity(builder.types.types.len()),
        query_root: builder.types.query_root.clone(),
        mutation_root: builder.types.mutation_root.clone(),
        subscription_root: builder.types.subscription_root.clone(),
        remote: Default::default(),
    };
    if let Some(root) = builder.types.types.shift_remove("query_root") {
        ordered.types.insert(Name::new_static("query_root"), root);
    }
    builder.types.types.sort_unstable_keys();
    for (name, def) in builder.types.types {
        ordered.types.entry(name).or_insert(def);
    }
    ordered
}

/// Sorts a type's fields (or enum values) by name, so that the schema a role sees does not
/// depend on column order or on the order objects were added to the metadata: the same
/// metadata always gives the same introspection, and schema diffs stay small.
///
/// The member lists are final here: their spare capacity is given back (a schema over many
/// tables holds a great many fields, each list grown by doubling).
pub(super) fn sort_members(def: &mut TypeDef) {
    match def {
        TypeDef::Object { fields, .. } | TypeDef::Interface { fields, .. } => {
            fields.sort_unstable_keys();
            fields.shrink_to_fit();
            for field in fields.values_mut() {
                field.args.shrink_to_fit();
            }
        }
        TypeDef::Input { fields, .. } => {
            fields.sort_unstable_keys();
            fields.shrink_to_fit();
        }
        TypeDef::Enum { values, .. } => {
            values.sort_unstable_by(|a, b| a.name.cmp(&b.name));
            values.shrink_to_fit();
        }
        TypeDef::Scalar { .. } => {}
        TypeDef::Union { members, .. } => members.sort_unstable(),
    }
}

/// The name of the built-in `Int` scalar.
const INT: Name = Name::new_static("Int");

/// Arguments of list fields: `distinct_on`, `limit`, `offset`, `order_by`, `where`.
pub(super) fn list_args(t: &str) -> Vec<InputValueDef> {
    vec![
        InputValueDef::new(
            Name::new_static("distinct_on"),
            TypeRef::nullable_list_of_non_null(format!("{t}_select_column")),
        ),
        InputValueDef::new(Name::new_static("limit"), TypeRef::named(INT)),
        InputValueDef::new(Name::new_static("offset"), TypeRef::named(INT)),
        InputValueDef::new(
            Name::new_static("order_by"),
            TypeRef::nullable_list_of_non_null(format!("{t}_order_by")),
        ),
        InputValueDef::new(
            Name::new_static("where"),
            TypeRef::named(format!("{t}_bool_exp")),
        ),
    ]
}

fn with_args(mut field: FieldDef, args: Vec<InputValueDef>) -> FieldDef {
    for a in args {
        field = field.arg(a);
    }
    field
}

impl TypeBuilder<'_> {
    /// Adds a complete type, its members in their final order, unless one of that name
    /// exists; an equal known definition is held instead of this one.
    fn add(&mut self, mut def: TypeDef) {
        if self.types.get(def.name()).is_some() {
            return;
        }
        sort_members(&mut def);
        match self.known.get(def.name()) {
            Some(known) if **known == def => {
                self.types.types.insert(def.name().clone(), known.clone());
            }
            _ => self.types.add(def),
        }
    }

    /// The table fields of `query_root` or `subscription_root` (the caller adds a placeholder
    /// when the query root would have no field at all).
    pub(super) fn query_root_fields(
        &mut self,
        roots: &IndexMap<String, RootField>,
    ) -> IndexMap<Name, FieldDef> {
        let mut root_fields = IndexMap::new();
        let tables = self.tables;
        for (field, root) in roots {
            let field = Name::from(field.as_str());
            if let RootKind::NativeQuery(i) = root.kind {
                let q = self.native_queries.get(i);
                let t = q.and_then(|q| self.models.get(&q.returns));
                if let (Some(q), Some(t)) = (q, t) {
                    let def = self.native_query_field(field.clone(), q, t);
                    root_fields.insert(field, def);
                }
                continue;
            }
            let Some(t) = tables.get(&root.table) else {
                continue;
            };
            let tn = &t.type_name;
            let def = match root.kind {
                RootKind::Select => with_args(
                    FieldDef::new(field.clone(), TypeRef::list_of_non_null(tn.as_str())),
                    list_args(tn),
                )
                .describe(format!("fetch data from the table: \"{}\"", root.table)),
                RootKind::Aggregate => with_args(
                    FieldDef::new(field.clone(), TypeRef::non_null(format!("{tn}_aggregate"))),
                    list_args(tn),
                )
                .describe(format!(
                    "fetch aggregated fields from the table: \"{}\"",
                    root.table
                )),
                RootKind::Stream => self.stream_field(field.clone(), t),
                // Answered above.
                RootKind::NativeQuery(_) => continue,
                RootKind::Function(i) | RootKind::FunctionAggregate(i) => {
                    let Some(f) = self.functions.get(i) else {
                        continue;
                    };
                    let aggregate = matches!(root.kind, RootKind::FunctionAggregate(_));
                    self.function_field(field.clone(), f, t, aggregate)
                }
                RootKind::SelectByPk => {
                    let mut def = FieldDef::new(field.clone(), TypeRef::named(tn.as_str()))
                        .describe(format!(
                            "fetch data from the table: \"{}\" using primary key columns",
                            root.table
                        ));
                    for column in t.primary_key.iter().flatten() {
                        if let Some(c) = t.columns.get(column) {
                            def = def.arg(InputValueDef::new(
                                column.as_str(),
                                TypeRef::non_null(c.scalar.as_str()),
                            ));
                        }
                    }
                    def
                }
            };
            root_fields.insert(field, def);
        }
        root_fields
    }

    pub(super) fn order_by_enum(&mut self) {
        let values = [
            ("asc", "in ascending order, nulls last"),
            ("asc_nulls_first", "in ascending order, nulls first"),
            ("asc_nulls_last", "in ascending order, nulls last"),
            ("desc", "in descending order, nulls first"),
            ("desc_nulls_first", "in descending order, nulls first"),
            ("desc_nulls_last", "in descending order, nulls last"),
        ];
        self.add(TypeDef::Enum {
            name: Name::new_static("order_by"),
            description: Some(Name::new_static("column ordering options")),
            values: values
                .iter()
                .map(|(n, d)| EnumValueDef {
                    name: Name::new_static(n),
                    description: Some(Name::new_static(d)),
                })
                .collect(),
        });
    }

    /// Registers a custom scalar (built-ins and enum types are skipped).
    pub(super) fn scalar_type(&mut self, scalar: &str) {
        self.scalar(scalar);
    }

    pub(super) fn scalar(&mut self, scalar: &str) {
        if BUILTIN_SCALARS.contains(&scalar) {
            return;
        }
        // An enum column's type, wherever the column appears: a role may write a table it
        // cannot select, and its insert and update inputs name the enum all the same.
        if let Some((name, values)) = self.enums.values().find(|(n, _)| n == scalar) {
            self.add(TypeDef::Enum {
                name: name.into(),
                description: None,
                values: tables::enum_values(values),
            });
            return;
        }
        self.add(TypeDef::Scalar {
            name: scalar.into(),
            description: None,
        });
    }

    /// An input object type with these fields.
    pub(super) fn input(&mut self, name: String, fields: Vec<InputValueDef>) {
        let fields = fields.into_iter().map(|f| (f.name.clone(), f)).collect();
        self.add(TypeDef::Input {
            name: name.into(),
            description: None,
            fields,
        });
    }
}
