//! Actions: `create_action`, `update_action`, `drop_action`, `create_action_permission`,
//! `drop_action_permission`, validated by the resolver's own rules
//! (`resolve::actions`). Dropping an asynchronous action's logged calls (`clear_data`) is the
//! catalog's part, in the same transaction. See `docs/actions.md`. Must not do IO, read the
//! clock, or edit anything but the `Metadata` it returns.

use super::Context;
use crate::metadata::error::{
    already_exists, not_exists_in_metadata, parse_failed, Code, MetadataError, Result,
};
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::actions::{check_action_types, resolve_endpoint, root_field_clash};
use crate::resolve::{check_reserved_name, Resolution};
use serde::Deserialize;
use serde_json::Value;

/// An operation on actions.
#[derive(Debug, Clone)]
pub enum ActionOp {
    /// `create_action`.
    Create(Box<ActionEntry>),
    /// `update_action`: a new definition (and comment), permissions kept.
    Update {
        name: String,
        /// The full new definition.
        definition: Box<ActionDefinition>,
        comment: Option<String>,
    },
    /// `drop_action`.
    Drop {
        name: String,
        /// Delete the action's logged asynchronous calls too.
        clear_data: bool,
    },
    /// `create_action_permission`.
    CreatePermission {
        action: String,
        /// The role and its comment.
        permission: ActionPermission,
    },
    /// `drop_action_permission`.
    DropPermission { action: String, role: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Create {
    name: GraphQLName,
    definition: ActionDefinition,
    #[serde(default)]
    comment: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Drop {
    name: String,
    #[serde(default = "yes")]
    clear_data: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreatePermission {
    action: String,
    role: Name,
    #[serde(default)]
    comment: Option<String>,
    /// Accepted for compatibility and ignored (`docs/metadata-api.md`,
    /// "`create_action_permission` / `drop_action_permission`").
    #[serde(default)]
    #[allow(dead_code)]
    definition: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DropPermission {
    action: String,
    role: String,
}

/// The shape rules of a definition: query actions are synchronous, timeouts positive.
pub fn check_definition(definition: &ActionDefinition, path: &JsonPath) -> Result<()> {
    if definition.action_type == ActionType::Query && definition.kind.is_some() {
        return Err(parse_failed(
            path.key("kind"),
            "query actions cannot have a kind: they are always synchronous",
        ));
    }
    if definition.timeout == Some(0) {
        return Err(parse_failed(
            path.key("timeout"),
            "timeout must be greater than 0",
        ));
    }
    Ok(())
}

impl ActionOp {
    /// Parses the action operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "create_action" => {
                let c: Create = parse(args, path)?;
                check_reserved_name(&c.name.0, path.key("name"))?;
                check_definition(&c.definition, &path.key("definition"))?;
                ActionOp::Create(Box::new(ActionEntry {
                    name: c.name,
                    definition: c.definition,
                    comment: c.comment,
                    permissions: Vec::new(),
                }))
            }
            "update_action" => {
                let c: Create = parse(args, path)?;
                check_definition(&c.definition, &path.key("definition"))?;
                ActionOp::Update {
                    name: c.name.0,
                    definition: Box::new(c.definition),
                    comment: c.comment,
                }
            }
            "drop_action" => {
                let d: Drop = parse(args, path)?;
                ActionOp::Drop {
                    name: d.name,
                    clear_data: d.clear_data,
                }
            }
            "create_action_permission" => {
                let c: CreatePermission = parse(args, path)?;
                ActionOp::CreatePermission {
                    action: c.action,
                    permission: ActionPermission {
                        role: c.role,
                        comment: c.comment,
                    },
                }
            }
            "drop_action_permission" => {
                let d: DropPermission = parse(args, path)?;
                ActionOp::DropPermission {
                    action: d.action,
                    role: d.role,
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
        let position = |name: &str| metadata.actions.iter().position(|a| a.name.0 == name);
        let missing = |name: &str, key: &str| {
            not_exists_in_metadata(
                JsonPath::args().key(key),
                format!("action with name \"{name}\" does not exist"),
            )
        };
        match self {
            ActionOp::Create(entry) => {
                let name = &entry.name.0;
                if position(name).is_some() {
                    return Err(already_exists(
                        JsonPath::args().key("name"),
                        format!("action with name \"{name}\" already exists"),
                    ));
                }
                check(entry, metadata, cache, ctx)?;
                next.actions.push((**entry).clone());
            }
            ActionOp::Update {
                name,
                definition,
                comment,
            } => {
                let i = position(name).ok_or_else(|| missing(name, "name"))?;
                let mut entry = metadata.actions[i].clone();
                entry.definition = (**definition).clone();
                entry.comment = comment.clone();
                check(&entry, metadata, cache, ctx)?;
                next.actions[i] = entry;
            }
            ActionOp::Drop { name, .. } => {
                let i = position(name).ok_or_else(|| missing(name, "name"))?;
                next.actions.remove(i);
            }
            ActionOp::CreatePermission { action, permission } => {
                let i = position(action).ok_or_else(|| missing(action, "action"))?;
                let role = &permission.role.0;
                if role == crate::session::ADMIN_ROLE {
                    return Err(MetadataError::new(
                        Code::ConstraintViolation,
                        JsonPath::args().key("role"),
                        "the admin role can always run every action",
                    ));
                }
                if metadata.actions[i]
                    .permissions
                    .iter()
                    .any(|p| p.role.0 == *role)
                {
                    return Err(already_exists(
                        JsonPath::args(),
                        format!(
                            "permission for role \"{role}\" is already defined on \"{action}\""
                        ),
                    ));
                }
                next.actions[i].permissions.push(permission.clone());
            }
            ActionOp::DropPermission { action, role } => {
                let i = position(action).ok_or_else(|| missing(action, "action"))?;
                let Some(p) = metadata.actions[i]
                    .permissions
                    .iter()
                    .position(|p| p.role.0 == *role)
                else {
                    return Err(not_exists_in_metadata(
                        JsonPath::args(),
                        format!("permission for role: \"{role}\" is not defined on \"{action}\""),
                    ));
                };
                next.actions[i].permissions.remove(p);
            }
        }
        Ok(next)
    }

    /// The asynchronous action whose logged calls this operation deletes (`drop_action` with
    /// `clear_data`), given the document before it.
    pub fn clears_log_of(&self, metadata: &Metadata) -> Option<String> {
        let ActionOp::Drop {
            name,
            clear_data: true,
        } = self
        else {
            return None;
        };
        metadata
            .actions
            .iter()
            .find(|a| a.name.0 == *name && a.definition.kind == Some(ActionKind::Asynchronous))
            .map(|a| a.name.0.clone())
    }
}

/// The rules a created or updated action must meet, with the codes of `docs/metadata-api.md`,
/// "`create_action`": types, handler and headers, and no clash with a table's root field or a
/// remote schema's.
fn check(
    entry: &ActionEntry,
    metadata: &Metadata,
    cache: &Resolution,
    ctx: Context<'_>,
) -> Result<()> {
    let definition = JsonPath::args().key("definition");
    check_action_types(&entry.definition, &metadata.custom_types, ctx.db)
        .map_err(|e| e.under(&definition))?;
    resolve_endpoint(&entry.definition).map_err(|e| e.under(&definition))?;
    let roots = crate::resolve::table_root_fields(&cache.resolved);
    if let Some(reason) = root_field_clash(&entry.name.0, &roots) {
        return Err(MetadataError::new(
            Code::ConstraintViolation,
            JsonPath::args().key("name"),
            reason,
        ));
    }
    if let Some(type_check) = ctx.remotes.action_types {
        let (handler, headers) = resolve_endpoint(&entry.definition)?;
        let candidate = crate::resolve::actions::ResolvedAction {
            entry: entry.clone(),
            handler,
            headers,
            timeout: crate::resolve::actions::timeout(&entry.definition),
            derived_roles: Vec::new(),
        };
        if let Some(Some(reason)) = type_check(&cache.resolved, &[candidate]).into_iter().next() {
            return Err(MetadataError::new(
                Code::ConstraintViolation,
                definition,
                reason,
            ));
        }
    }
    Ok(())
}
