//! Field collection: fragments and `@skip`/`@include` resolved, fields grouped by response key,
//! depth and root-field limits enforced.

use super::Problem;
use super::{Collected, PlanError, Planner, Result};
use crate::graphql::types::FieldDef;
use async_graphql_parser::types::{ExecutableDocument, Field as AstField, Selection, SelectionSet};
use async_graphql_parser::Positioned;
use async_graphql_value::Value as GqlValue;

/// Most selections an operation may collect, fragments expanded. Without a bound, fragments
/// that each spread the next one twice make a document of a few hundred bytes expand to
/// billions of fields (2^32 at the nesting limit), exhausting memory.
const MAX_COLLECTED: usize = 100_000;

impl<'a> Planner<'a> {
    /// Evaluates `@skip`/`@include`. A variable condition makes the plan depend on variable
    /// values, so it is then cached per variables.
    pub(super) fn directives_allow(
        &mut self,
        directives: &[Positioned<async_graphql_parser::types::Directive>],
        path: &str,
    ) -> Result<bool> {
        for d in directives {
            let name = d.node.name.node.as_str();
            if name != "skip" && name != "include" {
                return Err(PlanError::at(
                    path,
                    Problem::DirectiveNotAllowed(name.to_string()),
                ));
            }
            let value = d
                .node
                .get_argument("if")
                .ok_or_else(|| PlanError::at(path, Problem::DirectiveNeedsIf(name.to_string())))?;
            let flag = match &value.node {
                GqlValue::Boolean(b) => *b,
                // Checked without values: the field is planned as if included.
                GqlValue::Variable(v) if self.without_values => {
                    let declared = self.var_types.get(v.as_str()).map(|(ty, _)| ty.base());
                    if declared != Some("Boolean") {
                        return Err(PlanError::at(path, Problem::IfNotBoolean));
                    }
                    name == "include"
                }
                GqlValue::Variable(v) => {
                    self.shape_dependent = true;
                    self.variable(v.as_str(), path)?
                        .as_bool()
                        .ok_or_else(|| PlanError::at(path, Problem::IfNotBoolean))?
                }
                _ => return Err(PlanError::at(path, Problem::IfNotBoolean)),
            };
            if (name == "skip" && flag) || (name == "include" && !flag) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    pub(super) fn collect<'d>(
        &mut self,
        set: &'d SelectionSet,
        parent: &str,
        path: &str,
        out: &mut Collected<'d>,
        depth: usize,
    ) -> Result<()>
    where
        'a: 'd,
    {
        if depth > 32 {
            return Err(PlanError::at(path, Problem::FragmentCycle));
        }
        for item in &set.items {
            self.count_collected(path)?;
            match &item.node {
                Selection::Field(f) => {
                    if !self.directives_allow(&f.node.directives, path)? {
                        continue;
                    }
                    let key = f.node.response_key().node.to_string();
                    match out.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, fields)) => fields.push(&f.node),
                        None => out.push((key, vec![&f.node])),
                    }
                }
                Selection::FragmentSpread(spread) => {
                    if !self.directives_allow(&spread.node.directives, path)? {
                        continue;
                    }
                    let name = spread.node.fragment_name.node.as_str();
                    let document: &'d ExecutableDocument = self.document;
                    let fragment = document.fragments.get(name).ok_or_else(|| {
                        PlanError::at(path, Problem::UnknownFragment(name.to_string()))
                    })?;
                    let on = fragment.node.type_condition.node.on.node.as_str();
                    self.check_type_condition(on, path)?;
                    if on == parent {
                        self.collect(
                            &fragment.node.selection_set.node,
                            parent,
                            path,
                            out,
                            depth + 1,
                        )?;
                    }
                }
                Selection::InlineFragment(inline) => {
                    if !self.directives_allow(&inline.node.directives, path)? {
                        continue;
                    }
                    let matches = match &inline.node.type_condition {
                        None => true,
                        Some(c) => {
                            let on = c.node.on.node.as_str();
                            self.check_type_condition(on, path)?;
                            on == parent
                        }
                    };
                    if matches {
                        self.collect(
                            &inline.node.selection_set.node,
                            parent,
                            path,
                            out,
                            depth + 1,
                        )?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Counts one more selection against [`MAX_COLLECTED`].
    pub(super) fn count_collected(&mut self, path: &str) -> Result<()> {
        self.collected += 1;
        if self.collected > MAX_COLLECTED {
            return Err(PlanError::at(path, Problem::TooManyFields(MAX_COLLECTED)));
        }
        Ok(())
    }

    pub(super) fn check_type_condition(&self, on: &str, path: &str) -> Result<()> {
        if self.types.object_fields(on).is_none() && !on.starts_with("__") {
            return Err(PlanError::at(
                path,
                Problem::NotAnObjectType(on.to_string()),
            ));
        }
        Ok(())
    }

    /// Collects a field's sub-selection over all fields sharing its response key.
    pub(super) fn sub_fields<'d>(
        &mut self,
        fields: &[&'d AstField],
        parent: &str,
        path: &str,
        depth: usize,
    ) -> Result<Collected<'d>>
    where
        'a: 'd,
    {
        if depth > self.limits.max_depth {
            return Err(PlanError::at(path, Problem::TooDeep(self.limits.max_depth)));
        }
        let mut out = Vec::new();
        for f in fields {
            self.collect(&f.selection_set.node, parent, path, &mut out, 0)?;
        }
        if out.is_empty() {
            return Err(PlanError::at(
                path,
                Problem::MissingSelection(parent.to_string()),
            ));
        }
        Ok(out)
    }

    /// Collects the root fields of an operation and enforces the root-field limit.
    pub(super) fn collect_root<'d>(
        &mut self,
        set: &'d SelectionSet,
        root: &str,
        out: &mut Collected<'d>,
    ) -> Result<()>
    where
        'a: 'd,
    {
        self.collect(set, root, "$", out, 0)?;
        if out.len() > self.limits.max_root_fields {
            return Err(PlanError::at(
                "$",
                Problem::TooManyRootFields {
                    count: out.len(),
                    max: self.limits.max_root_fields,
                },
            ));
        }
        Ok(())
    }

    pub(super) fn field_def(&self, parent: &str, name: &str, path: &str) -> Result<FieldDef> {
        self.types
            .object_fields(parent)
            .and_then(|f| f.get(name))
            .cloned()
            .ok_or_else(|| PlanError::unknown_field(path, name, parent))
    }

    pub(super) fn no_selection(field: &AstField, path: &str) -> Result<()> {
        if field.selection_set.node.items.is_empty() {
            Ok(())
        } else {
            Err(PlanError::at(
                path,
                Problem::SelectionOnScalar(field.name.node.to_string()),
            ))
        }
    }
}
