//! Tracked functions resolved against the database and the tracked tables: every rule of
//! `docs/functions.md` ("Which functions can be tracked"), the placement (query or mutation
//! root), the root field names and how each argument is passed. A function that breaks a rule
//! is reported inconsistent with the reason `track_function` would give. Pure.

use super::*;
use crate::db_model::DbFunction;
use crate::metadata::ids::function_definition;
use std::collections::HashSet;

/// An input argument of a tracked function.
#[derive(Debug, Clone, PartialEq)]
pub struct TrackedArgument {
    /// Its field in `<fn>_args`: the SQL name, or `arg_<n>` for the n-th unnamed argument.
    pub graphql: String,
    /// The SQL name and type.
    pub sql: FunctionArgument,
}

/// A tracked function that fits the database and the metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedFunction {
    pub function: QualifiedFunction,
    /// The tracked table whose rows it returns.
    pub returns: QualifiedTable,
    /// `RETURNS SETOF`.
    pub set: bool,
    /// Input arguments in declaration order (the session argument among them).
    pub arguments: Vec<TrackedArgument>,
    /// Position of the session argument.
    pub session_argument: Option<usize>,
    pub exposed_as: ExposedAs,
    /// `VOLATILE`.
    pub volatile: bool,
    /// The root field's name.
    pub field: String,
    /// The aggregate field's name (query-exposed functions only).
    pub aggregate_field: Option<String>,
    /// The name of the arguments' input type.
    pub args_type: String,
    /// The field's description.
    pub comment: Option<String>,
    /// Roles granted the function (inherited roles whose parents hold a grant included).
    pub roles: Vec<String>,
}

impl ResolvedFunction {
    /// Whether `role` holds a grant.
    pub fn granted(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }

    /// The arguments a client passes: every one but the session argument.
    pub fn client_arguments(&self) -> impl Iterator<Item = &TrackedArgument> {
        self.arguments
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != self.session_argument)
            .map(|(_, a)| a)
    }
}

/// The base name of a function's GraphQL names: its custom name, else the name (prefixed by
/// its schema outside `public`).
pub fn base_name(entry: &FunctionEntry) -> String {
    match &entry.configuration.custom_name {
        Some(custom) => custom.0.clone(),
        None => entry.function.graphql_base_name(),
    }
}

/// The names of a function's root fields as its configuration and volatility make them:
/// (field, aggregate field when query-exposed).
fn field_names(entry: &FunctionEntry, exposed_as: ExposedAs) -> (String, Option<String>) {
    let base = base_name(entry);
    let custom = &entry.configuration.custom_root_fields;
    let field = custom
        .function
        .as_ref()
        .map(|n| n.0.clone())
        .unwrap_or_else(|| base.clone());
    let aggregate = (exposed_as == ExposedAs::Query).then(|| {
        custom
            .function_aggregate
            .as_ref()
            .map(|n| n.0.clone())
            .unwrap_or_else(|| format!("{base}_aggregate"))
    });
    (field, aggregate)
}

/// `constraint-violation` for function `f`, with the reason as message.
fn error(reason: String) -> MetadataError {
    MetadataError::new(Code::ConstraintViolation, JsonPath::root(), reason)
}

/// The names a function's fields and arguments type may not take.
#[derive(Debug, Clone, Default)]
pub struct Taken {
    /// Root fields of tables, actions and functions.
    pub fields: HashSet<String>,
    /// Types: tables' object types, custom types, the arguments types of computed fields and
    /// functions.
    pub types: HashSet<String>,
}

/// Checks a tracked function against the database and the tables tracked so far, and works
/// out how it is exposed. The error's message is the inconsistency's reason; `taken` holds
/// what the tables, actions and the functions before it named.
pub fn check_function(
    entry: &FunctionEntry,
    db: &DbModel,
    resolved: &Resolved,
    taken: &Taken,
) -> Result<ResolvedFunction, MetadataError> {
    let f = &entry.function;
    let function = match db.functions.get(f).map(Vec::as_slice).unwrap_or(&[]) {
        [] => {
            return Err(error(format!(
                "in function \"{f}\": no such function exists: \"{f}\""
            ))
            .with_missing(crate::metadata::error::Missing::DatabaseObject))
        }
        [one] => one,
        _ => {
            return Err(error(format!(
                "in function \"{f}\": function \"{f}\" is overloaded. Overloaded functions are not supported"
            )))
        }
    };
    let reasons = rule_reasons(entry, function, db);
    match reasons.as_slice() {
        [] => {}
        [one] => {
            return Err(error(format!(
                "in function \"{f}\": the function \"{f}\" cannot be tracked because {one}"
            )))
        }
        several => {
            let lines: String = several.iter().map(|r| format!("\n  • {r}")).collect();
            return Err(error(format!(
                "in function \"{f}\": the function \"{f}\" cannot be tracked for the following reasons:{lines}"
            )));
        }
    }
    let Some(returns) = function.return_type.relation() else {
        return Err(error(format!(
            "in function \"{f}\": the function does not return a table"
        )));
    };
    if resolved.table(&returns).is_none() {
        return Err(error(format!("table \"{returns}\" is not tracked"))
            .with_missing(crate::metadata::error::Missing::Metadata));
    }
    let volatile = function.volatility == "v";
    let exposed_as = entry.configuration.exposed_as.unwrap_or(match volatile {
        true => ExposedAs::Mutation,
        false => ExposedAs::Query,
    });
    let (field, aggregate_field) = field_names(entry, exposed_as);
    let args_type = format!("{}_args", base_name(entry));
    let conflict = |name: &str| {
        error(format!(
            "function \"{f}\" conflicts with existing field or type \"{name}\""
        ))
    };
    for name in std::iter::once(&field).chain(aggregate_field.as_ref()) {
        if taken.fields.contains(name) {
            return Err(conflict(name));
        }
    }
    if aggregate_field.as_ref() == Some(&field) {
        return Err(conflict(&field));
    }
    if taken.types.contains(&args_type) {
        return Err(conflict(&args_type));
    }
    let names = function.input_names();
    let mut unnamed = 0;
    let arguments = names
        .iter()
        .zip(&function.input_types)
        .enumerate()
        .map(|(i, (name, t))| {
            let graphql = match name.is_empty() {
                true => {
                    unnamed += 1;
                    format!("arg_{unnamed}")
                }
                false => name.clone(),
            };
            TrackedArgument {
                graphql,
                sql: FunctionArgument {
                    name: name.clone(),
                    type_name: t.name.clone(),
                    cast: t.pg_type(),
                    has_default: i + function.arg_defaults >= function.input_types.len(),
                },
            }
        })
        .collect();
    let session_argument = entry
        .configuration
        .session_argument
        .as_ref()
        .and_then(|s| names.iter().position(|n| n == s));
    Ok(ResolvedFunction {
        function: f.clone(),
        returns,
        set: function.returns_set,
        arguments,
        session_argument,
        exposed_as,
        volatile,
        aggregate_field,
        args_type,
        field,
        comment: entry.comment.clone(),
        roles: entry.permissions.iter().map(|p| p.role.0.clone()).collect(),
    })
}

/// The rules of a trackable function, in order, each broken one giving its reason.
fn rule_reasons(entry: &FunctionEntry, function: &DbFunction, db: &DbModel) -> Vec<String> {
    let mut reasons = Vec::new();
    let config = &entry.configuration;
    // With a custom name the function's own name appears nowhere in the schema.
    if config.custom_name.is_none()
        && !GraphQLName::is_servable(&entry.function.graphql_base_name())
    {
        reasons.push("function name is not a legal GraphQL identifier".to_owned());
    }
    let modes = function.arg_modes.as_deref().unwrap_or(&[]);
    if modes.iter().any(|m| m == "v") {
        reasons.push("function with \"VARIADIC\" parameters are not supported".to_owned());
    }
    let returned = &function.return_type;
    if returned.kind != "c" {
        reasons.push("the function does not return a \"COMPOSITE\" type".to_owned());
    } else if returned
        .relation()
        .and_then(|t| db.table(&t.schema, &t.name))
        .is_none()
    {
        reasons.push("the function does not return a table".to_owned());
    }
    if config.exposed_as == Some(ExposedAs::Mutation) && function.volatility != "v" {
        reasons.push("the function was requested to be exposed as a mutation, but is not marked VOLATILE. Maybe the function was given the wrong volatility when it was defined?".to_owned());
    }
    let names = function.input_names();
    let bad_names: Vec<&str> = names
        .iter()
        .filter(|n| !n.is_empty() && !GraphQLName::is_servable(n))
        .map(String::as_str)
        .collect();
    if !bad_names.is_empty() {
        reasons.push(format!(
            "the function arguments {} are not in compliance with GraphQL spec",
            bad_names.join(",")
        ));
    }
    // An unnamed argument is `arg_<n>`: a named one may already be called so.
    let mut unnamed = 0;
    let mut seen = HashSet::new();
    let mut twice = Vec::new();
    for name in &names {
        let graphql = match name.is_empty() {
            true => {
                unnamed += 1;
                format!("arg_{unnamed}")
            }
            false => name.clone(),
        };
        if !seen.insert(graphql.clone()) {
            twice.push(graphql);
        }
    }
    if !twice.is_empty() {
        reasons.push(format!(
            "the function arguments {} are named twice (unnamed arguments are arg_1, arg_2, …)",
            twice.join(",")
        ));
    }
    let bad_types: Vec<&str> = function
        .input_types
        .iter()
        .filter(|t| !matches!(t.kind.as_str(), "b" | "e" | "d" | "r" | "m"))
        .map(|t| t.name.as_str())
        .collect();
    if !bad_types.is_empty() {
        reasons.push(format!(
            "the function argument types {} are not supported",
            bad_types.join(",")
        ));
    }
    if let Some(session) = &config.session_argument {
        match names.iter().position(|n| n == session) {
            None => reasons.push(format!(
                "given session argument \"{session}\" not the input argument of the function"
            )),
            Some(i) => {
                let t = &function.input_types[i];
                let json = t.schema == "pg_catalog" && matches!(t.name.as_str(), "json" | "jsonb");
                if !json {
                    reasons.push(format!(
                        "given session argument \"{session}\" is not of type json"
                    ));
                }
            }
        }
    }
    reasons
}

/// The root field names a function may not take: those of the tables, the actions and the
/// functions resolved so far.
pub fn taken_names(resolved: &Resolved) -> Taken {
    let mut taken = Taken {
        fields: table_root_fields(resolved).into_keys().collect(),
        types: HashSet::new(),
    };
    taken
        .fields
        .extend(resolved.actions.iter().map(|a| a.name().to_owned()));
    for t in resolved.tables.values() {
        taken.types.insert(t.name.graphql_base_name());
        for cf in t.computed_fields.values() {
            taken
                .types
                .insert(format!("{}_args", cf.function.graphql_base_name()));
        }
    }
    let custom = &resolved.custom_types.types;
    for t in crate::metadata::objects::CustomType::all(custom) {
        taken.types.insert(t.name().to_owned());
    }
    for f in &resolved.functions {
        taken.fields.insert(f.field.clone());
        taken.fields.extend(f.aggregate_field.clone());
        taken.types.insert(f.args_type.clone());
    }
    taken
}

/// Resolves every tracked function in metadata order, after the tables and actions: each
/// must not take a root field of a table, an action or a function before it.
pub(super) fn resolve_all(metadata: &Metadata, db: &DbModel, cache: &mut Resolution) {
    if metadata.functions.is_empty() {
        return;
    }
    let mut taken = taken_names(&cache.resolved);
    for entry in &metadata.functions {
        match check_function(entry, db, &cache.resolved, &taken) {
            Ok(f) => {
                taken.fields.insert(f.field.clone());
                taken.fields.extend(f.aggregate_field.clone());
                taken.types.insert(f.args_type.clone());
                cache.resolved.functions.push(f);
            }
            Err(err) => cache.inconsistencies.push(Inconsistency {
                object: ObjectId::Function(entry.function.clone()),
                kind: "function",
                definition: function_definition(entry),
                reason: err.message,
                conflict: false,
            }),
        }
    }
}
