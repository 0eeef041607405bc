//! From a GraphQL document to a [`QueryPlan`]: pick the operation, coerce variables, collect
//! fields through fragments and `@skip`/`@include`, validate every field and argument against
//! the role's type system, and build the IR with permissions folded in. Introspection root
//! fields are set aside (printed as a standalone document) for the dynamic schema.

use super::ir::*;
use super::model::{RoleComputed, RoleModel, RoleTable, RootKind, TableField};
use super::types::{FieldDef, TypeDef, TypeRef, TypeSystem, BUILTIN_SCALARS};
use crate::metadata::types::QualifiedTable;
use crate::schema::{ComputedReturn, RelationshipKind, Resolved, ResolvedTable};
use crate::sql::PgType;
use async_graphql_parser::types::{
    BaseType, DocumentOperations, ExecutableDocument, Field as AstField, OperationDefinition,
    OperationType, Selection, SelectionSet, Type,
};
use async_graphql_parser::Positioned;
use async_graphql_value::Value as GqlValue;
use indexmap::IndexMap;
use serde_json::{Map, Value};

/// A GraphQL request error: message, JSON path into the request, and its kind.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct PlanError {
    /// Human-readable text.
    pub message: String,
    /// `$.selectionSet.…` location.
    pub path: String,
    /// What kind of failure.
    pub kind: PlanErrorKind,
}

/// The kinds of planning failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanErrorKind {
    /// The document (or a JSON path in it) does not parse.
    Parse,
    /// The document does not fit the role's schema or the limits.
    Validation,
}

impl PlanError {
    /// `field "<field>" not found in type: '<type>'`.
    pub(super) fn unknown_field(
        path: &str,
        field: impl std::fmt::Display,
        type_name: impl std::fmt::Display,
    ) -> Self {
        PlanError::validation(
            path,
            format!("field \"{field}\" not found in type: '{type_name}'"),
        )
    }

    pub(super) fn validation(path: &str, message: impl Into<String>) -> Self {
        PlanError {
            message: message.into(),
            path: path.to_owned(),
            kind: PlanErrorKind::Validation,
        }
    }
}

pub(super) type Result<T> = std::result::Result<T, PlanError>;

/// Limits on documents.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Deepest selection nesting.
    pub max_depth: usize,
    /// Most root fields in one operation.
    pub max_root_fields: usize,
}

/// A parsed document with its chosen operation.
#[derive(Debug)]
pub struct Prepared {
    /// The document.
    pub document: ExecutableDocument,
    /// Name of the chosen operation, if named.
    pub operation_name: Option<String>,
}

impl Prepared {
    /// The chosen operation.
    pub fn operation(&self) -> Option<&OperationDefinition> {
        match &self.document.operations {
            DocumentOperations::Single(op) => Some(&op.node),
            DocumentOperations::Multiple(ops) => match &self.operation_name {
                Some(name) => ops.get(name.as_str()).map(|o| &o.node),
                None if ops.len() == 1 => ops.values().next().map(|o| &o.node),
                None => None,
            },
        }
    }

    /// The operation's kind.
    pub fn operation_type(&self) -> Option<OperationType> {
        self.operation().map(|o| o.ty)
    }
}

/// Parses `query` and picks the operation named `operation_name` (required with several).
pub fn prepare(query: &str, operation_name: Option<&str>) -> Result<Prepared> {
    let document = async_graphql_parser::parse_query(query).map_err(|e| PlanError {
        message: e.to_string(),
        path: "$.query".to_owned(),
        kind: PlanErrorKind::Parse,
    })?;
    let prepared = Prepared {
        document,
        operation_name: operation_name.map(str::to_owned),
    };
    if prepared.operation().is_none() {
        let message = match (&prepared.document.operations, operation_name) {
            (DocumentOperations::Multiple(_), None) => {
                "operationName is required if query has multiple operations".to_owned()
            }
            (_, Some(name)) => format!("no such operation found in the document: \"{name}\""),
            _ => "no operation found in the document".to_owned(),
        };
        return Err(PlanError::validation("$", message));
    }
    Ok(prepared)
}

/// The result of planning a query operation.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Data root fields, and constants.
    pub data: QueryPlan,
    /// Response keys of introspection root fields, in document order, with the standalone
    /// document that answers them.
    pub introspection: Option<(Vec<String>, String)>,
    /// Every response key in document order (data and introspection).
    pub keys: Vec<String>,
    /// For mutation operations: the writes, in order.
    pub mutation: Option<MutationPlan>,
    /// Variable values changed the plan's shape, so it may only be reused with equal variables.
    pub shape_dependent: bool,
}

/// Coerced input: scalars become parameters, enums stay names.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// `null`.
    Null,
    /// A scalar (literal or variable).
    Value(Param),
    /// An enum value.
    Enum(String),
    /// A list.
    List(Vec<Input>),
    /// An input object.
    Object(IndexMap<String, Input>),
}

impl Input {
    fn as_object(&self) -> Option<&IndexMap<String, Input>> {
        match self {
            Input::Object(m) => Some(m),
            _ => None,
        }
    }

    fn as_list(&self) -> Vec<&Input> {
        match self {
            Input::List(items) => items.iter().collect(),
            Input::Null => Vec::new(),
            other => vec![other],
        }
    }

    fn as_bool_literal(&self) -> Option<bool> {
        match self {
            Input::Value(Param::Literal(Value::Bool(b))) => Some(*b),
            _ => None,
        }
    }
}

/// `null` where a value of `ty` is expected.
fn null_input(ty: &TypeRef, path: &str) -> Result<Input> {
    if ty.is_non_null() {
        Err(PlanError::validation(
            path,
            format!("expected a value of type \"{ty}\", found null"),
        ))
    } else {
        Ok(Input::Null)
    }
}

fn to_type_ref(t: &Type) -> TypeRef {
    let base = match &t.base {
        BaseType::Named(n) => TypeRef::Named(n.to_string()),
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

/// Plans the chosen query operation for a role.
pub fn plan(
    model: &RoleModel,
    resolved: &Resolved,
    prepared: &Prepared,
    variables: &Map<String, Value>,
    limits: Limits,
) -> Result<Planned> {
    let Some(operation) = prepared.operation() else {
        return Err(PlanError::validation(
            "$",
            "no operation found in the document",
        ));
    };
    match operation.ty {
        OperationType::Query => {}
        OperationType::Mutation if model.types.mutation_root.is_none() => {
            return Err(PlanError::validation("$", "no mutations exist"))
        }
        OperationType::Mutation => {}
        OperationType::Subscription => {
            return Err(PlanError::validation("$", "no subscriptions exist"))
        }
    }
    let mut planner = Planner {
        model,
        resolved,
        types: &model.types,
        document: &prepared.document,
        var_types: IndexMap::new(),
        variables: Map::new(),
        shape_dependent: false,
        limits,
    };
    planner.coerce_variables(operation, variables)?;
    if operation.ty == OperationType::Mutation {
        return planner.mutation_root(&operation.selection_set.node);
    }
    planner.root(&operation.selection_set.node)
}

/// Checks request variables against the operation's definitions (for reused plans).
pub fn check_variables(
    model: &RoleModel,
    resolved: &Resolved,
    prepared: &Prepared,
    variables: &Map<String, Value>,
) -> Result<()> {
    let Some(operation) = prepared.operation() else {
        return Err(PlanError::validation(
            "$",
            "no operation found in the document",
        ));
    };
    let mut planner = Planner {
        model,
        resolved,
        types: &model.types,
        document: &prepared.document,
        var_types: IndexMap::new(),
        variables: Map::new(),
        shape_dependent: false,
        limits: Limits {
            max_depth: usize::MAX,
            max_root_fields: usize::MAX,
        },
    };
    planner.coerce_variables(operation, variables)
}

pub(super) struct Planner<'a> {
    pub(super) model: &'a RoleModel,
    pub(super) resolved: &'a Resolved,
    pub(super) types: &'a TypeSystem,
    pub(super) document: &'a ExecutableDocument,
    pub(super) var_types: IndexMap<String, (TypeRef, bool)>,
    pub(super) variables: Map<String, Value>,
    pub(super) shape_dependent: bool,
    pub(super) limits: Limits,
}

/// Fields grouped by response key, in document order.
pub(super) type Collected<'d> = Vec<(String, Vec<&'d AstField>)>;

impl<'a> Planner<'a> {
    // ---- variables -------------------------------------------------------------------

    fn coerce_variables(
        &mut self,
        operation: &OperationDefinition,
        given: &Map<String, Value>,
    ) -> Result<()> {
        for def in &operation.variable_definitions {
            let def = &def.node;
            let name = def.name.node.to_string();
            let ty = to_type_ref(&def.var_type.node);
            let base = ty.base().to_owned();
            let input_type = BUILTIN_SCALARS.contains(&base.as_str())
                || matches!(
                    self.types.get(&base),
                    Some(TypeDef::Scalar { .. } | TypeDef::Enum { .. } | TypeDef::Input { .. })
                );
            if !input_type {
                return Err(PlanError::validation(
                    "$.variableValues",
                    format!("variable \"{name}\" has unknown or non-input type \"{ty}\""),
                ));
            }
            let value = match given.get(&name) {
                Some(v) => v.clone(),
                None => match &def.default_value {
                    Some(d) => d.node.clone().into_json().unwrap_or(Value::Null),
                    None => Value::Null,
                },
            };
            if value.is_null() && ty.is_non_null() {
                return Err(PlanError::validation(
                    "$.variableValues",
                    format!("expecting a value for non-nullable variable: \"{name}\""),
                ));
            }
            self.coerce_json(&value, &ty, &format!("$.variableValues.{name}"))?;
            self.var_types
                .insert(name.clone(), (ty, def.default_value.is_some()));
            self.variables.insert(name, value);
        }
        Ok(())
    }

    fn variable(&self, name: &str, path: &str) -> Result<&Value> {
        self.variables
            .get(name)
            .ok_or_else(|| PlanError::validation(path, format!("unbound variable \"{name}\"")))
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
            let (given, has_default) = self.var_types.get(&name).cloned().ok_or_else(|| {
                PlanError::validation(path, format!("unbound variable \"{name}\""))
            })?;
            if !variable_fits(&given, ty, has_default) {
                return Err(PlanError::validation(path, format!("variable \"{name}\" of type \"{given}\" cannot be used where \"{ty}\" is expected")));
            }
            let base = ty.base();
            let scalar = BUILTIN_SCALARS.contains(&base)
                || matches!(self.types.get(base), Some(TypeDef::Scalar { .. }));
            if scalar && given.is_non_null() {
                return Ok(Input::Value(Param::Variable(name)));
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
            TypeRef::NonNull(_) => Err(PlanError::validation(path, "invalid type")),
        }
    }

    fn coerce_named_ast(&mut self, value: &GqlValue, name: &str, path: &str) -> Result<Input> {
        match self.types.get(name) {
            Some(TypeDef::Input { fields, .. }) => {
                let GqlValue::Object(map) = value else {
                    return Err(PlanError::validation(
                        path,
                        format!("expected an object for type \"{name}\""),
                    ));
                };
                let fields = fields.clone();
                let mut out = IndexMap::new();
                for (key, v) in map {
                    let key = key.to_string();
                    let def = fields.get(&key).ok_or_else(|| {
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
                other => Err(PlanError::validation(
                    path,
                    format!("expected one of the values of enum \"{name}\", found {other}"),
                )),
            },
            _ => {
                let json = self.ast_to_json(value, path)?;
                self.coerce_scalar(json, name, path)
            }
        }
    }

    fn check_required(
        &self,
        fields: &IndexMap<String, super::types::InputValueDef>,
        given: &IndexMap<String, Input>,
        path: &str,
    ) -> Result<()> {
        for (name, def) in fields {
            if def.ty.is_non_null() && def.default.is_none() && !given.contains_key(name) {
                return Err(PlanError::validation(
                    path,
                    format!("missing required field '{name}'"),
                ));
            }
        }
        Ok(())
    }

    fn ast_to_json(&mut self, value: &GqlValue, path: &str) -> Result<Value> {
        Ok(match value {
            GqlValue::Variable(name) => {
                self.shape_dependent = true;
                self.variable(name.as_str(), path)?.clone()
            }
            GqlValue::Null => Value::Null,
            GqlValue::Number(n) => serde_json::to_value(n).unwrap_or(Value::Null),
            GqlValue::String(s) => Value::String(s.clone()),
            GqlValue::Boolean(b) => Value::Bool(*b),
            GqlValue::Binary(_) => {
                return Err(PlanError::validation(
                    path,
                    "binary values are not supported",
                ))
            }
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

    fn coerce_scalar(&self, value: Value, name: &str, path: &str) -> Result<Input> {
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
            _ => {
                return Err(PlanError::validation(
                    path,
                    format!("unknown type \"{name}\""),
                ))
            }
        };
        if !ok {
            return Err(PlanError::validation(
                path,
                format!("expected a value of type \"{name}\", found {value}"),
            ));
        }
        Ok(Input::Value(Param::Literal(value)))
    }

    fn coerce_json(&self, value: &Value, ty: &TypeRef, path: &str) -> Result<Input> {
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
                        return Err(PlanError::validation(
                            path,
                            format!("expected an object for type \"{name}\""),
                        ));
                    };
                    let mut out = IndexMap::new();
                    for (key, v) in map {
                        let def = fields.get(key).ok_or_else(|| {
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
                    _ => Err(PlanError::validation(
                        path,
                        format!("expected one of the values of enum \"{name}\", found {value}"),
                    )),
                },
                _ => self.coerce_scalar(value.clone(), name, path),
            },
            TypeRef::NonNull(_) => Err(PlanError::validation(path, "invalid type")),
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
            let arg = def.args.get(&name).ok_or_else(|| {
                PlanError::validation(
                    &arg_path,
                    format!("'{}' has no argument named '{name}'", def.name),
                )
            })?;
            let ty = arg.ty.clone();
            out.insert(name, self.coerce_ast(&value.node, &ty, &arg_path)?);
        }
        for (name, arg) in &def.args {
            if arg.ty.is_non_null() && arg.default.is_none() && !out.contains_key(name) {
                return Err(PlanError::validation(
                    path,
                    format!("missing required field '{name}'"),
                ));
            }
        }
        Ok(out)
    }

    // ---- field collection ------------------------------------------------------------------

    /// Evaluates `@skip`/`@include`. A variable condition makes the plan depend on variable
    /// values, so it is then cached per variables.
    fn directives_allow(
        &mut self,
        directives: &[Positioned<async_graphql_parser::types::Directive>],
        path: &str,
    ) -> Result<bool> {
        for d in directives {
            let name = d.node.name.node.as_str();
            if name != "skip" && name != "include" {
                return Err(PlanError::validation(
                    path,
                    format!("directive \"{name}\" is not allowed here"),
                ));
            }
            let value = d.node.get_argument("if").ok_or_else(|| {
                PlanError::validation(
                    path,
                    format!("directive \"{name}\" needs an \"if\" argument"),
                )
            })?;
            let flag = match &value.node {
                GqlValue::Boolean(b) => *b,
                GqlValue::Variable(v) => {
                    self.shape_dependent = true;
                    self.variable(v.as_str(), path)?.as_bool().ok_or_else(|| {
                        PlanError::validation(path, "expected a Boolean for \"if\"")
                    })?
                }
                _ => return Err(PlanError::validation(path, "expected a Boolean for \"if\"")),
            };
            if (name == "skip" && flag) || (name == "include" && !flag) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    pub(super) fn collect<'d>(
        &mut self,
        set: &'d SelectionSet,
        parent: &str,
        path: &str,
        out: &mut Collected<'d>,
        depth: usize,
    ) -> Result<()>
    where
        'a: 'd,
    {
        if depth > 32 {
            return Err(PlanError::validation(
                path,
                "fragment nesting too deep (cycle?)",
            ));
        }
        for item in &set.items {
            match &item.node {
                Selection::Field(f) => {
                    if !self.directives_allow(&f.node.directives, path)? {
                        continue;
                    }
                    let key = f.node.response_key().node.to_string();
                    match out.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, fields)) => fields.push(&f.node),
                        None => out.push((key, vec![&f.node])),
                    }
                }
                Selection::FragmentSpread(spread) => {
                    if !self.directives_allow(&spread.node.directives, path)? {
                        continue;
                    }
                    let name = spread.node.fragment_name.node.as_str();
                    let document: &'d ExecutableDocument = self.document;
                    let fragment = document.fragments.get(name).ok_or_else(|| {
                        PlanError::validation(path, format!("fragment \"{name}\" not found"))
                    })?;
                    let on = fragment.node.type_condition.node.on.node.as_str();
                    self.check_type_condition(on, path)?;
                    if on == parent {
                        self.collect(
                            &fragment.node.selection_set.node,
                            parent,
                            path,
                            out,
                            depth + 1,
                        )?;
                    }
                }
                Selection::InlineFragment(inline) => {
                    if !self.directives_allow(&inline.node.directives, path)? {
                        continue;
                    }
                    let matches = match &inline.node.type_condition {
                        None => true,
                        Some(c) => {
                            let on = c.node.on.node.as_str();
                            self.check_type_condition(on, path)?;
                            on == parent
                        }
                    };
                    if matches {
                        self.collect(
                            &inline.node.selection_set.node,
                            parent,
                            path,
                            out,
                            depth + 1,
                        )?;
                    }
                }
            }
        }
        Ok(())
    }

    fn check_type_condition(&self, on: &str, path: &str) -> Result<()> {
        if self.types.object_fields(on).is_none() && !on.starts_with("__") {
            return Err(PlanError::validation(
                path,
                format!("type \"{on}\" not found or not an object type"),
            ));
        }
        Ok(())
    }

    /// Collects a field's sub-selection over all fields sharing its response key.
    pub(super) fn sub_fields<'d>(
        &mut self,
        fields: &[&'d AstField],
        parent: &str,
        path: &str,
        depth: usize,
    ) -> Result<Collected<'d>>
    where
        'a: 'd,
    {
        if depth > self.limits.max_depth {
            return Err(PlanError::validation(
                path,
                format!("query depth exceeds {}", self.limits.max_depth),
            ));
        }
        let mut out = Vec::new();
        for f in fields {
            self.collect(&f.selection_set.node, parent, path, &mut out, 0)?;
        }
        if out.is_empty() {
            return Err(PlanError::validation(
                path,
                format!("missing selection set for field of type \"{parent}\""),
            ));
        }
        Ok(out)
    }

    /// Collects the root fields of an operation and enforces the root-field limit.
    pub(super) fn collect_root<'d>(
        &mut self,
        set: &'d SelectionSet,
        root: &str,
        out: &mut Collected<'d>,
    ) -> Result<()>
    where
        'a: 'd,
    {
        self.collect(set, root, "$", out, 0)?;
        if out.len() > self.limits.max_root_fields {
            return Err(PlanError::validation(
                "$",
                format!(
                    "too many root fields: {} (at most {})",
                    out.len(),
                    self.limits.max_root_fields
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn field_def(&self, parent: &str, name: &str, path: &str) -> Result<FieldDef> {
        self.types
            .object_fields(parent)
            .and_then(|f| f.get(name))
            .cloned()
            .ok_or_else(|| PlanError::unknown_field(path, name, parent))
    }

    pub(super) fn no_selection(field: &AstField, path: &str) -> Result<()> {
        if field.selection_set.node.items.is_empty() {
            Ok(())
        } else {
            Err(PlanError::validation(
                path,
                format!(
                    "field \"{}\" must not have a selection since its type is a scalar",
                    field.name.node
                ),
            ))
        }
    }

    // ---- root ------------------------------------------------------------------------

    fn root(mut self, set: &SelectionSet) -> Result<Planned> {
        let mut collected = Vec::new();
        self.collect_root(set, "query_root", &mut collected)?;
        let mut data = QueryPlan::default();
        let mut keys = Vec::new();
        let mut introspection_keys = Vec::new();
        let mut introspection_doc = String::new();
        for (key, fields) in &collected {
            let field = fields[0];
            let name = field.name.node.as_str();
            let path = format!("$.selectionSet.{key}");
            keys.push(key.clone());
            match name {
                "__typename" => {
                    Self::no_selection(field, &path)?;
                    data.fields.push((
                        key.clone(),
                        RootField::Constant(Value::String("query_root".into())),
                    ));
                }
                "__schema" | "__type" => {
                    introspection_keys.push(key.clone());
                    introspection_doc.push_str(&self.print_root_field(field, &path)?);
                    introspection_doc.push(' ');
                }
                "no_queries_available" if self.model.roots.is_empty() => {
                    Self::no_selection(field, &path)?;
                    let message = "There are no queries available to the current role: it has no select permission on any table.";
                    data.fields.push((
                        key.clone(),
                        RootField::Constant(Value::String(message.into())),
                    ));
                }
                _ => {
                    let root = self
                        .model
                        .roots
                        .get(name)
                        .cloned()
                        .ok_or_else(|| PlanError::unknown_field(&path, name, "query_root"))?;
                    let def = self.field_def("query_root", name, &path)?;
                    let args = self.field_args(&def, field, &path)?;
                    let table = self.table(&root.table, &path)?;
                    let planned = match root.kind {
                        RootKind::Select => {
                            let sub = self.sub_fields(fields, &table.type_name, &path, 1)?;
                            RootField::Select(self.select(
                                table,
                                Source::Table(root.table.clone()),
                                Vec::new(),
                                &args,
                                &sub,
                                &path,
                                false,
                                1,
                            )?)
                        }
                        RootKind::SelectByPk => {
                            let sub = self.sub_fields(fields, &table.type_name, &path, 1)?;
                            let mut select = self.select(
                                table,
                                Source::Table(root.table.clone()),
                                Vec::new(),
                                &IndexMap::new(),
                                &sub,
                                &path,
                                true,
                                1,
                            )?;
                            for column in table.primary_key.iter().flatten() {
                                let (Some(c), Some(Input::Value(param))) =
                                    (table.columns.get(column), args.get(column))
                                else {
                                    continue;
                                };
                                select.args.filter.push(BoolExpr::Compare {
                                    column: ColumnExpr {
                                        scope: Scope::Current,
                                        column: c.column.clone(),
                                        cast: None,
                                    },
                                    op: CompareOp::Eq,
                                    value: ValueExpr {
                                        param: param.clone(),
                                        cast: c.pg_type.clone(),
                                    },
                                });
                            }
                            RootField::Select(select)
                        }
                        RootKind::Aggregate => {
                            let sub = self.sub_fields(
                                fields,
                                &format!("{}_aggregate", table.type_name),
                                &path,
                                1,
                            )?;
                            RootField::Aggregate(self.aggregate(
                                table,
                                Vec::new(),
                                &args,
                                &sub,
                                &path,
                                1,
                            )?)
                        }
                    };
                    data.fields.push((key.clone(), planned));
                }
            }
        }
        let introspection = (!introspection_keys.is_empty()).then(|| {
            (
                introspection_keys,
                format!("query {{ {introspection_doc}}}"),
            )
        });
        Ok(Planned {
            data,
            introspection,
            keys,
            mutation: None,
            shape_dependent: self.shape_dependent,
        })
    }

    pub(super) fn table(&self, name: &QualifiedTable, path: &str) -> Result<&'a RoleTable> {
        let model: &'a RoleModel = self.model;
        model.tables.get(name).ok_or_else(|| {
            PlanError::validation(path, format!("table \"{name}\" is not available"))
        })
    }

    pub(super) fn resolved_table(&self, name: &QualifiedTable) -> Option<&'a ResolvedTable> {
        let resolved: &'a Resolved = self.resolved;
        resolved.tables.get(name)
    }

    // ---- selections --------------------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    pub(super) fn select(
        &mut self,
        table: &'a RoleTable,
        source: Source,
        join: Vec<(String, String)>,
        args: &IndexMap<String, Input>,
        sub: &Collected<'_>,
        path: &str,
        single: bool,
        depth: usize,
    ) -> Result<Select> {
        let row_args = self.row_args(table, args, path)?;
        let fields = self.table_fields(table, sub, path, depth)?;
        Ok(Select {
            source,
            join,
            args: row_args,
            fields,
            single,
        })
    }

    fn row_args(
        &mut self,
        table: &'a RoleTable,
        args: &IndexMap<String, Input>,
        path: &str,
    ) -> Result<RowArgs> {
        let mut row = RowArgs::default();
        if let Some(filter) = self.permission_filter(table) {
            row.filter.push(filter);
        }
        if let Some(w) = args.get("where") {
            row.filter
                .push(self.where_expr(table, w, &format!("{path}.args.where"))?);
        }
        if let Some(order) = args.get("order_by") {
            row.order_by = self.order_by(table, order, &format!("{path}.args.order_by"))?;
        }
        if let Some(distinct) = args.get("distinct_on") {
            for item in distinct.as_list() {
                let Input::Enum(name) = item else { continue };
                if let Some(c) = table.columns.get(name) {
                    row.distinct_on.push(c.column.clone());
                }
            }
            let prefix: Vec<Option<&String>> = row
                .order_by
                .iter()
                .take(row.distinct_on.len())
                .map(|o| match &o.expr {
                    OrderExpr::Column(c) => Some(c),
                    _ => None,
                })
                .collect();
            if !row.order_by.is_empty()
                && prefix != row.distinct_on.iter().map(Some).collect::<Vec<_>>()
            {
                return Err(PlanError::validation(
                    &format!("{path}.args"),
                    "\"distinct_on\" columns must match initial \"order_by\" columns",
                ));
            }
        }
        if let Some(Input::Value(p)) = args.get("limit") {
            if matches!(p, Param::Literal(v) if v.as_i64().is_some_and(|n| n < 0)) {
                return Err(PlanError::validation(
                    &format!("{path}.args.limit"),
                    "unexpected negative value",
                ));
            }
            row.limit.push(ValueExpr {
                param: p.clone(),
                cast: PgType::BigInt,
            });
        }
        if let Some(cap) = table.limit {
            row.limit.push(ValueExpr {
                param: Param::Literal(Value::from(cap)),
                cast: PgType::BigInt,
            });
        }
        if let Some(Input::Value(p)) = args.get("offset") {
            row.offset = Some(ValueExpr {
                param: p.clone(),
                cast: PgType::BigInt,
            });
        }
        Ok(row)
    }

    pub(super) fn table_fields(
        &mut self,
        table: &'a RoleTable,
        sub: &Collected<'_>,
        path: &str,
        depth: usize,
    ) -> Result<Vec<(String, Field)>> {
        let mut out = Vec::new();
        for (key, fields) in sub {
            let field = fields[0];
            let name = field.name.node.as_str();
            let fpath = format!("{path}.selectionSet.{key}");
            if name == "__typename" {
                Self::no_selection(field, &fpath)?;
                out.push((key.clone(), Field::Constant(table.type_name.clone())));
                continue;
            }
            let def = self.field_def(&table.type_name, name, &fpath)?;
            let args = self.field_args(&def, field, &fpath)?;
            let kind = table
                .fields
                .get(name)
                .ok_or_else(|| PlanError::unknown_field(&fpath, name, &table.type_name))?;
            let planned = match kind {
                TableField::Column(c) => {
                    Self::no_selection(field, &fpath)?;
                    let path_arg = match args.get("path") {
                        Some(Input::Value(Param::Literal(Value::String(p)))) => Some(ValueExpr {
                            param: Param::Literal(json_path(p, &format!("{fpath}.args.path"))?),
                            cast: PgType::Jsonb,
                        }),
                        Some(Input::Value(Param::Variable(name))) => {
                            self.shape_dependent = true;
                            let text = self
                                .variable(name, &fpath)?
                                .as_str()
                                .unwrap_or_default()
                                .to_owned();
                            Some(ValueExpr {
                                param: Param::Literal(json_path(
                                    &text,
                                    &format!("{fpath}.args.path"),
                                )?),
                                cast: PgType::Jsonb,
                            })
                        }
                        _ => None,
                    };
                    Field::Column {
                        column: c.column.clone(),
                        path: path_arg,
                    }
                }
                TableField::Relationship(r) => {
                    let target = self.table(&r.target, &fpath)?;
                    let sub = self.sub_fields(fields, &target.type_name, &fpath, depth + 1)?;
                    let single = r.kind == RelationshipKind::Object;
                    let select = self.select(
                        target,
                        Source::Table(r.target.clone()),
                        r.mapping.clone(),
                        &args,
                        &sub,
                        &fpath,
                        single,
                        depth + 1,
                    )?;
                    Field::Relationship {
                        kind: r.kind,
                        select: Box::new(select),
                    }
                }
                TableField::RelationshipAggregate(r) => {
                    let target = self.table(&r.target, &fpath)?;
                    let sub = self.sub_fields(
                        fields,
                        &format!("{}_aggregate", target.type_name),
                        &fpath,
                        depth + 1,
                    )?;
                    Field::Aggregate(Box::new(self.aggregate(
                        target,
                        r.mapping.clone(),
                        &args,
                        &sub,
                        &fpath,
                        depth + 1,
                    )?))
                }
                TableField::Computed(cf) => self.computed(cf, fields, &args, &fpath, depth)?,
            };
            out.push((key.clone(), planned));
        }
        Ok(out)
    }

    fn computed(
        &mut self,
        cf: &RoleComputed,
        fields: &[&AstField],
        args: &IndexMap<String, Input>,
        path: &str,
        depth: usize,
    ) -> Result<Field> {
        let given = args
            .get("args")
            .and_then(Input::as_object)
            .cloned()
            .unwrap_or_default();
        let all_named = cf.arguments.iter().all(|a| !a.name.is_empty());
        let mut fn_args = Vec::new();
        for (i, arg) in cf.arguments.iter().enumerate() {
            let (name, pg_type) = (&arg.name, &arg.cast);
            let value = if i == cf.table_argument {
                Some(FunctionArgValue::Row)
            } else if Some(i) == cf.session_argument {
                Some(FunctionArgValue::Value(ValueExpr {
                    param: Param::SessionObject,
                    cast: pg_type.clone(),
                }))
            } else {
                match given.get(name) {
                    Some(Input::Value(p)) => Some(FunctionArgValue::Value(ValueExpr {
                        param: p.clone(),
                        cast: pg_type.clone(),
                    })),
                    Some(Input::Null) | None if !all_named => {
                        Some(FunctionArgValue::Value(ValueExpr {
                            param: Param::Literal(Value::Null),
                            cast: pg_type.clone(),
                        }))
                    }
                    _ => None,
                }
            };
            if let Some(value) = value {
                fn_args.push(FunctionArg {
                    name: if all_named {
                        name.clone()
                    } else {
                        String::new()
                    },
                    value,
                });
            }
        }
        match &cf.returns {
            ComputedReturn::Scalar(_) => {
                Self::no_selection(fields[0], path)?;
                Ok(Field::Computed {
                    function: cf.function.clone(),
                    args: fn_args,
                })
            }
            ComputedReturn::Table { table, set } => {
                let target = self.table(table, path)?;
                let sub = self.sub_fields(fields, &target.type_name, path, depth + 1)?;
                let source = Source::Function {
                    function: cf.function.clone(),
                    args: fn_args,
                };
                let row_args = if *set { args.clone() } else { IndexMap::new() };
                let select = self.select(
                    target,
                    source,
                    Vec::new(),
                    &row_args,
                    &sub,
                    path,
                    !set,
                    depth + 1,
                )?;
                let kind = if *set {
                    RelationshipKind::Array
                } else {
                    RelationshipKind::Object
                };
                Ok(Field::Relationship {
                    kind,
                    select: Box::new(select),
                })
            }
        }
    }

    fn aggregate(
        &mut self,
        table: &'a RoleTable,
        join: Vec<(String, String)>,
        args: &IndexMap<String, Input>,
        sub: &Collected<'_>,
        path: &str,
        depth: usize,
    ) -> Result<AggregateSelect> {
        let row_args = self.row_args(table, args, path)?;
        let type_name = format!("{}_aggregate", table.type_name);
        let mut fields = Vec::new();
        for (key, group) in sub {
            let field = group[0];
            let name = field.name.node.as_str();
            let fpath = format!("{path}.selectionSet.{key}");
            match name {
                "__typename" => {
                    fields.push((key.clone(), AggregateField::Constant(type_name.clone())))
                }
                "nodes" => {
                    let sub = self.sub_fields(group, &table.type_name, &fpath, depth + 1)?;
                    fields.push((
                        key.clone(),
                        AggregateField::Nodes(self.table_fields(table, &sub, &fpath, depth + 1)?),
                    ));
                }
                "aggregate" => {
                    let fields_type = format!("{}_aggregate_fields", table.type_name);
                    let sub = self.sub_fields(group, &fields_type, &fpath, depth + 1)?;
                    let mut ops = Vec::new();
                    for (okey, ogroup) in &sub {
                        let of = ogroup[0];
                        let oname = of.name.node.as_str();
                        let opath = format!("{fpath}.selectionSet.{okey}");
                        if oname == "__typename" {
                            ops.push((okey.clone(), AggregateOp::Constant(fields_type.clone())));
                            continue;
                        }
                        let def = self.field_def(&fields_type, oname, &opath)?;
                        let oargs = self.field_args(&def, of, &opath)?;
                        if oname == "count" {
                            Self::no_selection(of, &opath)?;
                            let columns = oargs
                                .get("columns")
                                .map(|c| {
                                    c.as_list()
                                        .into_iter()
                                        .filter_map(|i| match i {
                                            Input::Enum(n) => {
                                                table.columns.get(n).map(|c| c.column.clone())
                                            }
                                            _ => None,
                                        })
                                        .collect()
                                })
                                .unwrap_or_default();
                            let distinct = oargs
                                .get("distinct")
                                .and_then(Input::as_bool_literal)
                                .unwrap_or(false);
                            ops.push((okey.clone(), AggregateOp::Count { columns, distinct }));
                            continue;
                        }
                        let op_type = format!("{}_{oname}_fields", table.type_name);
                        let csub = self.sub_fields(ogroup, &op_type, &opath, depth + 2)?;
                        let mut columns = Vec::new();
                        for (ckey, cgroup) in &csub {
                            let cname = cgroup[0].name.node.as_str();
                            let cpath = format!("{opath}.selectionSet.{ckey}");
                            if cname == "__typename" {
                                columns.push((
                                    ckey.clone(),
                                    AggregateColumn::Typename(op_type.clone()),
                                ));
                                continue;
                            }
                            self.field_def(&op_type, cname, &cpath)?;
                            if let Some(c) = table.columns.get(cname) {
                                columns.push((
                                    ckey.clone(),
                                    AggregateColumn::Column(c.column.clone()),
                                ));
                            }
                        }
                        let Some(function) = AggregateFunction::from_name(oname) else {
                            return Err(PlanError::unknown_field(&opath, oname, &fields_type));
                        };
                        ops.push((okey.clone(), AggregateOp::Function { function, columns }));
                    }
                    fields.push((key.clone(), AggregateField::Aggregate(ops)));
                }
                other => return Err(PlanError::unknown_field(&fpath, other, &type_name)),
            }
        }
        Ok(AggregateSelect {
            table: table.name.clone(),
            join,
            args: row_args,
            fields,
        })
    }

    // ---- filters -----------------------------------------------------------------------

    /// The role's row filter for a table; `["$", col]` inside it refers to that table.
    pub(super) fn permission_filter(&self, table: &RoleTable) -> Option<BoolExpr> {
        let filter = table.filter.as_ref()?;
        let resolved = self.resolved_table(&table.name)?;
        Some(BoolExpr::Permission(Box::new(permission_expr(
            self.resolved,
            resolved,
            filter,
        ))))
    }

    pub(super) fn where_expr(
        &mut self,
        table: &'a RoleTable,
        input: &Input,
        path: &str,
    ) -> Result<BoolExpr> {
        let Some(map) = input.as_object() else {
            return Ok(BoolExpr::True);
        };
        let mut all = Vec::new();
        for (key, value) in map {
            let kpath = format!("{path}.{key}");
            match key.as_str() {
                "_and" | "_or" => {
                    let parts = value
                        .as_list()
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| self.where_expr(table, v, &format!("{kpath}[{i}]")))
                        .collect::<Result<Vec<_>>>()?;
                    all.push(if key == "_and" {
                        BoolExpr::And(parts)
                    } else {
                        BoolExpr::Or(parts)
                    });
                }
                "_not" => {
                    if !matches!(value, Input::Null) {
                        all.push(BoolExpr::Not(Box::new(
                            self.where_expr(table, value, &kpath)?,
                        )));
                    }
                }
                _ => match table.fields.get(key) {
                    Some(TableField::Column(c)) => {
                        let column = ColumnExpr {
                            scope: Scope::Current,
                            column: c.column.clone(),
                            cast: None,
                        };
                        all.push(comparison(&column, &c.pg_type, value));
                    }
                    Some(TableField::Relationship(r)) => {
                        let target = self.table(&r.target, &kpath)?;
                        let mut inner = Vec::new();
                        if let Some(f) = self.permission_filter(target) {
                            inner.push(f);
                        }
                        inner.push(self.where_expr(target, value, &kpath)?);
                        all.push(BoolExpr::Exists {
                            table: r.target.clone(),
                            join: r.mapping.clone(),
                            filter: Box::new(BoolExpr::And(inner)),
                        });
                    }
                    _ => {
                        return Err(PlanError::unknown_field(
                            &kpath,
                            key,
                            format!("{}_bool_exp", table.type_name),
                        ))
                    }
                },
            }
        }
        Ok(BoolExpr::And(all))
    }

    fn order_by(
        &mut self,
        table: &'a RoleTable,
        input: &Input,
        path: &str,
    ) -> Result<Vec<OrderBy>> {
        let mut out = Vec::new();
        for (i, item) in input.as_list().into_iter().enumerate() {
            let Some(map) = item.as_object() else {
                continue;
            };
            for (key, value) in map {
                self.order_item(
                    table,
                    key,
                    value,
                    &format!("{path}[{i}].{key}"),
                    &mut out,
                    &mut |e| e,
                )?;
            }
        }
        Ok(out)
    }

    fn order_item(
        &mut self,
        table: &'a RoleTable,
        key: &str,
        value: &Input,
        path: &str,
        out: &mut Vec<OrderBy>,
        wrap: &mut dyn FnMut(OrderExpr) -> OrderExpr,
    ) -> Result<()> {
        let direction = |v: &Input| match v {
            Input::Enum(d) => Direction::from_name(d),
            _ => None,
        };
        match table.fields.get(key) {
            Some(TableField::Column(c)) => {
                if let Some(d) = direction(value) {
                    out.push(OrderBy {
                        expr: wrap(OrderExpr::Column(c.column.clone())),
                        direction: d,
                    });
                }
            }
            Some(TableField::Relationship(r)) if r.kind == RelationshipKind::Object => {
                let target = self.table(&r.target, path)?;
                let filter = Box::new(self.permission_filter(target).unwrap_or(BoolExpr::True));
                let Some(map) = value.as_object() else {
                    return Ok(());
                };
                for (k, v) in map {
                    let (t, j, f) = (r.target.clone(), r.mapping.clone(), filter.clone());
                    let mut nested = |inner: OrderExpr| {
                        wrap(OrderExpr::Object {
                            table: t.clone(),
                            join: j.clone(),
                            filter: f.clone(),
                            inner: Box::new(inner),
                        })
                    };
                    self.order_item(target, k, v, &format!("{path}.{k}"), out, &mut nested)?;
                }
            }
            Some(TableField::RelationshipAggregate(r)) => {
                let target = self.table(&r.target, path)?;
                let filter = Box::new(self.permission_filter(target).unwrap_or(BoolExpr::True));
                let Some(map) = value.as_object() else {
                    return Ok(());
                };
                for (function, v) in map {
                    if function == "count" {
                        if let Some(d) = direction(v) {
                            let expr = OrderExpr::Aggregate {
                                table: r.target.clone(),
                                join: r.mapping.clone(),
                                filter: filter.clone(),
                                aggregate: OrderAggregate::Count,
                            };
                            out.push(OrderBy {
                                expr: wrap(expr),
                                direction: d,
                            });
                        }
                        continue;
                    }
                    let (Some(columns), Some(function)) =
                        (v.as_object(), AggregateFunction::from_name(function))
                    else {
                        continue;
                    };
                    for (column, dir) in columns {
                        let (Some(c), Some(d)) = (target.columns.get(column), direction(dir))
                        else {
                            continue;
                        };
                        let expr = OrderExpr::Aggregate {
                            table: r.target.clone(),
                            join: r.mapping.clone(),
                            filter: filter.clone(),
                            aggregate: OrderAggregate::Of(function, c.column.clone()),
                        };
                        out.push(OrderBy {
                            expr: wrap(expr),
                            direction: d,
                        });
                    }
                }
            }
            _ => {
                return Err(PlanError::unknown_field(
                    path,
                    key,
                    format!("{}_order_by", table.type_name),
                ))
            }
        }
        Ok(())
    }

    // ---- introspection printing --------------------------------------------------------

    fn print_root_field(&mut self, field: &AstField, path: &str) -> Result<String> {
        let mut out = String::new();
        self.print_field(field, path, &mut out)?;
        Ok(out)
    }

    fn print_field(&mut self, field: &AstField, path: &str, out: &mut String) -> Result<()> {
        if let Some(alias) = &field.alias {
            out.push_str(alias.node.as_str());
            out.push_str(": ");
        }
        out.push_str(field.name.node.as_str());
        if !field.arguments.is_empty() {
            out.push('(');
            for (i, (name, value)) in field.arguments.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(name.node.as_str());
                out.push_str(": ");
                let json = self.ast_to_json(&value.node, path)?;
                out.push_str(&graphql_literal(&json));
            }
            out.push(')');
        }
        if !field.selection_set.node.items.is_empty() {
            out.push_str(" { ");
            self.print_selection(&field.selection_set.node, path, out, 0)?;
            out.push('}');
        }
        out.push(' ');
        Ok(())
    }

    fn print_selection(
        &mut self,
        set: &SelectionSet,
        path: &str,
        out: &mut String,
        depth: usize,
    ) -> Result<()> {
        if depth > 64 {
            return Err(PlanError::validation(
                path,
                "fragment nesting too deep (cycle?)",
            ));
        }
        for item in &set.items {
            match &item.node {
                Selection::Field(f) => {
                    if self.directives_allow(&f.node.directives, path)? {
                        self.print_field(&f.node, path, out)?;
                    }
                }
                Selection::FragmentSpread(s) => {
                    if !self.directives_allow(&s.node.directives, path)? {
                        continue;
                    }
                    let document: &ExecutableDocument = self.document;
                    let name = s.node.fragment_name.node.as_str();
                    let fragment = document.fragments.get(name).ok_or_else(|| {
                        PlanError::validation(path, format!("fragment \"{name}\" not found"))
                    })?;
                    out.push_str("... on ");
                    out.push_str(fragment.node.type_condition.node.on.node.as_str());
                    out.push_str(" { ");
                    self.print_selection(&fragment.node.selection_set.node, path, out, depth + 1)?;
                    out.push_str("} ");
                }
                Selection::InlineFragment(i) => {
                    if !self.directives_allow(&i.node.directives, path)? {
                        continue;
                    }
                    out.push_str("... ");
                    if let Some(c) = &i.node.type_condition {
                        out.push_str("on ");
                        out.push_str(c.node.on.node.as_str());
                        out.push(' ');
                    }
                    out.push_str("{ ");
                    self.print_selection(&i.node.selection_set.node, path, out, depth + 1)?;
                    out.push_str("} ");
                }
            }
        }
        Ok(())
    }
}

/// A JSON value as a GraphQL literal (strings quoted, object keys bare).
fn graphql_literal(value: &Value) -> String {
    match value {
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{k}: {}", graphql_literal(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(graphql_literal)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// Parses a JSON select path (`$.a.b[0]`, `a.b`) into a JSON array of text keys.
pub fn json_path(path: &str, at: &str) -> Result<Value> {
    crate::json_path::keys(path)
        .map(|keys| Value::Array(keys.into_iter().map(Value::String).collect()))
        .ok_or_else(|| PlanError {
            message: format!("parse json path error: invalid path \"{path}\""),
            path: at.to_owned(),
            kind: PlanErrorKind::Parse,
        })
}

/// Comparisons of one column from a `<S>_comparison_exp` input.
fn comparison(column: &ColumnExpr, pg_type: &PgType, input: &Input) -> BoolExpr {
    let Some(ops) = input.as_object() else {
        return BoolExpr::True;
    };
    let mut all = Vec::new();
    for (name, value) in ops {
        let op_name = name.trim_start_matches('_');
        if op_name == "is_null" {
            if let Some(b) = value.as_bool_literal() {
                all.push(BoolExpr::IsNull {
                    column: column.clone(),
                    is_null: b,
                });
            }
            continue;
        }
        if op_name == "cast" {
            if let Some(casts) = value.as_object() {
                if let Some(text) = casts.get("String") {
                    let cast = ColumnExpr {
                        cast: Some(PgType::Text),
                        ..column.clone()
                    };
                    all.push(comparison(&cast, &PgType::Text, text));
                }
            }
            continue;
        }
        let Some(op) = CompareOp::from_name(op_name) else {
            continue;
        };
        let param = match value {
            Input::Null => continue,
            Input::Value(p) => p.clone(),
            Input::Enum(e) => Param::Literal(Value::String(e.clone())),
            Input::List(items) => list_param(items),
            Input::Object(_) => continue,
        };
        let cast = if op.takes_text() {
            PgType::Text
        } else {
            pg_type.clone()
        };
        all.push(BoolExpr::Compare {
            column: column.clone(),
            op,
            value: ValueExpr { param, cast },
        });
    }
    BoolExpr::And(all)
}

/// One parameter for a list: a JSON array literal when every element is literal.
fn list_param(items: &[Input]) -> Param {
    let params: Vec<Param> = items
        .iter()
        .map(|i| match i {
            Input::Value(p) => p.clone(),
            Input::Enum(e) => Param::Literal(Value::String(e.clone())),
            _ => Param::Literal(Value::Null),
        })
        .collect();
    if params.iter().all(|p| matches!(p, Param::Literal(_))) {
        Param::Literal(Value::Array(
            params
                .into_iter()
                .filter_map(|p| match p {
                    Param::Literal(v) => Some(v),
                    _ => None,
                })
                .collect(),
        ))
    } else {
        Param::Array(params)
    }
}

/// Strips the `$`/`_` prefix of a permission operator or connective.
fn operator(key: &str) -> Option<&str> {
    key.strip_prefix('$').or_else(|| key.strip_prefix('_'))
}

/// A session-variable reference or a literal, as a parameter.
fn permission_value(value: &Value) -> Param {
    match value.as_str() {
        Some(s) if crate::schema::is_session_variable(s) => Param::Session(s.to_ascii_lowercase()),
        _ => Param::Literal(value.clone()),
    }
}

/// Translates a permission BoolExp (metadata JSON, already validated) into the IR. Column
/// references without a matching column deny access rather than widen it.
pub fn permission_expr(resolved: &Resolved, table: &ResolvedTable, exp: &Value) -> BoolExpr {
    let Some(map) = exp.as_object() else {
        return BoolExpr::Or(Vec::new());
    };
    let mut all = Vec::new();
    for (key, value) in map {
        let expr = match operator(key) {
            Some("and") => BoolExpr::And(
                value
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|v| permission_expr(resolved, table, v))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            Some("or") => BoolExpr::Or(
                value
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|v| permission_expr(resolved, table, v))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            Some("not") => BoolExpr::Not(Box::new(permission_expr(resolved, table, value))),
            Some("exists") => {
                let target = value
                    .get("_table")
                    .and_then(|t| serde_json::from_value::<QualifiedTable>(t.clone()).ok())
                    .and_then(|t| resolved.tables.get(&t));
                match (target, value.get("_where")) {
                    (Some(t), Some(w)) => BoolExpr::Exists {
                        table: t.name.clone(),
                        join: Vec::new(),
                        filter: Box::new(permission_expr(resolved, t, w)),
                    },
                    _ => BoolExpr::Or(Vec::new()),
                }
            }
            _ => {
                if let Some(c) = table.db.column(key) {
                    let column = ColumnExpr {
                        scope: Scope::Current,
                        column: c.name.clone(),
                        cast: None,
                    };
                    permission_comparison(&column, &c.pg_type(), value)
                } else if let Some(r) = table.relationships.get(key) {
                    match resolved.tables.get(&r.target) {
                        Some(target) => BoolExpr::Exists {
                            table: r.target.clone(),
                            join: r.mapping.clone(),
                            filter: Box::new(permission_expr(resolved, target, value)),
                        },
                        None => BoolExpr::Or(Vec::new()),
                    }
                } else {
                    BoolExpr::Or(Vec::new())
                }
            }
        };
        all.push(expr);
    }
    BoolExpr::And(all)
}

fn permission_comparison(column: &ColumnExpr, pg_type: &PgType, value: &Value) -> BoolExpr {
    let Some(ops) = value.as_object() else {
        return BoolExpr::Compare {
            column: column.clone(),
            op: CompareOp::Eq,
            value: ValueExpr {
                param: permission_value(value),
                cast: pg_type.clone(),
            },
        };
    };
    let mut all = Vec::new();
    for (key, arg) in ops {
        let Some(name) = operator(key) else { continue };
        if name == "is_null" {
            if let Some(b) = arg.as_bool() {
                all.push(BoolExpr::IsNull {
                    column: column.clone(),
                    is_null: b,
                });
            }
            continue;
        }
        if let Some(base) = name
            .strip_prefix('c')
            .filter(|b| matches!(*b, "eq" | "ne" | "neq" | "gt" | "lt" | "gte" | "lte"))
        {
            let Some(op) = CompareOp::from_name(base) else {
                continue;
            };
            let right = match arg {
                Value::String(c) => ColumnExpr {
                    scope: Scope::Current,
                    column: c.clone(),
                    cast: None,
                },
                Value::Array(items) if items.len() == 2 => ColumnExpr {
                    scope: Scope::Root,
                    column: items[1].as_str().unwrap_or_default().to_owned(),
                    cast: None,
                },
                _ => continue,
            };
            all.push(BoolExpr::CompareColumns {
                left: column.clone(),
                op,
                right,
            });
            continue;
        }
        let Some(op) = CompareOp::from_name(name) else {
            all.push(BoolExpr::Or(Vec::new()));
            continue;
        };
        if arg.is_null() {
            continue;
        }
        let cast = if op.takes_text() {
            PgType::Text
        } else {
            pg_type.clone()
        };
        all.push(BoolExpr::Compare {
            column: column.clone(),
            op,
            value: ValueExpr {
                param: permission_value(arg),
                cast,
            },
        });
    }
    BoolExpr::And(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_paths_become_key_lists() {
        assert_eq!(
            json_path("$.a.b[0]", "$").unwrap(),
            serde_json::json!(["a", "b", "0"])
        );
        assert_eq!(json_path("a", "$").unwrap(), serde_json::json!(["a"]));
        assert_eq!(
            json_path("$['x y']", "$").unwrap(),
            serde_json::json!(["x y"])
        );
        assert!(json_path("$.a[", "$").is_err());
    }

    #[test]
    fn literals_print_as_graphql() {
        assert_eq!(
            graphql_literal(&serde_json::json!({"name": "a\"b", "n": [1, true]})),
            "{name: \"a\\\"b\", n: [1, true]}"
        );
    }
}
