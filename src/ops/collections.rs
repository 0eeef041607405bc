//! The query-collection and allow-list operations (`create_query_collection`,
//! `add_query_to_collection`, `add_collection_to_allowlist`, their drops), and
//! [`check_collection`](super::check_collection), shared with the controller's mapping. See
//! `docs/metadata-api.md`, "Query collections and the allow-list". Must not do IO, read the clock,
//! or edit anything but the `Metadata` it returns.

use crate::metadata::error::{
    already_exists, not_exists_in_metadata, parse_failed, Code, MetadataError, Missing, Result,
};
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use serde::Deserialize;
use serde_json::Value;

/// A collection or allow-list operation.
#[derive(Debug, Clone)]
pub enum CollectionOp {
    /// `create_query_collection`.
    Create(CollectionEntry),
    /// `drop_query_collection`.
    Drop {
        collection: String,
        /// Also remove it from the allow-list.
        cascade: bool,
    },
    /// `add_query_to_collection`.
    AddQuery {
        collection: String,
        query: CollectionQuery,
    },
    /// `drop_query_from_collection`.
    DropQuery { collection: String, query: String },
    /// `add_collection_to_allowlist`.
    AllowlistAdd(String),
    /// `drop_collection_from_allowlist`.
    AllowlistDrop(String),
}

#[derive(Deserialize)]
struct Drop {
    collection: String,
    cascade: bool,
}

#[derive(Deserialize)]
struct AddQuery {
    collection_name: String,
    query_name: Name,
    query: String,
}

#[derive(Deserialize)]
struct DropQuery {
    collection_name: String,
    query_name: String,
}

#[derive(Deserialize)]
struct Collection {
    collection: String,
}

/// Checks that `text` parses as an executable GraphQL document.
pub fn check_query(text: &str, path: &JsonPath) -> Result<()> {
    async_graphql_parser::parse_query(text)
        .map(|_| ())
        .map_err(|e| parse_failed(path.clone(), format!("not a valid GraphQL query: {e}")))
}

/// Checks a collection: unique query names, every query parses. `path` is the collection.
pub fn check_collection(entry: &CollectionEntry, path: &JsonPath) -> Result<()> {
    let queries_path = path.key("definition").key("queries");
    let mut seen = std::collections::BTreeSet::new();
    let mut duplicates = Vec::new();
    for (i, q) in entry.definition.queries.iter().enumerate() {
        if !seen.insert(q.name.0.as_str()) && !duplicates.contains(&format!("\"{}\"", q.name)) {
            duplicates.push(format!("\"{}\"", q.name));
        }
        check_query(&q.query, &queries_path.index(i).key("query"))?;
    }
    if !duplicates.is_empty() {
        return Err(MetadataError::new(
            Code::NotSupported,
            queries_path,
            format!("found duplicate query names {}", duplicates.join(", ")),
        ));
    }
    Ok(())
}

fn missing_collection(name: &str, path: JsonPath) -> MetadataError {
    not_exists_in_metadata(
        path,
        format!("query collection with name \"{name}\" does not exists"),
    )
}

impl CollectionOp {
    /// Parses the collection operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "create_query_collection" => {
                let entry: CollectionEntry = parse(args, path)?;
                check_collection(&entry, path)?;
                CollectionOp::Create(entry)
            }
            "drop_query_collection" => {
                let a: Drop = parse(args, path)?;
                CollectionOp::Drop {
                    collection: a.collection,
                    cascade: a.cascade,
                }
            }
            "add_query_to_collection" => {
                let a: AddQuery = parse(args, path)?;
                check_query(&a.query, &path.key("query"))?;
                CollectionOp::AddQuery {
                    collection: a.collection_name,
                    query: CollectionQuery {
                        name: a.query_name,
                        query: a.query,
                    },
                }
            }
            "drop_query_from_collection" => {
                let a: DropQuery = parse(args, path)?;
                CollectionOp::DropQuery {
                    collection: a.collection_name,
                    query: a.query_name,
                }
            }
            "add_collection_to_allowlist" => {
                CollectionOp::AllowlistAdd(parse::<Collection>(args, path)?.collection)
            }
            "drop_collection_from_allowlist" => {
                CollectionOp::AllowlistDrop(parse::<Collection>(args, path)?.collection)
            }
            _ => return Ok(None),
        }))
    }

    pub fn apply(&self, metadata: &Metadata) -> Result<Metadata> {
        let mut next = metadata.clone();
        let args = JsonPath::args();
        let on_allowlist =
            |m: &Metadata, name: &str| m.allowlist.iter().any(|a| a.collection.0 == name);
        match self {
            CollectionOp::Create(entry) => {
                if metadata.collection(&entry.name.0).is_some() {
                    return Err(already_exists(
                        args.key("name"),
                        format!(
                            "query collection with name \"{}\" already exists",
                            entry.name
                        ),
                    ));
                }
                next.query_collections.push(entry.clone());
            }
            CollectionOp::Drop {
                collection,
                cascade,
            } => {
                if metadata.collection(collection).is_none() {
                    return Err(missing_collection(collection, args.key("collection")));
                }
                if on_allowlist(metadata, collection) && !cascade {
                    return Err(MetadataError::new(
                        Code::DependencyError,
                        args,
                        format!("query collection with name \"{collection}\" is present in allowlist; cannot proceed to drop"),
                    ));
                }
                next.query_collections.retain(|c| &c.name.0 != collection);
                next.allowlist.retain(|a| &a.collection.0 != collection);
            }
            CollectionOp::AddQuery { collection, query } => {
                let entry = next
                    .query_collections
                    .iter_mut()
                    .find(|c| &c.name.0 == collection)
                    .ok_or_else(|| missing_collection(collection, args.key("collection_name")))?;
                if entry
                    .definition
                    .queries
                    .iter()
                    .any(|q| q.name == query.name)
                {
                    return Err(already_exists(
                        args,
                        format!(
                            "query with name \"{}\" already exists in collection \"{collection}\"",
                            query.name
                        ),
                    ));
                }
                entry.definition.queries.push(query.clone());
            }
            CollectionOp::DropQuery { collection, query } => {
                let entry = next
                    .query_collections
                    .iter_mut()
                    .find(|c| &c.name.0 == collection)
                    .ok_or_else(|| missing_collection(collection, args.key("collection_name")))?;
                if !entry.definition.queries.iter().any(|q| &q.name.0 == query) {
                    return Err(MetadataError::new(
                        Code::NotFound,
                        args,
                        format!(
                            "query with name \"{query}\" not found in collection \"{collection}\""
                        ),
                    )
                    .with_missing(Missing::Metadata));
                }
                entry.definition.queries.retain(|q| &q.name.0 != query);
            }
            CollectionOp::AllowlistAdd(collection) => {
                if metadata.collection(collection).is_none() {
                    return Err(missing_collection(collection, args.key("collection")));
                }
                if !on_allowlist(metadata, collection) {
                    next.allowlist.push(AllowlistEntry {
                        collection: Name(collection.clone()),
                    });
                }
            }
            CollectionOp::AllowlistDrop(collection) => {
                if metadata.collection(collection).is_none() {
                    return Err(missing_collection(collection, args.key("collection")));
                }
                next.allowlist.retain(|a| &a.collection.0 != collection);
            }
        }
        Ok(next)
    }
}
