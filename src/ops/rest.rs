//! `create_rest_endpoint` and `drop_rest_endpoint` (see `docs/rest.md`): the shape of the
//! arguments checked here, then the endpoint's own rules ([`crate::resolve::rest::check`],
//! the same as at every rebuild). Must not do IO, read the clock, or edit anything but the
//! `Metadata` it returns.

use super::Context;
use crate::metadata::error::{already_exists, not_exists_in_metadata, parse_failed, Result};
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use crate::metadata::types::*;
use crate::resolve::{rest, Resolution};
use serde::Deserialize;
use serde_json::Value;

/// An operation on REST endpoints.
#[derive(Debug, Clone)]
pub enum RestOp {
    /// `create_rest_endpoint`.
    Create(RestEndpoint),
    /// `drop_rest_endpoint`.
    Drop { name: String },
}

#[derive(Deserialize)]
struct Create {
    name: String,
    url: String,
    methods: Vec<String>,
    definition: RestDefinition,
    #[serde(default)]
    comment: Option<String>,
}

#[derive(Deserialize)]
struct ByName {
    name: String,
}

impl RestOp {
    /// Parses the endpoint operations; `None` for other types.
    pub fn parse(op_type: &str, args: &Value, path: &JsonPath) -> Result<Option<Self>> {
        Ok(Some(match op_type {
            "create_rest_endpoint" => RestOp::Create(parse_create(args, path)?),
            "drop_rest_endpoint" => RestOp::Drop {
                name: parse::<ByName>(args, path)?.name,
            },
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
        let position = |name: &str| metadata.rest_endpoints.iter().position(|e| e.name == name);
        match self {
            RestOp::Create(endpoint) => {
                if position(&endpoint.name).is_some() {
                    return Err(already_exists(
                        JsonPath::args(),
                        format!("Endpoint with name: {} already exists", endpoint.name),
                    ));
                }
                let validate = |text: &str| {
                    let check = ctx.remotes.documents?;
                    check(&cache.resolved, &[text]).pop().flatten()
                };
                rest::check(
                    metadata,
                    &validate,
                    endpoint,
                    &cache.resolved.rest_endpoints,
                )?;
                next.rest_endpoints.push(endpoint.clone());
            }
            RestOp::Drop { name } => {
                let i = position(name).ok_or_else(|| {
                    not_exists_in_metadata(
                        JsonPath::args(),
                        format!("endpoint with name: {name} does not exist"),
                    )
                })?;
                next.rest_endpoints.remove(i);
            }
        }
        Ok(next)
    }
}

/// The arguments of `create_rest_endpoint`: every key present and of its type, no empty
/// `name`, `url` or `methods`, only the five methods (a repeated one kept once).
fn parse_create(args: &Value, path: &JsonPath) -> Result<RestEndpoint> {
    let c: Create = parse(args, path)?;
    for (key, value) in [("name", &c.name), ("url", &c.url)] {
        if value.is_empty() {
            return Err(parse_failed(path.key(key), "empty string not allowed"));
        }
    }
    if c.methods.is_empty() {
        return Err(parse_failed(path.key("methods"), "empty array not allowed"));
    }
    let mut methods = Vec::with_capacity(c.methods.len());
    for (i, m) in c.methods.iter().enumerate() {
        let method = RestMethod::parse(m).ok_or_else(|| {
            parse_failed(
                path.key("methods").index(i),
                format!("Method {m} not supported."),
            )
        })?;
        if !methods.contains(&method) {
            methods.push(method);
        }
    }
    Ok(RestEndpoint {
        name: c.name,
        url: c.url,
        methods,
        definition: c.definition,
        comment: c.comment,
    })
}
