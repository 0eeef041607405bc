//! Remote schema → table relationship fields inside remote selections
//! (`docs/remote-schemas.md`, "Relationships to tables"). Printing a remote selection, a
//! relationship field is sent as `<key>: __typename`, which keeps its place among the object's
//! keys, and the object selection asks for the relationship's join fields as
//! `__basalt_join_<type>_<field>` in a fragment on the object type, so that only objects of that
//! type carry them. When the part is done, each position's relationship (its fields gathered
//! across fragments and repeated parent fields) is planned once, as rows of the target table
//! joined on the object's join fields.

use super::remote::Draft;
use super::{Planner, Result};
use crate::graphql::ir::{
    join_field_key, JoinOwner, OutputField, OutputObject, OutputSelect, Source, TableJoinPart,
};
use crate::graphql::model::{RoleModel, RoleToTable};
use crate::metadata::types::RemoteRelationshipType;
use async_graphql_parser::types::{Field as AstField, SelectionSet};
use indexmap::{IndexMap, IndexSet};
use std::fmt::Write as _;

/// An object selection being printed: its relationship fields, by object type and response
/// key, with every field that shares the key.
#[derive(Debug, Default)]
pub(in crate::graphql) struct Level {
    fields: IndexMap<(String, String), Vec<AstField>>,
}

/// A relationship to a table at one position of a part (response keys, object type, client
/// key), planned when the part is done: every field selected there, and where the first was.
#[derive(Debug)]
pub(in crate::graphql) struct Pending {
    fields: Vec<AstField>,
    path: String,
    depth: usize,
}

impl<'a> Planner<'a> {
    /// When `field` (of object type `parent`) is a relationship to a table: its placeholder
    /// printed and the field kept for the end of the selection.
    pub(super) fn table_relationship(
        &mut self,
        field: &AstField,
        parent: &str,
        draft: &mut Draft,
    ) -> bool {
        let model: &'a RoleModel = self.model;
        if model.to_tables.is_empty() {
            return false;
        }
        let name = field.name.node.to_string();
        if !model.to_tables.contains_key(&(parent.to_owned(), name)) {
            return false;
        }
        let Some(level) = draft.levels.last_mut() else {
            return false;
        };
        let key = field.response_key().node.to_string();
        let _ = write!(draft.body, "{key}: __typename ");
        level
            .fields
            .entry((parent.to_owned(), key))
            .or_default()
            .push(field.clone());
        true
    }

    /// Prints an object selection (of type `parent`, which may be abstract), then plans the
    /// relationships to tables it selected and asks for their join fields.
    pub(super) fn remote_object(
        &mut self,
        set: &SelectionSet,
        parent: &str,
        path: &str,
        draft: &mut Draft,
        depth: usize,
    ) -> Result<()> {
        draft.levels.push(Level::default());
        let printed = self.remote_selection(set, parent, path, draft, depth);
        let level = draft.levels.pop().unwrap_or_default();
        printed?;
        let model: &'a RoleModel = self.model;
        let mut asked: IndexMap<&str, IndexSet<&str>> = IndexMap::new();
        for ((type_name, key), fields) in level.fields {
            let Some(first) = fields.first() else {
                continue;
            };
            let Some(relationship) = model
                .to_tables
                .get(&(type_name.clone(), first.name.node.to_string()))
            else {
                continue;
            };
            let type_name: &'a str = &relationship.relationship.type_name;
            asked
                .entry(type_name)
                .or_default()
                .extend(relationship.keys.iter().map(|(f, _, _)| f.as_str()));
            // A position reached twice (a repeated parent field) is one occurrence: its
            // fields are planned together when the part is done.
            let pending = draft
                .pending
                .entry((draft.at.clone(), type_name.to_owned(), key.clone()))
                .or_insert_with(|| Pending {
                    fields: Vec::new(),
                    path: format!("{path}.{key}"),
                    depth,
                });
            pending.fields.extend(fields);
        }
        for (type_name, fields) in asked {
            let _ = write!(draft.body, "... on {type_name} {{ ");
            for field in fields {
                let _ = write!(draft.body, "{}: {field} ", join_field_key(type_name, field));
            }
            draft.body.push_str("} ");
        }
        Ok(())
    }

    /// The rows of one relationship field for each distinct key: the role's select (or
    /// aggregate) of the target table, joined on the key's fields.
    fn related_rows(
        &mut self,
        relationship: &'a RoleToTable,
        type_name: &str,
        fields: &[AstField],
        path: &str,
        depth: usize,
    ) -> Result<OutputSelect> {
        let name = fields[0].name.node.as_str();
        let def = self.field_def(type_name, name, path)?;
        let args = self.field_args(&def, &fields[0], path)?;
        let table = self.table(relationship.table(), path)?;
        let join: Vec<(String, String)> = relationship
            .keys
            .iter()
            .map(|(field, column, _)| (field.clone(), column.clone()))
            .collect();
        let refs: Vec<&AstField> = fields.iter().collect();
        let value = if relationship.aggregate {
            let type_name = format!("{}_aggregate", table.type_name);
            let sub = self.sub_fields(&refs, &type_name, path, depth + 1)?;
            let source = Source::Table(table.name.clone());
            let aggregate = self.aggregate(table, source, join, &args, &sub, path, depth + 1)?;
            OutputField::Aggregate(Box::new(aggregate))
        } else {
            let sub = self.sub_fields(&refs, &table.type_name, path, depth + 1)?;
            let single = relationship.relationship.kind == RemoteRelationshipType::Object;
            let source = Source::Table(relationship.table().clone());
            let select = self.select(table, source, join, &args, &sub, path, single, depth + 1)?;
            OutputField::Relationship(Box::new(select))
        };
        Ok(OutputSelect {
            list: true,
            object: OutputObject {
                fields: vec![("v".to_owned(), value)],
                keys: relationship
                    .keys
                    .iter()
                    .map(|(field, _, ty)| (field.clone(), ty.clone()))
                    .collect(),
            },
        })
    }

    /// Plans a finished part's relationships to tables, each position once, and moves them
    /// into the operation, numbered.
    pub(super) fn take_table_joins(
        &mut self,
        draft: &mut Draft,
        owner: JoinOwner,
        remote: &str,
    ) -> Result<()> {
        let model: &'a RoleModel = self.model;
        for ((at, type_name, key), pending) in std::mem::take(&mut draft.pending) {
            let name = pending.fields[0].name.node.to_string();
            let Some(relationship) = model.to_tables.get(&(type_name.clone(), name)) else {
                continue;
            };
            let output = self.related_rows(
                relationship,
                &type_name,
                &pending.fields,
                &pending.path,
                pending.depth,
            )?;
            self.table_joins.push(TableJoinPart {
                occurrence: self.table_joins.len(),
                owner,
                remote: remote.to_owned(),
                at,
                type_name,
                key,
                fields: relationship
                    .keys
                    .iter()
                    .map(|(f, _, _)| f.clone())
                    .collect(),
                output,
            });
        }
        Ok(())
    }
}
