//! Actions in a role's schema (`docs/actions.md`, "In the schema"): each action the role may call
//! as a query or mutation root field; an asynchronous action's mutation answers its id, and its
//! result is read by id from the query and subscription roots. The custom types the actions reach
//! (arguments, outputs, and their fields, recursively) join the schema under their own names; an
//! object type's relationships to tables appear where the role may select the table.

use super::{list_args, with_args, TypeBuilder};
use crate::graphql::types::*;
use crate::metadata::types::ActionType;
use crate::resolve::actions::{ResolvedAction, ResolvedCustomTypes};
use crate::resolve::RelationshipKind;
use indexmap::IndexMap;
use std::collections::BTreeSet;

/// The root fields actions add, by root.
#[derive(Debug, Default)]
pub(super) struct ActionRoots {
    /// `query_root`: query actions, and asynchronous results by id.
    pub query: IndexMap<Name, FieldDef>,
    /// `mutation_root`: mutation actions.
    pub mutation: IndexMap<Name, FieldDef>,
    /// `subscription_root`: asynchronous results by id.
    pub subscription: IndexMap<Name, FieldDef>,
}

/// The fields of an asynchronous action's result object, `output` typed as the action's
/// output (nullable: it is null until the handler answered).
pub fn async_result_fields(output: &TypeRef) -> IndexMap<Name, FieldDef> {
    [
        FieldDef::new(Name::new_static("id"), TypeRef::non_null("uuid")),
        FieldDef::new(
            Name::new_static("created_at"),
            TypeRef::non_null("timestamptz"),
        ),
        FieldDef::new(Name::new_static("errors"), TypeRef::named("json")),
        FieldDef::new(Name::new_static("output"), output.nullable().clone()),
    ]
    .into_iter()
    .map(|f| (f.name.clone(), f))
    .collect()
}

/// The custom types an action reaches (its arguments, its output, their fields recursively),
/// by name; built-in and Postgres scalars are not custom types and are left out.
fn reached(action: &ResolvedAction, custom: &ResolvedCustomTypes) -> BTreeSet<String> {
    let definition = &action.entry.definition;
    let mut todo: Vec<String> = definition
        .arguments
        .iter()
        .map(|a| a.arg_type.clone())
        .chain([definition.output_type.clone()])
        .filter_map(|t| TypeRef::parse(&t).map(|t| t.base().to_owned()))
        .collect();
    let mut out = BTreeSet::new();
    while let Some(name) = todo.pop() {
        let fields: Vec<&str> = if let Some(o) = custom.object(&name) {
            o.fields.iter().map(|f| f.field_type.as_str()).collect()
        } else if let Some(i) = custom.input_object(&name) {
            i.fields.iter().map(|f| f.field_type.as_str()).collect()
        } else if custom.enumeration(&name).is_some() || custom.scalar(&name).is_some() {
            Vec::new()
        } else {
            continue;
        };
        if out.insert(name) {
            todo.extend(
                fields
                    .into_iter()
                    .filter_map(|t| TypeRef::parse(t).map(|t| t.base().to_owned())),
            );
        }
    }
    out
}

/// For each action: why it cannot be served next to the tables, if it cannot — a custom type
/// it reaches, or its asynchronous result type, has the name of a type the tables generate
/// (`author`, `author_bool_exp`, …), which would make one name mean two types.
pub fn action_type_clashes(
    resolved: &crate::resolve::Resolved,
    actions: &[ResolvedAction],
) -> Vec<Option<String>> {
    // The tables' types alone: the actions already served bring their own custom types,
    // which a new action may share.
    let mut model = crate::graphql::model::build(resolved, crate::graphql::model::ADMIN);
    model.actions.clear();
    let tables = super::build(&model);
    let custom = &resolved.custom_types;
    actions
        .iter()
        .map(|action| {
            let mut names = reached(action, custom);
            if action.is_async() {
                names.insert(action.name().to_owned());
            }
            names
                .into_iter()
                .find(|n| tables.get(n).is_some())
                .map(|n| {
                    format!(
                        "the type \"{n}\" of action \"{}\" has the name of a type the tracked tables generate",
                        action.name()
                    )
                })
        })
        .collect()
}

impl TypeBuilder<'_> {
    /// The root fields of the role's actions, registering every type they use.
    pub(super) fn action_roots(
        &mut self,
        actions: &[ResolvedAction],
        custom: &ResolvedCustomTypes,
    ) -> ActionRoots {
        let mut roots = ActionRoots::default();
        for action in actions {
            let definition = &action.entry.definition;
            let Some(output) = TypeRef::parse(&definition.output_type) else {
                continue;
            };
            let mut args = Vec::new();
            for argument in &definition.arguments {
                let Some(ty) = TypeRef::parse(&argument.arg_type) else {
                    continue;
                };
                self.custom_input(ty.base(), custom);
                let mut arg = InputValueDef::new(argument.name.0.as_str(), ty);
                arg.description = text(&argument.description);
                args.push(arg);
            }
            self.custom_object(output.base(), custom);
            let name = Name::from(action.name());
            let mut field = with_args(FieldDef::new(name.clone(), output.clone()), args);
            field.description = text(&action.entry.comment);
            if action.is_async() {
                field.ty = TypeRef::non_null("uuid");
                self.scalar("uuid");
                self.scalar("timestamptz");
                self.scalar("json");
                let description =
                    Name::from(format!("the result of the asynchronous action \"{name}\""));
                self.add(TypeDef::Object {
                    name: name.clone(),
                    description: Some(description.clone()),
                    fields: async_result_fields(&output),
                    interfaces: Vec::new(),
                });
                let result = FieldDef::new(name.clone(), TypeRef::named(name.clone()))
                    .arg(InputValueDef::new(
                        Name::new_static("id"),
                        TypeRef::non_null("uuid"),
                    ))
                    .describe(description);
                roots.query.insert(name.clone(), result.clone());
                roots.subscription.insert(name.clone(), result);
                roots.mutation.insert(name, field);
            } else if definition.action_type == ActionType::Query {
                roots.query.insert(name, field);
            } else {
                roots.mutation.insert(name, field);
            }
        }
        roots
    }

    /// Registers a type an argument names: a scalar, a custom enum, or a custom input object
    /// with everything its fields name.
    fn custom_input(&mut self, name: &str, custom: &ResolvedCustomTypes) {
        if self.types.get(name).is_some() {
            return;
        }
        if let Some(input) = custom.input_object(name) {
            let fields: IndexMap<Name, InputValueDef> = input
                .fields
                .iter()
                .filter_map(|f| {
                    let ty = TypeRef::parse(&f.field_type)?;
                    let mut def = InputValueDef::new(f.name.0.as_str(), ty);
                    def.description = text(&f.description);
                    Some((def.name.clone(), def))
                })
                .collect();
            let bases: Vec<String> = fields.values().map(|f| f.ty.base().to_owned()).collect();
            self.add(TypeDef::Input {
                name: name.into(),
                description: text(&input.description),
                fields,
            });
            for base in bases {
                self.custom_input(&base, custom);
            }
            return;
        }
        self.custom_leaf(name, custom);
    }

    /// Registers an output type: a custom object with its fields' types and the relationships
    /// the role can follow, or a leaf.
    fn custom_object(&mut self, name: &str, custom: &ResolvedCustomTypes) {
        if self.types.get(name).is_some() {
            return;
        }
        let Some(object) = custom.object(name) else {
            self.custom_leaf(name, custom);
            return;
        };
        let mut fields: IndexMap<Name, FieldDef> = object
            .fields
            .iter()
            .filter_map(|f| {
                let ty = TypeRef::parse(&f.field_type)?;
                let mut def = FieldDef::new(f.name.0.as_str(), ty);
                def.description = text(&f.description);
                Some((def.name.clone(), def))
            })
            .collect();
        let bases: Vec<String> = fields.values().map(|f| f.ty.base().to_owned()).collect();
        for rel in custom.relationships.get(name).into_iter().flatten() {
            let Some(table) = self.tables.get(&rel.target) else {
                continue;
            };
            let t = &table.type_name;
            let def = match rel.kind {
                RelationshipKind::Object => {
                    FieldDef::new(rel.name.as_str(), TypeRef::named(t.as_str()))
                }
                RelationshipKind::Array => with_args(
                    FieldDef::new(rel.name.as_str(), TypeRef::list_of_non_null(t.as_str())),
                    list_args(t),
                ),
            };
            fields.insert(def.name.clone(), def);
        }
        self.add(TypeDef::Object {
            name: name.into(),
            description: text(&object.description),
            fields,
            interfaces: Vec::new(),
        });
        for base in bases {
            self.custom_object(&base, custom);
        }
    }

    /// Registers a custom enum or a scalar (built-in, Postgres or custom).
    fn custom_leaf(&mut self, name: &str, custom: &ResolvedCustomTypes) {
        if let Some(e) = custom.enumeration(name) {
            self.add(TypeDef::Enum {
                name: name.into(),
                description: text(&e.description),
                values: e
                    .values
                    .iter()
                    .map(|v| EnumValueDef {
                        name: v.value.0.as_str().into(),
                        description: text(&v.description),
                    })
                    .collect(),
            });
            return;
        }
        if let Some(s) = custom.scalar(name) {
            self.add(TypeDef::Scalar {
                name: name.into(),
                description: text(&s.description),
            });
            return;
        }
        self.scalar(name);
    }
}
