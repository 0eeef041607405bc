//! Checking permission BoolExps and presets against the resolved model, and finding what they
//! refer to (for dependency checks and renames).

use super::{FieldRef, Resolved, ResolvedTable};
use crate::introspect::DbColumn;
use crate::metadata::error::{
    not_exists_in_database, not_exists_in_metadata, parse_failed, Result,
};
use crate::metadata::path::JsonPath;
use crate::metadata::types::{json_kind, QualifiedTable};
use serde_json::Value;

/// One step of a location inside a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Object key.
    Key(String),
    /// Array index.
    Index(usize),
}

/// What an expression refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A column of a table.
    Column(QualifiedTable, String),
    /// A relationship of a table.
    Relationship(QualifiedTable, String),
    /// A table (reached by `_exists` or through a relationship).
    Table(QualifiedTable),
    /// A computed field of a table.
    ComputedField(QualifiedTable, String),
}

/// A reference and where it sits (the key naming it, from the start of the checked value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// What is referred to.
    pub target: Target,
    /// Location of the key or element that names it.
    pub pointer: Vec<Segment>,
}

impl Reference {
    /// A column reference.
    pub fn column(table: &QualifiedTable, column: &str, pointer: Vec<Segment>) -> Self {
        Reference {
            target: Target::Column(table.clone(), column.to_owned()),
            pointer,
        }
    }
}

/// The operator families of permission BoolExps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpClass {
    Equality,
    Order,
    List,
    IsNull,
    Text,
    JsonContain,
    JsonKey,
    JsonKeys,
    ColumnCompare,
}

fn classify(op: &str) -> Option<OpClass> {
    Some(match op {
        "eq" | "ne" | "neq" => OpClass::Equality,
        "gt" | "lt" | "gte" | "lte" => OpClass::Order,
        "in" | "nin" => OpClass::List,
        "is_null" => OpClass::IsNull,
        "like" | "nlike" | "ilike" | "nilike" | "similar" | "nsimilar" | "regex" | "iregex"
        | "nregex" | "niregex" => OpClass::Text,
        "contains" | "contained_in" => OpClass::JsonContain,
        "has_key" => OpClass::JsonKey,
        "has_keys_any" | "has_keys_all" => OpClass::JsonKeys,
        "ceq" | "cne" | "cneq" | "cgt" | "clt" | "cgte" | "clte" => OpClass::ColumnCompare,
        _ => return None,
    })
}

/// The type facts operators care about.
#[derive(Debug, Clone, Copy)]
struct OperandType<'a> {
    name: &'a str,
    text: bool,
    json: bool,
    jsonb: bool,
}

impl<'a> OperandType<'a> {
    fn of_column(c: &'a DbColumn) -> Self {
        OperandType {
            name: &c.data_type,
            text: c.is_text_like(),
            json: c.is_json(),
            jsonb: c.is_jsonb(),
        }
    }

    fn allows(&self, class: OpClass) -> bool {
        match class {
            OpClass::IsNull => true,
            OpClass::Equality => !self.json,
            OpClass::Order | OpClass::List | OpClass::ColumnCompare => !self.json && !self.jsonb,
            OpClass::Text => self.text,
            OpClass::JsonContain | OpClass::JsonKey | OpClass::JsonKeys => self.jsonb,
        }
    }
}

/// Strips the `$` or `_` prefix of an operator or connective.
fn operator_name(key: &str) -> Option<&str> {
    key.strip_prefix('$').or_else(|| key.strip_prefix('_'))
}

/// Whether a string is a session-variable reference (`x-svc-…`, any case).
pub fn is_session_variable(s: &str) -> bool {
    s.len() > 6 && s[..6].eq_ignore_ascii_case("x-svc-")
}

/// Checks `exp` as a BoolExp over `table` (`root` is the table the permission is defined on,
/// for `["$", col]` comparisons), appending every reference it makes to `refs`.
pub fn check_bool_exp(
    resolved: &Resolved,
    table: &QualifiedTable,
    root: &QualifiedTable,
    exp: &Value,
    path: &JsonPath,
    refs: &mut Vec<Reference>,
) -> Result<()> {
    Walker {
        resolved,
        root,
        refs,
    }
    .exp(table, exp, path, &[])
}

struct Walker<'a> {
    resolved: &'a Resolved,
    root: &'a QualifiedTable,
    refs: &'a mut Vec<Reference>,
}

fn child(pointer: &[Segment], segment: Segment) -> Vec<Segment> {
    let mut p = pointer.to_vec();
    p.push(segment);
    p
}

impl<'a> Walker<'a> {
    fn table(&self, name: &QualifiedTable, path: &JsonPath) -> Result<&'a ResolvedTable> {
        let resolved: &'a Resolved = self.resolved;
        resolved.tables.get(name).ok_or_else(|| {
            not_exists_in_metadata(path.clone(), format!("table \"{name}\" does not exist"))
        })
    }

    fn exp(
        &mut self,
        table: &QualifiedTable,
        exp: &Value,
        path: &JsonPath,
        pointer: &[Segment],
    ) -> Result<()> {
        let Value::Object(map) = exp else {
            return Err(parse_failed(
                path.clone(),
                format!(
                    "expected a boolean expression object, encountered {}",
                    json_kind(exp)
                ),
            ));
        };
        for (key, value) in map {
            let at = path.key(key);
            let here = child(pointer, Segment::Key(key.clone()));
            match operator_name(key) {
                Some("and") | Some("or") => {
                    let Value::Array(items) = value else {
                        return Err(parse_failed(
                            at,
                            format!("expected Array, encountered {}", json_kind(value)),
                        ));
                    };
                    for (i, item) in items.iter().enumerate() {
                        self.exp(table, item, &at.index(i), &child(&here, Segment::Index(i)))?;
                    }
                }
                Some("not") => self.exp(table, value, &at, &here)?,
                Some("exists") => self.exists(value, &at, &here)?,
                _ => self.field(table, key, value, &at, &here)?,
            }
        }
        Ok(())
    }

    fn exists(&mut self, value: &Value, path: &JsonPath, pointer: &[Segment]) -> Result<()> {
        let Value::Object(map) = value else {
            return Err(parse_failed(
                path.clone(),
                format!("expected Object, encountered {}", json_kind(value)),
            ));
        };
        let table_value = map
            .get("_table")
            .ok_or_else(|| parse_failed(path.clone(), "the key '_table' was not present"))?;
        let where_value = map
            .get("_where")
            .ok_or_else(|| parse_failed(path.clone(), "the key '_where' was not present"))?;
        let target: QualifiedTable =
            crate::metadata::parse::parse(table_value, &path.key("_table"))?;
        self.table(&target, &path.key("_table"))?;
        self.refs.push(Reference {
            target: Target::Table(target.clone()),
            pointer: child(pointer, Segment::Key("_table".into())),
        });
        self.exp(
            &target,
            where_value,
            &path.key("_where"),
            &child(pointer, Segment::Key("_where".into())),
        )
    }

    fn field(
        &mut self,
        table: &QualifiedTable,
        key: &str,
        value: &Value,
        path: &JsonPath,
        pointer: &[Segment],
    ) -> Result<()> {
        let owner = self.table(table, path)?;
        match owner.field(key) {
            Some(FieldRef::Column(column)) => {
                self.refs
                    .push(Reference::column(table, key, pointer.to_vec()));
                self.operators(
                    table,
                    key,
                    OperandType::of_column(column),
                    value,
                    path,
                    pointer,
                )
            }
            Some(FieldRef::Relationship(rel)) => {
                let target = &rel.target;
                self.refs.push(Reference {
                    target: Target::Relationship(table.clone(), key.to_owned()),
                    pointer: pointer.to_vec(),
                });
                self.refs.push(Reference {
                    target: Target::Table(target.clone()),
                    pointer: pointer.to_vec(),
                });
                self.exp(target, value, path, pointer)
            }
            // The BoolExp grammar has columns, relationships and `_exists`; computed fields are
            // selection-only, so a rule naming one could never be enforced.
            Some(FieldRef::ComputedField(_)) => Err(not_exists_in_database(
                path.clone(),
                format!("\"{key}\" is a computed field; boolean expressions accept columns and relationships only"),
            )),
            None => Err(not_exists_in_database(
                path.clone(),
                format!("column \"{key}\" does not exist"),
            )),
        }
    }

    fn operators(
        &mut self,
        table: &QualifiedTable,
        column: &str,
        operand: OperandType<'_>,
        value: &Value,
        path: &JsonPath,
        pointer: &[Segment],
    ) -> Result<()> {
        let Value::Object(ops) = value else {
            // Shorthand for equality against a literal or a session variable.
            return if operand.allows(OpClass::Equality) {
                Ok(())
            } else {
                Err(parse_failed(
                    path.clone(),
                    format!(
                        "operator \"_eq\" is not allowed on column \"{column}\" of type \"{}\"",
                        operand.name
                    ),
                ))
            };
        };
        for (key, arg) in ops {
            let at = path.key(key);
            let class = operator_name(key)
                .and_then(classify)
                .ok_or_else(|| parse_failed(at.clone(), format!("unknown operator \"{key}\"")))?;
            if !operand.allows(class) {
                return Err(parse_failed(
                    at,
                    format!(
                        "operator \"{key}\" is not allowed on column \"{column}\" of type \"{}\"",
                        operand.name
                    ),
                ));
            }
            let session = arg.as_str().map(is_session_variable).unwrap_or(false);
            match class {
                OpClass::IsNull if !arg.is_boolean() => {
                    return Err(parse_failed(
                        at,
                        format!("expected Boolean, encountered {}", json_kind(arg)),
                    ));
                }
                OpClass::List | OpClass::JsonKeys if !arg.is_array() && !session => {
                    return Err(parse_failed(
                        at,
                        format!("expected Array, encountered {}", json_kind(arg)),
                    ));
                }
                OpClass::ColumnCompare => self.column_compare(
                    table,
                    arg,
                    &at,
                    &child(pointer, Segment::Key(key.clone())),
                )?,
                _ => {}
            }
        }
        Ok(())
    }

    fn column_compare(
        &mut self,
        table: &QualifiedTable,
        arg: &Value,
        path: &JsonPath,
        pointer: &[Segment],
    ) -> Result<()> {
        let (target_table, column, pointer) = match arg {
            Value::String(c) => (table.clone(), c.clone(), pointer.to_vec()),
            Value::Array(items) if items.len() == 2 && items[0] == "$" && items[1].is_string() => (
                self.root.clone(),
                items[1].as_str().unwrap_or_default().to_owned(),
                child(pointer, Segment::Index(1)),
            ),
            _ => {
                return Err(parse_failed(
                    path.clone(),
                    "expected a column name or [\"$\", column] for a column comparison",
                ))
            }
        };
        let owner = self.table(&target_table, path)?;
        if owner.db.column(&column).is_none() {
            return Err(not_exists_in_database(
                path.clone(),
                format!("column \"{column}\" does not exist"),
            ));
        }
        self.refs
            .push(Reference::column(&target_table, &column, pointer));
        Ok(())
    }
}

/// Checks column presets (`set`): every key must be a column. Returns the column references.
pub fn check_presets(
    table: &ResolvedTable,
    presets: &Value,
    path: &JsonPath,
) -> Result<Vec<Reference>> {
    let Value::Object(map) = presets else {
        return Err(parse_failed(
            path.clone(),
            format!("expected Object, encountered {}", json_kind(presets)),
        ));
    };
    let mut refs = Vec::new();
    for key in map.keys() {
        if table.db.column(key).is_none() {
            return Err(not_exists_in_database(
                path.key(key),
                format!("column \"{key}\" does not exist"),
            ));
        }
        refs.push(Reference::column(
            &table.name,
            key,
            vec![Segment::Key(key.clone())],
        ));
    }
    Ok(refs)
}
