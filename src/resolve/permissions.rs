//! Permissions checked against the resolved model and resolved into typed rules
//! ([`super::rules`]).

use super::*;
use crate::metadata::error::Missing;

/// A permission checked against the resolved model: what it refers to, and its rules resolved.
#[derive(Debug, Clone, Default)]
pub struct CheckedPermission {
    /// Every column, relationship, table and computed field it names (for dependency checks
    /// and renames).
    pub refs: Vec<Reference>,
    /// Its `filter`, resolved.
    pub filter: Option<BoolExp>,
    /// Its `check`, resolved (absent, or `null` on an update permission: none).
    pub check: Option<BoolExp>,
    /// Its `set`, typed.
    pub presets: Vec<Preset>,
}

/// Checks one permission of a table against the resolved model. Paths are relative to the
/// permission object (`$` = the `permission` value).
pub fn check_permission(
    resolved: &Resolved,
    table: &QualifiedTable,
    role: &str,
    kind: PermissionKind,
    permission: &Value,
) -> Result<CheckedPermission, MetadataError> {
    let path = JsonPath::root();
    if role == crate::session::ADMIN_ROLE {
        return Err(MetadataError::new(
            Code::ConstraintViolation,
            path,
            format!("in table \"{table}\": in permission for role \"admin\": cannot define permission for admin role"),
        ));
    }
    let owner = resolved.tables.get(table).ok_or_else(|| {
        not_exists_in_metadata(path.clone(), format!("table \"{table}\" does not exist"))
    })?;
    let mut checked = CheckedPermission::default();
    let refs = &mut checked.refs;
    let obj = permission.as_object();
    let field = |k: &str| obj.and_then(|o| o.get(k));
    if let Some(Value::Array(list)) = field("columns") {
        for (i, c) in list.iter().enumerate() {
            let name = c.as_str().unwrap_or_default();
            if owner.db.column(name).is_none() {
                return Err(not_exists_in_database(
                    path.key("columns").index(i),
                    format!("column \"{name}\" does not exist"),
                ));
            }
            refs.push(Reference::column(
                table,
                name,
                vec![Segment::Key("columns".into()), Segment::Index(i)],
            ));
        }
    }
    if let Some(Value::Array(list)) = field("computed_fields") {
        for (i, c) in list.iter().enumerate() {
            let name = c.as_str().unwrap_or_default();
            match owner.computed_fields.get(name) {
                // The code for both is `constraint-violation` (`docs/metadata-api.md`,
                // "Permissions"); the missing one still records what is missing, so the
                // controller waits for it.
                None => {
                    return Err(MetadataError::new(
                        Code::ConstraintViolation,
                        path.key("computed_fields").index(i),
                        format!("computed field \"{name}\" does not exist"),
                    )
                    .with_missing(Missing::Metadata))
                }
                Some(cf) if !matches!(cf.returns, ComputedReturn::Scalar(_)) => {
                    return Err(MetadataError::new(
                        Code::ConstraintViolation,
                        path.key("computed_fields").index(i),
                        format!("computed field \"{name}\" is not scalar"),
                    ))
                }
                Some(_) => refs.push(Reference {
                    target: Target::ComputedField(table.clone(), name.to_owned()),
                    pointer: vec![Segment::Key("computed_fields".into()), Segment::Index(i)],
                }),
            }
        }
    }
    for key in ["filter", "check"] {
        if let Some(exp) = field(key) {
            if exp.is_null() && key == "check" && kind == PermissionKind::Update {
                continue;
            }
            let mut found = Vec::new();
            let rule = check_bool_exp(resolved, table, table, exp, &path.key(key), &mut found)?;
            for mut r in found {
                r.pointer.insert(0, Segment::Key(key.into()));
                refs.push(r);
            }
            if key == "filter" {
                checked.filter = Some(rule);
            } else {
                checked.check = Some(rule);
            }
        }
    }
    if let Some(set) = field("set") {
        let (found, presets) = check_presets(owner, set, &path.key("set"))?;
        for mut r in found {
            r.pointer.insert(0, Segment::Key("set".into()));
            checked.refs.push(r);
        }
        checked.presets = presets;
    }
    Ok(checked)
}

pub(super) fn resolve_permissions(entry: &TableEntry, cache: &mut Resolution) {
    if !cache.resolved.tables.contains_key(&entry.table) {
        return;
    }
    let table = &entry.table;
    resolve_kind(
        cache,
        table,
        &entry.insert_permissions,
        PermissionKind::Insert,
        |p, c, slot| {
            slot.insert.get_or_insert(InsertRule {
                columns: p.columns.clone(),
                check: c.check.unwrap_or(BoolExp::And(Vec::new())),
                presets: c.presets,
                backend_only: p.backend_only.unwrap_or(false),
            });
        },
    );
    resolve_kind(
        cache,
        table,
        &entry.select_permissions,
        PermissionKind::Select,
        |p, c, slot| {
            slot.select.get_or_insert(SelectRule {
                columns: p.columns.clone(),
                computed_fields: p.computed_fields.clone(),
                filter: c.filter.unwrap_or(BoolExp::And(Vec::new())),
                limit: p.limit,
                allow_aggregations: p.allow_aggregations,
                query_root_fields: p.query_root_fields.clone(),
                subscription_root_fields: p.subscription_root_fields.clone(),
                cells: IndexMap::new(),
            });
        },
    );
    resolve_kind(
        cache,
        table,
        &entry.update_permissions,
        PermissionKind::Update,
        |p, c, slot| {
            slot.update.get_or_insert(UpdateRule {
                columns: p.columns.clone(),
                filter: c.filter.unwrap_or(BoolExp::And(Vec::new())),
                check: c.check,
                presets: c.presets,
            });
        },
    );
    resolve_kind(
        cache,
        table,
        &entry.delete_permissions,
        PermissionKind::Delete,
        |_, c, slot| {
            slot.delete.get_or_insert(DeleteRule {
                filter: c.filter.unwrap_or(BoolExp::And(Vec::new())),
            });
        },
    );
}

/// Checks each permission of one kind on a table: a consistent one becomes the role's rule
/// (the first, if a role has several), an inconsistent one is reported.
fn resolve_kind<P: serde::Serialize>(
    cache: &mut Resolution,
    table: &QualifiedTable,
    entries: &[PermissionEntry<P>],
    kind: PermissionKind,
    rule: impl Fn(&P, CheckedPermission, &mut RolePermissions),
) {
    for perm in entries {
        let value = serde_json::to_value(&perm.permission).unwrap_or(Value::Null);
        match check_permission(&cache.resolved, table, &perm.role.0, kind, &value) {
            Ok(checked) => {
                if let Some(t) = cache.resolved.table_mut(table) {
                    let slot = t.permissions.entry(perm.role.0.clone()).or_default();
                    rule(&perm.permission, checked, slot);
                }
            }
            Err(err) => cache.inconsistencies.push(Inconsistency {
                object: ObjectId::Permission(table.clone(), perm.role.0.clone(), kind),
                kind: kind.object_type(),
                definition: permission_definition(table, perm),
                reason: err.message,
                conflict: false,
            }),
        }
    }
}
