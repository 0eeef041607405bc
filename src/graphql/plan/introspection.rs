//! Introspection root fields (`__schema`, `__type`) printed back as a standalone document, with
//! fragments inlined and directives applied, for [`crate::graphql::introspection`] to answer.

use super::Problem;
use super::{PlanError, Planner, Result};
use crate::graphql::introspection::graphql_literal;
use async_graphql_parser::types::{ExecutableDocument, Field as AstField, Selection, SelectionSet};

impl Planner<'_> {
    pub(super) fn print_root_field(&mut self, field: &AstField, path: &str) -> Result<String> {
        let mut out = String::new();
        self.print_field(field, path, &mut out)?;
        Ok(out)
    }

    pub(super) fn print_field(
        &mut self,
        field: &AstField,
        path: &str,
        out: &mut String,
    ) -> Result<()> {
        if let Some(alias) = &field.alias {
            out.push_str(alias.node.as_str());
            out.push_str(": ");
        }
        out.push_str(field.name.node.as_str());
        if !field.arguments.is_empty() {
            out.push('(');
            for (i, (name, value)) in field.arguments.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(name.node.as_str());
                out.push_str(": ");
                let json = self.ast_to_json(&value.node, path)?;
                out.push_str(&graphql_literal(&json));
            }
            out.push(')');
        }
        if !field.selection_set.node.items.is_empty() {
            out.push_str(" { ");
            self.print_selection(&field.selection_set.node, path, out, 0)?;
            out.push('}');
        }
        out.push(' ');
        Ok(())
    }

    pub(super) fn print_selection(
        &mut self,
        set: &SelectionSet,
        path: &str,
        out: &mut String,
        depth: usize,
    ) -> Result<()> {
        if depth > 64 {
            return Err(PlanError::at(path, Problem::FragmentCycle));
        }
        for item in &set.items {
            match &item.node {
                Selection::Field(f) => {
                    if self.directives_allow(&f.node.directives, path)? {
                        self.print_field(&f.node, path, out)?;
                    }
                }
                Selection::FragmentSpread(s) => {
                    if !self.directives_allow(&s.node.directives, path)? {
                        continue;
                    }
                    let document: &ExecutableDocument = self.document;
                    let name = s.node.fragment_name.node.as_str();
                    let fragment = document.fragments.get(name).ok_or_else(|| {
                        PlanError::at(path, Problem::UnknownFragment(name.to_string()))
                    })?;
                    out.push_str("... on ");
                    out.push_str(fragment.node.type_condition.node.on.node.as_str());
                    out.push_str(" { ");
                    self.print_selection(&fragment.node.selection_set.node, path, out, depth + 1)?;
                    out.push_str("} ");
                }
                Selection::InlineFragment(i) => {
                    if !self.directives_allow(&i.node.directives, path)? {
                        continue;
                    }
                    out.push_str("... ");
                    if let Some(c) = &i.node.type_condition {
                        out.push_str("on ");
                        out.push_str(c.node.on.node.as_str());
                        out.push(' ');
                    }
                    out.push_str("{ ");
                    self.print_selection(&i.node.selection_set.node, path, out, depth + 1)?;
                    out.push_str("} ");
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_print_as_graphql() {
        assert_eq!(
            graphql_literal(&serde_json::json!({"name": "a\"b", "n": [1, true]})),
            "{name: \"a\\\"b\", n: [1, true]}"
        );
    }
}
