//! A type system checked as a whole by async-graphql's schema builder: every referenced type
//! exists, objects implement their interfaces, union members are objects, names are valid.
//! Used for what Basalt does not generate itself (remote schemas' introspection results);
//! its own schemas are answered by [`super::introspection`] without this second copy.

use super::types::{Name, TypeDef, TypeRef, TypeSystem, BUILTIN_SCALARS};
use async_graphql::dynamic::{self as dynamic, FieldFuture};

fn type_ref(ty: &TypeRef) -> dynamic::TypeRef {
    match ty {
        TypeRef::Named(n) => dynamic::TypeRef::Named(n.to_string().into()),
        TypeRef::List(inner) => dynamic::TypeRef::List(Box::new(type_ref(inner))),
        TypeRef::NonNull(inner) => dynamic::TypeRef::NonNull(Box::new(type_ref(inner))),
    }
}

fn input_value(def: &super::types::InputValueDef) -> dynamic::InputValue {
    let mut v = dynamic::InputValue::new(def.name.clone(), type_ref(&def.ty));
    if let Some(d) = &def.description {
        v = v.description(d.clone());
    }
    if let Some(default) = &def.default {
        if let Ok(value) = async_graphql::Value::from_json((**default).clone()) {
            v = v.default_value(value);
        }
    }
    v
}

/// An object field that is never resolved here (only its definition is served).
fn field(f: &super::types::FieldDef) -> dynamic::Field {
    let mut field = dynamic::Field::new(f.name.clone(), type_ref(&f.ty), |_| {
        FieldFuture::from_value(None)
    });
    if let Some(d) = &f.description {
        field = field.description(d.clone());
    }
    for a in f.args.iter() {
        field = field.argument(input_value(a));
    }
    field
}

/// Checks a type system by building it into an async-graphql schema (then dropped).
pub fn check(types: &TypeSystem) -> Result<(), dynamic::SchemaError> {
    let mut builder = dynamic::Schema::build(
        &types.query_root,
        types.mutation_root.as_deref(),
        types.subscription_root.as_deref(),
    );
    for def in types.types.values() {
        builder = match &**def {
            TypeDef::Object { name, fields, .. }
                if types.subscription_root.as_deref() == Some(name.as_str()) =>
            {
                builder.register(subscription(name, fields))
            }
            TypeDef::Object {
                name,
                description,
                fields,
                interfaces,
            } => {
                let mut object = dynamic::Object::new(name.clone());
                if let Some(d) = description {
                    object = object.description(d.clone());
                }
                for f in fields.values() {
                    object = object.field(field(f));
                }
                for i in interfaces {
                    object = object.implement(i.clone());
                }
                builder.register(object)
            }
            TypeDef::Interface {
                name,
                description,
                fields,
            } => {
                let mut interface = dynamic::Interface::new(name.clone());
                if let Some(d) = description {
                    interface = interface.description(d.clone());
                }
                for f in fields.values() {
                    let mut field = dynamic::InterfaceField::new(f.name.clone(), type_ref(&f.ty));
                    if let Some(d) = &f.description {
                        field = field.description(d.clone());
                    }
                    for a in f.args.iter() {
                        field = field.argument(input_value(a));
                    }
                    interface = interface.field(field);
                }
                builder.register(interface)
            }
            TypeDef::Union {
                name,
                description,
                members,
            } => {
                let mut union = dynamic::Union::new(name.clone());
                if let Some(d) = description {
                    union = union.description(d.clone());
                }
                for m in members {
                    union = union.possible_type(m.clone());
                }
                builder.register(union)
            }
            TypeDef::Input {
                name,
                description,
                fields,
            } => {
                let mut input = dynamic::InputObject::new(name.clone());
                if let Some(d) = description {
                    input = input.description(d.clone());
                }
                for f in fields.values() {
                    input = input.field(input_value(f));
                }
                builder.register(input)
            }
            TypeDef::Enum {
                name,
                description,
                values,
            } => {
                let mut e = dynamic::Enum::new(name.clone());
                if let Some(d) = description {
                    e = e.description(d.clone());
                }
                for v in values {
                    let mut item = dynamic::EnumItem::new(v.name.clone());
                    if let Some(d) = &v.description {
                        item = item.description(d.clone());
                    }
                    e = e.item(item);
                }
                builder.register(e)
            }
            TypeDef::Scalar { name, description } if !BUILTIN_SCALARS.contains(&name.as_str()) => {
                let mut s = dynamic::Scalar::new(name.clone());
                if let Some(d) = description {
                    s = s.description(d.clone());
                }
                builder.register(s)
            }
            TypeDef::Scalar { .. } => builder,
        };
    }
    builder.finish().map(drop)
}

/// The subscription root as async-graphql models it (a `Subscription`, not an `Object`). Like
/// every data field here, its fields are never resolved: live queries run in `crate::live`.
fn subscription(
    name: &str,
    fields: &indexmap::IndexMap<Name, super::types::FieldDef>,
) -> dynamic::Subscription {
    let mut root = dynamic::Subscription::new(name);
    for f in fields.values() {
        let mut field = dynamic::SubscriptionField::new(f.name.clone(), type_ref(&f.ty), |_| {
            dynamic::SubscriptionFieldFuture::new(async {
                Ok(futures_util::stream::empty::<
                    async_graphql::Result<dynamic::FieldValue<'static>>,
                >())
            })
        });
        if let Some(d) = &f.description {
            field = field.description(d.clone());
        }
        for a in f.args.iter() {
            field = field.argument(input_value(a));
        }
        root = root.field(field);
    }
    root
}
