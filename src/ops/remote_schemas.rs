//! Remote schemas: `add_remote_schema`, `update_remote_schema`, `remove_remote_schema`,
//! `reload_remote_schema`. The
//! introspection calls happen before the request's transaction (`crate::remote`, driven by the
//! catalog); an operation only reads their outcome from the [`Context`]. See
//! `docs/remote-schemas.md`. Must not do IO, read the clock, or edit anything but the
//! `Metadata` it returns.

use super::Context;
use crate::metadata::error::{
    already_exists, not_exists_in_metadata, Code, MetadataError, Missing, Result,
};
use crate::metadata::ids::ObjectId;
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::remote::definition_hash;
use serde::Deserialize;
use serde_json::Value;

/// An operation on remote schemas.
#[derive(Debug, Clone)]
pub enum RemoteSchemaOp {
    /// `add_remote_schema`.
    Add(Box<RemoteSchemaEntry>),
    /// `update_remote_schema`: a new definition and comment for an existing remote schema,
    /// in place (the relationships that use it stay, checked again at the rebuild).
    Update(Box<RemoteSchemaEntry>),
    /// `remove_remote_schema`.
    Remove { name: String },
    /// `reload_remote_schema`: introspect again (the document does not change).
    Reload { name: String },
}

#[derive(Deserialize)]
struct Add {
    name: Name,
    definition: RemoteSchemaDefinition,
    #[serde(default)]
    comment: Option<String>,
}

#[derive(Deserialize)]
struct ByName {
    name: String,
}

/// The shape rules of a definition: one URL source and a positive timeout.
pub fn check_definition(definition: &RemoteSchemaDefinition, path: &JsonPath) -> Result<()> {
    let message = match (&definition.url, &definition.url_from_env) {
        (Some(_), Some(_)) => Some("both `url` and `url_from_env` can't be present"),
        (None, None) => Some("both `url` and `url_from_env` can't be empty"),
        _ => None,
    };
    if let Some(message) = message {
        return Err(MetadataError::new(
            Code::InvalidParams,
            path.clone(),
            message,
        ));
    }
    if definition.timeout_seconds == Some(0) {
        return Err(MetadataError::new(
            Code::InvalidParams,
            path.key("timeout_seconds"),
            "timeout_seconds must be greater than 0",
        ));
    }
    Ok(())
}

impl RemoteSchemaOp {
    /// Parses the remote-schema operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "add_remote_schema" | "update_remote_schema" => {
                let a: Add = parse(args, path)?;
                check_definition(&a.definition, &path.key("definition"))?;
                let entry = Box::new(RemoteSchemaEntry {
                    name: a.name,
                    definition: a.definition,
                    comment: a.comment,
                    remote_relationships: Vec::new(),
                });
                match op_type {
                    "add_remote_schema" => RemoteSchemaOp::Add(entry),
                    _ => RemoteSchemaOp::Update(entry),
                }
            }
            "remove_remote_schema" => RemoteSchemaOp::Remove {
                name: parse::<ByName>(args, path)?.name,
            },
            "reload_remote_schema" => RemoteSchemaOp::Reload {
                name: parse::<ByName>(args, path)?.name,
            },
            _ => return Ok(None),
        }))
    }

    /// The definitions this operation introspects, given the document before it.
    pub fn introspects(&self, metadata: &Metadata) -> Vec<RemoteSchemaEntry> {
        match self {
            RemoteSchemaOp::Add(entry) | RemoteSchemaOp::Update(entry) => vec![(**entry).clone()],
            RemoteSchemaOp::Reload { name } => metadata
                .remote_schemas
                .iter()
                .filter(|r| r.name.0 == *name)
                .cloned()
                .collect(),
            RemoteSchemaOp::Remove { .. } => Vec::new(),
        }
    }

    pub fn apply(&self, metadata: &Metadata, ctx: Context<'_>) -> Result<Metadata> {
        let mut next = metadata.clone();
        let position = |name: &str| {
            metadata
                .remote_schemas
                .iter()
                .position(|r| r.name.0 == name)
        };
        match self {
            RemoteSchemaOp::Add(entry) | RemoteSchemaOp::Update(entry) => {
                let name = &entry.name.0;
                let at = position(name);
                match (self, at) {
                    (RemoteSchemaOp::Add(_), Some(_)) => {
                        return Err(already_exists(
                            JsonPath::args().key("name"),
                            format!("remote schema with name \"{name}\" already exists"),
                        ))
                    }
                    (RemoteSchemaOp::Update(_), None) => {
                        return Err(not_exists_in_metadata(
                            JsonPath::args().key("name"),
                            format!("remote schema with name \"{name}\" does not exist"),
                        ))
                    }
                    _ => {}
                }
                let key = (name.clone(), definition_hash(&entry.definition));
                match ctx.remotes.fetched.get(&key) {
                    Some(Ok(())) => {}
                    Some(Err(failure)) => {
                        let path = match failure.code {
                            Code::InvalidParams => JsonPath::args().key("definition"),
                            _ => JsonPath::args(),
                        };
                        let mut error =
                            MetadataError::new(failure.code, path, failure.message.clone());
                        if let Some(internal) = &failure.internal {
                            error = error.with_internal(internal.clone());
                        }
                        if failure.environment {
                            error = error.with_missing(Missing::Environment);
                        }
                        return Err(error);
                    }
                    None => {
                        return Err(MetadataError::new(
                            Code::Unexpected,
                            JsonPath::args(),
                            "the remote schema was not introspected",
                        ))
                    }
                }
                match at {
                    Some(i) => {
                        next.remote_schemas[i].definition = entry.definition.clone();
                        next.remote_schemas[i].comment = entry.comment.clone();
                    }
                    None => next.remote_schemas.push((**entry).clone()),
                }
            }
            RemoteSchemaOp::Remove { name } => {
                let i = position(name).ok_or_else(|| {
                    not_exists_in_metadata(JsonPath::args().key("name"), "no such remote schema")
                })?;
                // Tables' relationships to it must go first; its own relationships to tables
                // go with it.
                let dependents: std::collections::BTreeSet<ObjectId> = metadata
                    .tables
                    .iter()
                    .flat_map(|t| {
                        t.remote_relationships
                            .iter()
                            .filter(|r| &r.definition.target().remote_schema.0 == name)
                            .map(|r| {
                                ObjectId::RemoteRelationship(t.table.clone(), r.name.0.clone())
                            })
                    })
                    .collect();
                if !dependents.is_empty() {
                    return Err(MetadataError::new(
                        Code::DependencyError,
                        JsonPath::args(),
                        format!(
                            "cannot drop due to the following dependent objects : {}",
                            super::dependencies::describe(&dependents)
                        ),
                    ));
                }
                next.remote_schemas.remove(i);
            }
            RemoteSchemaOp::Reload { name } => {
                if position(name).is_none() {
                    return Err(not_exists_in_metadata(
                        JsonPath::args().key("name"),
                        format!("remote schema with name \"{name}\" does not exist"),
                    ));
                }
            }
        }
        Ok(next)
    }
}
