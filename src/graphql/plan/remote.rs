//! Root fields of remote schemas: validated against the remote's types merged into the role's
//! (arguments, variables, selections, fragments on objects, interfaces and unions), then
//! printed back per remote as one document that keeps the client's aliases and variable
//! references, with fragments inlined and `@skip`/`@include` applied
//! (`docs/remote-schemas.md`, "Execution"). Nothing is sent from here: the engine forwards the
//! documents.

use super::remote_table::{Level, Pending};
use super::Problem;
use super::{PlanError, Planner, Result};
use crate::graphql::ir::JoinOwner;
use async_graphql_parser::types::{
    ExecutableDocument, Field as AstField, OperationType, Selection, SelectionSet,
};
use async_graphql_value::Value as GqlValue;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// One remote's share of an operation.
#[derive(Debug, Clone, PartialEq)]
pub struct RemotePart {
    /// The remote schema's name.
    pub remote: String,
    /// The response keys it answers, in document order.
    pub keys: Vec<String>,
    /// The document sent to it.
    pub document: String,
    /// The variables that document declares (their values are forwarded as given).
    pub variables: Vec<String>,
    /// The client's operation name, kept in the document.
    pub operation_name: Option<String>,
    /// A query, which reads only: sending it twice is safe (a mutation's is not).
    pub read_only: bool,
}

/// A part being printed.
#[derive(Debug, Default)]
pub(in crate::graphql) struct Draft {
    keys: Vec<String>,
    pub(super) body: String,
    pub(super) variables: BTreeSet<String>,
    /// Response keys from the part's root to the selection being printed.
    pub(super) at: Vec<String>,
    /// The object selections being printed, innermost last.
    pub(super) levels: Vec<Level>,
    /// Remote → table relationships selected so far, by position, planned when the part is
    /// done.
    pub(super) pending: indexmap::IndexMap<(Vec<String>, String, String), Pending>,
}

/// A GraphQL value printed as a literal, variable references kept (and recorded).
fn print_value(value: &GqlValue, out: &mut String, variables: &mut BTreeSet<String>) -> Result<()> {
    match value {
        GqlValue::Variable(name) => {
            variables.insert(name.to_string());
            out.push('$');
            out.push_str(name.as_str());
        }
        GqlValue::Null => out.push_str("null"),
        GqlValue::Number(n) => out.push_str(&n.to_string()),
        GqlValue::String(s) => out.push_str(&serde_json::Value::String(s.clone()).to_string()),
        GqlValue::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        GqlValue::Enum(e) => out.push_str(e.as_str()),
        GqlValue::Binary(_) => return Err(PlanError::at("$", Problem::Binary)),
        GqlValue::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                print_value(item, out, variables)?;
            }
            out.push(']');
        }
        GqlValue::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(k.as_str());
                out.push_str(": ");
                print_value(v, out, variables)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

impl<'a> Planner<'a> {
    /// The remote schema answering root field `name` of this operation's root, if any.
    pub(super) fn remote_of(&self, name: &str, ty: OperationType) -> Option<&'a str> {
        let types: &'a crate::graphql::types::TypeSystem = self.types;
        match ty {
            OperationType::Mutation => types.remote.mutation.get(name),
            _ => types.remote.query.get(name),
        }
        .map(String::as_str)
    }

    /// Validates a remote root field (all fields sharing its response key) and adds it to
    /// its remote's part.
    pub(super) fn remote_root(
        &mut self,
        remote: &str,
        key: &str,
        fields: &[&AstField],
        root_type: &str,
        path: &str,
    ) -> Result<()> {
        let mut draft = self.remote_drafts.shift_remove(remote).unwrap_or_default();
        draft.keys.push(key.to_owned());
        for field in fields {
            self.remote_field(field, root_type, path, &mut draft, 1)?;
        }
        self.remote_drafts.insert(remote.to_owned(), draft);
        Ok(())
    }

    fn remote_field(
        &mut self,
        field: &AstField,
        parent: &str,
        path: &str,
        draft: &mut Draft,
        depth: usize,
    ) -> Result<()> {
        if depth > self.limits.max_depth {
            return Err(PlanError::at(path, Problem::TooDeep(self.limits.max_depth)));
        }
        let name = field.name.node.as_str();
        if self.table_relationship(field, parent, draft) {
            return Ok(());
        }
        if let Some(alias) = &field.alias {
            draft.body.push_str(alias.node.as_str());
            draft.body.push_str(": ");
        }
        draft.body.push_str(name);
        if name == "__typename" {
            if !field.arguments.is_empty() {
                return Err(PlanError::at(
                    path,
                    Problem::NoArguments("__typename".into()),
                ));
            }
            Self::no_selection(field, path)?;
            draft.body.push(' ');
            return Ok(());
        }
        let def = self
            .types
            .fields_of(parent)
            .and_then(|f| f.get(name))
            .cloned()
            .ok_or_else(|| PlanError::unknown_field(path, name, parent))?;
        self.field_args(&def, field, path)?;
        if !field.arguments.is_empty() {
            draft.body.push('(');
            for (i, (arg, value)) in field.arguments.iter().enumerate() {
                if i > 0 {
                    draft.body.push_str(", ");
                }
                draft.body.push_str(arg.node.as_str());
                draft.body.push_str(": ");
                print_value(&value.node, &mut draft.body, &mut draft.variables)?;
            }
            draft.body.push(')');
        }
        let base = def.ty.base().to_owned();
        if self.types.is_leaf(&base) {
            Self::no_selection(field, path)?;
        } else {
            if field.selection_set.node.items.is_empty() {
                return Err(PlanError::at(
                    path,
                    Problem::MissingSelection(base.to_string()),
                ));
            }
            draft.body.push_str(" { ");
            draft.at.push(field.response_key().node.to_string());
            self.remote_object(&field.selection_set.node, &base, path, draft, depth + 1)?;
            draft.at.pop();
            draft.body.push('}');
        }
        draft.body.push(' ');
        Ok(())
    }

    pub(super) fn remote_selection(
        &mut self,
        set: &SelectionSet,
        parent: &str,
        path: &str,
        draft: &mut Draft,
        depth: usize,
    ) -> Result<()> {
        if depth > self.limits.max_depth + 32 {
            return Err(PlanError::at(path, Problem::FragmentCycle));
        }
        for item in &set.items {
            self.count_collected(path)?;
            let (on, inner) = match &item.node {
                Selection::Field(f) => {
                    if self.directives_allow(&f.node.directives, path)? {
                        let at = format!("{path}.{}", f.node.response_key().node);
                        self.remote_field(&f.node, parent, &at, draft, depth)?;
                    }
                    continue;
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
                    (
                        fragment.node.type_condition.node.on.node.to_string(),
                        &fragment.node.selection_set.node,
                    )
                }
                Selection::InlineFragment(i) => {
                    if !self.directives_allow(&i.node.directives, path)? {
                        continue;
                    }
                    let on = i
                        .node
                        .type_condition
                        .as_ref()
                        .map_or_else(|| parent.to_owned(), |c| c.node.on.node.to_string());
                    (on, &i.node.selection_set.node)
                }
            };
            if !self.types.is_composite(&on) {
                return Err(PlanError::at(
                    path,
                    Problem::NotACompositeType(on.to_string()),
                ));
            }
            let _ = write!(draft.body, "... on {on} {{ ");
            self.remote_selection(inner, &on, path, draft, depth + 1)?;
            draft.body.push_str("} ");
        }
        Ok(())
    }

    /// The declarations (`$v: T = default`) of `variables`, as the operation declares them.
    pub(super) fn declarations(&self, variables: &BTreeSet<String>) -> Result<Vec<String>> {
        let mut declared = Vec::new();
        for name in variables {
            let (ty, _) = self
                .var_types
                .get(name)
                .ok_or_else(|| PlanError::at("$", Problem::UnboundVariable(name.to_string())))?;
            let mut declaration = format!("${name}: {ty}");
            if let Some(default) = self.variable_default(name) {
                declaration.push_str(" = ");
                print_value(&default, &mut declaration, &mut BTreeSet::new())?;
            }
            declared.push(declaration);
        }
        Ok(declared)
    }

    /// The remote parts of the operation: one document per remote, declaring only the
    /// variables it uses.
    pub(super) fn remote_parts(&mut self, ty: OperationType) -> Result<Vec<RemotePart>> {
        let keyword = match ty {
            OperationType::Mutation => "mutation",
            _ => "query",
        };
        let operation = self.operation_name.map(str::to_owned);
        let drafts = std::mem::take(&mut self.remote_drafts);
        let mut parts = Vec::with_capacity(drafts.len());
        for (remote, mut draft) in drafts {
            self.take_table_joins(&mut draft, JoinOwner::Root, &remote)?;
            let declared = self.declarations(&draft.variables)?;
            let mut document = String::from(keyword);
            if let Some(name) = &operation {
                document.push(' ');
                document.push_str(name);
            }
            if !declared.is_empty() {
                let _ = write!(document, "({})", declared.join(", "));
            }
            let _ = write!(document, " {{ {}}}", draft.body);
            parts.push(RemotePart {
                read_only: ty == OperationType::Query,
                remote,
                keys: draft.keys,
                document,
                variables: draft.variables.into_iter().collect(),
                operation_name: operation.clone(),
            });
        }
        Ok(parts)
    }
}
