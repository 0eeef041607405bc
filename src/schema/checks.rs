//! Rule checks shared by operations and the resolver: enum tables, computed-field functions,
//! custom types. Errors carry paths relative to the checked object (`$`).

use super::{qualified_table, relation_name};
use super::{ComputedReturn, Resolved, ResolvedComputedField};
use crate::introspect::{DbModel, DbTable};
use crate::metadata::error::{not_exists_in_metadata, Code, MetadataError};
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use std::collections::{BTreeMap, HashSet};

/// Checks the enum-table rules; returns the (value, description) rows.
pub fn check_enum_table(
    name: &QualifiedTable,
    table: &DbTable,
    db: &DbModel,
) -> Result<Vec<(String, Option<String>)>, MetadataError> {
    let fail = |reason: String| {
        MetadataError::new(
            Code::ConstraintViolation,
            JsonPath::root(),
            format!("the table \"{name}\" cannot be used as an enum because {reason}"),
        )
    };
    let key = match table.primary_key() {
        Some([key]) => key,
        Some(_) => return Err(fail("its primary key is not a single column".to_owned())),
        None => return Err(fail("it has no primary key".to_owned())),
    };
    let is_text = |c: &str| {
        table
            .column(c)
            .map(|c| c.type_name == "text")
            .unwrap_or(false)
    };
    if !is_text(key) {
        return Err(fail(format!(
            "its primary key column \"{key}\" is not of type text"
        )));
    }
    let others: Vec<_> = table.columns.iter().filter(|c| &c.name != key).collect();
    match others.as_slice() {
        [] => {}
        [only] if only.type_name == "text" => {}
        [only] => {
            return Err(fail(format!(
                "its description column \"{}\" is not of type text",
                only.name
            )))
        }
        _ => {
            return Err(fail(
                "it has more than one column besides the primary key".to_owned(),
            ))
        }
    }
    let rows = db
        .enum_rows
        .get(&relation_name(name))
        .cloned()
        .unwrap_or_default();
    if rows.is_empty() {
        return Err(fail("it has no rows".to_owned()));
    }
    let bad: Vec<_> = rows
        .iter()
        .filter(|(v, _)| {
            !GraphQLName::is_valid(v) || matches!(v.as_str(), "true" | "false" | "null")
        })
        .map(|(v, _)| format!("\"{v}\""))
        .collect();
    if !bad.is_empty() {
        return Err(fail(format!(
            "these values are not valid GraphQL enum values: {}",
            bad.join(", ")
        )));
    }
    Ok(rows)
}

/// The error of a computed field, worded as the spec words it.
pub fn computed_field_error(
    table: &QualifiedTable,
    name: &str,
    code: Code,
    reason: String,
) -> MetadataError {
    MetadataError::new(
        code,
        JsonPath::root(),
        format!("in table \"{table}\": in computed field \"{name}\": the computed field \"{name}\" cannot be added to table \"{table}\" because {reason}"),
    )
}

/// Checks a computed field's function and works out how to call it.
pub fn check_computed_field(
    table: &QualifiedTable,
    cf: &ComputedFieldEntry,
    db: &DbModel,
    resolved: &Resolved,
) -> Result<ResolvedComputedField, MetadataError> {
    let name = &cf.name.0;
    let function_name = &cf.definition.function;
    let functions = db
        .functions
        .get(&relation_name(function_name))
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let function = match functions {
        [] => {
            return Err(MetadataError::new(
                Code::ConstraintViolation,
                JsonPath::root(),
                format!("in table \"{table}\": in computed field \"{name}\": no such function exists in postgres : \"{function_name}\""),
            ))
        }
        [f] => f,
        _ => {
            return Err(computed_field_error(
                table,
                name,
                Code::ConstraintViolation,
                format!("the function \"{function_name}\" is overloaded; overloaded functions are not supported"),
            ))
        }
    };
    let mut reasons = Vec::new();
    if function.volatility == "v" {
        reasons.push(format!(
            "the function \"{function_name}\" is of type VOLATILE; cannot be added as a computed field"
        ));
    }
    let names = function.input_names();
    let find = |arg: &str| names.iter().position(|n| n == arg);
    let table_argument = match &cf.definition.table_argument {
        None if function.input_types.is_empty() => {
            reasons.push(format!(
                "the function \"{function_name}\" has no input arguments"
            ));
            None
        }
        None => Some(0),
        Some(arg) => {
            let pos = find(arg);
            if pos.is_none() {
                reasons.push(format!("the table argument \"{arg}\" is not an input argument of the function \"{function_name}\""));
            }
            pos
        }
    };
    if let Some(pos) = table_argument {
        let arg_type = &function.input_types[pos];
        if arg_type.relation().map(qualified_table).as_ref() != Some(table) {
            let arg = names
                .get(pos)
                .filter(|n| !n.is_empty())
                .cloned()
                .unwrap_or_else(|| format!("${}", pos + 1));
            reasons.push(format!(
                "the table argument \"{arg}\" is not of type \"{table}\""
            ));
        }
    }
    let session_argument = match &cf.definition.session_argument {
        None => None,
        Some(arg) => match find(arg) {
            None => {
                reasons.push(format!("the session argument \"{arg}\" is not an input argument of the function \"{function_name}\""));
                None
            }
            Some(pos) if Some(pos) == table_argument => {
                reasons.push(format!(
                    "the session argument \"{arg}\" is also the table argument"
                ));
                None
            }
            Some(pos) => {
                let t = &function.input_types[pos].name;
                if t != "json" && t != "jsonb" {
                    reasons.push(format!(
                        "the session argument \"{arg}\" is not of type json or jsonb"
                    ));
                }
                Some(pos)
            }
        },
    };
    let ret = &function.return_type;
    let returns = match ret.relation().map(qualified_table) {
        Some(rel) if ret.kind == "c" => {
            if resolved.tables.contains_key(&rel) {
                Some(ComputedReturn::Table {
                    table: rel,
                    set: function.returns_set,
                })
            } else {
                reasons.push(format!("the function \"{function_name}\" returns rows of \"{rel}\", which is not a tracked table"));
                None
            }
        }
        _ if ret.kind == "b" || ret.kind == "e" || ret.kind == "d" || ret.kind == "r" => {
            if function.returns_set {
                reasons.push(format!(
                    "the function \"{function_name}\" returns a set of a scalar type"
                ));
                None
            } else {
                Some(ComputedReturn::Scalar(ret.name.clone()))
            }
        }
        _ => {
            reasons.push(format!(
                "the function \"{function_name}\" returning type \"{}\" is not a BASE type or a table row type",
                ret.name
            ));
            None
        }
    };
    match (reasons.len(), table_argument, returns) {
        (0, Some(table_argument), Some(returns)) => Ok(ResolvedComputedField {
            name: name.clone(),
            function: function_name.clone(),
            table_argument,
            session_argument,
            arguments: names
                .iter()
                .zip(&function.input_types)
                .map(|(n, t)| super::FunctionArgument {
                    name: n.clone(),
                    type_name: t.name.clone(),
                    cast: t.pg_type(),
                })
                .collect(),
            returns,
        }),
        (1, ..) => Err(computed_field_error(
            table,
            name,
            Code::ConstraintViolation,
            reasons.remove(0),
        )),
        _ => Err(computed_field_error(
            table,
            name,
            Code::ConstraintViolation,
            format!(
                "for the following reasons:\n{}",
                reasons
                    .iter()
                    .map(|r| format!("  • {r}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        )),
    }
}

const BUILTIN_SCALARS: &[&str] = &["Int", "Float", "String", "Boolean", "ID"];

/// What a type name resolves to in the custom-type set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TypeKind {
    Scalar,
    Enum,
    Input,
    Object,
}

/// Strips `[`, `]` and `!` from a type expression; `None` when it is malformed.
pub fn base_type_name(expr: &str) -> Option<&str> {
    let trimmed = expr.trim();
    let mut depth = 0usize;
    let mut rest = trimmed;
    while let Some(r) = rest.strip_prefix('[') {
        depth += 1;
        rest = r.trim_start();
    }
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let (name, mut tail) = rest.split_at(end);
    if !GraphQLName::is_valid(name) {
        return None;
    }
    tail = tail.trim_start();
    tail = tail.strip_prefix('!').unwrap_or(tail).trim_start();
    for _ in 0..depth {
        tail = tail.strip_prefix(']')?.trim_start();
        tail = tail.strip_prefix('!').unwrap_or(tail).trim_start();
    }
    tail.is_empty().then_some(name)
}

/// Validates a custom-type set against itself, the tracked tables and the database's types.
pub fn check_custom_types(
    types: &CustomTypes,
    resolved: &Resolved,
    db: &DbModel,
) -> Result<(), MetadataError> {
    let mut reasons = Vec::new();
    let mut kinds: BTreeMap<&str, TypeKind> = BTreeMap::new();
    let all = types
        .scalars
        .iter()
        .map(|t| (t.name.0.as_str(), TypeKind::Scalar))
        .chain(
            types
                .enums
                .iter()
                .map(|t| (t.name.0.as_str(), TypeKind::Enum)),
        )
        .chain(
            types
                .input_objects
                .iter()
                .map(|t| (t.name.0.as_str(), TypeKind::Input)),
        )
        .chain(
            types
                .objects
                .iter()
                .map(|t| (t.name.0.as_str(), TypeKind::Object)),
        );
    for (name, kind) in all {
        if kinds.insert(name, kind).is_some() || BUILTIN_SCALARS.contains(&name) {
            reasons.push(format!("the type \"{name}\" is defined more than once"));
        }
    }
    let kind_of = |name: &str| -> Option<TypeKind> {
        if BUILTIN_SCALARS.contains(&name) || db.scalar_types.contains(name) {
            Some(TypeKind::Scalar)
        } else {
            kinds.get(name).copied()
        }
    };
    for e in &types.enums {
        let mut seen = HashSet::new();
        if e.values.is_empty() {
            reasons.push(format!("the enum \"{}\" has no values", e.name));
        }
        for v in &e.values {
            if !seen.insert(&v.value.0) {
                reasons.push(format!(
                    "the enum \"{}\" has duplicate value \"{}\"",
                    e.name, v.value
                ));
            }
        }
    }
    let check_fields = |owner: &str,
                        fields: &[TypeField],
                        input: bool,
                        reasons: &mut Vec<String>| {
        let mut seen = HashSet::new();
        if fields.is_empty() {
            reasons.push(format!("the type \"{owner}\" has no fields"));
        }
        for f in fields {
            if !seen.insert(&f.name.0) {
                reasons.push(format!(
                    "the type \"{owner}\" has duplicate field \"{}\"",
                    f.name
                ));
            }
            if !input && f.arguments.is_some() {
                reasons.push(format!("the field \"{owner}.{}\" has arguments, which custom object fields cannot have", f.name));
            }
            let Some(base) = base_type_name(&f.field_type) else {
                reasons.push(format!(
                    "the type \"{}\" of field \"{owner}.{}\" is not a valid GraphQL type",
                    f.field_type, f.name
                ));
                continue;
            };
            match (kind_of(base), input) {
                (None, _) => reasons.push(format!(
                    "the type \"{base}\" of field \"{owner}.{}\" does not exist",
                    f.name
                )),
                (Some(TypeKind::Object), true) => reasons.push(format!(
                    "the input field \"{owner}.{}\" refers to the object type \"{base}\"",
                    f.name
                )),
                (Some(TypeKind::Input), false) => reasons.push(format!(
                    "the field \"{owner}.{}\" refers to the input object type \"{base}\"",
                    f.name
                )),
                _ => {}
            }
        }
    };
    for t in &types.input_objects {
        check_fields(&t.name.0, &t.fields, true, &mut reasons);
    }
    for t in &types.objects {
        check_fields(&t.name.0, &t.fields, false, &mut reasons);
    }
    for (i, t) in types.objects.iter().enumerate() {
        for (j, rel) in t.relationships.iter().enumerate() {
            if t.fields.iter().any(|f| f.name == rel.name) {
                reasons.push(format!(
                    "the relationship \"{}\" of object \"{}\" has the same name as a field",
                    rel.name, t.name
                ));
            }
            let Some(remote) = resolved.tables.get(&rel.remote_table) else {
                return Err(not_exists_in_metadata(
                    JsonPath::root()
                        .key("objects")
                        .index(i)
                        .key("relationships")
                        .index(j)
                        .key("remote_table"),
                    format!("table \"{}\" does not exist", rel.remote_table),
                ));
            };
            for (field, column) in &rel.field_mapping {
                let scalar_field = t.fields.iter().find(|f| f.name.0 == *field).and_then(|f| {
                    base_type_name(&f.field_type)
                        .and_then(&kind_of)
                        .filter(|k| matches!(k, TypeKind::Scalar | TypeKind::Enum))
                });
                if scalar_field.is_none() {
                    reasons.push(format!(
                        "the field \"{field}\" in the mapping of relationship \"{}\" is not a scalar field of \"{}\"",
                        rel.name, t.name
                    ));
                }
                if remote.db.column(column).is_none() {
                    reasons.push(format!(
                        "the column \"{column}\" in the mapping of relationship \"{}\" does not exist in table \"{}\"",
                        rel.name, rel.remote_table
                    ));
                }
            }
        }
    }
    match reasons.len() {
        0 => Ok(()),
        1 => Err(MetadataError::new(
            Code::InvalidCustomTypes,
            JsonPath::root(),
            format!(
                "validation for the given custom types failed because {}",
                reasons[0]
            ),
        )),
        _ => Err(MetadataError::new(
            Code::InvalidCustomTypes,
            JsonPath::root(),
            format!(
                "validation for the given custom types failed for the following reasons:\n{}",
                reasons
                    .iter()
                    .map(|r| format!("  • {r}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::base_type_name;

    #[test]
    fn base_type_names_strip_wrappers() {
        assert_eq!(base_type_name("Int"), Some("Int"));
        assert_eq!(base_type_name("[Foo!]!"), Some("Foo"));
        assert_eq!(base_type_name("[[a]]"), Some("a"));
        assert_eq!(base_type_name("[Foo"), None);
        assert_eq!(base_type_name("Foo]"), None);
        assert_eq!(base_type_name("1x"), None);
    }
}
