//! Rule checks shared by operations and the resolver: enum tables, computed-field functions,
//! custom types. Errors carry paths relative to the checked object (`$`).

use super::{ComputedReturn, Resolved, ResolvedComputedField};
use crate::db_model::{DbModel, DbTable};
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
    let rows = db.enum_rows.get(name).cloned().unwrap_or_default();
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

/// The error of a computed field, in the wording of `docs/metadata-api.md`,
/// "`add_computed_field`".
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

/// A relationship, computed field or custom name must not start with `__`: GraphQL reserves
/// such names for introspection, and one in a type makes the whole schema invalid.
pub fn check_reserved_name(name: &str, path: JsonPath) -> Result<(), MetadataError> {
    if name.starts_with("__") {
        return Err(MetadataError::new(
            Code::NotSupported,
            path,
            format!("\"{name}\" cannot be used in the GraphQL schema: names starting with \"__\" are reserved for introspection"),
        ));
    }
    Ok(())
}

/// Checks a computed field's function and works out how to call it.
pub fn check_computed_field(
    table: &QualifiedTable,
    cf: &ComputedFieldEntry,
    db: &DbModel,
    resolved: &Resolved,
) -> Result<ResolvedComputedField, MetadataError> {
    let name = &cf.name.0;
    check_reserved_name(name, JsonPath::root().key("name"))?;
    let function_name = &cf.definition.function;
    let functions = db
        .functions
        .get(function_name)
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
    let mut check = FunctionCheck {
        function,
        function_name,
        names: function.input_names(),
        reasons: Vec::new(),
    };
    if function.volatility == "v" {
        check.reasons.push(format!(
            "the function \"{function_name}\" is of type VOLATILE; cannot be added as a computed field"
        ));
    }
    let table_argument = check.table_argument(cf.definition.table_argument.as_deref(), table);
    let session_argument =
        check.session_argument(cf.definition.session_argument.as_deref(), table_argument);
    let returns = check.returns(resolved);
    let mut reasons = check.reasons;
    match (reasons.len(), table_argument, returns) {
        (0, Some(table_argument), Some(returns)) => Ok(ResolvedComputedField {
            name: name.clone(),
            function: function_name.clone(),
            table_argument,
            session_argument,
            arguments: check
                .names
                .iter()
                .zip(&function.input_types)
                .enumerate()
                .map(|(i, (n, t))| super::FunctionArgument {
                    name: n.clone(),
                    type_name: t.name.clone(),
                    cast: t.pg_type(),
                    has_default: i + function.arg_defaults >= function.input_types.len(),
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

/// The rules a computed field's function must follow, each adding its reason when broken.
struct FunctionCheck<'a> {
    function: &'a crate::db_model::DbFunction,
    function_name: &'a QualifiedFunction,
    /// Names of the input arguments (empty when unnamed).
    names: Vec<String>,
    reasons: Vec<String>,
}

impl FunctionCheck<'_> {
    fn position(&self, arg: &str) -> Option<usize> {
        self.names.iter().position(|n| n == arg)
    }

    /// The row argument: the named one, or the first; it must take rows of `table`.
    fn table_argument(&mut self, named: Option<&str>, table: &QualifiedTable) -> Option<usize> {
        let function_name = self.function_name;
        let position = match named {
            None if self.function.input_types.is_empty() => {
                self.reasons.push(format!(
                    "the function \"{function_name}\" has no input arguments"
                ));
                None
            }
            None => Some(0),
            Some(arg) => {
                let pos = self.position(arg);
                if pos.is_none() {
                    self.reasons.push(format!("the table argument \"{arg}\" is not an input argument of the function \"{function_name}\""));
                }
                pos
            }
        };
        if let Some(pos) = position {
            let arg_type = &self.function.input_types[pos];
            if arg_type.relation().as_ref() != Some(table) {
                let arg = self
                    .names
                    .get(pos)
                    .filter(|n| !n.is_empty())
                    .cloned()
                    .unwrap_or_else(|| format!("${}", pos + 1));
                self.reasons.push(format!(
                    "the table argument \"{arg}\" is not of type \"{table}\""
                ));
            }
        }
        position
    }

    /// The session argument, if named: another input argument, of type json or jsonb.
    fn session_argument(&mut self, named: Option<&str>, table: Option<usize>) -> Option<usize> {
        let function_name = self.function_name;
        let arg = named?;
        match self.position(arg) {
            None => {
                self.reasons.push(format!("the session argument \"{arg}\" is not an input argument of the function \"{function_name}\""));
                None
            }
            Some(pos) if Some(pos) == table => {
                self.reasons.push(format!(
                    "the session argument \"{arg}\" is also the table argument"
                ));
                None
            }
            Some(pos) => {
                let t = &self.function.input_types[pos].name;
                if t != "json" && t != "jsonb" {
                    self.reasons.push(format!(
                        "the session argument \"{arg}\" is not of type json or jsonb"
                    ));
                }
                Some(pos)
            }
        }
    }

    /// What it returns: one scalar, or rows of a tracked table.
    fn returns(&mut self, resolved: &Resolved) -> Option<ComputedReturn> {
        let function_name = self.function_name;
        let function = self.function;
        let ret = &function.return_type;
        match ret.relation() {
            Some(rel) if ret.kind == "c" => {
                if resolved.table(&rel).is_some() {
                    Some(ComputedReturn::Table {
                        table: rel,
                        set: function.returns_set,
                    })
                } else {
                    self.reasons.push(format!("the function \"{function_name}\" returns rows of \"{rel}\", which is not a tracked table"));
                    None
                }
            }
            _ if ret.kind == "b" || ret.kind == "e" || ret.kind == "d" || ret.kind == "r" => {
                if function.returns_set {
                    self.reasons.push(format!(
                        "the function \"{function_name}\" returns a set of a scalar type"
                    ));
                    None
                } else {
                    Some(ComputedReturn::Scalar(ret.name.clone()))
                }
            }
            _ => {
                self.reasons.push(format!(
                    "the function \"{function_name}\" returning type \"{}\" is not a BASE type or a table row type",
                    ret.name
                ));
                None
            }
        }
    }
}

const BUILTIN_SCALARS: &[&str] = &["Int", "Float", "String", "Boolean", "ID"];

/// What a type name resolves to in the custom-type set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeKind {
    /// A built-in scalar, a Postgres scalar of the database, or a custom scalar.
    Scalar,
    /// A custom enum.
    Enum,
    /// A custom input object.
    Input,
    /// A custom object.
    Object,
}

/// What `name` refers to among the built-in scalars, the database's scalar types and the
/// custom types; `None` when it names nothing.
pub fn custom_type_kind(types: &CustomTypes, db: &DbModel, name: &str) -> Option<TypeKind> {
    if BUILTIN_SCALARS.contains(&name) || db.scalar_types.contains(name) {
        return Some(TypeKind::Scalar);
    }
    let named = |n: &GraphQLName| n.0 == name;
    if types.scalars.iter().any(|t| named(&t.name)) {
        Some(TypeKind::Scalar)
    } else if types.enums.iter().any(|t| named(&t.name)) {
        Some(TypeKind::Enum)
    } else if types.input_objects.iter().any(|t| named(&t.name)) {
        Some(TypeKind::Input)
    } else if types.objects.iter().any(|t| named(&t.name)) {
        Some(TypeKind::Object)
    } else {
        None
    }
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
    let mut check = TypeCheck {
        kinds: BTreeMap::new(),
        db,
        reasons: Vec::new(),
    };
    check.names(types);
    check.enums(&types.enums);
    for t in &types.input_objects {
        check.fields(&t.name.0, &t.fields, true);
    }
    for t in &types.objects {
        check.fields(&t.name.0, &t.fields, false);
    }
    check.relationships(&types.objects, resolved)?;
    let reasons = check.reasons;
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

/// The rules of a custom-type set, each adding its reason when broken.
struct TypeCheck<'a> {
    /// Every custom type by name.
    kinds: BTreeMap<&'a str, TypeKind>,
    db: &'a DbModel,
    reasons: Vec<String>,
}

impl<'a> TypeCheck<'a> {
    /// What a type name refers to: a built-in or database scalar, or a custom type.
    fn kind_of(&self, name: &str) -> Option<TypeKind> {
        if BUILTIN_SCALARS.contains(&name) || self.db.scalar_types.contains(name) {
            Some(TypeKind::Scalar)
        } else {
            self.kinds.get(name).copied()
        }
    }

    /// Each name defined once, and never a built-in scalar's.
    fn names(&mut self, types: &'a CustomTypes) {
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
            if self.kinds.insert(name, kind).is_some() || BUILTIN_SCALARS.contains(&name) {
                self.reasons
                    .push(format!("the type \"{name}\" is defined more than once"));
            }
        }
    }

    /// Enums have values, each once.
    fn enums(&mut self, enums: &[EnumType]) {
        for e in enums {
            let mut seen = HashSet::new();
            if e.values.is_empty() {
                self.reasons
                    .push(format!("the enum \"{}\" has no values", e.name));
            }
            for v in &e.values {
                if !seen.insert(&v.value.0) {
                    self.reasons.push(format!(
                        "the enum \"{}\" has duplicate value \"{}\"",
                        e.name, v.value
                    ));
                }
            }
        }
    }

    /// The fields of an input object (`input`) or object: some, each once, of existing types of
    /// the right side (no objects in inputs, no inputs in objects); object fields take no
    /// arguments.
    fn fields(&mut self, owner: &str, fields: &[TypeField], input: bool) {
        let mut seen = HashSet::new();
        if fields.is_empty() {
            self.reasons
                .push(format!("the type \"{owner}\" has no fields"));
        }
        for f in fields {
            if !seen.insert(&f.name.0) {
                self.reasons.push(format!(
                    "the type \"{owner}\" has duplicate field \"{}\"",
                    f.name
                ));
            }
            if !input && f.arguments.is_some() {
                self.reasons.push(format!("the field \"{owner}.{}\" has arguments, which custom object fields cannot have", f.name));
            }
            let Some(base) = base_type_name(&f.field_type) else {
                self.reasons.push(format!(
                    "the type \"{}\" of field \"{owner}.{}\" is not a valid GraphQL type",
                    f.field_type, f.name
                ));
                continue;
            };
            let reason = match (self.kind_of(base), input) {
                (None, _) => format!(
                    "the type \"{base}\" of field \"{owner}.{}\" does not exist",
                    f.name
                ),
                (Some(TypeKind::Object), true) => format!(
                    "the input field \"{owner}.{}\" refers to the object type \"{base}\"",
                    f.name
                ),
                (Some(TypeKind::Input), false) => format!(
                    "the field \"{owner}.{}\" refers to the input object type \"{base}\"",
                    f.name
                ),
                _ => continue,
            };
            self.reasons.push(reason);
        }
    }

    /// Why `field` of `object` cannot be the source of a relationship mapping, if it cannot:
    /// only a field holding one scalar or enum value can be compared with a column.
    fn unmappable(&self, object: &ObjectType, field: &str) -> Option<String> {
        let Some(f) = object.fields.iter().find(|f| f.name.0 == field) else {
            return Some(format!("is not a field of \"{}\"", object.name));
        };
        let ty = &f.field_type;
        if ty.trim_end_matches('!').starts_with('[') {
            return Some(format!(
                "has the list type \"{ty}\"; only scalar fields of \"{}\" can be mapped",
                object.name
            ));
        }
        let kind = base_type_name(ty).and_then(|base| self.kind_of(base));
        match kind {
            Some(TypeKind::Scalar | TypeKind::Enum) => None,
            _ => Some(format!(
                "has the non-scalar type \"{ty}\"; only scalar fields of \"{}\" can be mapped",
                object.name
            )),
        }
    }

    /// Relationships of objects to tables: tracked tables, mapped from scalar fields to
    /// existing columns, not named like a field.
    fn relationships(
        &mut self,
        objects: &[ObjectType],
        resolved: &Resolved,
    ) -> Result<(), MetadataError> {
        for (i, t) in objects.iter().enumerate() {
            for (j, rel) in t.relationships.iter().enumerate() {
                if t.fields.iter().any(|f| f.name == rel.name) {
                    self.reasons.push(format!(
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
                    if let Some(problem) = self.unmappable(t, field) {
                        self.reasons.push(format!(
                            "the field \"{field}\" in the mapping of relationship \"{}\" {problem}",
                            rel.name
                        ));
                    }
                    if remote.db.column(column).is_none() {
                        self.reasons.push(format!(
                            "the column \"{column}\" in the mapping of relationship \"{}\" does not exist in table \"{}\"",
                            rel.name, rel.remote_table
                        ));
                    }
                }
            }
        }
        Ok(())
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
