//! One GraphQL request, end to end: role schema → cached or new plan → SQL → execute →
//! response bytes. The JSON Postgres builds is spliced into `{"data": …}` as it is; only an
//! operation that mixes introspection and data fields merges parsed values.

use crate::execute;
use crate::graphql::introspection;
use crate::graphql::plan::{self, Limits, PlanError};
use crate::graphql::schemas::{CachedPlan, RoleSchema};
use crate::session::Session;
use crate::state::AppState;
use crate::stats::Counters;
use crate::translate;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// A GraphQL request body.
#[derive(Debug, Clone, Deserialize)]
pub struct GraphqlRequest {
    /// Document text.
    pub query: String,
    /// Variable values.
    #[serde(default)]
    pub variables: Option<Map<String, Value>>,
    /// Operation to run.
    #[serde(default, rename = "operationName")]
    pub operation_name: Option<String>,
}

/// A GraphQL error for the `errors` array.
#[derive(Debug, Clone)]
pub struct GraphqlError {
    /// Message.
    pub message: String,
    /// JSON path into the request.
    pub path: String,
    /// Code.
    pub code: &'static str,
    /// Admin/dev-mode detail (boxed to keep results small).
    pub internal: Option<Box<Value>>,
}

impl From<PlanError> for GraphqlError {
    fn from(e: PlanError) -> Self {
        GraphqlError {
            message: e.message,
            path: e.path,
            code: e.code,
            internal: None,
        }
    }
}

impl From<execute::ExecuteError> for GraphqlError {
    fn from(e: execute::ExecuteError) -> Self {
        GraphqlError {
            message: e.message,
            path: "$".into(),
            code: e.code,
            internal: e.internal.map(Box::new),
        }
    }
}

impl GraphqlError {
    /// An error at the request level.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        GraphqlError {
            message: message.into(),
            path: "$".into(),
            code,
            internal: None,
        }
    }

    /// `{"errors":[…]}` bytes; `internal` only when `expose` (admin or dev mode).
    pub fn body(&self, expose: bool) -> Bytes {
        let mut extensions = json!({"path": self.path, "code": self.code});
        if let (true, Some(internal)) = (expose, &self.internal) {
            extensions["internal"] = (**internal).clone();
        }
        Bytes::from(
            json!({"errors": [{"message": self.message, "extensions": extensions}]}).to_string(),
        )
    }
}

/// Runs one request for a session; always produces a response body.
pub async fn run(state: &AppState, session: &Session, request: GraphqlRequest) -> Bytes {
    let expose = session.is_admin() || state.config.dev_mode;
    match run_inner(state, session, request).await {
        Ok(body) => body,
        Err(err) => err.body(expose),
    }
}

async fn run_inner(
    state: &AppState,
    session: &Session,
    request: GraphqlRequest,
) -> Result<Bytes, GraphqlError> {
    let served = state.snapshot();
    let role = served
        .graphql
        .role(&session.role, session.backend_only)
        .ok_or_else(|| GraphqlError::new("unexpected", "schema not ready"))?;
    if state.config.enable_allowlist && !session.is_admin() {
        let allowed = crate::graphql::allowlist::normalize(&request.query)
            .is_some_and(|n| served.graphql.allowlist.contains(&n));
        if !allowed {
            let mut err = GraphqlError::new("validation-failed", "query is not allowed");
            err.internal = Some(Box::new(
                json!({"message": "query is not in any of the allowlists"}),
            ));
            return Err(err);
        }
    }
    let variables = request.variables.unwrap_or_default();
    let variables_key = Value::Object(variables.clone()).to_string();
    let operation = request.operation_name.as_deref();
    let cached = match role.cached(&request.query, operation, &variables_key) {
        Some(plan) => {
            Counters::bump(&state.counters.plan_cache_hits);
            plan::check_variables(
                &role.model,
                &served.schema.resolved,
                &plan.prepared,
                &variables,
            )?;
            plan
        }
        None => {
            let plan = compile(
                state,
                &role,
                &served.schema.resolved,
                &request.query,
                operation,
                &variables,
            )?;
            role.remember(&request.query, operation, &variables_key, plan.clone());
            plan
        }
    };
    if let Some(mutation) = &cached.planned.mutation {
        return run_mutation(state, session, mutation, &variables).await;
    }
    let data = match &cached.sql {
        Some(sql) => {
            let client = state
                .pool
                .get()
                .await
                .map_err(execute::ExecuteError::from)?;
            Some(
                execute::run(
                    &client,
                    sql,
                    &variables,
                    &session.variables,
                    &state.counters,
                )
                .await?,
            )
        }
        None => constants_only(&cached.planned.data),
    };
    let Some((keys, document)) = &cached.planned.introspection else {
        let mut body = Vec::with_capacity(data.as_ref().map(|d| d.len()).unwrap_or(2) + 9);
        body.extend_from_slice(b"{\"data\":");
        body.extend_from_slice(data.as_deref().unwrap_or(b"{}"));
        body.push(b'}');
        return Ok(Bytes::from(body));
    };
    let schema = role.introspection.as_ref().ok_or_else(|| {
        GraphqlError::new("unexpected", "introspection is unavailable for this role")
    })?;
    let answered = introspection::execute(schema, document)
        .await
        .map_err(|errors| GraphqlError::new("validation-failed", errors.join("; ")))?;
    let mut parts: Map<String, Value> = match &data {
        Some(bytes) => serde_json::from_slice(bytes)
            .map_err(|e| GraphqlError::new("unexpected", e.to_string()))?,
        None => Map::new(),
    };
    if let Value::Object(answers) = answered {
        for key in keys {
            if let Some(v) = answers.get(key) {
                parts.insert(key.clone(), v.clone());
            }
        }
    }
    let mut ordered = Map::new();
    for key in &cached.planned.keys {
        if let Some(v) = parts.remove(key) {
            ordered.insert(key.clone(), v);
        }
    }
    Ok(Bytes::from(json!({"data": ordered}).to_string()))
}

fn compile(
    state: &AppState,
    role: &RoleSchema,
    resolved: &crate::schema::Resolved,
    query: &str,
    operation: Option<&str>,
    variables: &Map<String, Value>,
) -> Result<Arc<CachedPlan>, GraphqlError> {
    let _span = tracing::debug_span!("plan").entered();
    Counters::bump(&state.counters.documents_parsed);
    let prepared = plan::prepare(query, operation)?;
    let limits = Limits {
        max_depth: state.config.max_query_depth,
        max_root_fields: state.config.max_root_fields,
    };
    let planned = plan::plan(&role.model, resolved, &prepared, variables, limits)?;
    let reads = planned
        .data
        .fields
        .iter()
        .any(|(_, f)| !matches!(f, crate::graphql::ir::RootField::Constant(_)));
    let sql = reads.then(|| translate::query(&planned.data));
    Counters::bump(&state.counters.plans_compiled);
    Ok(Arc::new(CachedPlan {
        prepared,
        planned,
        sql,
    }))
}

/// The `data` of an operation with no database reads (`__typename`, placeholders).
fn constants_only(plan: &crate::graphql::ir::QueryPlan) -> Option<Bytes> {
    let mut object = Map::new();
    for (key, field) in &plan.fields {
        if let crate::graphql::ir::RootField::Constant(v) = field {
            object.insert(key.clone(), v.clone());
        }
    }
    (!object.is_empty()).then(|| Bytes::from(Value::Object(object).to_string()))
}

/// Runs a mutation: every root field in order, one transaction, any error rolls back all.
async fn run_mutation(
    state: &AppState,
    session: &Session,
    plan: &crate::graphql::ir::MutationPlan,
    variables: &Map<String, Value>,
) -> Result<Bytes, GraphqlError> {
    let mut client = state
        .pool
        .get()
        .await
        .map_err(execute::ExecuteError::from)?;
    let tx = client
        .transaction()
        .await
        .map_err(execute::ExecuteError::from)?;
    let session_json = Value::Object(
        session
            .variables
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
    .to_string();
    tx.execute(
        "SELECT set_config('basalt.user', $1, true)",
        &[&session_json],
    )
    .await
    .map_err(execute::ExecuteError::from)?;
    let binding = execute::mutation::Binding {
        variables,
        session: &session.variables,
    };
    let mut body = Vec::from(&b"{\"data\":{"[..]);
    for (i, (key, field)) in plan.fields.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(Value::String(key.clone()).to_string().as_bytes());
        body.push(b':');
        match field {
            crate::graphql::ir::MutationField::Constant(v) => {
                body.extend_from_slice(v.to_string().as_bytes())
            }
            crate::graphql::ir::MutationField::Write { action, output } => {
                let bytes = execute::mutation::run(&tx, action, output, &binding)
                    .await
                    .map_err(|e| {
                        let located = e.located;
                        let mut err = GraphqlError::from(e);
                        if !located {
                            err.path = format!("$.selectionSet.{key}");
                        }
                        err
                    })?;
                body.extend_from_slice(&bytes);
            }
        }
    }
    body.extend_from_slice(b"}}");
    tx.commit().await.map_err(execute::ExecuteError::from)?;
    Ok(Bytes::from(body))
}

/// Body of `POST /v1/graphql/explain`.
#[derive(Debug, Clone, Deserialize)]
pub struct ExplainRequest {
    /// The GraphQL request to explain.
    pub query: GraphqlRequest,
    /// Session variables of the user to plan for (`x-svc-role` picks the role; admin when absent).
    #[serde(default)]
    pub user: Map<String, Value>,
}

/// For each data root field of a query: the SQL the request path runs for it (as that role),
/// its parameters as bound, and Postgres's `EXPLAIN` plan.
pub async fn explain(state: &AppState, request: ExplainRequest) -> Result<Value, GraphqlError> {
    let variables_of_user: std::collections::BTreeMap<String, String> = request
        .user
        .iter()
        .map(|(k, v)| {
            (
                k.to_ascii_lowercase(),
                v.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string()),
            )
        })
        .collect();
    let role = variables_of_user
        .get("x-svc-role")
        .cloned()
        .unwrap_or_else(|| "admin".to_owned());
    let served = state.snapshot();
    let schema = served
        .graphql
        .role(&role, false)
        .ok_or_else(|| GraphqlError::new("unexpected", "schema not ready"))?;
    let variables = request.query.variables.unwrap_or_default();
    let compiled = compile(
        state,
        &schema,
        &served.schema.resolved,
        &request.query.query,
        request.query.operation_name.as_deref(),
        &variables,
    )?;
    if compiled.planned.mutation.is_some() {
        return Err(GraphqlError::new(
            "validation-failed",
            "only queries can be explained",
        ));
    }
    let mut session = variables_of_user;
    session.insert("x-svc-role".to_owned(), role);
    let client = state
        .pool
        .get()
        .await
        .map_err(execute::ExecuteError::from)?;
    let mut out = Vec::new();
    for (key, field) in &compiled.planned.data.fields {
        if matches!(field, crate::graphql::ir::RootField::Constant(_)) {
            continue;
        }
        let single = crate::graphql::ir::QueryPlan {
            fields: vec![(key.clone(), field.clone())],
        };
        let sql = translate::query(&single);
        let params = execute::bind(&sql.params, &variables, &session)?;
        let plan = execute::explain(&client, &sql, &params).await?;
        out.push(json!({"field": key, "sql": sql.sql, "params": params, "plan": plan}));
    }
    Ok(Value::Array(out))
}
