//! A remote relationship field of a table (`docs/metadata-api.md`, "Remote relationships"):
//! refused in subscriptions; otherwise the row's slot in the statement, and one [`RemoteJoinPart`] per occurrence with
//! the client's arguments (variables resolved) and its selection printed for the remote.

use super::remote::Draft;
use super::{PlanError, Planner, Problem, Result};
use crate::graphql::ir::{
    Field, FunctionArg, FunctionArgValue, JoinOwner, JoinValue, Param, RemoteJoinPart, ValueExpr,
};
use crate::graphql::types::FieldDef;
use crate::metadata::types::QualifiedTable;
use crate::resolve::remote_join::ResolvedRemoteJoin;
use async_graphql_parser::types::Field as AstField;
use async_graphql_value::ConstValue;

impl Planner<'_> {
    pub(super) fn remote_join(
        &mut self,
        table: &QualifiedTable,
        join: &ResolvedRemoteJoin,
        field: &AstField,
        def: &FieldDef,
        path: &str,
        depth: usize,
    ) -> Result<Field> {
        if self.subscription {
            return Err(PlanError::at("$", Problem::RemoteJoinInSubscription));
        }
        let mut client_arguments = Vec::new();
        for (name, value) in &field.arguments {
            let mut uses_variables = false;
            let constant = value.node.clone().into_const_with(|variable| {
                uses_variables = true;
                Ok::<_, std::convert::Infallible>(
                    self.variables
                        .get(variable.as_str())
                        .and_then(|v| ConstValue::from_json(v.clone()).ok())
                        .unwrap_or(ConstValue::Null),
                )
            });
            let Ok(constant) = constant;
            // The value is part of the plan: it may only be reused with equal variables.
            self.shape_dependent |= uses_variables;
            client_arguments.push((name.node.to_string(), constant));
        }
        let base = def.ty.base().to_owned();
        let mut draft = Draft::default();
        let selection = if self.types.is_leaf(&base) {
            Self::no_selection(field, path)?;
            String::new()
        } else {
            if field.selection_set.node.items.is_empty() {
                return Err(PlanError::at(path, Problem::MissingSelection(base)));
            }
            self.remote_object(
                &field.selection_set.node,
                &base,
                path,
                &mut draft,
                depth + 1,
            )?;
            format!("{{ {}}}", draft.body)
        };
        let occurrence = self.joins.len();
        self.take_table_joins(&mut draft, JoinOwner::Join(occurrence), &join.remote)?;
        self.joins.push(RemoteJoinPart {
            occurrence,
            remote: join.remote.clone(),
            chain: join
                .target
                .remote_field
                .chain()
                .into_iter()
                .map(|level| (level.name.clone(), level.arguments.clone()))
                .collect(),
            client_arguments,
            selection,
            declarations: self.declarations(&draft.variables)?,
            variables: draft.variables.into_iter().collect(),
        });
        let values = join
            .lhs
            .iter()
            .map(|(name, _)| (name.clone(), self.join_value(table, name)))
            .collect();
        Ok(Field::RemoteJoin { occurrence, values })
    }

    /// Where the join field `name` of `table` is read from: its column, or else its computed
    /// field (called with the row, and the session where the function takes it).
    fn join_value(&self, table: &QualifiedTable, name: &str) -> JoinValue {
        let resolved = self.resolved.tables.get(table);
        let computed = resolved
            .filter(|t| t.db.column(name).is_none())
            .and_then(|t| t.computed_fields.get(name));
        let Some(computed) = computed else {
            return JoinValue::Column(name.to_owned());
        };
        let named = computed.arguments.iter().all(|a| !a.name.is_empty());
        let args = computed
            .arguments
            .iter()
            .enumerate()
            .filter_map(|(i, arg)| {
                let value = if i == computed.table_argument {
                    FunctionArgValue::Row
                } else if Some(i) == computed.session_argument {
                    FunctionArgValue::Value(ValueExpr {
                        param: Param::SessionObject,
                        cast: arg.cast.clone(),
                    })
                } else {
                    return None;
                };
                Some(FunctionArg {
                    name: if named {
                        arg.name.clone()
                    } else {
                        String::new()
                    },
                    value,
                })
            })
            .collect();
        JoinValue::Computed {
            function: computed.function.clone(),
            args,
        }
    }
}
