//! The allow-list: documents compared in a normalized form, so whitespace, comments, argument
//! order and `__typename` fields do not matter while any other difference does.

use async_graphql_parser::types::{
    DocumentOperations, ExecutableDocument, OperationDefinition, OperationType, Selection,
    SelectionSet,
};
use async_graphql_value::Value;
use std::collections::HashSet;
use std::fmt::Write;

/// The normalized text of a document, or `None` if it does not parse.
pub fn normalize(query: &str) -> Option<String> {
    let document = async_graphql_parser::parse_query(query).ok()?;
    Some(print_document(&document))
}

/// The normalized text of a parsed document.
pub fn normalize_document(document: &ExecutableDocument) -> String {
    print_document(document)
}

/// Normalized forms of every query of the allow-listed collections.
pub fn build(metadata: &crate::metadata::Metadata) -> HashSet<String> {
    metadata
        .allowlist
        .iter()
        .filter_map(|entry| metadata.collection(&entry.collection.0))
        .flat_map(|c| c.definition.queries.iter())
        .filter_map(|q| normalize(&q.query))
        .collect()
}

fn print_document(doc: &ExecutableDocument) -> String {
    let mut ops: Vec<(String, &OperationDefinition)> = match &doc.operations {
        DocumentOperations::Single(op) => vec![(String::new(), &op.node)],
        DocumentOperations::Multiple(map) => map
            .iter()
            .map(|(n, op)| (n.to_string(), &op.node))
            .collect(),
    };
    ops.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::new();
    for (name, op) in ops {
        let ty = match op.ty {
            OperationType::Query => "query",
            OperationType::Mutation => "mutation",
            OperationType::Subscription => "subscription",
        };
        let _ = write!(out, "{ty} {name}");
        let mut vars: Vec<String> = op
            .variable_definitions
            .iter()
            .map(|v| {
                let default = v
                    .node
                    .default_value
                    .as_ref()
                    .map(|d| format!("={}", value(&d.node.clone().into_value())))
                    .unwrap_or_default();
                format!("${}:{}{default}", v.node.name.node, v.node.var_type.node)
            })
            .collect();
        vars.sort();
        let _ = write!(out, "({})", vars.join(","));
        print_set(&op.selection_set.node, &mut out);
    }
    let mut fragments: Vec<_> = doc.fragments.iter().collect();
    fragments.sort_by(|a, b| a.0.cmp(b.0));
    for (name, f) in fragments {
        let _ = write!(
            out,
            "fragment {name} on {}",
            f.node.type_condition.node.on.node
        );
        print_set(&f.node.selection_set.node, &mut out);
    }
    out
}

fn print_directives(
    directives: &[async_graphql_parser::Positioned<async_graphql_parser::types::Directive>],
    out: &mut String,
) {
    for d in directives {
        let mut args: Vec<String> = d
            .node
            .arguments
            .iter()
            .map(|(n, v)| format!("{}:{}", n.node, value(&v.node)))
            .collect();
        args.sort();
        let _ = write!(out, "@{}({})", d.node.name.node, args.join(","));
    }
}

fn print_set(set: &SelectionSet, out: &mut String) {
    out.push('{');
    for item in &set.items {
        match &item.node {
            Selection::Field(f) => {
                if f.node.name.node == "__typename" {
                    continue;
                }
                if let Some(alias) = &f.node.alias {
                    let _ = write!(out, "{}:", alias.node);
                }
                out.push_str(&f.node.name.node);
                let mut args: Vec<String> = f
                    .node
                    .arguments
                    .iter()
                    .map(|(n, v)| format!("{}:{}", n.node, value(&v.node)))
                    .collect();
                args.sort();
                let _ = write!(out, "({})", args.join(","));
                print_directives(&f.node.directives, out);
                if !f.node.selection_set.node.items.is_empty() {
                    print_set(&f.node.selection_set.node, out);
                }
            }
            Selection::FragmentSpread(s) => {
                let _ = write!(out, "...{}", s.node.fragment_name.node);
                print_directives(&s.node.directives, out);
            }
            Selection::InlineFragment(i) => {
                out.push_str("...");
                if let Some(c) = &i.node.type_condition {
                    let _ = write!(out, "on {}", c.node.on.node);
                }
                print_directives(&i.node.directives, out);
                print_set(&i.node.selection_set.node, out);
            }
        }
        out.push(' ');
    }
    out.push('}');
}

/// A value with object keys sorted.
fn value(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}:{}", value(v)))
                .collect();
            items.sort();
            format!("{{{}}}", items.join(","))
        }
        Value::List(items) => format!(
            "[{}]",
            items.iter().map(value).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn formatting_argument_order_and_typename_do_not_matter() {
        let a = normalize(
            "query q($id: Int!) { author(where: {id: {_eq: $id}}, limit: 1) { id name } }",
        )
        .unwrap();
        let b = normalize("# comment\nquery q($id: Int!) {\n  author(limit: 1, where: {id: {_eq: $id}}) { __typename id name }\n}").unwrap();
        assert_eq!(a, b);
        assert_ne!(
            a,
            normalize("query q($id: Int!) { author(where: {id: {_eq: $id}}, limit: 1) { id } }")
                .unwrap()
        );
        assert_ne!(
            a,
            normalize(
                "query other($id: Int!) { author(where: {id: {_eq: $id}}, limit: 1) { id name } }"
            )
            .unwrap()
        );
        assert!(normalize("query {").is_none());
    }
}
