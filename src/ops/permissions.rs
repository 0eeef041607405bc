//! `create_*_permission`, `drop_*_permission` (insert, select, update, delete) and
//! `set_permission_comment`, checked by `resolve::check_permission`. See `docs/metadata-api.md`,
//! "Permissions". Must not do IO, read the clock, or edit anything but the `Metadata` it returns.

use super::tracked_entry;
use crate::metadata::error::{already_exists, not_exists_in_metadata, Code, MetadataError, Result};
use crate::metadata::ids::PermissionKind;
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::{self, Resolution};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone)]
pub enum PermissionOp {
    /// `create_<kind>_permission`.
    Create {
        kind: PermissionKind,
        table: QualifiedTable,
        role: Name,
        /// The rules, shape-checked for the kind.
        permission: Value,
        comment: Option<String>,
    },
    /// `drop_<kind>_permission`.
    Drop {
        kind: PermissionKind,
        table: QualifiedTable,
        role: Name,
    },
    /// `set_permission_comment`.
    SetComment {
        kind: PermissionKind,
        table: QualifiedTable,
        role: Name,
        /// New comment (`None` removes it).
        comment: Option<String>,
    },
}

#[derive(Deserialize)]
struct Create {
    table: QualifiedTable,
    role: Name,
    permission: Value,
    #[serde(default)]
    comment: Option<String>,
}

#[derive(Deserialize)]
struct Drop {
    table: QualifiedTable,
    role: Name,
}

#[derive(Deserialize)]
struct SetComment {
    table: QualifiedTable,
    role: Name,
    #[serde(rename = "type")]
    kind: PermissionKindArg,
    #[serde(default)]
    comment: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum PermissionKindArg {
    Insert,
    Select,
    Update,
    Delete,
}

fn kind_of(op_type: &str, prefix: &str) -> Option<PermissionKind> {
    let rest = op_type.strip_prefix(prefix)?.strip_suffix("_permission")?;
    PermissionKind::ALL.into_iter().find(|k| k.as_str() == rest)
}

/// Shape-checks a permission object for its kind, returning it normalised (defaults dropped).
fn typed<P: DeserializeOwned + Serialize>(value: &Value, path: &JsonPath) -> Result<Value> {
    let parsed: P = parse(value, path)?;
    serde_json::to_value(parsed)
        .map_err(|e| crate::metadata::error::parse_failed(path.clone(), e.to_string()))
}

fn shape_check(kind: PermissionKind, value: &Value, path: &JsonPath) -> Result<Value> {
    match kind {
        PermissionKind::Insert => typed::<InsertPermission>(value, path),
        PermissionKind::Select => typed::<SelectPermission>(value, path),
        PermissionKind::Update => typed::<UpdatePermission>(value, path),
        PermissionKind::Delete => typed::<DeletePermission>(value, path),
    }
}

impl PermissionOp {
    /// Parses the permission operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        if let Some(kind) = kind_of(op_type, "create_") {
            let a: Create = parse(args, path)?;
            let permission = shape_check(kind, &a.permission, &path.key("permission"))?;
            return Ok(Some(PermissionOp::Create {
                kind,
                table: a.table,
                role: a.role,
                permission,
                comment: a.comment,
            }));
        }
        if let Some(kind) = kind_of(op_type, "drop_") {
            let a: Drop = parse(args, path)?;
            return Ok(Some(PermissionOp::Drop {
                kind,
                table: a.table,
                role: a.role,
            }));
        }
        if op_type == "set_permission_comment" {
            let a: SetComment = parse(args, path)?;
            let kind = match a.kind {
                PermissionKindArg::Insert => PermissionKind::Insert,
                PermissionKindArg::Select => PermissionKind::Select,
                PermissionKindArg::Update => PermissionKind::Update,
                PermissionKindArg::Delete => PermissionKind::Delete,
            };
            return Ok(Some(PermissionOp::SetComment {
                kind,
                table: a.table,
                role: a.role,
                comment: a.comment,
            }));
        }
        Ok(None)
    }

    pub fn apply(&self, metadata: &Metadata, cache: &Resolution) -> Result<Metadata> {
        let mut next = metadata.clone();
        let args = JsonPath::args();
        match self {
            PermissionOp::Create {
                kind,
                table,
                role,
                permission,
                comment,
            } => {
                let entry = tracked_entry(&mut next, table, &args.key("table"))?;
                if role.0 == crate::session::ADMIN_ROLE {
                    return Err(MetadataError::new(
                        Code::ConstraintViolation,
                        args,
                        format!("in table \"{table}\": in permission for role \"admin\": cannot define permission for admin role"),
                    ));
                }
                if has_permission(entry, *kind, &role.0) {
                    return Err(already_exists(
                        args,
                        format!("{} permission already defined on table \"{table}\" with role \"{role}\"", kind.as_str()),
                    ));
                }
                if !cache.resolved.tables.contains_key(table) {
                    return Err(not_exists_in_metadata(
                        args.key("table"),
                        format!("table \"{table}\" does not exist"),
                    ));
                }
                if *kind == PermissionKind::Select {
                    let select: SelectPermission = parse(permission, &args.key("permission"))?;
                    check_select_root_fields(table, role, &select, &args)?;
                }
                resolve::check_permission(&cache.resolved, table, &role.0, *kind, permission)
                    .map_err(|e| e.under(&args.key("permission")))?;
                push_permission(entry, *kind, role, permission, comment.clone())?;
            }
            PermissionOp::Drop { kind, table, role } => {
                let entry = tracked_entry(&mut next, table, &args.key("table"))?;
                if !has_permission(entry, *kind, &role.0) {
                    return Err(MetadataError::new(
                        Code::BadRequest,
                        args,
                        format!(
                            "{} permission on \"{table}\" for role \"{role}\" does not exist",
                            kind.as_str()
                        ),
                    ));
                }
                let r = &role.0;
                match kind {
                    PermissionKind::Insert => entry.insert_permissions.retain(|p| &p.role.0 != r),
                    PermissionKind::Select => entry.select_permissions.retain(|p| &p.role.0 != r),
                    PermissionKind::Update => entry.update_permissions.retain(|p| &p.role.0 != r),
                    PermissionKind::Delete => entry.delete_permissions.retain(|p| &p.role.0 != r),
                }
            }
            PermissionOp::SetComment {
                kind,
                table,
                role,
                comment,
            } => {
                let entry = tracked_entry(&mut next, table, &args.key("table"))?;
                if !has_permission(entry, *kind, &role.0) {
                    return Err(not_exists_in_metadata(
                        args,
                        format!(
                            "{} permission on \"{table}\" for role \"{role}\" does not exist",
                            kind.as_str()
                        ),
                    ));
                }
                let r = &role.0;
                let c = comment.clone();
                match kind {
                    PermissionKind::Insert => set_comment(&mut entry.insert_permissions, r, c),
                    PermissionKind::Select => set_comment(&mut entry.select_permissions, r, c),
                    PermissionKind::Update => set_comment(&mut entry.update_permissions, r, c),
                    PermissionKind::Delete => set_comment(&mut entry.delete_permissions, r, c),
                }
            }
        }
        Ok(next)
    }
}

/// The rule a select permission's root-field lists follow beyond their shape: an aggregate
/// root field can be listed only where aggregates are allowed. `path` is where the permission's
/// table and role are given (`$.args` of `create_select_permission`, the permission's entry in
/// a metadata document).
pub fn check_select_root_fields(
    table: &QualifiedTable,
    role: &Name,
    permission: &SelectPermission,
    path: &JsonPath,
) -> Result<()> {
    let lists_aggregate = permission
        .query_root_fields
        .iter()
        .flatten()
        .any(|f| *f == QueryRootField::SelectAggregate)
        || permission
            .subscription_root_fields
            .iter()
            .flatten()
            .any(|f| *f == SubscriptionRootField::SelectAggregate);
    if lists_aggregate && !permission.allow_aggregations {
        return Err(MetadataError::new(
            Code::InvalidParams,
            path.clone(),
            format!("in table \"{table}\": in permission for role \"{role}\": \"select_aggregate\" can only be listed when \"allow_aggregations\" is true"),
        ));
    }
    Ok(())
}

fn set_comment<P>(list: &mut [PermissionEntry<P>], role: &str, comment: Option<String>) {
    for p in list.iter_mut().filter(|p| p.role.0 == role) {
        p.comment = comment.clone();
    }
}

fn has_permission(entry: &TableEntry, kind: PermissionKind, role: &str) -> bool {
    match kind {
        PermissionKind::Insert => entry.insert_permissions.iter().any(|p| p.role.0 == role),
        PermissionKind::Select => entry.select_permissions.iter().any(|p| p.role.0 == role),
        PermissionKind::Update => entry.update_permissions.iter().any(|p| p.role.0 == role),
        PermissionKind::Delete => entry.delete_permissions.iter().any(|p| p.role.0 == role),
    }
}

fn entry_of<P: DeserializeOwned>(
    role: &Name,
    permission: &Value,
    comment: Option<String>,
) -> Result<PermissionEntry<P>> {
    let permission = parse(permission, &JsonPath::args().key("permission"))?;
    Ok(PermissionEntry {
        role: role.clone(),
        permission,
        comment,
    })
}

fn push_permission(
    entry: &mut TableEntry,
    kind: PermissionKind,
    role: &Name,
    permission: &Value,
    comment: Option<String>,
) -> Result<()> {
    match kind {
        PermissionKind::Insert => entry
            .insert_permissions
            .push(entry_of(role, permission, comment)?),
        PermissionKind::Select => entry
            .select_permissions
            .push(entry_of(role, permission, comment)?),
        PermissionKind::Update => entry
            .update_permissions
            .push(entry_of(role, permission, comment)?),
        PermissionKind::Delete => entry
            .delete_permissions
            .push(entry_of(role, permission, comment)?),
    }
    Ok(())
}
