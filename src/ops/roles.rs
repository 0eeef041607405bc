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
    check_definition(role, &args)?;
    let known = known_roles(metadata);
    if let Some(message) = missing_parents_message(role, &known) {
        return Err(not_exists_in_metadata(args.key("role_set"), message));
    }
    Ok(())
}

/// The rules a definition must meet on its own (`at` is where it is in the request): not
/// `admin`, not its own parent.
fn check_definition(role: &InheritedRole, at: &JsonPath) -> Result<()> {
    if role.role_name.0 == ADMIN {
        return Err(MetadataError::new(
            Code::ConstraintViolation,
            at.key("role_name"),
            "cannot define an inherited role named \"admin\"",
        ));
    }
    if role.role_set.0.contains(&role.role_name) {
        return Err(MetadataError::new(
            Code::InvalidParams,
            at.key("role_set"),
            "an inherited role name cannot be in the role combination",
        ));
    }
    Ok(())
}

/// The inherited roles of a replacement document (at `at` in the request): each definition's
/// own rules, then no cycle. Parents that are not known roles make the role inconsistent
/// instead.
pub fn check_document(roles: &[InheritedRole], at: &JsonPath) -> Result<()> {
    for (i, role) in roles.iter().enumerate() {
        check_definition(role, &at.index(i))?;
    }
    check_acyclic(roles)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The path and message `set_api_limits` with `args` fails with.
    fn refused(args: Value) -> (String, String) {
        let err = RoleOp::parse("set_api_limits", Some(&args), &JsonPath::args()).unwrap_err();
        assert_eq!(err.code, Code::ParseFailed, "{args}");
        (err.path.as_str().to_owned(), err.message)
    }

    #[test]
    fn api_limits_parse_errors_name_the_key_and_its_path() {
        assert_eq!(
            refused(json!({"depth_limit": {"per_role": {"user": 2}}})),
            (
                "$.args.depth_limit".to_owned(),
                "the key 'global' was not present".to_owned()
            )
        );
        assert_eq!(
            refused(json!({"rate_limit": {"global": {"unique_params": "IP"}}})),
            (
                "$.args.rate_limit.global".to_owned(),
                "the key 'max_reqs_per_min' was not present".to_owned()
            )
        );
        let bad = "Not a valid value. Should be either: 'IP' or a list of session variables";
        for unique in [
            json!(["x-svc-role"]),
            json!("ip4"),
            json!(["user-id"]),
            json!(7),
        ] {
            let args =
                json!({"rate_limit": {"global": {"max_reqs_per_min": 5, "unique_params": unique}}});
            assert_eq!(
                refused(args),
                (
                    "$.args.rate_limit.global.unique_params".to_owned(),
                    bad.to_owned()
                )
            );
        }
        for (args, path) in [
            (
                json!({"depth_limit": {"global": 0}}),
                "$.args.depth_limit.global",
            ),
            (
                json!({"node_limit": {"global": 1.5}}),
                "$.args.node_limit.global",
            ),
            (
                json!({"batch_limit": {"global": 2, "per_role": {"user": -1}}}),
                "$.args.batch_limit.per_role.user",
            ),
            (
                json!({"time_limit": {"global": 0}}),
                "$.args.time_limit.global",
            ),
            (
                json!({"time_limit": {"global": "1"}}),
                "$.args.time_limit.global",
            ),
            (
                json!({"rate_limit": {"global": {"max_reqs_per_min": 0}}}),
                "$.args.rate_limit.global.max_reqs_per_min",
            ),
            (json!({"disabled": "yes"}), "$.args.disabled"),
        ] {
            assert_eq!(refused(args.clone()).0, path, "{args}");
        }
    }

    #[test]
    fn api_limits_round_trip_in_their_exported_form() {
        let args = json!({
            "rate_limit": {"global": {"max_reqs_per_min": 5, "unique_params": "ip"},
                "per_role": {"user": {"max_reqs_per_min": 2, "unique_params": ["X-Svc-User-Id"]}}},
            "time_limit": {"global": 0.25},
        });
        let Some(RoleOp::SetLimits(limits)) =
            RoleOp::parse("set_api_limits", Some(&args), &JsonPath::args()).unwrap()
        else {
            panic!("not set_api_limits");
        };
        assert_eq!(
            serde_json::to_value(&limits).unwrap(),
            json!({
                "disabled": false,
                "rate_limit": {"global": {"max_reqs_per_min": 5, "unique_params": "IP"},
                    "per_role": {"user": {"max_reqs_per_min": 2, "unique_params": ["x-svc-user-id"]}}},
                "time_limit": {"global": 0.25, "per_role": {}},
            })
        );
        assert!(matches!(
            RoleOp::parse("remove_api_limits", None, &JsonPath::args()),
            Ok(Some(RoleOp::RemoveLimits))
        ));
    }
}
