//! Native queries' rows (`docs/native-queries.md`, "Execution"): the root field and the
//! relationships to other native queries, each reading the query's code with its `args` bound
//! as parameters, under the role's permission on the query's logical model.

use super::{Input, PlanError, Planner, Result};
use crate::graphql::ir::*;
use crate::graphql::model::{RoleQueryRelationship, RoleTable};
use crate::resolve::RelationshipKind;
use async_graphql_parser::types::Field as AstField;
use indexmap::IndexMap;
use serde_json::Value;

impl<'a> Planner<'a> {
    /// The rows of native query `i` of the role's model: its code with `args` bound, read as
    /// its logical model's rows under the role's permission on the model.
    pub(super) fn native_query_root(
        &mut self,
        i: usize,
        fields: &[&AstField],
        args: &IndexMap<String, Input>,
        path: &str,
        root_type: &str,
        name: &str,
    ) -> Result<RootField> {
        let Some((source, table)) = self.native_query(i, args) else {
            return Err(PlanError::unknown_field(path, name, root_type));
        };
        let sub = self.sub_fields(fields, &table.type_name, path, 1)?;
        Ok(RootField::Select(self.select(
            table,
            source,
            Vec::new(),
            args,
            &sub,
            path,
            false,
            1,
        )?))
    }

    /// The rows a relationship to native query `r.query` reads for each parent row.
    pub(super) fn native_query_relationship(
        &mut self,
        r: &RoleQueryRelationship,
        fields: &[&AstField],
        args: &IndexMap<String, Input>,
        path: &str,
        depth: usize,
    ) -> Result<Field> {
        let Some((source, table)) = self.native_query(r.query, args) else {
            return Err(PlanError::unknown_field(path, &r.name, "native query"));
        };
        let sub = self.sub_fields(fields, &table.type_name, path, depth + 1)?;
        let single = r.kind == RelationshipKind::Object;
        let select = self.select(
            table,
            source,
            r.mapping.clone(),
            args,
            &sub,
            path,
            single,
            depth + 1,
        )?;
        Ok(Field::Relationship {
            kind: r.kind,
            select: Box::new(select),
        })
    }

    /// Native query `i`'s code with the `args` argument's values bound (an omitted or null
    /// argument, only nullable ones past validation, binds `NULL`), and what the role reads
    /// of its rows.
    fn native_query(
        &self,
        i: usize,
        args: &IndexMap<String, Input>,
    ) -> Option<(Source, &'a RoleTable)> {
        let model: &'a crate::graphql::model::RoleModel = self.model;
        let q = model.native_queries.get(i)?;
        let table = model.rows_of(q)?;
        let given = args.get("args").and_then(Input::as_object);
        let values = (q.arguments.iter())
            .map(|a| ValueExpr {
                param: match given.and_then(|g| g.get(&a.name)) {
                    Some(Input::Value(p)) => p.clone(),
                    Some(Input::Enum(value)) => Param::Literal(Value::String(value.clone())),
                    _ => Param::Literal(Value::Null),
                },
                cast: a.cast.clone(),
            })
            .collect();
        let source = Source::NativeQuery {
            code: q.template.clone(),
            args: values,
            returns: crate::resolve::native_queries::model_relation(&q.returns),
        };
        Some((source, table))
    }
}
