//! Inherited roles (`add_inherited_role`, `drop_inherited_role`) and API limits
//! (`set_api_limits`, `remove_api_limits`). See `docs/auth.md`, "Inherited roles", and
//! `docs/metadata-api.md`. Must not do IO, read the clock, or edit anything but the `Metadata` it
//! returns.

use crate::metadata::error::{not_exists_in_metadata, Code, MetadataError, Result};
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::inherited::{cycles_message, known_roles, missing_parents_message};
use serde::Deserialize;
use serde_json::Value;

/// An operation on inherited roles or API limits.
#[derive(Debug, Clone)]
pub enum RoleOp {
    /// `add_inherited_role` (replaces a definition of the same name).
    AddInherited(InheritedRole),
    /// `drop_inherited_role`.
    DropInherited(Name),
    /// `set_api_limits` (replaces the whole object).
    SetLimits(Box<ApiLimits>),
    /// `remove_api_limits`.
    RemoveLimits,
}

#[derive(Deserialize)]
struct DropArgs {
    role_name: Name,
}

/// The name of the role that has every permission and is never limited.
const ADMIN: &str = "admin";

impl RoleOp {
    /// Parses the operation `op_type`, if it is one of this family. `args` is `None` only for
    /// `remove_api_limits`, which needs none.
    pub fn parse(op_type: &str, args: Option<&Value>, path: &JsonPath) -> Result<Option<Self>> {
        let required = || {
            args.ok_or_else(|| {
                crate::metadata::error::parse_failed(
                    JsonPath::root(),
                    "the key 'args' was not present",
                )
            })
        };
        Ok(Some(match op_type {
            "add_inherited_role" => RoleOp::AddInherited(parse(required()?, path)?),
            "drop_inherited_role" => {
                RoleOp::DropInherited(parse::<DropArgs>(required()?, path)?.role_name)
            }
            "set_api_limits" => RoleOp::SetLimits(Box::new(parse(required()?, path)?)),
            "remove_api_limits" => RoleOp::RemoveLimits,
            _ => return Ok(None),
        }))
    }

    pub fn apply(&self, metadata: &Metadata) -> Result<Metadata> {
        let mut next = metadata.clone();
        match self {
            RoleOp::AddInherited(role) => {
                check_inherited_role(metadata, role)?;
                match next
                    .inherited_roles
                    .iter_mut()
                    .find(|r| r.role_name == role.role_name)
                {
                    Some(slot) => *slot = role.clone(),
                    None => next.inherited_roles.push(role.clone()),
                }
                check_acyclic(&next.inherited_roles)?;
            }
            RoleOp::DropInherited(name) => {
                if metadata.inherited_role(&name.0).is_none() {
                    return Err(not_exists_in_metadata(
                        JsonPath::args().key("role_name"),
                        format!("\"{name}\" inherited role doesn't exist"),
                    ));
                }
                next.inherited_roles.retain(|r| r.role_name != *name);
            }
            RoleOp::SetLimits(limits) => next.api_limits = (**limits).clone(),
            RoleOp::RemoveLimits => next.api_limits = ApiLimits::default(),
        }
        Ok(next)
    }
}

/// The rules of one definition against the document it is added to, in the order the API
/// answers them: not `admin`, not its own parent, every parent a known role.
fn check_inherited_role(metadata: &Metadata, role: &InheritedRole) -> Result<()> {
    let args = JsonPath::args();
    if role.role_name.0 == ADMIN {
        return Err(MetadataError::new(
            Code::ConstraintViolation,
            args.key("role_name"),
            "cannot define an inherited role named \"admin\"",
        ));
    }
    if role.role_set.0.contains(&role.role_name) {
        return Err(MetadataError::new(
            Code::InvalidParams,
            args.key("role_set"),
            "an inherited role name cannot be in the role combination",
        ));
    }
    let known = known_roles(metadata);
    if let Some(message) = missing_parents_message(role, &known) {
        return Err(not_exists_in_metadata(args.key("role_set"), message));
    }
    Ok(())
}

/// Refuses inherited roles whose parents form a cycle (always an error, never an
/// inconsistency).
pub fn check_acyclic(roles: &[InheritedRole]) -> Result<()> {
    match cycles_message(roles) {
        Some(message) => Err(MetadataError::new(
            Code::CyclicDependency,
            JsonPath::args(),
            message,
        )),
        None => Ok(()),
    }
}
