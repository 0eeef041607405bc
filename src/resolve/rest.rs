//! REST endpoints checked against the document (see `docs/rest.md`): the URL template's rules,
//! the query it names (in its collection, one operation, not a subscription, no GET for a
//! mutation, URL variables among the operation's scalar variables), the document against the
//! admin schema (the GraphQL layer's rule, [`DocumentCheck`]), and no two endpoints that could
//! answer the same request. The same check runs when an endpoint is created and at every
//! rebuild. Pure.

use super::remote::DocumentCheck;
use super::{Inconsistency, Resolution};
use crate::metadata::error::{Code, MetadataError, Missing};
use crate::metadata::ids::ObjectId;
use crate::metadata::path::JsonPath;
use crate::metadata::types::{GraphQLName, Metadata, RestEndpoint, RestMethod};
use async_graphql_parser::types::{BaseType, OperationType};
use serde_json::{json, Value};

/// One segment of a URL template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Matched as it is, case-sensitively.
    Literal(String),
    /// `:<name>`: any one segment, the value of variable `name`.
    Variable(String),
}

/// A URL template, split on `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub segments: Vec<Segment>,
}

/// Characters a literal segment may hold besides ASCII letters and digits.
const LITERAL_PUNCTUATION: &str = "-._~!$&'()*+,;=@";

impl Template {
    /// Reads a URL template; the error is the `bad-request` message. The rules are checked
    /// in order over the whole template: empty segments, then repeated variables, then
    /// characters.
    pub fn parse(url: &str) -> Result<Template, String> {
        let raw: Vec<&str> = url.split('/').collect();
        if raw.iter().any(|s| s.is_empty() || *s == ":") {
            return Err(format!(
                "Empty segments or unnamed variables are not allowed: {url}"
            ));
        }
        let names: Vec<&str> = raw.iter().filter_map(|s| s.strip_prefix(':')).collect();
        if names
            .iter()
            .enumerate()
            .any(|(i, n)| names[..i].contains(n))
        {
            return Err(format!(
                "Duplicate variables found in endpoint paths: {url}"
            ));
        }
        let mut segments = Vec::with_capacity(raw.len());
        for segment in raw {
            let valid = match segment.strip_prefix(':') {
                Some(name) => GraphQLName::is_valid(name),
                None => segment
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || LITERAL_PUNCTUATION.contains(c)),
            };
            if !valid {
                return Err(invalid_segment(segment, url));
            }
            segments.push(match segment.strip_prefix(':') {
                Some(name) => Segment::Variable(name.to_owned()),
                None => Segment::Literal(segment.to_owned()),
            });
        }
        Ok(Template { segments })
    }

    /// Whether the two templates have the same literals at the same places, and variables at
    /// the others (whatever their names): OpenAPI holds such paths to be one.
    pub fn same_shape(&self, other: &Template) -> bool {
        self.aligned(other, |pair| match pair {
            (Segment::Literal(a), Segment::Literal(b)) => a == b,
            (Segment::Variable(_), Segment::Variable(_)) => true,
            _ => false,
        })
    }

    /// Whether some request path matches both templates.
    pub fn overlaps(&self, other: &Template) -> bool {
        self.aligned(other, |pair| match pair {
            (Segment::Literal(a), Segment::Literal(b)) => a == b,
            _ => true,
        })
    }

    /// As many segments, and `pair` holds for each position.
    fn aligned(&self, other: &Template, pair: impl Fn((&Segment, &Segment)) -> bool) -> bool {
        self.segments.len() == other.segments.len()
            && self.segments.iter().zip(&other.segments).all(pair)
    }

    /// The variables' values when `path` (decoded segments) matches.
    pub fn matches<'p>(&self, path: &'p [String]) -> Option<Vec<(&str, &'p str)>> {
        if path.len() != self.segments.len() {
            return None;
        }
        let mut values = Vec::new();
        for (segment, given) in self.segments.iter().zip(path) {
            match segment {
                Segment::Literal(l) if l == given => {}
                Segment::Literal(_) => return None,
                Segment::Variable(name) => values.push((name.as_str(), given.as_str())),
            }
        }
        Some(values)
    }

    /// The variables, in URL order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Variable(name) => Some(name.as_str()),
            Segment::Literal(_) => None,
        })
    }
}

fn invalid_segment(segment: &str, url: &str) -> String {
    format!("Invalid characters in URL segment \"{segment}\": {url}")
}

/// A variable of an endpoint's operation.
#[derive(Debug, Clone, PartialEq)]
pub struct RestVariable {
    pub name: String,
    /// Its type as written (`Int!`, `[String]`).
    pub ty: String,
    /// The named type inside any list and non-null.
    pub base: String,
    pub list: bool,
    pub non_null: bool,
    /// Its default, as JSON.
    pub default: Option<Value>,
}

/// An endpoint that passed.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedEndpoint {
    pub entry: RestEndpoint,
    pub template: Template,
    /// The stored GraphQL document.
    pub document: String,
    /// A mutation (rather than a query).
    pub mutation: bool,
    /// The operation's variables, in declaration order.
    pub variables: Vec<RestVariable>,
}

impl ResolvedEndpoint {
    /// The operation's variable `name`.
    pub fn variable(&self, name: &str) -> Option<&RestVariable> {
        self.variables.iter().find(|v| v.name == name)
    }
}

/// The arguments that create an endpoint, as inconsistencies report it.
pub fn definition(endpoint: &RestEndpoint) -> Value {
    serde_json::to_value(endpoint).unwrap_or(Value::Null)
}

/// Checks `endpoint` against `metadata` and the endpoints already served (`others`), with the
/// admin schema's rule when given. Errors carry the API's code and message at `$.args`.
pub fn check(
    metadata: &Metadata,
    validate: &dyn Fn(&str) -> Option<String>,
    endpoint: &RestEndpoint,
    others: &[ResolvedEndpoint],
) -> Result<ResolvedEndpoint, MetadataError> {
    let args = JsonPath::args();
    let name = &endpoint.name;
    let error = |code, message: String| {
        MetadataError::new(code, args.clone(), format!("in endpoint {name}: {message}"))
    };
    let template = Template::parse(&endpoint.url)
        .map_err(|message| MetadataError::new(Code::BadRequest, args.clone(), message))?;
    let query = &endpoint.definition.query;
    let collection = metadata
        .query_collections
        .iter()
        .find(|c| c.name == query.collection_name)
        .ok_or_else(|| {
            error(
                Code::NotExists,
                format!(
                    "collection with name {} does not exist",
                    query.collection_name
                ),
            )
            .with_missing(Missing::Metadata)
        })?;
    let stored = collection
        .definition
        .queries
        .iter()
        .find(|q| q.name == query.query_name)
        .ok_or_else(|| {
            error(
                Code::NotExists,
                format!(
                    "query with name {} does not exist in collection {}",
                    query.query_name, query.collection_name
                ),
            )
            .with_missing(Missing::Metadata)
        })?;
    let q = &query.query_name;
    let document = async_graphql_parser::parse_query(&stored.query).map_err(|e| {
        error(
            Code::BadRequest,
            format!("query with name {q} does not parse: {e}"),
        )
    })?;
    let operations: Vec<_> = document.operations.iter().map(|(_, op)| op).collect();
    let definitions = operations.len() + document.fragments.len();
    let operation = match (operations.first(), definitions) {
        (Some(op), 1) => *op,
        (_, 0) => {
            return Err(error(
                Code::BadRequest,
                format!("query with name {q} has no definitions."),
            ))
        }
        _ => {
            return Err(error(
                Code::BadRequest,
                format!("query with name {q} has multiple definitions."),
            ))
        }
    };
    let mutation = match operation.node.ty {
        OperationType::Subscription => {
            return Err(error(
                Code::NotSupported,
                format!("query with name {q} is a subscription"),
            ))
        }
        OperationType::Mutation => true,
        OperationType::Query => false,
    };
    if mutation && endpoint.methods.contains(&RestMethod::Get) {
        return Err(error(
            Code::NotSupported,
            format!("GET cannot be used for mutation {q}"),
        ));
    }
    let variables: Vec<RestVariable> = operation
        .node
        .variable_definitions
        .iter()
        .map(|d| {
            let ty = &d.node.var_type.node;
            let mut base = &ty.base;
            let list = matches!(base, BaseType::List(_));
            while let BaseType::List(inner) = base {
                base = &inner.base;
            }
            RestVariable {
                name: d.node.name.node.to_string(),
                ty: ty.to_string(),
                base: base.to_string(),
                list,
                non_null: !ty.nullable,
                default: d
                    .node
                    .default_value
                    .as_ref()
                    .and_then(|v| v.node.clone().into_json().ok()),
            }
        })
        .collect();
    for variable in template.variables() {
        let scalar = variables.iter().any(|v| v.name == variable && !v.list);
        if !scalar {
            return Err(error(
                Code::BadRequest,
                format!("URL variable \"{variable}\" is not a scalar variable of query {q}"),
            ));
        }
    }
    if let Some(problem) = validate(&stored.query) {
        return Err(error(Code::ValidationFailed, problem).with_missing(Missing::Metadata));
    }
    let conflicts: Vec<&ResolvedEndpoint> = others
        .iter()
        .filter(|o| {
            let shared = o.entry.methods.iter().any(|m| endpoint.methods.contains(m));
            let renamed = o.template.same_shape(&template) && o.template != template;
            (shared && o.template.overlaps(&template)) || renamed
        })
        .collect();
    if !conflicts.is_empty() {
        let mut urls: Vec<&str> = conflicts.iter().map(|c| c.entry.url.as_str()).collect();
        urls.push(&endpoint.url);
        urls.sort_unstable();
        urls.dedup();
        let internal: Vec<Value> = conflicts.iter().map(|c| definition(&c.entry)).collect();
        return Err(MetadataError::new(
            Code::AlreadyExists,
            args,
            format!("Ambiguous URL paths: {}", urls.join(", ")),
        )
        .with_internal(json!({"conflicts": internal})));
    }
    Ok(ResolvedEndpoint {
        entry: endpoint.clone(),
        template,
        document: stored.query.clone(),
        mutation,
        variables,
    })
}

/// Resolves every endpoint in document order: each one that passes is served; one that fails
/// (or overlaps one before it, or repeats its name) is an inconsistency. The documents are
/// validated against the admin schema in one pass.
pub fn resolve_all(metadata: &Metadata, documents: Option<DocumentCheck>, cache: &mut Resolution) {
    if metadata.rest_endpoints.is_empty() {
        cache.resolved.rest_endpoints = Vec::new();
        return;
    }
    let texts: Vec<&str> = metadata
        .query_collections
        .iter()
        .flat_map(|c| c.definition.queries.iter().map(|q| q.query.as_str()))
        .collect();
    let problems: std::collections::HashMap<&str, Option<String>> = match documents {
        Some(check) => texts
            .iter()
            .copied()
            .zip(check(&cache.resolved, &texts))
            .collect(),
        None => std::collections::HashMap::new(),
    };
    let validate = |text: &str| problems.get(text).cloned().flatten();
    let mut served: Vec<ResolvedEndpoint> = Vec::with_capacity(metadata.rest_endpoints.len());
    let mut failed = Vec::new();
    for (i, endpoint) in metadata.rest_endpoints.iter().enumerate() {
        let repeated = metadata.rest_endpoints[..i]
            .iter()
            .any(|e| e.name == endpoint.name);
        let checked = match repeated {
            true => Err(MetadataError::new(
                Code::AlreadyExists,
                JsonPath::args(),
                format!("Endpoint with name: {} already exists", endpoint.name),
            )),
            false => check(metadata, &validate, endpoint, &served),
        };
        match checked {
            Ok(resolved) => served.push(resolved),
            Err(err) => failed.push(Inconsistency {
                object: ObjectId::RestEndpoint(endpoint.name.clone()),
                kind: "rest_endpoint",
                definition: definition(endpoint),
                reason: match err.message.starts_with("in endpoint ") {
                    true => err.message,
                    false => format!("in endpoint {}: {}", endpoint.name, err.message),
                },
                conflict: false,
            }),
        }
    }
    cache.resolved.rest_endpoints = served;
    cache.inconsistencies.extend(failed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_read_and_refused_by_the_rules() {
        let t = Template::parse("members/:id/notes").unwrap();
        assert_eq!(
            t.segments,
            [
                Segment::Literal("members".into()),
                Segment::Variable("id".into()),
                Segment::Literal("notes".into())
            ]
        );
        for (url, message) in [
            (
                "/members",
                "Empty segments or unnamed variables are not allowed: /members",
            ),
            (
                "members/",
                "Empty segments or unnamed variables are not allowed: members/",
            ),
            (
                "a//b",
                "Empty segments or unnamed variables are not allowed: a//b",
            ),
            (
                "a/:",
                "Empty segments or unnamed variables are not allowed: a/:",
            ),
            (
                "a/:x/:x",
                "Duplicate variables found in endpoint paths: a/:x/:x",
            ),
            ("a b", "Invalid characters in URL segment \"a b\": a b"),
            ("a/%20", "Invalid characters in URL segment \"%20\": a/%20"),
            ("a/:1x", "Invalid characters in URL segment \":1x\": a/:1x"),
            ("é", "Invalid characters in URL segment \"é\": é"),
        ] {
            assert_eq!(Template::parse(url).unwrap_err(), message, "{url}");
        }
        assert!(Template::parse("a-b.c_d~!$&'()*+,;=@/:v").is_ok());
    }

    #[test]
    fn overlap_and_matching_follow_segments() {
        let t = |u: &str| Template::parse(u).unwrap();
        assert!(t("members/:id").overlaps(&t("members/since")));
        assert!(t("members/:id").overlaps(&t(":kind/since")));
        assert!(!t("members/:id").overlaps(&t("members/:id/notes")));
        assert!(!t("members/:id").overlaps(&t("people/:id")));
        let path = |p: &str| p.split('/').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            t("members/:id").matches(&path("members/7")),
            Some(vec![("id", "7")])
        );
        assert_eq!(t("members/:id").matches(&path("Members/7")), None);
        assert_eq!(t("members/:id").matches(&path("members/7/x")), None);
    }
}
