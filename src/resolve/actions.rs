//! Actions resolved against the custom types, the tracked tables and the environment
//! (`docs/actions.md`): argument and output types checked, the handler URL and headers
//! expanded, root-field names checked against the tables'. The custom types' relationships to
//! tables get the types of their mapped columns, so the SQL that joins a handler's output to
//! table rows can bind each value as the column's type. Pure, except for reading the
//! environment.

use super::checks::{base_type_name, custom_type_kind, TypeKind};
use super::{Inconsistency, RelationshipKind, Resolution, Resolved};
use crate::db_model::DbModel;
use crate::db_model::PgType;
use crate::metadata::error::{Code, MetadataError, Missing};
use crate::metadata::ids::ObjectId;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use serde_json::json;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

/// Handler timeout when the definition sets none, in seconds.
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 30;

/// An action that is served: its definition with the handler's URL and headers worked out.
#[derive(Debug, Clone)]
pub struct ResolvedAction {
    /// The metadata entry (permissions included).
    pub entry: ActionEntry,
    /// The handler URL, `{{VAR}}` templates expanded.
    pub handler: String,
    /// Configured headers, environment values read.
    pub headers: Vec<(String, String)>,
    /// Bound on the handler call.
    pub timeout: Duration,
    /// Inherited roles that may call it because a parent may.
    pub derived_roles: Vec<String>,
}

impl ResolvedAction {
    /// The action's name (its root field).
    pub fn name(&self) -> &str {
        &self.entry.name.0
    }

    /// An asynchronous mutation: answered with an id, resolved by the workers.
    pub fn is_async(&self) -> bool {
        self.entry.definition.kind == Some(ActionKind::Asynchronous)
            && self.entry.definition.action_type == ActionType::Mutation
    }

    /// Whether `role` may call it: admin always, others with an action permission.
    pub fn allows(&self, role: &str) -> bool {
        role == crate::session::ADMIN_ROLE
            || self.entry.permissions.iter().any(|p| p.role.0 == role)
            || self.derived_roles.iter().any(|r| r == role)
    }
}

/// A relationship from a custom object type to a tracked table, ready to join.
#[derive(Debug, Clone)]
pub struct ResolvedTypeRelationship {
    /// Field name.
    pub name: String,
    pub kind: RelationshipKind,
    pub target: QualifiedTable,
    /// (object field, table column, the column's type).
    pub mapping: Vec<(String, String, PgType)>,
}

/// The custom types as served: the set itself, and the relationships of its object types
/// that resolve against the tracked tables (by object type name).
#[derive(Debug, Clone, Default)]
pub struct ResolvedCustomTypes {
    /// The types as `set_custom_types` stored them.
    pub types: CustomTypes,
    /// Resolvable relationships by object type.
    pub relationships: BTreeMap<String, Vec<ResolvedTypeRelationship>>,
}

impl ResolvedCustomTypes {
    /// The object type `name`.
    pub fn object(&self, name: &str) -> Option<&ObjectType> {
        self.types.objects.iter().find(|t| t.name.0 == name)
    }

    /// The input object type `name`.
    pub fn input_object(&self, name: &str) -> Option<&InputObjectType> {
        self.types.input_objects.iter().find(|t| t.name.0 == name)
    }

    /// The enum `name`.
    pub fn enumeration(&self, name: &str) -> Option<&EnumType> {
        self.types.enums.iter().find(|t| t.name.0 == name)
    }

    /// The custom scalar `name`.
    pub fn scalar(&self, name: &str) -> Option<&ScalarType> {
        self.types.scalars.iter().find(|t| t.name.0 == name)
    }

    /// The relationship `field` of object type `object`.
    pub fn relationship(&self, object: &str, field: &str) -> Option<&ResolvedTypeRelationship> {
        self.relationships
            .get(object)?
            .iter()
            .find(|r| r.name == field)
    }
}

/// Checks an action's argument and output types against the custom types (paths relative to
/// the definition): arguments of scalar, enum or input-object types, named once; an output
/// whose base is a custom object type.
pub fn check_action_types(
    definition: &ActionDefinition,
    types: &CustomTypes,
    db: &DbModel,
) -> Result<(), MetadataError> {
    let mut seen = HashSet::new();
    for (i, argument) in definition.arguments.iter().enumerate() {
        let at = JsonPath::root().key("arguments").index(i);
        if !seen.insert(&argument.name.0) {
            return Err(MetadataError::new(
                Code::ParseFailed,
                at.key("name"),
                format!(
                    "the argument \"{}\" is defined more than once",
                    argument.name
                ),
            ));
        }
        let base = base_type_name(&argument.arg_type).unwrap_or(&argument.arg_type);
        let kind = base_type_name(&argument.arg_type).and_then(|b| custom_type_kind(types, db, b));
        if !matches!(
            kind,
            Some(TypeKind::Scalar | TypeKind::Enum | TypeKind::Input)
        ) {
            let err = MetadataError::new(
                Code::InvalidParams,
                at.key("type"),
                format!("the type: \"{base}\" is not defined in custom types or it is not a scalar/enum/input_object"),
            );
            // A well-formed type defined nowhere may be on its way (another resource's custom
            // types); a malformed one, or one of the wrong kind, is a mistake in the definition.
            return Err(match (base_type_name(&argument.arg_type), kind) {
                (Some(_), None) => err.with_missing(Missing::Metadata),
                _ => err,
            });
        }
    }
    let output = &definition.output_type;
    let base = base_type_name(output).unwrap_or(output);
    let is_object = base_type_name(output)
        .and_then(|b| custom_type_kind(types, db, b))
        .is_some_and(|k| k == TypeKind::Object)
        && types.objects.iter().any(|o| o.name.0 == base);
    if !is_object {
        return Err(MetadataError::new(
            Code::NotExists,
            JsonPath::root().key("output_type"),
            format!("the type: \"{base}\" is not an object type defined in custom types"),
        )
        .with_missing(Missing::Metadata));
    }
    Ok(())
}

/// The handler's URL and the configured headers, environment values read. A missing variable
/// is `not-found` (the Deployment's environment must bring it); a URL that is not absolute
/// `http(s)` is `invalid-params`. Messages name the template, never an expanded value.
pub fn resolve_endpoint(
    definition: &ActionDefinition,
) -> Result<(String, Vec<(String, String)>), MetadataError> {
    let missing = |path: JsonPath, message: String| {
        MetadataError::new(Code::NotFound, path, message).with_missing(Missing::Environment)
    };
    let url = super::remote::expand(&definition.handler).map_err(|var| {
        missing(
            JsonPath::root().key("handler"),
            format!("cannot find environment variable {var} for the action handler"),
        )
    })?;
    let valid = url
        .parse::<http::Uri>()
        .ok()
        .is_some_and(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some());
    if !valid {
        return Err(MetadataError::new(
            Code::InvalidParams,
            JsonPath::root().key("handler"),
            format!("not a valid URI: {}", definition.handler),
        ));
    }
    let headers = definition
        .headers
        .iter()
        .enumerate()
        .map(|(i, h)| match h {
            Header::Value { name, value } => Ok((name.clone(), value.clone())),
            Header::FromEnv {
                name,
                value_from_env,
            } => std::env::var(value_from_env)
                .map(|v| (name.clone(), v))
                .map_err(|_| {
                    missing(
                        JsonPath::root().key("headers").index(i),
                        format!(
                            "cannot find environment variable {value_from_env} for header {name}"
                        ),
                    )
                }),
        })
        .collect::<Result<_, _>>()?;
    Ok((url, headers))
}

/// Why an action's root fields cannot be added next to the tables' root fields, if they
/// cannot: the action's name (its query or mutation field, and the query and subscription
/// field of an asynchronous action's result) must not be a table's root field.
pub fn root_field_clash<T: std::fmt::Display>(
    name: &str,
    table_roots: &HashMap<String, T>,
) -> Option<String> {
    table_roots.get(name).map(|table| {
        format!(
            "the action \"{name}\" conflicts with the root field \"{name}\" of table \"{table}\""
        )
    })
}

/// A definition's handler timeout: its `timeout`, else [`DEFAULT_TIMEOUT_SECONDS`]; at least
/// a second.
pub fn timeout(definition: &ActionDefinition) -> Duration {
    Duration::from_secs(u64::from(
        definition.timeout.unwrap_or(DEFAULT_TIMEOUT_SECONDS).max(1),
    ))
}

/// Resolves the custom types' relationships against the tracked tables: a relationship whose
/// table or columns are gone is left out (the custom types are then reported inconsistent by
/// their own check).
fn resolve_type_relationships(types: &CustomTypes, resolved: &Resolved) -> ResolvedCustomTypes {
    let mut out = ResolvedCustomTypes {
        types: types.clone(),
        relationships: BTreeMap::new(),
    };
    for object in &types.objects {
        let mut list = Vec::new();
        for rel in &object.relationships {
            let Some(table) = resolved.tables.get(&rel.remote_table) else {
                continue;
            };
            let mapping: Option<Vec<_>> = rel
                .field_mapping
                .iter()
                .map(|(field, column)| {
                    let known = object.fields.iter().any(|f| f.name.0 == *field);
                    let c = table.db.column(column)?;
                    known.then(|| (field.clone(), column.clone(), c.pg_type()))
                })
                .collect();
            let Some(mapping) = mapping else { continue };
            list.push(ResolvedTypeRelationship {
                name: rel.name.0.clone(),
                kind: match rel.rel_type {
                    ObjectRelationshipType::Object => RelationshipKind::Object,
                    ObjectRelationshipType::Array => RelationshipKind::Array,
                },
                target: rel.remote_table.clone(),
                mapping,
            });
        }
        if !list.is_empty() {
            out.relationships.insert(object.name.0.clone(), list);
        }
    }
    out
}

/// Resolves every action: its types, handler and headers, and its root fields against the
/// tables'. Roles named by action permissions join the roles that get a schema.
pub(super) fn resolve_actions<T: std::fmt::Display>(
    metadata: &Metadata,
    db: &DbModel,
    table_roots: &HashMap<String, T>,
    type_check: Option<super::remote::ActionTypeCheck>,
    cache: &mut Resolution,
) {
    cache.resolved.custom_types =
        resolve_type_relationships(&metadata.custom_types, &cache.resolved);
    let mut candidates = Vec::new();
    for entry in &metadata.actions {
        let outcome = check_action_types(&entry.definition, &metadata.custom_types, db)
            .and_then(|()| resolve_endpoint(&entry.definition))
            .and_then(
                |endpoint| match root_field_clash(&entry.name.0, table_roots) {
                    Some(reason) => Err(MetadataError::new(
                        Code::ConstraintViolation,
                        JsonPath::root(),
                        reason,
                    )),
                    None => Ok(endpoint),
                },
            );
        match outcome {
            Ok((handler, headers)) => {
                candidates.push(ResolvedAction {
                    entry: entry.clone(),
                    handler,
                    headers,
                    timeout: timeout(&entry.definition),
                    derived_roles: Vec::new(),
                });
            }
            Err(err) => cache.inconsistencies.push(Inconsistency {
                object: ObjectId::Action(entry.name.0.clone()),
                kind: "action",
                definition: json!(entry),
                reason: err.message,
                conflict: false,
            }),
        }
    }
    let verdicts = match type_check {
        Some(check) if !candidates.is_empty() => check(&cache.resolved, &candidates),
        _ => Vec::new(),
    };
    for (i, action) in candidates.into_iter().enumerate() {
        if let Some(reason) = verdicts.get(i).cloned().flatten() {
            cache.inconsistencies.push(Inconsistency {
                object: ObjectId::Action(action.name().to_owned()),
                kind: "action",
                definition: json!(action.entry),
                reason,
                conflict: false,
            });
            continue;
        }
        cache
            .resolved
            .roles
            .extend(action.entry.permissions.iter().map(|p| p.role.0.clone()));
        cache.resolved.actions.push(action);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An argument type no custom type defines yet says so (a Kubernetes resource then waits
    /// for it); one of the wrong kind, or malformed, does not.
    #[test]
    fn unknown_argument_types_are_missing_and_wrong_kinds_are_not() {
        let types: CustomTypes = serde_json::from_value(json!({
            "objects": [{"name": "ArchiveResult", "fields": [{"name": "id", "type": "Int!"}]}]}))
        .unwrap();
        let definition = |argument: &str| -> ActionDefinition {
            serde_json::from_value(
                json!({"handler": "http://h/", "output_type": "ArchiveResult",
                "arguments": [{"name": "x", "type": argument}]}),
            )
            .unwrap()
        };
        let db = DbModel::default();
        assert!(check_action_types(&definition("Int!"), &types, &db).is_ok());
        let later = check_action_types(&definition("[ArchiveReason!]"), &types, &db).unwrap_err();
        assert_eq!(later.code, Code::InvalidParams);
        assert_eq!(later.missing, Some(Missing::Metadata));
        for wrong in ["ArchiveResult", "[Int"] {
            let err = check_action_types(&definition(wrong), &types, &db).unwrap_err();
            assert_eq!(err.code, Code::InvalidParams, "{wrong}");
            assert_eq!(err.missing, None, "{wrong}");
        }
    }
}
