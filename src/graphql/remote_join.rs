//! The fields remote relationships add to table types (`docs/metadata-api.md`, "Remote
//! relationships"), once the remote schemas' types are merged: on `<t>`, the leaf field of the
//! relationship's chain with its outermost non-null removed (a row whose join value is null gets
//! `null`), taking the leaf's arguments that the template does not fill. An input object the
//! template fills only in part becomes a copy without the filled keys,
//! `<Input>_remote_rel_<t><name>`.

use super::model::{RoleModel, TableField};
use super::remote::RemoteTypes;
use super::types::{FieldDef, InputValueDef, Name, TypeDef, TypeRef, TypeSystem};
use serde_json::Value;

/// Adds every remote relationship field of the role's tables to `types`.
pub fn add_fields(types: &mut TypeSystem, model: &RoleModel, remotes: &[RemoteTypes]) {
    for table in model.tables.values() {
        for (name, field) in &table.fields {
            let TableField::RemoteJoin(join) = field else {
                continue;
            };
            let Some(remote) = remotes.iter().find(|r| r.remote == join.remote) else {
                continue;
            };
            let Some(leaf) = leaf(types, remote, &join.target.remote_field) else {
                continue;
            };
            let chain = join.target.remote_field.chain();
            let arguments = chain.last().map(|f| &f.arguments);
            let mut args = Vec::new();
            let mut copies = Vec::new();
            for arg in &leaf.args {
                match arguments.and_then(|a| a.get(arg.name.as_str())) {
                    None => args.push(arg.clone()),
                    Some(filled) => {
                        let copy =
                            format!("{}_remote_rel_{}{name}", arg.ty.base(), table.type_name);
                        if let Some(def) = partial_copy(types, arg.ty.base(), filled, &copy) {
                            copies.push(def);
                            args.push(InputValueDef {
                                ty: rename_base(&arg.ty, &copy),
                                ..arg.clone()
                            });
                        }
                    }
                }
            }
            for copy in copies {
                types.add(copy);
            }
            let def = FieldDef {
                name: name.as_str().into(),
                description: leaf.description.clone(),
                args,
                ty: leaf.ty.nullable().clone(),
            };
            if let Some(TypeDef::Object { fields, .. }) = types.get_mut(&table.type_name) {
                fields.insert(name.as_str().into(), def);
            }
        }
    }
}

/// The leaf field of a chain, as the merged types define it.
fn leaf(
    types: &TypeSystem,
    remote: &RemoteTypes,
    field: &crate::metadata::types::RemoteField,
) -> Option<FieldDef> {
    let mut def = remote.query.get(field.name.as_str())?.clone();
    let mut level = field;
    while let Some(next) = level.field.as_deref() {
        let Some(TypeDef::Object { fields, .. }) = types.get(def.ty.base()) else {
            return None;
        };
        def = fields.get(next.name.as_str())?.clone();
        level = next;
    }
    Some(def)
}

/// For an argument of input type `input` that the template gives `filled`: `None` when the
/// template fills it completely (the argument goes), else a copy of the input type named
/// `name` without the keys it fills completely.
fn partial_copy(types: &TypeSystem, input: &str, filled: &Value, name: &str) -> Option<TypeDef> {
    let Value::Object(keys) = filled else {
        return None;
    };
    let Some(TypeDef::Input {
        description,
        fields,
        ..
    }) = types.get(input)
    else {
        return None;
    };
    let left: Vec<(Name, InputValueDef)> = fields
        .iter()
        .filter(|(key, field)| match keys.get(key.as_str()) {
            None => true,
            Some(inner) => !fills(types, field.ty.base(), inner),
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if left.is_empty() {
        return None;
    }
    Some(TypeDef::Input {
        name: name.into(),
        description: description.clone(),
        fields: left.into_iter().collect(),
    })
}

/// Whether a template value fills a value of type `base` completely: anything but an object
/// does; an object does when it fills every field of the input type.
fn fills(types: &TypeSystem, base: &str, value: &Value) -> bool {
    let Value::Object(keys) = value else {
        return true;
    };
    match types.get(base) {
        Some(TypeDef::Input { fields, .. }) => fields.iter().all(|(key, field)| {
            keys.get(key.as_str())
                .is_some_and(|inner| fills(types, field.ty.base(), inner))
        }),
        _ => true,
    }
}

/// `ty` with its named type replaced by `name`, wrappers kept.
fn rename_base(ty: &TypeRef, name: &str) -> TypeRef {
    match ty {
        TypeRef::Named(_) => TypeRef::named(name),
        TypeRef::List(inner) => TypeRef::List(Box::new(rename_base(inner, name))),
        TypeRef::NonNull(inner) => TypeRef::NonNull(Box::new(rename_base(inner, name))),
    }
}
