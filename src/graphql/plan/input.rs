//! Input values: request variables checked against their definitions, and arguments coerced
//! against the role's types. Scalars become parameters; enums stay names.

use super::Problem;
use super::{PlanError, Planner, Result};
use crate::graphql::ir::Param;
use crate::graphql::types::{FieldDef, InputValueDef, Name, TypeDef, TypeRef, BUILTIN_SCALARS};
use async_graphql_parser::types::{BaseType, Field as AstField, OperationDefinition, Type};
use async_graphql_value::Value as GqlValue;
use indexmap::IndexMap;
use serde_json::{Map, Value};

/// Coerced input: scalars become parameters, enums stay names.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// `null`.
    Null,
    /// A scalar (literal or variable).
    Value(Param),
    /// An enum value.
    Enum(String),
    List(Vec<Input>),
    /// An input object.
    Object(IndexMap<String, Input>),
}

impl Input {
    /// The fields of an input object.
    pub(super) fn as_object(&self) -> Option<&IndexMap<String, Input>> {
        match self {
            Input::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The elements of a list input (a single value counts as one element, `null` as none).
    pub(super) fn as_list(&self) -> Vec<&Input> {
        match self {
            Input::List(items) => items.iter().collect(),
            Input::Null => Vec::new(),
            other => vec![other],
        }
    }

    /// The elements of a list input, owned.
    pub(super) fn as_list_owned(&self) -> Vec<Input> {
        self.as_list().into_iter().cloned().collect()
    }

    /// A literal boolean.
    pub(super) fn as_bool_literal(&self) -> Option<bool> {
        match self {
            Input::Value(Param::Literal(Value::Bool(b))) => Some(*b),
            _ => None,
        }
    }
}

/// `null` where a value of `ty` is expected.
fn null_input(ty: &TypeRef, path: &str) -> Result<Input> {
    if ty.is_non_null() {
        Err(PlanError::at(path, Problem::UnexpectedNull(ty.to_string())))
    } else {
        Ok(Input::Null)
    }
}

fn to_type_ref(t: &Type) -> TypeRef {
    let base = match &t.base {
        BaseType::Named(n) => TypeRef::Named(n.as_str().into()),
        BaseType::List(inner) => TypeRef::List(Box::new(to_type_ref(inner))),
    };
    if t.nullable {
        base
    } else {
        TypeRef::NonNull(Box::new(base))
    }
}

fn strip_non_null(t: &TypeRef) -> &TypeRef {
    match t {
        TypeRef::NonNull(inner) => inner,
        other => other,
    }
}

/// Structural equality ignoring nullability, plus "non-null expected needs non-null given".
fn variable_fits(given: &TypeRef, expected: &TypeRef, has_default: bool) -> bool {
    if expected.is_non_null() && !given.is_non_null() && !has_default {
        return false;
    }
    match (strip_non_null(given), strip_non_null(expected)) {
        (TypeRef::Named(a), TypeRef::Named(b)) => a == b,
        (TypeRef::List(a), TypeRef::List(b)) => {
            variable_fits(a, b, false)
                || (!b.is_non_null() && variable_fits(a, &strip_non_null(b).clone(), false))
        }
        _ => false,
    }
}

/// What [`Planner::coerce_variables`] keeps of the variables it checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keep {
    /// Their types and values, for planning.
    Values,
    /// Nothing: a cached plan only needs the request's values checked.
    Nothing,
    /// Their types alone, no value required: a stored document checked before any request
    /// gives values.
    Types,
}

impl Planner<'_> {
    /// Checks the request's variables against the operation's definitions (a missing one
    /// takes its default), keeping them for planning as `keep` says.
    pub(super) fn coerce_variables(
        &mut self,
        operation: &OperationDefinition,
        given: &Map<String, Value>,
        keep: Keep,
    ) -> Result<()> {
        for def in &operation.variable_definitions {
            let def = &def.node;
            let name = def.name.node.as_str();
            let ty = to_type_ref(&def.var_type.node);
            let base = ty.base();
            let input_type = BUILTIN_SCALARS.contains(&base)
                || matches!(
                    self.types.get(base),
                    Some(TypeDef::Scalar { .. } | TypeDef::Enum { .. } | TypeDef::Input { .. })
                );
            if !input_type {
                return Err(PlanError::at(
                    "$.variableValues",
                    Problem::VariableType {
                        name: name.to_string(),
                        ty: ty.to_string(),
                    },
                ));
            }
            if keep == Keep::Types {
                self.without_values = true;
                self.var_types
                    .insert(name.to_owned(), (ty, def.default_value.is_some()));
                continue;
            }
            let value = match given.get(name) {
                Some(v) => std::borrow::Cow::Borrowed(v),
                None => std::borrow::Cow::Owned(match &def.default_value {
                    Some(d) => d.node.clone().into_json().unwrap_or(Value::Null),
                    None => Value::Null,
                }),
            };
            if value.is_null() && ty.is_non_null() {
                return Err(PlanError::at(
                    "$.variableValues",
                    Problem::MissingVariable(name.to_string()),
                ));
            }
            // The value's path only matters to an error: a value that fails is checked again
            // with its path spelled out, rather than every value paying for the string.
            if self.coerce_json(&value, &ty, "$.variableValues").is_err() {
                self.coerce_json(&value, &ty, &format!("$.variableValues.{name}"))?;
            }
            if keep == Keep::Values {
                self.var_types
                    .insert(name.to_owned(), (ty, def.default_value.is_some()));
                self.variables.insert(name.to_owned(), value.into_owned());
            }
        }
        Ok(())
    }

    /// The default value the operation declares for variable `name`, as written.
    pub(super) fn variable_default(&self, name: &str) -> Option<GqlValue> {
        let operation = self.operation?;
        operation
            .variable_definitions
            .iter()
            .find(|d| d.node.name.node.as_str() == name)
            .and_then(|d| d.node.default_value.as_ref())
            .map(|v| v.node.clone().into_value())
    }

    pub(super) fn variable(&self, name: &str, path: &str) -> Result<&Value> {
        self.variables
            .get(name)
            .ok_or_else(|| PlanError::at(path, Problem::UnboundVariable(name.to_string())))
    }

    // ---- input coercion ------------------------------------------------------------------

    pub(super) fn coerce_ast(
        &mut self,
        value: &GqlValue,
        ty: &TypeRef,
        path: &str,
    ) -> Result<Input> {
        if let GqlValue::Variable(name) = value {
            let name = name.to_string();
            let (given, has_default) =
                self.var_types.get(&name).cloned().ok_or_else(|| {
                    PlanError::at(path, Problem::UnboundVariable(name.to_string()))
                })?;
            if !variable_fits(&given, ty, has_default) {
                return Err(PlanError::at(
                    path,
                    Problem::VariableMismatch {
                        name: name.to_string(),
                        given: given.to_string(),
                        expected: ty.to_string(),
                    },
                ));
            }
            let base = ty.base();
            let scalar = BUILTIN_SCALARS.contains(&base)
                || matches!(self.types.get(base), Some(TypeDef::Scalar { .. }));
            if scalar && given.is_non_null() {
                return Ok(Input::Value(Param::Variable(name)));
            }
            // Checked without values: the use fits, whatever value comes.
            if self.without_values && !self.variables.contains_key(&name) {
                return Ok(match given.is_non_null() || has_default {
                    true => Input::Value(Param::Variable(name)),
                    false => Input::Null,
                });
            }
            self.shape_dependent = true;
            let value = self.variable(&name, path)?.clone();
            return self.coerce_json(&value, ty, path);
        }
        if matches!(value, GqlValue::Null) {
            return null_input(ty, path);
        }
        match strip_non_null(ty) {
            TypeRef::List(inner) => match value {
                GqlValue::List(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.coerce_ast(v, inner, &format!("{path}[{i}]")))
                    .collect::<Result<Vec<_>>>()
                    .map(Input::List),
                other => Ok(Input::List(vec![self.coerce_ast(other, inner, path)?])),
            },
            TypeRef::Named(name) => self.coerce_named_ast(value, name, path),
            TypeRef::NonNull(_) => Err(PlanError::at(path, Problem::InvalidType)),
        }
    }

    pub(super) fn coerce_named_ast(
        &mut self,
        value: &GqlValue,
        name: &str,
        path: &str,
    ) -> Result<Input> {
        match self.types.get(name) {
            Some(TypeDef::Input { fields, .. }) => {
                let GqlValue::Object(map) = value else {
                    return Err(PlanError::at(
                        path,
                        Problem::ExpectedObjectOf(name.to_string()),
                    ));
                };
                let fields = fields.clone();
                let mut out = IndexMap::new();
                for (key, v) in map {
                    let key = key.to_string();
                    let def = fields.get(key.as_str()).ok_or_else(|| {
                        PlanError::unknown_field(&format!("{path}.{key}"), &key, name)
                    })?;
                    out.insert(
                        key.clone(),
                        self.coerce_ast(v, &def.ty, &format!("{path}.{key}"))?,
                    );
                }
                self.check_required(&fields, &out, path)?;
                Ok(Input::Object(out))
            }
            Some(TypeDef::Enum { values, .. }) => match value {
                GqlValue::Enum(v) if values.iter().any(|e| e.name == v.as_str()) => {
                    Ok(Input::Enum(v.to_string()))
                }
                other => Err(PlanError::at(
                    path,
                    Problem::NotInEnum {
                        name: name.to_string(),
                        found: other.to_string(),
                    },
                )),
            },
            _ => {
                let json = self.ast_to_json(value, path)?;
                self.coerce_scalar(json, name, path)
            }
        }
    }

    pub(super) fn check_required(
        &self,
        fields: &IndexMap<Name, InputValueDef>,
        given: &IndexMap<String, Input>,
        path: &str,
    ) -> Result<()> {
        for (name, def) in fields {
            if def.ty.is_non_null() && def.default.is_none() && !given.contains_key(name.as_str()) {
                return Err(PlanError::at(path, Problem::MissingField(name.to_string())));
            }
        }
        Ok(())
    }

    pub(super) fn ast_to_json(&mut self, value: &GqlValue, path: &str) -> Result<Value> {
        Ok(match value {
            GqlValue::Variable(name) => {
                self.shape_dependent = true;
                self.variable(name.as_str(), path)?.clone()
            }
            GqlValue::Null => Value::Null,
            GqlValue::Number(n) => serde_json::to_value(n).unwrap_or(Value::Null),
            GqlValue::String(s) => Value::String(s.clone()),
            GqlValue::Boolean(b) => Value::Bool(*b),
            GqlValue::Binary(_) => return Err(PlanError::at(path, Problem::Binary)),
            GqlValue::Enum(e) => Value::String(e.to_string()),
            GqlValue::List(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.ast_to_json(v, path))
                    .collect::<Result<_>>()?,
            ),
            GqlValue::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.to_string(), self.ast_to_json(v, path)?)))
                    .collect::<Result<_>>()?,
            ),
        })
    }

    pub(super) fn coerce_scalar(&self, value: Value, name: &str, path: &str) -> Result<Input> {
        let ok = match name {
            "Int" => value
                .as_i64()
                .map(|n| i32::try_from(n).is_ok())
                .unwrap_or(false),
            "Float" => value.is_number(),
            "String" => value.is_string(),
            "Boolean" => value.is_boolean(),
            "ID" => value.is_string() || value.as_i64().is_some(),
            _ if self.types.get(name).is_some() || BUILTIN_SCALARS.contains(&name) => {
                !value.is_null()
            }
            _ => return Err(PlanError::at(path, Problem::UnknownType(name.to_string()))),
        };
        if !ok {
            return Err(PlanError::at(
                path,
                Problem::WrongValue {
                    ty: name.to_string(),
                    found: value.to_string(),
                },
            ));
        }
        Ok(Input::Value(Param::Literal(value)))
    }

    pub(super) fn coerce_json(&self, value: &Value, ty: &TypeRef, path: &str) -> Result<Input> {
        if value.is_null() {
            return null_input(ty, path);
        }
        match strip_non_null(ty) {
            TypeRef::List(inner) => match value {
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.coerce_json(v, inner, &format!("{path}[{i}]")))
                    .collect::<Result<Vec<_>>>()
                    .map(Input::List),
                other => Ok(Input::List(vec![self.coerce_json(other, inner, path)?])),
            },
            TypeRef::Named(name) => match self.types.get(name) {
                Some(TypeDef::Input { fields, .. }) => {
                    let Value::Object(map) = value else {
                        return Err(PlanError::at(
                            path,
                            Problem::ExpectedObjectOf(name.to_string()),
                        ));
                    };
                    let mut out = IndexMap::new();
                    for (key, v) in map {
                        let def = fields.get(key.as_str()).ok_or_else(|| {
                            PlanError::unknown_field(&format!("{path}.{key}"), key, name)
                        })?;
                        out.insert(
                            key.clone(),
                            self.coerce_json(v, &def.ty, &format!("{path}.{key}"))?,
                        );
                    }
                    self.check_required(fields, &out, path)?;
                    Ok(Input::Object(out))
                }
                Some(TypeDef::Enum { values, .. }) => match value.as_str() {
                    Some(v) if values.iter().any(|e| e.name == v) => Ok(Input::Enum(v.to_owned())),
                    _ => Err(PlanError::at(
                        path,
                        Problem::NotInEnum {
                            name: name.to_string(),
                            found: value.to_string(),
                        },
                    )),
                },
                _ => self.coerce_scalar(value.clone(), name, path),
            },
            TypeRef::NonNull(_) => Err(PlanError::at(path, Problem::InvalidType)),
        }
    }

    pub(super) fn field_args(
        &mut self,
        def: &FieldDef,
        field: &AstField,
        path: &str,
    ) -> Result<IndexMap<String, Input>> {
        let mut out = IndexMap::new();
        for (name, value) in &field.arguments {
            let name = name.node.to_string();
            let arg_path = format!("{path}.args.{name}");
            let arg = def.argument(&name).ok_or_else(|| {
                PlanError::at(
                    &arg_path,
                    Problem::UnknownArgument {
                        field: def.name.to_string(),
                        argument: name.to_string(),
                    },
                )
            })?;
            let ty = arg.ty.clone();
            out.insert(name, self.coerce_ast(&value.node, &ty, &arg_path)?);
        }
        for arg in &def.args {
            let name = &arg.name;
            if arg.ty.is_non_null() && arg.default.is_none() && !out.contains_key(name.as_str()) {
                return Err(PlanError::at(path, Problem::MissingField(name.to_string())));
            }
        }
        Ok(out)
    }
}
