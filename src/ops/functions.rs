//! Tracked functions: `track_function` (versions 1 and 2), `untrack_function`,
//! `set_function_customization`, `create_function_permission` and `drop_function_permission`
//! (see `docs/functions.md`). The function's rules are the resolver's own
//! ([`crate::resolve::functions::check_function`]), so an operation and a rebuild agree. Must
//! not do IO, read the clock, or edit anything but the `Metadata` it returns.

use super::remote_relationships::check_source_of;
use super::Context;
use crate::metadata::error::{
    already_exists, not_exists_in_metadata, parse_failed, Code, MetadataError, Result,
};
use crate::metadata::ids::{function_definition, ObjectId};
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::functions::{check_function, taken_names};
use crate::resolve::Resolution;
use serde::Deserialize;
use serde_json::{json, Value};

/// An operation on tracked functions.
#[derive(Debug, Clone)]
pub enum FunctionOp {
    /// `track_function`.
    Track(FunctionEntry),
    /// `untrack_function`.
    Untrack(QualifiedFunction),
    /// `set_function_customization`: the whole configuration replaced.
    Customize(QualifiedFunction, FunctionConfiguration),
    /// `create_function_permission`.
    Grant(QualifiedFunction, Name),
    /// `drop_function_permission`.
    Revoke(QualifiedFunction, Name),
}

/// The arguments naming a function: `function`, or the legacy `schema` and `name`.
#[derive(Deserialize)]
struct Named {
    #[serde(default)]
    function: Option<QualifiedFunction>,
    #[serde(default)]
    schema: Option<String>,
    #[serde(default)]
    name: Option<String>,
    /// Checked before parsing (see [`FunctionOp::parse`]).
    #[serde(default, rename = "source")]
    _source: Option<Value>,
}

impl Named {
    fn function(self, path: &JsonPath) -> Result<QualifiedFunction> {
        match (self.function, self.name) {
            (Some(f), _) => Ok(f),
            (None, Some(name)) => Ok(QualifiedFunction::new(
                self.schema.unwrap_or_else(|| "public".to_owned()),
                name,
            )),
            (None, None) => Err(parse_failed(
                path.clone(),
                "the key 'function' was not present",
            )),
        }
    }
}

#[derive(Deserialize)]
struct Track {
    #[serde(flatten)]
    named: Named,
    #[serde(default)]
    configuration: Option<Value>,
    #[serde(default)]
    comment: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Customize {
    function: QualifiedFunction,
    configuration: Value,
    /// Checked before parsing (see [`FunctionOp::parse`]).
    #[serde(default, rename = "source")]
    _source: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Grant {
    function: QualifiedFunction,
    role: Name,
    /// Checked before parsing (see [`FunctionOp::parse`]).
    #[serde(default, rename = "source")]
    _source: Option<Value>,
}

/// A configuration as given, with its own rules: no `response`, distinct root field names.
pub fn parse_configuration(value: &Value, path: &JsonPath) -> Result<FunctionConfiguration> {
    if value.get("response").is_some() {
        return Err(MetadataError::new(
            Code::NotSupported,
            path.key("response"),
            "\"response\" is not supported",
        ));
    }
    let configuration: FunctionConfiguration = parse(value, path)?;
    check_configuration(&configuration, path)?;
    Ok(configuration)
}

/// The rules of a configuration that need nothing else: the two root field names differ.
pub fn check_configuration(configuration: &FunctionConfiguration, path: &JsonPath) -> Result<()> {
    let fields = &configuration.custom_root_fields;
    if let (Some(a), Some(b)) = (&fields.function, &fields.function_aggregate) {
        if a == b {
            return Err(parse_failed(
                path.key("custom_root_fields"),
                format!(
                    "the following custom root field names are duplicated: \"{a}\" and \"{b}\""
                ),
            ));
        }
    }
    Ok(())
}

impl FunctionOp {
    /// Parses the function operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        const OPS: [&str; 5] = [
            "track_function",
            "untrack_function",
            "set_function_customization",
            "create_function_permission",
            "drop_function_permission",
        ];
        if !OPS.contains(&op_type) {
            return Ok(None);
        }
        // The source is checked before anything else about the arguments.
        check_source_of(args, path)?;
        Ok(Some(match op_type {
            "track_function" => {
                let a: Track = parse(args, path)?;
                let configuration = match &a.configuration {
                    None | Some(Value::Null) => FunctionConfiguration::default(),
                    Some(c) => parse_configuration(c, &path.key("configuration"))?,
                };
                FunctionOp::Track(FunctionEntry {
                    function: a.named.function(path)?,
                    configuration,
                    permissions: Vec::new(),
                    comment: a.comment,
                })
            }
            "untrack_function" => FunctionOp::Untrack(parse::<Named>(args, path)?.function(path)?),
            "set_function_customization" => {
                let a: Customize = parse(args, path)?;
                let configuration =
                    parse_configuration(&a.configuration, &path.key("configuration"))?;
                FunctionOp::Customize(a.function, configuration)
            }
            "create_function_permission" | "drop_function_permission" => {
                let a: Grant = parse(args, path)?;
                match op_type {
                    "create_function_permission" => FunctionOp::Grant(a.function, a.role),
                    _ => FunctionOp::Revoke(a.function, a.role),
                }
            }
            _ => return Ok(None),
        }))
    }

    pub fn apply(
        &self,
        metadata: &Metadata,
        cache: &Resolution,
        ctx: Context<'_>,
    ) -> Result<Metadata> {
        let mut next = metadata.clone();
        let args = JsonPath::args();
        match self {
            FunctionOp::Track(entry) => {
                let f = &entry.function;
                if metadata.function(f).is_some() {
                    return Err(MetadataError::new(
                        Code::AlreadyTracked,
                        args,
                        format!("function already tracked: \"{f}\""),
                    ));
                }
                if metadata.table(f).is_some() {
                    return Err(MetadataError::new(
                        Code::NotSupported,
                        args,
                        format!("table with name \"{f}\" already exists"),
                    ));
                }
                check(entry, cache, ctx, None)?;
                next.functions.push(entry.clone());
            }
            FunctionOp::Untrack(f) => {
                tracked(metadata, f)?;
                next.functions.retain(|e| &e.function != f);
            }
            FunctionOp::Customize(f, configuration) => {
                let mut entry = tracked(metadata, f)?.clone();
                entry.configuration = configuration.clone();
                check(&entry, cache, ctx, Some(f))?;
                if let Some(e) = next.function_mut(f) {
                    e.configuration = configuration.clone();
                }
            }
            FunctionOp::Grant(f, role) => {
                let entry = tracked(metadata, f)?;
                if role.0 == crate::session::ADMIN_ROLE {
                    return Err(MetadataError::new(
                        Code::ConstraintViolation,
                        args,
                        "cannot define permission for admin role",
                    ));
                }
                if entry.permissions.iter().any(|p| &p.role == role) {
                    return Err(already_exists(
                        args,
                        format!("permission of role \"{role}\" already exists for function \"{f}\" in source: \"default\""),
                    ));
                }
                let Some(resolved) = cache.resolved.functions.iter().find(|r| &r.function == f)
                else {
                    // Inconsistent: its own reason says why nothing can be granted on it.
                    let reason = cache
                        .inconsistencies
                        .iter()
                        .find(|i| i.object == ObjectId::Function(f.clone()))
                        .map(|i| i.reason.clone())
                        .unwrap_or_else(|| format!("function \"{f}\" is inconsistent"));
                    return Err(MetadataError::new(Code::ConstraintViolation, args, reason));
                };
                let returns = &resolved.returns;
                let selects = cache.resolved.tables.get(returns).is_some_and(|t| {
                    t.permissions
                        .get(&role.0)
                        .is_some_and(|p| p.select.is_some())
                });
                if !selects {
                    let table = returns.to_string();
                    return Err(MetadataError::new(
                        Code::NotSupported,
                        args,
                        format!("function permission can only be added when the function's return table \"{table}\" has select permission configured for role: \"{role}\""),
                    )
                    .with_missing(crate::metadata::error::Missing::Metadata));
                }
                if let Some(e) = next.function_mut(f) {
                    e.permissions
                        .push(FunctionPermission { role: role.clone() });
                }
            }
            FunctionOp::Revoke(f, role) => {
                let entry = tracked(metadata, f)?;
                if !entry.permissions.iter().any(|p| &p.role == role) {
                    return Err(not_exists_in_metadata(
                        args,
                        format!("permission of role \"{role}\" does not exist for function \"{f}\" in source: \"default\""),
                    ));
                }
                if let Some(e) = next.function_mut(f) {
                    e.permissions.retain(|p| &p.role != role);
                }
            }
        }
        Ok(next)
    }
}

/// Each grant of a document's consistent functions is one `create_function_permission` would
/// make: its role may select the returned table. Paths under `document`.
pub fn check_grants(
    metadata: &Metadata,
    resolution: &Resolution,
    document: &JsonPath,
) -> Result<()> {
    for (i, entry) in metadata.functions.iter().enumerate() {
        let Some(resolved) =
            (resolution.resolved.functions.iter()).find(|r| r.function == entry.function)
        else {
            continue;
        };
        let table = resolution.resolved.tables.get(&resolved.returns);
        for (j, p) in entry.permissions.iter().enumerate() {
            let selects = table.is_some_and(|t| {
                t.permissions
                    .get(&p.role.0)
                    .is_some_and(|rules| rules.select.is_some())
            });
            if !selects {
                return Err(MetadataError::new(
                    Code::NotSupported,
                    document.key("functions").index(i).key("permissions").index(j),
                    format!("function permission can only be added when the function's return table \"{}\" has select permission configured for role: \"{}\"", resolved.returns, p.role),
                ));
            }
        }
    }
    Ok(())
}

/// The entry of a tracked function, or `not-exists`.
fn tracked<'m>(metadata: &'m Metadata, f: &QualifiedFunction) -> Result<&'m FunctionEntry> {
    metadata.function(f).ok_or_else(|| {
        not_exists_in_metadata(
            JsonPath::args(),
            format!("function \"{f}\" does not exist in source: default"),
        )
    })
}

/// Checks `entry` as a rebuild would, against every root field but those of `replacing` (the
/// function whose configuration changes); the error carries the function as `internal`.
fn check(
    entry: &FunctionEntry,
    cache: &Resolution,
    ctx: Context<'_>,
    replacing: Option<&QualifiedFunction>,
) -> Result<()> {
    let mut taken = taken_names(&cache.resolved);
    if let Some(f) = replacing {
        for own in cache.resolved.functions.iter().filter(|r| &r.function == f) {
            taken.fields.remove(&own.field);
            if let Some(aggregate) = &own.aggregate_field {
                taken.fields.remove(aggregate);
            }
            taken.types.remove(&own.args_type);
        }
    }
    check_function(entry, ctx.db, &cache.resolved, &taken).map_err(|e| {
        let object = json!({
            "type": "function",
            "definition": function_definition(entry),
            "reason": e.message,
        });
        e.under(&JsonPath::args()).with_internal(json!([object]))
    })?;
    Ok(())
}
