//! Managing the whole document: `export_metadata`, `replace_metadata`, `reload_metadata`,
//! `clear_metadata`, `get_inconsistent_metadata`, `drop_inconsistent_metadata`. See
//! `docs/metadata-api.md`, "Managing the document". Must not do IO, read the clock, or edit
//! anything but the `Metadata` it returns. (A reload only marks the request; the catalog rebuilds.)

use super::answer::{self, Answer, Consistency, Export};
use super::collections::check_collection;
use super::dependencies;
use super::{Context, Outcome};
use crate::metadata::error::{not_exists_in_metadata, parse_failed, Code, MetadataError, Result};
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::{self, Resolution};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;

#[derive(Debug, Clone)]
pub enum ManageOp {
    /// `export_metadata`; `include_owners` adds who owns each object (the catalog adds it,
    /// from its ownership rows).
    Export {
        /// `args.include_owners`.
        include_owners: bool,
    },
    /// `replace_metadata`.
    Replace {
        metadata: Box<Metadata>,
        /// v2 form (different response).
        v2: bool,
        /// Keep inconsistent objects instead of failing.
        allow_inconsistent: bool,
    },
    /// `reload_metadata`.
    Reload {
        /// Introspect every remote schema again (the catalog does, before the transaction).
        remote_schemas: bool,
    },
    /// `clear_metadata`.
    Clear,
    /// `get_inconsistent_metadata`.
    GetInconsistent,
    /// `drop_inconsistent_metadata`.
    DropInconsistent,
}

#[derive(Deserialize)]
struct ReplaceV2 {
    #[serde(default)]
    allow_inconsistent_metadata: bool,
    metadata: Value,
}

#[derive(Deserialize)]
struct ExportArgs {
    #[serde(default)]
    include_owners: bool,
}

#[derive(Deserialize)]
struct Reload {
    #[serde(default)]
    reload_remote_schemas: bool,
}

/// Parses and shape-checks a metadata document found at `path`.
pub fn parse_metadata(value: &Value, path: &JsonPath) -> Result<Metadata> {
    let Value::Object(map) = value else {
        return Err(parse_failed(path.clone(), "expected the metadata object"));
    };
    check_document(map, path)?;
    let mut metadata: Metadata = parse(value, path)?;
    metadata.version = 2;
    check_tables(&metadata, path)?;
    check_later_features(&metadata, path)?;
    check_collections(&metadata, path)?;
    check_functions(&metadata, path)?;
    check_native(&metadata, path)?;
    // Kept in the order the export writes, as the operations keep them.
    for m in &mut metadata.logical_models {
        m.select_permissions.sort_by(|a, b| a.role.cmp(&b.role));
    }
    for q in &mut metadata.native_queries {
        q.object_relationships.sort_by(|a, b| a.name.cmp(&b.name));
        q.array_relationships.sort_by(|a, b| a.name.cmp(&b.name));
    }
    Ok(metadata)
}

/// What the document's JSON must look like before it is read: a known version, only known
/// keys in table entries.
fn check_document(map: &serde_json::Map<String, Value>, path: &JsonPath) -> Result<()> {
    match map.get("version") {
        None | Some(Value::Null) => {}
        Some(v) if v.as_i64() == Some(1) || v.as_i64() == Some(2) => {}
        Some(v) => {
            return Err(parse_failed(
                path.key("version"),
                format!("expected 1 or 2, encountered {v}"),
            ))
        }
    }
    if let Some(Value::Array(functions)) = map.get("functions") {
        for (i, f) in functions.iter().enumerate() {
            if let Some(configuration) = f.get("configuration").filter(|c| c.is_object()) {
                let at = path.key("functions").index(i).key("configuration");
                super::functions::parse_configuration(configuration, &at)?;
            }
        }
    }
    if let Some(Value::Array(tables)) = map.get("tables") {
        for (i, table) in tables.iter().enumerate() {
            if let Value::Object(entry) = table {
                let unexpected: Vec<&str> = entry
                    .keys()
                    .map(String::as_str)
                    .filter(|k| !TABLE_ENTRY_KEYS.contains(k))
                    .collect();
                if !unexpected.is_empty() {
                    return Err(parse_failed(
                        path.key("tables").index(i),
                        format!(
                            "unexpected keys when parsing TableMetadata : [{}]",
                            unexpected.join(", ")
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Each table once, each role once per permission kind, and the root-field lists of select
/// permissions as `create_select_permission` checks them.
fn check_tables(metadata: &Metadata, path: &JsonPath) -> Result<()> {
    let mut tables = BTreeSet::new();
    for (i, entry) in metadata.tables.iter().enumerate() {
        let at = path.key("tables").index(i);
        if !tables.insert(&entry.table) {
            return Err(parse_failed(
                at,
                format!("table \"{}\" appears more than once", entry.table),
            ));
        }
        check_unique_roles(&entry.insert_permissions, &at.key("insert_permissions"))?;
        check_unique_roles(&entry.select_permissions, &at.key("select_permissions"))?;
        check_unique_roles(&entry.update_permissions, &at.key("update_permissions"))?;
        check_unique_roles(&entry.delete_permissions, &at.key("delete_permissions"))?;
        for (j, p) in entry.select_permissions.iter().enumerate() {
            super::check_select_root_fields(
                &entry.table,
                &p.role,
                &p.permission,
                &at.key("select_permissions").index(j),
            )?;
        }
    }
    Ok(())
}

/// The shape rules of event triggers, remote schemas and actions.
fn check_later_features(metadata: &Metadata, path: &JsonPath) -> Result<()> {
    let mut names = BTreeSet::new();
    for (i, entry) in metadata.tables.iter().enumerate() {
        for (j, trigger) in entry.event_triggers.iter().enumerate() {
            let at = path.key("tables").index(i).key("event_triggers").index(j);
            check_event_trigger(trigger, &at, &at.key("definition"))?;
            if !names.insert(&trigger.name.0) {
                return Err(parse_failed(
                    at.key("name"),
                    format!("duplicate event trigger name \"{}\"", trigger.name),
                ));
            }
        }
    }
    let mut remotes = BTreeSet::new();
    for (i, remote) in metadata.remote_schemas.iter().enumerate() {
        let at = path.key("remote_schemas").index(i);
        super::remote_schemas::check_definition(&remote.definition, &at.key("definition"))?;
        if !remotes.insert(&remote.name.0) {
            return Err(parse_failed(
                at.key("name"),
                format!("duplicate remote schema name \"{}\"", remote.name),
            ));
        }
    }
    let mut actions = BTreeSet::new();
    for (i, action) in metadata.actions.iter().enumerate() {
        let at = path.key("actions").index(i);
        super::actions::check_definition(&action.definition, &at.key("definition"))?;
        if !actions.insert(&action.name.0) {
            return Err(parse_failed(
                at.key("name"),
                format!("duplicate action name \"{}\"", action.name),
            ));
        }
        let mut roles = BTreeSet::new();
        for (j, p) in action.permissions.iter().enumerate() {
            if !roles.insert(&p.role.0) {
                return Err(parse_failed(
                    at.key("permissions").index(j).key("role"),
                    format!("duplicate permission for role \"{}\"", p.role),
                ));
            }
        }
    }
    Ok(())
}

/// Functions tracked once, each configuration valid, each role granted once and never admin.
fn check_functions(metadata: &Metadata, path: &JsonPath) -> Result<()> {
    let mut functions = BTreeSet::new();
    for (i, entry) in metadata.functions.iter().enumerate() {
        let at = path.key("functions").index(i);
        if !functions.insert(&entry.function) {
            return Err(MetadataError::new(
                Code::AlreadyTracked,
                at.key("function"),
                format!("function already tracked: \"{}\"", entry.function),
            ));
        }
        if metadata.table(&entry.function).is_some() {
            return Err(MetadataError::new(
                Code::NotSupported,
                at.key("function"),
                format!("table with name \"{}\" already exists", entry.function),
            ));
        }
        let mut roles = BTreeSet::new();
        for (j, p) in entry.permissions.iter().enumerate() {
            let role_at = at.key("permissions").index(j).key("role");
            if p.role.0 == crate::session::ADMIN_ROLE {
                return Err(MetadataError::new(
                    Code::ConstraintViolation,
                    role_at,
                    "cannot define permission for admin role",
                ));
            }
            if !roles.insert(&p.role.0) {
                return Err(parse_failed(
                    role_at,
                    format!("duplicate permission for role \"{}\"", p.role),
                ));
            }
        }
    }
    Ok(())
}

/// Logical models and native queries named once, each with its own rules (fields named once,
/// the code's placeholders and arguments).
fn check_native(metadata: &Metadata, path: &JsonPath) -> Result<()> {
    let mut models = BTreeSet::new();
    for (i, m) in metadata.logical_models.iter().enumerate() {
        let at = path.key("logical_models").index(i);
        if !models.insert(&m.name.0) {
            return Err(MetadataError::new(
                Code::AlreadyTracked,
                at.key("name"),
                format!("Logical model '{}' is already tracked.", m.name),
            ));
        }
        super::native_queries::model_entry(m.name.clone(), m.fields.clone(), None, &at)?;
        let mut roles = BTreeSet::new();
        for (j, p) in m.select_permissions.iter().enumerate() {
            if !roles.insert(&p.role.0) {
                return Err(parse_failed(
                    at.key("select_permissions").index(j).key("role"),
                    format!("duplicate permission for role \"{}\"", p.role),
                ));
            }
        }
    }
    let mut queries = BTreeSet::new();
    for (i, q) in metadata.native_queries.iter().enumerate() {
        let at = path.key("native_queries").index(i);
        if !queries.insert(&q.root_field_name.0) {
            return Err(MetadataError::new(
                Code::AlreadyTracked,
                at.key("root_field_name"),
                format!("Native query '{}' is already tracked.", q.root_field_name),
            ));
        }
        super::native_queries::check_query(q, &at)?;
    }
    let mut triggers = BTreeSet::new();
    for (i, t) in metadata.cron_triggers.iter().enumerate() {
        let at = path.key("cron_triggers").index(i);
        if !triggers.insert(t.name.as_str()) {
            return Err(MetadataError::new(
                Code::AlreadyExists,
                at.key("name"),
                format!("cron trigger with name: {} already exists", t.name),
            ));
        }
        super::scheduled::check_entry(t, &at)?;
    }
    Ok(())
}

/// `replacement` with the cron triggers of `current` that are not included in metadata,
/// which a document never carries (`docs/scheduled-triggers.md`): kept, and not to be
/// redefined by it.
fn with_kept_triggers(
    current: &Metadata,
    replacement: &Metadata,
    document: &JsonPath,
) -> Result<Metadata> {
    let mut out = replacement.clone();
    let kept: Vec<CronTriggerEntry> = (current.cron_triggers.iter())
        .filter(|t| !t.include_in_metadata)
        .cloned()
        .collect();
    for kept in &kept {
        if let Some(i) = out.cron_triggers.iter().position(|t| t.name == kept.name) {
            return Err(MetadataError::new(
                Code::AlreadyExists,
                document.key("cron_triggers").index(i),
                format!(
                    "cron trigger with name \"{}\" already exists as a cron trigger with \"included_in_metadata\" as false",
                    kept.name
                ),
            ));
        }
    }
    // Kept first, in their order; then the document's.
    out.cron_triggers.splice(0..0, kept);
    Ok(out)
}

/// Collections named once, each query valid, the allow-list naming only defined collections.
fn check_collections(metadata: &Metadata, path: &JsonPath) -> Result<()> {
    let mut collections = BTreeSet::new();
    for (i, c) in metadata.query_collections.iter().enumerate() {
        let at = path.key("query_collections").index(i);
        if !collections.insert(c.name.0.as_str()) {
            return Err(MetadataError::new(
                Code::NotSupported,
                at,
                format!("found duplicate query collection name \"{}\"", c.name),
            ));
        }
        check_collection(c, &at)?;
    }
    for (i, a) in metadata.allowlist.iter().enumerate() {
        if !collections.contains(a.collection.0.as_str()) {
            return Err(not_exists_in_metadata(
                path.key("allowlist").index(i).key("collection"),
                format!(
                    "query collection with name \"{}\" does not exists",
                    a.collection
                ),
            ));
        }
    }
    Ok(())
}

/// The shape rules of an event trigger (`docs/metadata-api.md`); `definition` is where its
/// operation specs are (nested in the metadata document, flat in `create_event_trigger`).
pub(super) fn check_event_trigger(
    trigger: &EventTriggerEntry,
    path: &JsonPath,
    definition: &JsonPath,
) -> Result<()> {
    let name = &trigger.name.0;
    let valid_name = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid_name || name.len() > 42 {
        return Err(parse_failed(
            path.key("name"),
            "only alphanumeric and underscore and hyphens allowed for name",
        ));
    }
    let def = &trigger.definition;
    if def.insert.is_none() && def.update.is_none() && def.delete.is_none() && !def.enable_manual {
        return Err(parse_failed(
            definition.clone(),
            "atleast one amongst insert/update/delete/enable_manual spec must be provided",
        ));
    }
    match (&trigger.webhook, &trigger.webhook_from_env) {
        (Some(_), Some(_)) => {
            return Err(parse_failed(
                path.clone(),
                "only one of webhook or webhook_from_env should be given",
            ))
        }
        (None, None) => {
            return Err(parse_failed(
                path.clone(),
                "must provide webhook or webhook_from_env",
            ))
        }
        _ => {}
    }
    for (key, spec) in [
        ("insert", &def.insert),
        ("update", &def.update),
        ("delete", &def.delete),
    ] {
        if let Some(OperationSpec {
            payload: Some(Columns::List(list)),
            ..
        }) = spec
        {
            if list.is_empty() {
                return Err(parse_failed(
                    definition.key(key).key("payload"),
                    "found empty payload specification",
                ));
            }
        }
    }
    Ok(())
}

fn check_unique_roles<P>(list: &[PermissionEntry<P>], path: &JsonPath) -> Result<()> {
    let mut seen = BTreeSet::new();
    for (i, p) in list.iter().enumerate() {
        if !seen.insert(&p.role.0) {
            return Err(parse_failed(
                path.index(i),
                format!(
                    "role \"{}\" has more than one permission of this kind",
                    p.role
                ),
            ));
        }
    }
    Ok(())
}

impl ManageOp {
    /// Parses the management operations; `None` for other types.
    pub fn parse(
        op_type: &str,
        version: i64,
        args: &Value,
        path: &JsonPath,
    ) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "export_metadata" => {
                let a: ExportArgs = parse(args, path)?;
                ManageOp::Export {
                    include_owners: a.include_owners,
                }
            }
            "replace_metadata" => {
                let v2 = version == 2 || args.get("metadata").is_some();
                if v2 {
                    let a: ReplaceV2 = parse(args, path)?;
                    ManageOp::Replace {
                        metadata: Box::new(parse_metadata(&a.metadata, &path.key("metadata"))?),
                        v2,
                        allow_inconsistent: a.allow_inconsistent_metadata,
                    }
                } else {
                    ManageOp::Replace {
                        metadata: Box::new(parse_metadata(args, path)?),
                        v2,
                        allow_inconsistent: false,
                    }
                }
            }
            "reload_metadata" => {
                let a: Reload = parse(args, path)?;
                ManageOp::Reload {
                    remote_schemas: a.reload_remote_schemas,
                }
            }
            "clear_metadata" => ManageOp::Clear,
            "get_inconsistent_metadata" => ManageOp::GetInconsistent,
            "drop_inconsistent_metadata" => ManageOp::DropInconsistent,
            _ => return Ok(None),
        }))
    }

    /// True for export and get_inconsistent_metadata.
    pub fn is_read_only(&self) -> bool {
        matches!(self, ManageOp::Export { .. } | ManageOp::GetInconsistent)
    }

    /// Enum tables of a replacement document.
    pub fn enum_candidates(&self) -> Vec<QualifiedTable> {
        match self {
            ManageOp::Replace { metadata, .. } => metadata.enum_tables(),
            _ => Vec::new(),
        }
    }

    pub fn apply(
        &self,
        metadata: &Metadata,
        cache: &Resolution,
        ctx: Context<'_>,
    ) -> Result<Outcome> {
        let keep = |answer: Answer, own_consistency_rules: bool| Outcome {
            metadata: metadata.clone(),
            answer,
            own_consistency_rules,
        };
        Ok(match self {
            ManageOp::Export { .. } => {
                // Cron triggers not included in metadata stay out of the document.
                let mut exported = metadata.clone();
                exported.cron_triggers.retain(|t| t.include_in_metadata);
                keep(
                    Answer::Export(Export {
                        metadata: Box::new(exported),
                        owners: None,
                    }),
                    false,
                )
            }
            ManageOp::GetInconsistent => keep(Answer::Consistency(Consistency::of(cache)), false),
            ManageOp::Reload { .. } => {
                let consistent = cache.inconsistencies.is_empty() && cache.conflicts.is_empty();
                let reload = Consistency {
                    message: Some("success"),
                    is_consistent: consistent,
                    inconsistent_objects: (!consistent).then(|| answer::all_items(cache)),
                };
                keep(Answer::Consistency(reload), true)
            }
            ManageOp::Clear => Outcome {
                metadata: with_kept_triggers(metadata, &Metadata::default(), &JsonPath::args())?,
                answer: Answer::success(),
                own_consistency_rules: true,
            },
            ManageOp::Replace {
                metadata: replacement,
                v2,
                allow_inconsistent,
            } => {
                let document = match v2 {
                    true => JsonPath::args().key("metadata"),
                    false => JsonPath::args(),
                };
                let roles = document.key("inherited_roles");
                super::roles::check_document(&replacement.inherited_roles, &roles)?;
                let replacement = &with_kept_triggers(metadata, replacement, &document)?;
                let after = ctx.resolve(replacement);
                super::functions::check_grants(replacement, &after, &document)?;
                let blocking: Vec<Value> = after
                    .inconsistencies
                    .iter()
                    .map(resolve::Inconsistency::to_json)
                    .collect();
                if !blocking.is_empty() && !allow_inconsistent {
                    return Err(MetadataError::new(
                        Code::Unexpected,
                        JsonPath::args(),
                        "cannot continue due to inconsistent metadata",
                    )
                    .with_internal(Value::Array(blocking)));
                }
                let answer = match v2 {
                    true => Answer::Consistency(Consistency::of(&after)),
                    false => Answer::success(),
                };
                Outcome {
                    metadata: replacement.clone(),
                    answer,
                    own_consistency_rules: true,
                }
            }
            ManageOp::DropInconsistent => {
                let mut next = metadata.clone();
                // Dropping an object can break what depended on it; repeat until stable.
                for _ in 0..16 {
                    let now = ctx.resolve(&next);
                    let ids = now.blocking_ids();
                    if ids.is_empty() {
                        break;
                    }
                    dependencies::remove(&mut next, &ids);
                }
                Outcome {
                    metadata: next,
                    answer: Answer::success(),
                    own_consistency_rules: true,
                }
            }
        })
    }
}
