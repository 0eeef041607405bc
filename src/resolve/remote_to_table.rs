//! A remote schema → table relationship checked against the remote's stored introspection and
//! the tracked tables (see `docs/metadata-api.md`, "Remote relationships"): its type is an
//! object type of that remote alone, the fields it maps are argument-less scalar fields of that
//! type, and the target table and columns exist. The same check runs when the relationship is
//! created and at every rebuild. Pure.

use super::remote::ResolvedRemote;
use super::{Inconsistency, Resolution, Resolved};
use crate::metadata::error::{
    already_exists, not_exists_in_database, not_exists_in_metadata, Code, MetadataError,
};
use crate::metadata::ids::ObjectId;
use crate::metadata::path::JsonPath;
use crate::metadata::types::{
    Metadata, QualifiedTable, RemoteRelationshipType, RemoteSchemaRelationshipEntry,
};
use serde_json::{json, Value};

/// A relationship that passed.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedToTable {
    pub remote: String,
    pub type_name: String,
    pub name: String,
    pub table: QualifiedTable,
    pub kind: RemoteRelationshipType,
    /// Remote field → column.
    pub mapping: Vec<(String, String)>,
}

/// The `__schema` type named `name`, if the remote defines it.
fn remote_type<'a>(remote: &'a ResolvedRemote, name: &str) -> Option<&'a Value> {
    remote
        .introspection
        .get("types")?
        .as_array()?
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
}

/// The named type a field returns, without non-null and list wrappers, and whether it is a
/// list.
fn returned(field: &Value) -> Option<(&str, bool)> {
    let mut at = field.get("type")?;
    let mut list = false;
    loop {
        match at.get("kind")?.as_str()? {
            "NON_NULL" => at = at.get("ofType")?,
            "LIST" => {
                list = true;
                at = at.get("ofType")?;
            }
            _ => return Some((at.get("name")?.as_str()?, list)),
        }
    }
}

/// Checks a relationship on `type_name` of `remote`; errors carry the API's code and message
/// at `$.args`.
pub fn check(
    metadata: &Metadata,
    resolved: &Resolved,
    remote: &ResolvedRemote,
    type_name: &str,
    relationship: &RemoteSchemaRelationshipEntry,
) -> Result<ResolvedToTable, MetadataError> {
    let args = JsonPath::args();
    let error = |code, message: String| MetadataError::new(code, args.clone(), message);
    let remote_name = remote.name();
    let object = remote_type(remote, type_name).ok_or_else(|| {
        error(
            Code::NotFound,
            format!("no type named \"{type_name}\" defined in remote schema \"{remote_name}\""),
        )
    })?;
    if object.get("kind").and_then(Value::as_str) != Some("OBJECT") {
        return Err(error(
            Code::NotSupported,
            "remote relationships on a remote schema can only be defined on object types"
                .to_owned(),
        ));
    }
    let shared = resolved
        .remote_schemas
        .iter()
        .any(|other| other.name() != remote_name && remote_type(other, type_name).is_some())
        || resolved
            .tables
            .values()
            .any(|t| t.name.graphql_base_name() == type_name);
    if shared {
        return Err(error(
            Code::NotSupported,
            format!(
                "type \"{type_name}\" is shared with another schema and cannot carry relationships"
            ),
        ));
    }
    let fields = object.get("fields").and_then(Value::as_array);
    let field = |name: &str| {
        fields
            .into_iter()
            .flatten()
            .find(|f| f.get("name").and_then(Value::as_str) == Some(name))
    };
    let name = &relationship.name.0;
    let target = &relationship.definition.to_source;
    // An array relationship also brings `<name>_aggregate`.
    let aggregate = format!("{name}_aggregate");
    let taken = [name.as_str(), aggregate.as_str()]
        .into_iter()
        .take(match target.relationship_type {
            RemoteRelationshipType::Array => 2,
            RemoteRelationshipType::Object => 1,
        })
        .find(|n| field(n).is_some());
    if let Some(taken) = taken {
        return Err(already_exists(
            args,
            format!("field \"{taken}\" already exists in type \"{type_name}\""),
        ));
    }
    if target.field_mapping.is_empty() {
        return Err(error(
            Code::ParseFailed,
            "field_mapping must map at least one field".to_owned(),
        ));
    }
    let table = resolved.table(&target.table).ok_or_else(|| {
        not_exists_in_metadata(
            args.clone(),
            format!("table \"{}\" does not exist", target.table),
        )
    })?;
    let mut mapping = Vec::new();
    for (remote_field, column) in &target.field_mapping {
        let usable = field(remote_field).is_some_and(|f| {
            let no_arguments = f
                .get("args")
                .and_then(Value::as_array)
                .is_none_or(|a| a.is_empty());
            let scalar = returned(f).is_some_and(|(named, list)| {
                !list
                    && matches!(
                        remote_type(remote, named)
                            .and_then(|t| t.get("kind"))
                            .and_then(Value::as_str),
                        Some("SCALAR" | "ENUM")
                    )
            });
            no_arguments && scalar
        });
        if !usable {
            return Err(error(
                Code::NotExists,
                format!("field \"{remote_field}\" does not exist in type \"{type_name}\""),
            ));
        }
        if table.db.column(column).is_none() {
            return Err(not_exists_in_database(
                args.clone(),
                format!("column \"{column}\" does not exist"),
            ));
        }
        let to_enum = table.db.foreign_keys().any(|fk| {
            fk.columns.iter().any(|c| c == column)
                && fk.ref_table.as_ref().is_some_and(|t| {
                    metadata.tables.iter().any(|e| {
                        e.is_enum
                            && e.table.name == *t
                            && Some(&e.table.schema) == fk.ref_schema.as_ref()
                    })
                })
        });
        if to_enum {
            return Err(error(
                Code::NotSupported,
                "relationships to enum fields are not supported yet".to_owned(),
            ));
        }
        mapping.push((remote_field.clone(), column.clone()));
    }
    Ok(ResolvedToTable {
        remote: remote_name.to_owned(),
        type_name: type_name.to_owned(),
        name: name.clone(),
        table: target.table.clone(),
        kind: target.relationship_type,
        mapping,
    })
}

/// The arguments that create a remote schema's relationship, as inconsistencies report it.
pub fn definition(
    remote: &str,
    type_name: &str,
    relationship: &RemoteSchemaRelationshipEntry,
) -> Value {
    json!({"remote_schema": remote, "type_name": type_name, "name": relationship.name,
        "definition": relationship.definition})
}

/// Resolves every served remote schema's relationships to tables: each one that passes is
/// served; one that fails is an inconsistency.
pub fn resolve_all(metadata: &Metadata, cache: &mut Resolution) {
    let mut served = Vec::new();
    let mut failed = Vec::new();
    for entry in &metadata.remote_schemas {
        let remote = cache
            .resolved
            .remote_schemas
            .iter()
            .find(|r| r.name() == entry.name.0);
        for group in &entry.remote_relationships {
            for relationship in &group.relationships {
                let checked = match remote {
                    Some(remote) => check(
                        metadata,
                        &cache.resolved,
                        remote,
                        &group.type_name.0,
                        relationship,
                    )
                    .map_err(|e| e.message),
                    None => Err(format!(
                        "remote schema \"{}\" has no introspection result",
                        entry.name.0
                    )),
                };
                match checked {
                    Ok(resolved) => served.push(resolved),
                    Err(reason) => failed.push(Inconsistency {
                        object: ObjectId::RemoteSchemaRelationship(
                            entry.name.0.clone(),
                            group.type_name.0.clone(),
                            relationship.name.0.clone(),
                        ),
                        kind: "remote_schema_remote_relationship",
                        definition: definition(&entry.name.0, &group.type_name.0, relationship),
                        reason,
                        conflict: false,
                    }),
                }
            }
        }
    }
    cache.resolved.remote_relationships = served;
    cache.inconsistencies.extend(failed);
}
