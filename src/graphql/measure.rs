//! The size of an operation as the depth and node limits count it (`docs/limits.md`,
//! "Counting"): fragments expanded, `@skip`/`@include` applied, and the subtrees of
//! `__schema` and `__type` left out, so introspection passes any limit. Only fields with a
//! selection set count. Each fragment is measured once, so fragments that spread each other
//! many times cost no more to measure than to read. Pure.

use async_graphql_parser::types::{
    Directive, ExecutableDocument, OperationDefinition, Selection, SelectionSet,
};
use async_graphql_parser::Positioned;
use async_graphql_value::Value as GqlValue;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// How far the walk descends (fields and fragments together) before it stops and reports the
/// operation as deeper than any limit: the stack stays bounded whatever the document.
const MAX_WALK: u32 = 1000;

/// The counts of one operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Measure {
    /// Fields that have a selection set on the longest path from a root field:
    /// `member { id }` is 1, `member { notes { id } }` is 2.
    pub depth: u32,
    /// Field occurrences that have a selection set, aliases and each expansion of a fragment
    /// counted apart.
    pub nodes: u64,
    /// Whether a `@skip`/`@include` condition read a variable, so that the counts hold for
    /// these variables' values only.
    pub reads_variables: bool,
}

/// Measures `operation` of `document` with the request's `variables`.
pub fn measure(
    document: &ExecutableDocument,
    operation: &OperationDefinition,
    variables: &Map<String, Value>,
) -> Measure {
    let mut walk = Walk {
        document,
        operation,
        variables,
        fragments: HashMap::new(),
        reads_variables: false,
        level: 0,
    };
    let size = walk.set(&operation.selection_set.node);
    Measure {
        depth: size.depth,
        nodes: size.nodes,
        reads_variables: walk.reads_variables,
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Size {
    depth: u32,
    nodes: u64,
}

impl Size {
    /// What a walk that went too deep reports: more than any limit.
    const TOO_DEEP: Size = Size {
        depth: u32::MAX,
        nodes: u64::MAX,
    };
}

struct Walk<'a> {
    document: &'a ExecutableDocument,
    operation: &'a OperationDefinition,
    variables: &'a Map<String, Value>,
    /// Fragments measured so far; `None` while one is being measured (a spread of it then
    /// is a cycle, which counts nothing here and which planning refuses).
    fragments: HashMap<&'a str, Option<Size>>,
    reads_variables: bool,
    /// How deep the walk is now.
    level: u32,
}

impl<'a> Walk<'a> {
    fn set(&mut self, set: &'a SelectionSet) -> Size {
        if self.level >= MAX_WALK {
            return Size::TOO_DEEP;
        }
        self.level += 1;
        let mut size = Size::default();
        for item in &set.items {
            let part = match &item.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    let name = field.name.node.as_str();
                    let leaf = field.selection_set.node.items.is_empty();
                    if leaf
                        || name == "__schema"
                        || name == "__type"
                        || !self.included(&field.directives)
                    {
                        continue;
                    }
                    let inner = self.set(&field.selection_set.node);
                    Size {
                        depth: inner.depth.saturating_add(1),
                        nodes: inner.nodes.saturating_add(1),
                    }
                }
                Selection::FragmentSpread(spread) => {
                    if !self.included(&spread.node.directives) {
                        continue;
                    }
                    self.fragment(spread.node.fragment_name.node.as_str())
                }
                Selection::InlineFragment(inline) => {
                    if !self.included(&inline.node.directives) {
                        continue;
                    }
                    self.set(&inline.node.selection_set.node)
                }
            };
            size.depth = size.depth.max(part.depth);
            size.nodes = size.nodes.saturating_add(part.nodes);
        }
        self.level -= 1;
        size
    }

    /// A named fragment's size, measured on its first spread. A missing fragment counts
    /// nothing (planning refuses it).
    fn fragment(&mut self, name: &'a str) -> Size {
        match self.fragments.get(name) {
            Some(Some(size)) => return *size,
            Some(None) => return Size::default(),
            None => {}
        }
        let document: &'a ExecutableDocument = self.document;
        let Some(fragment) = document.fragments.get(name) else {
            return Size::default();
        };
        self.fragments.insert(name, None);
        let size = self.set(&fragment.node.selection_set.node);
        self.fragments.insert(name, Some(size));
        size
    }

    /// Whether `@skip`/`@include` keep a selection. A condition that cannot be read (planning
    /// refuses it) keeps it.
    fn included(&mut self, directives: &[Positioned<Directive>]) -> bool {
        for directive in directives {
            let name = directive.node.name.node.as_str();
            if name != "skip" && name != "include" {
                continue;
            }
            let flag = match directive.node.get_argument("if").map(|v| &v.node) {
                Some(GqlValue::Boolean(flag)) => Some(*flag),
                Some(GqlValue::Variable(variable)) => {
                    self.reads_variables = true;
                    self.variable(variable.as_str())
                }
                _ => None,
            };
            match (name, flag) {
                ("skip", Some(true)) | ("include", Some(false)) => return false,
                _ => {}
            }
        }
        true
    }

    /// A Boolean variable's value: the request's, else the operation's default.
    fn variable(&self, name: &str) -> Option<bool> {
        if let Some(value) = self.variables.get(name) {
            return value.as_bool();
        }
        let definition = self
            .operation
            .variable_definitions
            .iter()
            .find(|d| d.node.name.node.as_str() == name)?;
        match definition.node.default_value.as_ref().map(|v| &v.node) {
            Some(async_graphql_value::ConstValue::Boolean(flag)) => Some(*flag),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn counts(query: &str, variables: Value) -> (u32, u64, bool) {
        let document = async_graphql_parser::parse_query(query).unwrap();
        let operation = match &document.operations {
            async_graphql_parser::types::DocumentOperations::Single(op) => op.node.clone(),
            async_graphql_parser::types::DocumentOperations::Multiple(ops) => {
                ops.values().next().unwrap().node.clone()
            }
        };
        let variables = variables.as_object().cloned().unwrap_or_default();
        let m = measure(&document, &operation, &variables);
        (m.depth, m.nodes, m.reads_variables)
    }

    #[test]
    fn the_documented_examples() {
        assert_eq!(counts("{ member { id } }", json!({})).0, 1);
        assert_eq!(counts("{ member { notes { id } } }", json!({})).0, 2);
        let three = "{ author { name articles { id } } home { id } }";
        assert_eq!(counts(three, json!({})), (2, 3, false));
        assert_eq!(counts("{ employee { manager { name } } }", json!({})).0, 2);
    }

    #[test]
    fn aliases_count_apart_and_leaves_count_nothing() {
        assert_eq!(
            counts(
                "{ a: author { id } b: author { id } __typename }",
                json!({})
            ),
            (1, 2, false)
        );
        assert_eq!(counts("{ __typename }", json!({})), (0, 0, false));
    }

    #[test]
    fn fragments_are_expanded_each_time_they_are_spread() {
        let query = "query { author { ...A } other: author { ...A } }
            fragment A on author { articles { id } ... on author { editor { id } } }";
        assert_eq!(counts(query, json!({})), (2, 6, false));
    }

    #[test]
    fn introspection_is_not_counted() {
        let query = "{ __schema { types { fields { type { ofType { name } } } } }
            __type(name: \"x\") { fields { name } } }";
        assert_eq!(counts(query, json!({})), (0, 0, false));
        assert_eq!(
            counts("{ __schema { types { name } } author { id } }", json!({})),
            (1, 1, false)
        );
    }

    #[test]
    fn skip_and_include_apply_with_literals_variables_and_defaults() {
        let q = "query($deep: Boolean! = false) {
            author { articles @include(if: $deep) { id } } x: author @skip(if: true) { id } }";
        assert_eq!(counts(q, json!({})), (1, 1, true));
        assert_eq!(counts(q, json!({"deep": true})), (2, 2, true));
    }

    #[test]
    fn fragment_bombs_and_cycles_stay_cheap() {
        // Each fragment spreads the next one twice: 2^30 expansions, measured 30 times.
        let mut query = String::from("{ a { ...F0 } }");
        for i in 0..30 {
            query.push_str(&format!(
                " fragment F{i} on a {{ b {{ ...F{n} }} c: b {{ ...F{n} }} }}",
                n = i + 1
            ));
        }
        query.push_str(" fragment F30 on a { id }");
        let (depth, nodes, _) = counts(&query, json!({}));
        assert_eq!(depth, 31);
        assert_eq!(nodes, (1u64 << 31) - 1);
        let cycle = "{ a { ...X } } fragment X on a { b { ...Y } } fragment Y on a { c { ...X } }";
        assert_eq!(counts(cycle, json!({})).0, 3);
    }

    #[test]
    fn a_walk_that_goes_too_deep_reports_more_than_any_limit() {
        let mut query = String::from("{ a { ...F0 } }");
        for i in 0..1200 {
            query.push_str(&format!(" fragment F{i} on a {{ b {{ ...F{} }} }}", i + 1));
        }
        query.push_str(" fragment F1200 on a { id }");
        assert_eq!(counts(&query, json!({})).0, u32::MAX);
    }
}
