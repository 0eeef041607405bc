//! `POST /v1/graphql/explain`: for each database root field of a query, the SQL the request
//! path runs for it as the given role, its parameters as bound, and Postgres's `EXPLAIN`. It
//! walks the same parse, validate and plan stages as a request, uncached.

use super::error::GraphqlError;
use super::request::GraphqlRequest;
use super::{parse, plan, validate, Engine};
use crate::execute::{self, Binding, ExecuteError};
use crate::graphql::ir::{QueryPlan, RootField};
use crate::session::Session;
use crate::translate;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// Body of `POST /v1/graphql/explain`.
#[derive(Debug, Clone, Deserialize)]
pub struct ExplainRequest {
    /// The GraphQL request to explain.
    pub query: GraphqlRequest,
    /// Session variables of the user to plan for (`x-svc-role` picks the role; admin when
    /// absent).
    #[serde(default)]
    pub user: Map<String, Value>,
}

impl Engine {
    /// Explains a query's database fields (see the module's notes).
    pub async fn explain(&self, request: ExplainRequest) -> Result<Value, GraphqlError> {
        let session = Session::from_variables(&request.user);
        let version = self.current();
        let role = version.role(&session.role, false, &self.counters);
        let variables = request.query.variables.clone().unwrap_or_default();
        let document = parse::parse(
            &self.counters,
            &request.query.query,
            request.query.operation_name.as_deref(),
        )?;
        let resolved = &version.catalog.resolution.resolved;
        let operation =
            validate::operation(&role, resolved, &document, &variables, self.settings.limits)?;
        if operation.mutation.is_some() {
            return Err(GraphqlError::ExplainMutation);
        }
        let binding = Binding {
            variables: &variables,
            session: &session.variables,
            provided: None,
        };
        let client = self.pool.get().await.map_err(ExecuteError::from)?;
        let mut out = Vec::new();
        for (key, field) in &operation.data.fields {
            // Constants have no SQL; an action's statement needs its handler's answer first.
            if matches!(field, RootField::Constant(_) | RootField::Action(_)) {
                continue;
            }
            let single = QueryPlan {
                fields: vec![(key.clone(), field.clone())],
                cells: operation.data.cells.clone(),
            };
            let sql = translate::query_for(&single, plan::observes_session(&single, resolved));
            let params = execute::bind(&sql.params, &binding, None)?;
            let plan = execute::explain(&client, &sql, &params).await?;
            out.push(json!({"field": key, "sql": sql.sql, "params": params, "plan": plan}));
        }
        Ok(Value::Array(out))
    }
}
