//! Checking permission BoolExps and presets against the resolved model: what they refer to (for
//! dependency checks and renames), and the typed [`BoolExp`] and [`Preset`]s they resolve to.
//! Operators come from the one table in [`super::operators`].

use super::operators::{self, Operand, OperatorKind, TypeFamily};
use super::rules::{BoolExp, ColumnRef, Condition, Preset, PresetValue, RuleValue};
use super::{FieldRef, Resolved, ResolvedTable};
use crate::db_model::DbColumn;
use crate::db_model::PgType;
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

/// Strips the `$` or `_` prefix of an operator or connective.
fn operator_name(key: &str) -> Option<&str> {
    key.strip_prefix('$').or_else(|| key.strip_prefix('_'))
}

/// Whether a string is a session-variable reference (`x-svc-…`, any case).
pub fn is_session_variable(s: &str) -> bool {
    // Bytes, not `&s[..6]`: the sixth byte may fall inside a character (`x-svcé`).
    let prefix = crate::session::PREFIX.as_bytes();
    s.len() > prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Checks `exp` as a BoolExp over `table` (`root` is the table the permission is defined on,
/// for `["$", col]` comparisons), appending every reference it makes to `refs`; returns it
/// resolved.
pub fn check_bool_exp(
    resolved: &Resolved,
    table: &QualifiedTable,
    root: &QualifiedTable,
    exp: &Value,
    path: &JsonPath,
    refs: &mut Vec<Reference>,
) -> Result<BoolExp> {
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
        resolved.table(name).ok_or_else(|| {
            not_exists_in_metadata(path.clone(), format!("table \"{name}\" does not exist"))
        })
    }

    fn exp(
        &mut self,
        table: &QualifiedTable,
        exp: &Value,
        path: &JsonPath,
        pointer: &[Segment],
    ) -> Result<BoolExp> {
        let Value::Object(map) = exp else {
            return Err(parse_failed(
                path.clone(),
                format!(
                    "expected a boolean expression object, encountered {}",
                    json_kind(exp)
                ),
            ));
        };
        let mut all = Vec::with_capacity(map.len());
        for (key, value) in map {
            let at = path.key(key);
            let here = child(pointer, Segment::Key(key.clone()));
            let part = match operator_name(key) {
                Some(connective @ ("and" | "or")) => {
                    let Value::Array(items) = value else {
                        return Err(parse_failed(
                            at,
                            format!("expected Array, encountered {}", json_kind(value)),
                        ));
                    };
                    let parts = items
                        .iter()
                        .enumerate()
                        .map(|(i, item)| {
                            self.exp(table, item, &at.index(i), &child(&here, Segment::Index(i)))
                        })
                        .collect::<Result<Vec<_>>>()?;
                    if connective == "and" {
                        BoolExp::And(parts)
                    } else {
                        BoolExp::Or(parts)
                    }
                }
                Some("not") => BoolExp::Not(Box::new(self.exp(table, value, &at, &here)?)),
                Some("exists") => self.exists(value, &at, &here)?,
                _ => self.field(table, key, value, &at, &here)?,
            };
            all.push(part);
        }
        Ok(BoolExp::And(all))
    }

    fn exists(&mut self, value: &Value, path: &JsonPath, pointer: &[Segment]) -> Result<BoolExp> {
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
        let filter = self.exp(
            &target,
            where_value,
            &path.key("_where"),
            &child(pointer, Segment::Key("_where".into())),
        )?;
        Ok(BoolExp::Exists {
            table: target,
            filter: Box::new(filter),
        })
    }

    fn field(
        &mut self,
        table: &QualifiedTable,
        key: &str,
        value: &Value,
        path: &JsonPath,
        pointer: &[Segment],
    ) -> Result<BoolExp> {
        let owner = self.table(table, path)?;
        match owner.field(key) {
            Some(FieldRef::Column(column)) => {
                self.refs
                    .push(Reference::column(table, key, pointer.to_vec()));
                let conditions = self.conditions(table, column, value, path, pointer)?;
                Ok(BoolExp::Column {
                    column: column.name.clone(),
                    conditions,
                })
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
                let filter = self.exp(target, value, path, pointer)?;
                Ok(BoolExp::Related {
                    target: target.clone(),
                    mapping: rel.mapping.clone(),
                    filter: Box::new(filter),
                })
            }
            // The BoolExp grammar has columns, relationships and `_exists`; computed fields are
            // selection-only, so a rule naming one could never be enforced.
            Some(FieldRef::ComputedField(_)) => Err(not_exists_in_database(
                path.clone(),
                format!("\"{key}\" is a computed field; boolean expressions accept columns and relationships only"),
            )),
            Some(FieldRef::RemoteRelationship(_)) => Err(not_exists_in_database(
                path.clone(),
                format!("\"{key}\" is a remote relationship; boolean expressions accept columns and relationships only"),
            )),
            None => Err(not_exists_in_database(
                path.clone(),
                format!("column \"{key}\" does not exist"),
            )),
        }
    }

    /// The conditions `value` puts on a column: a shorthand equality, or an object of operators.
    fn conditions(
        &mut self,
        table: &QualifiedTable,
        column: &DbColumn,
        value: &Value,
        path: &JsonPath,
        pointer: &[Segment],
    ) -> Result<Vec<Condition>> {
        let family = TypeFamily::of(column);
        let not_allowed = |at: JsonPath, key: &str| {
            parse_failed(
                at,
                format!(
                    "operator \"{key}\" is not allowed on column \"{}\" of type \"{}\"",
                    column.name, column.data_type
                ),
            )
        };
        let Value::Object(ops) = value else {
            // Shorthand for equality against a literal or a session variable.
            let eq = operators::operator("eq").filter(|o| o.permission.contains(&family));
            return match eq {
                Some(_) => Ok(vec![Condition::Compare {
                    op: operators::CompareOp::Eq,
                    value: RuleValue::of(value),
                    cast: column.pg_type(),
                }]),
                None => Err(not_allowed(path.clone(), "_eq")),
            };
        };
        let mut conditions = Vec::with_capacity(ops.len());
        for (key, arg) in ops {
            let at = path.key(key);
            let operator = operator_name(key)
                .and_then(operators::operator)
                .filter(|o| !o.permission.is_empty())
                .ok_or_else(|| parse_failed(at.clone(), format!("unknown operator \"{key}\"")))?;
            if !operator.permission.contains(&family) {
                return Err(not_allowed(at, key));
            }
            // `_in`/`_nin` of an array column would compare it with the elements of a list of
            // arrays, which Postgres has no operator for (the GraphQL API does not offer them).
            if operator.operand == Operand::ListOfSame && column.element_type.is_some() {
                return Err(not_allowed(at, key));
            }
            let session = arg.as_str().map(is_session_variable).unwrap_or(false);
            let condition = match (operator.kind, operator.operand) {
                (OperatorKind::IsNull, _) => match arg {
                    Value::Bool(b) => Some(Condition::IsNull(*b)),
                    _ => {
                        return Err(parse_failed(
                            at,
                            format!("expected Boolean, encountered {}", json_kind(arg)),
                        ))
                    }
                },
                (OperatorKind::CompareColumn(op), _) => {
                    let pointer = child(pointer, Segment::Key(key.clone()));
                    let other = self.column_compare(table, column, arg, &at, &pointer)?;
                    Some(Condition::CompareColumn { op, other })
                }
                (OperatorKind::Compare(_), Operand::ListOfSame | Operand::ListOfText)
                    if !arg.is_array() && !session =>
                {
                    return Err(parse_failed(
                        at,
                        format!("expected Array, encountered {}", json_kind(arg)),
                    ));
                }
                // A null operand makes the comparison a no-op.
                (OperatorKind::Compare(_), _) if arg.is_null() => None,
                (OperatorKind::Compare(op), operand) => Some(Condition::Compare {
                    op,
                    value: RuleValue::of(arg),
                    cast: match operand {
                        Operand::Text | Operand::ListOfText => PgType::Text,
                        _ => column.pg_type(),
                    },
                }),
                (OperatorKind::Cast, _) => return Err(not_allowed(at, key)),
            };
            conditions.extend(condition);
        }
        Ok(conditions)
    }

    fn column_compare(
        &mut self,
        table: &QualifiedTable,
        left: &DbColumn,
        arg: &Value,
        path: &JsonPath,
        pointer: &[Segment],
    ) -> Result<ColumnRef> {
        let (target_table, column, pointer, root) = match arg {
            Value::String(c) => (table.clone(), c.clone(), pointer.to_vec(), false),
            Value::Array(items) if items.len() == 2 && items[0] == "$" && items[1].is_string() => (
                self.root.clone(),
                items[1].as_str().unwrap_or_default().to_owned(),
                child(pointer, Segment::Index(1)),
                true,
            ),
            _ => {
                return Err(parse_failed(
                    path.clone(),
                    "expected a column name or [\"$\", column] for a column comparison",
                ))
            }
        };
        let owner = self.table(&target_table, path)?;
        let Some(right) = owner.db.column(&column) else {
            return Err(not_exists_in_database(
                path.clone(),
                format!("column \"{column}\" does not exist"),
            ));
        };
        if !comparable(left, right) {
            return Err(parse_failed(
                path.clone(),
                format!(
                    "cannot compare column \"{}\" of type \"{}\" with column \"{column}\" of type \"{}\"",
                    left.name, left.data_type, right.data_type
                ),
            ));
        }
        self.refs
            .push(Reference::column(&target_table, &column, pointer));
        Ok(if root {
            ColumnRef::Root(column)
        } else {
            ColumnRef::Current(column)
        })
    }
}

/// Whether the generated `left <op> right` is a comparison Postgres has: the same type, two
/// numeric types, two date/time types, or two text-like types. Anything else
/// (`text[] = integer`) would be accepted here and refused by Postgres on every request the
/// rule applies to.
fn comparable(left: &DbColumn, right: &DbColumn) -> bool {
    const NUMERIC: &[&str] = &["int2", "int4", "int8", "numeric", "float4", "float8"];
    const DATETIME: &[&str] = &["date", "timestamp", "timestamptz"];
    let among = |c: &DbColumn, set: &[&str]| {
        c.type_schema == "pg_catalog" && set.contains(&c.type_name.as_str())
    };
    (left.type_name == right.type_name && left.type_schema == right.type_schema)
        || (among(left, NUMERIC) && among(right, NUMERIC))
        || (among(left, DATETIME) && among(right, DATETIME))
        || (TypeFamily::of(left) == TypeFamily::Text && TypeFamily::of(right) == TypeFamily::Text)
}

/// Checks column presets (`set`): every key must be a column. Returns the column references
/// and the presets, typed.
pub fn check_presets(
    table: &ResolvedTable,
    presets: &Value,
    path: &JsonPath,
) -> Result<(Vec<Reference>, Vec<Preset>)> {
    let Value::Object(map) = presets else {
        return Err(parse_failed(
            path.clone(),
            format!("expected Object, encountered {}", json_kind(presets)),
        ));
    };
    let mut refs = Vec::new();
    let mut typed = Vec::new();
    for (key, value) in map {
        let Some(column) = table.db.column(key) else {
            return Err(not_exists_in_database(
                path.key(key),
                format!("column \"{key}\" does not exist"),
            ));
        };
        refs.push(Reference::column(
            &table.name,
            key,
            vec![Segment::Key(key.clone())],
        ));
        let value = match value {
            Value::String(s) if is_session_variable(s) => {
                PresetValue::Session(s.to_ascii_lowercase())
            }
            // `now()` is written into the statement as it is, so the column must take a
            // timestamp by assignment: a `jsonb` column would fail every write of the role.
            Value::String(s) if s.eq_ignore_ascii_case("now()") => {
                let takes_timestamp = matches!(
                    column.type_name.as_str(),
                    "timestamptz" | "timestamp" | "date" | "time" | "timetz"
                ) || TypeFamily::of(column) == TypeFamily::Text;
                if !takes_timestamp {
                    return Err(parse_failed(
                        path.key(key),
                        format!(
                            "\"now()\" cannot preset column \"{key}\" of type \"{}\"",
                            column.data_type
                        ),
                    ));
                }
                PresetValue::Now
            }
            other => PresetValue::Static(other.clone()),
        };
        typed.push(Preset {
            column: key.clone(),
            pg_type: column.pg_type(),
            value,
        });
    }
    Ok((refs, typed))
}
