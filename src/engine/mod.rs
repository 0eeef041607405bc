//! One GraphQL request, end to end: role schema → cached or new compiled plan (plan, then SQL or
//! a mutation program) → execute → response bytes. The JSON Postgres builds is spliced into
//! `{"data": …}` as it is; only an operation that mixes introspection and data fields merges
//! parsed values. Errors are [`GraphqlError`]s; `http/error.rs` turns them into bodies.

mod actions;

use crate::execute::{self, Binding, Connection, ExecuteError};
use crate::graphql::introspection;
use crate::graphql::ir::{QueryPlan, RootField};
use crate::graphql::plan::{self, Limits, PlanError};
use crate::graphql::schemas::{CachedPlan, Introspected, RoleSchema};
use crate::remote::forward;
use crate::session::Session;
use crate::sql::program::{FieldProgram, MutationProgram};
use crate::state::{AppState, Served};
use crate::stats::Counters;
use crate::translate;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tracing::Instrument;

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

/// Why a GraphQL request failed. Each variant's wire code and path are decided in
/// `http/error.rs`.
#[derive(Debug, thiserror::Error)]
pub enum GraphqlError {
    /// The document does not parse or does not fit the role's schema.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A statement failed. `field` is the mutation root field (response key) it belongs to,
    /// when the error is about that field rather than the whole request.
    #[error("{error}")]
    Execute {
        /// The failure.
        error: Box<ExecuteError>,
        /// The root field, if the error is located there.
        field: Option<String>,
    },
    /// Authentication failed.
    #[error(transparent)]
    Auth(#[from] crate::auth::AuthError),
    /// The body is not JSON.
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    /// The body is JSON but not a GraphQL request.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The `variables` query parameter of a GET is not JSON.
    #[error("invalid variables: {0}")]
    InvalidVariables(String),
    /// A batch has more requests than allowed.
    #[error("batch of {size} requests is larger than the limit of {limit}")]
    BatchTooLarge {
        /// Requests in the batch.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A mutation or subscription sent with GET.
    #[error("mutations and subscriptions are not allowed over GET")]
    NotAllowedOverGet,
    /// The allow-list is enforced and the document is not on it.
    #[error("query is not allowed")]
    NotAllowListed,
    /// The introspection fields could not be answered.
    #[error(transparent)]
    Introspection(#[from] crate::graphql::introspection::IntrospectionError),
    /// Postgres's data could not be merged with introspection answers.
    #[error("{0}")]
    Merge(String),
    /// A remembered (compressed) introspection answer could not be read back.
    #[error("a remembered introspection answer could not be read: {0}")]
    Remembered(#[source] std::io::Error),
    /// `explain` was asked for a mutation.
    #[error("only queries can be explained")]
    ExplainMutation,
    /// A subscription sent over HTTP.
    #[error("subscriptions are not supported over HTTP, use websockets instead")]
    SubscriptionOverHttp,
    /// A remote schema's part of the operation failed.
    #[error(transparent)]
    Remote(#[from] crate::remote::forward::ForwardError),
    /// An action's handler failed or answered something unusable (boxed: it carries the
    /// whole exchange).
    #[error(transparent)]
    Action(Box<crate::actions::ActionError>),
}

impl From<crate::actions::ActionError> for GraphqlError {
    fn from(error: crate::actions::ActionError) -> Self {
        GraphqlError::Action(Box::new(error))
    }
}

impl From<ExecuteError> for GraphqlError {
    fn from(error: ExecuteError) -> Self {
        GraphqlError::Execute {
            error: Box::new(error),
            field: None,
        }
    }
}

/// A response body as the engine has it.
#[derive(Debug)]
pub enum Body {
    /// JSON.
    Json(Bytes),
    /// JSON, gzip-compressed: a large introspection answer, remembered so
    /// ([`Introspected::Gzip`]).
    Gzip(Bytes),
}

impl Body {
    /// The JSON, decompressed when it is held compressed.
    pub fn json(self) -> Result<Bytes, GraphqlError> {
        match self {
            Body::Json(json) => Ok(json),
            Body::Gzip(gzip) => {
                crate::graphql::schemas::gunzip(&gzip).map_err(GraphqlError::Remembered)
            }
        }
    }
}

/// The answer to one request, and the kind of operation it was (`query`, `mutation`,
/// `subscription`, or `unknown` when the document did not get that far), for the metrics.
#[derive(Debug)]
pub struct Answer {
    /// The operation's kind.
    pub kind: &'static str,
    /// The response body, or why there is none.
    pub body: Result<Body, GraphqlError>,
    /// `Set-Cookie` headers of remote schemas' responses, for the HTTP response.
    pub cookies: Vec<http::HeaderValue>,
}

/// Who sent a request: the session, and the headers remote schemas may be forwarded
/// (`forward_client_headers`).
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// The resolved session.
    pub session: &'a Session,
    /// The client's headers (over WebSocket: upgrade and `connection_init` headers).
    pub headers: &'a http::HeaderMap,
}

/// Runs one request for a caller (HTTP: queries and mutations; a subscription needs the
/// WebSocket transport).
pub async fn run(state: &AppState, caller: Caller<'_>, request: GraphqlRequest) -> Answer {
    let session = caller.session;
    let compiled = match compiled(state, session, request) {
        Ok(c) => c,
        Err(err) => {
            return Answer {
                kind: "unknown",
                body: Err(err),
                cookies: Vec::new(),
            }
        }
    };
    let kind = match compiled.plan.prepared.operation_type() {
        Some(async_graphql_parser::types::OperationType::Query) => "query",
        Some(async_graphql_parser::types::OperationType::Mutation) => "mutation",
        Some(async_graphql_parser::types::OperationType::Subscription) => "subscription",
        None => "unknown",
    };
    let mut cookies = Vec::new();
    let body = if compiled.plan.planned.subscription {
        Err(GraphqlError::SubscriptionOverHttp)
    } else {
        execute_compiled(state, caller, &compiled, &mut cookies).await
    };
    Answer {
        kind,
        body,
        cookies,
    }
}

/// What an operation sent over a WebSocket turns into.
#[derive(Debug)]
pub enum SocketOperation {
    /// A query or mutation, already run: its one response body.
    Once(Bytes),
    /// A subscription: the live query to join.
    Live(LiveOperation),
}

/// One subscriber's compiled live query.
#[derive(Debug)]
pub struct LiveOperation {
    /// Subscribers with equal keys share one statement per poll.
    pub group: GroupKey,
    /// The compiled operation (its plan builds the group's multiplexed statement).
    pub plan: Arc<CachedPlan>,
    /// This subscriber's bound parameter values, in the statement's parameter order.
    pub values: Vec<Option<String>>,
    /// The snapshot it was compiled against (a newer one recompiles it).
    pub served: Arc<Served>,
    /// An operation with no database field (`subscription { __typename }`): its constant
    /// response, sent once.
    pub constant: Option<Bytes>,
}

/// What makes live queries shareable: the same statement for the same role, and, when the
/// statement can observe the session setting (views, functions, row security), the same
/// session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupKey {
    /// Role.
    pub role: String,
    /// Backend-only variant of the role.
    pub backend_only: bool,
    /// The statement's text (as one subscriber would run it alone).
    pub sql: String,
    /// The session, when the statement may observe it.
    pub session: Option<Vec<(String, String)>>,
}

/// Runs (or, for a subscription, compiles) an operation sent over a WebSocket. Remote
/// schemas' cookies have nowhere to go there and are dropped.
pub async fn run_socket(
    state: &AppState,
    caller: Caller<'_>,
    request: GraphqlRequest,
) -> Result<SocketOperation, GraphqlError> {
    let compiled = compiled(state, caller.session, request)?;
    if !compiled.plan.planned.subscription {
        return execute_compiled(state, caller, &compiled, &mut Vec::new())
            .await?
            .json()
            .map(SocketOperation::Once);
    }
    live(compiled, caller.session).map(SocketOperation::Live)
}

/// Compiles a subscription again (after a metadata change) for the same subscriber.
pub fn live_operation(
    state: &AppState,
    session: &Session,
    request: GraphqlRequest,
) -> Result<LiveOperation, GraphqlError> {
    live(compiled(state, session, request)?, session)
}

/// A compiled subscription as one subscriber's live query: its group and bound values.
fn live(compiled: Compiled, session: &Session) -> Result<LiveOperation, GraphqlError> {
    let Some(sql) = &compiled.plan.sql else {
        let data = constants_only(&compiled.plan.planned.data);
        let body = data_body(data.as_deref().unwrap_or(b"{}"));
        return Ok(LiveOperation {
            group: GroupKey {
                role: session.role.clone(),
                backend_only: session.backend_only,
                sql: String::new(),
                session: None,
            },
            plan: compiled.plan.clone(),
            values: Vec::new(),
            served: compiled.served,
            constant: Some(body),
        });
    };
    let binding = Binding {
        variables: &compiled.variables,
        session: &session.variables,
        actions: None,
    };
    let values = execute::bind(&sql.params, &binding, None)?;
    let observes_session = observes_session(
        &compiled.plan.planned.data,
        &compiled.served.schema.resolved,
    );
    Ok(LiveOperation {
        group: GroupKey {
            role: session.role.clone(),
            backend_only: session.backend_only,
            sql: sql.sql.clone(),
            session: observes_session.then(|| {
                session
                    .variables
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            }),
        },
        plan: compiled.plan.clone(),
        values,
        served: compiled.served,
        constant: None,
    })
}

/// Whether running `plan` can observe the `basalt.user` setting: it calls a function
/// (computed fields, function sources) or reads a relation that is not a plain table (a view)
/// or has row-level security (`graphql-api.md` §7).
fn observes_session(plan: &QueryPlan, resolved: &crate::resolve::Resolved) -> bool {
    let footprint = plan.footprint();
    footprint.calls_functions
        || footprint.relations.iter().any(|t| {
            resolved
                .tables
                .get(t)
                .is_none_or(|t| t.db.may_observe_session())
        })
}

/// An operation compiled for a session against the served snapshot.
struct Compiled {
    served: Arc<Served>,
    role: Arc<RoleSchema>,
    plan: Arc<CachedPlan>,
    variables: Map<String, Value>,
    /// The document, as action handlers receive it (`request_query`).
    document: String,
}

/// The role's schema, the allow-list, then the cached plan or a new one.
fn compiled(
    state: &AppState,
    session: &Session,
    request: GraphqlRequest,
) -> Result<Compiled, GraphqlError> {
    let served = state.snapshot();
    let role = served.role(&session.role, session.backend_only, &state.counters);
    if state.config.enable_allowlist && !session.is_admin() {
        let allowed = crate::graphql::allowlist::normalize(&request.query)
            .is_some_and(|n| served.graphql.allowlist.contains(&n));
        if !allowed {
            return Err(GraphqlError::NotAllowListed);
        }
    }
    let variables = request.variables.unwrap_or_default();
    let variables_key = || Value::Object(variables.clone()).to_string();
    let operation = request.operation_name.as_deref();
    let compiled = match role.cached(&request.query, operation, variables_key) {
        Some(plan) => {
            Counters::bump(&state.counters.plan_cache_hits);
            plan::check_variables(
                &role.model,
                &role.types,
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
            role.remember(&request.query, operation, variables_key, plan.clone());
            plan
        }
    };
    Ok(Compiled {
        served,
        role,
        plan: compiled,
        variables,
        document: request.query,
    })
}

/// Runs a compiled query or mutation: the database part and each remote schema's part at
/// the same time, merged in the order of the document.
async fn execute_compiled(
    state: &AppState,
    caller: Caller<'_>,
    compiled: &Compiled,
    cookies: &mut Vec<http::HeaderValue>,
) -> Result<Body, GraphqlError> {
    let Compiled {
        role,
        plan: compiled,
        variables,
        served,
        document,
    } = compiled;
    let mut calls = actions::prepare(served, caller, &compiled.planned, variables, document)?;
    let binding = Binding {
        variables,
        session: &caller.session.variables,
        actions: None,
    };
    let remotes = remote_calls(served, caller, &compiled.planned, variables)?;
    if let Some(program) = &compiled.program {
        let span = tracing::debug_span!("sql", "db.system" = "postgresql", kind = "mutation");
        let run = Mutation {
            state,
            served,
            caller,
            program,
            shared: compiled.shared.as_ref(),
            binding,
            planned: &compiled.planned,
        };
        return run
            .run(&mut calls, remotes, cookies)
            .instrument(span)
            .await
            .map(Body::Json);
    }
    let database = async {
        actions::call_queries(served, caller, &compiled.planned, &mut calls).await?;
        let binding = Binding {
            actions: (!calls.is_empty()).then_some(&calls),
            ..binding
        };
        match (&compiled.sql, &compiled.shared) {
            (Some(sql), Some(shared)) if state.sharing.in_flight > 0 => {
                let values = execute::bind(&sql.params, &binding, None)?;
                let span = tracing::debug_span!("sql", "db.system" = "postgresql", kind = "query");
                Ok::<_, GraphqlError>(Some(
                    shared
                        .run(&state.sharing, sql, values)
                        .instrument(span)
                        .await?,
                ))
            }
            (Some(sql), _) => {
                let client = state.pool.get().await.map_err(ExecuteError::from)?;
                let conn = Connection::of(&client, &state.counters);
                let span = tracing::debug_span!("sql", "db.system" = "postgresql", kind = "query");
                Ok::<_, GraphqlError>(Some(
                    execute::run(conn, sql, &binding).instrument(span).await?,
                ))
            }
            (None, _) => Ok(constants_only(&compiled.planned.data)),
        }
    };
    let (data, answered) = futures_util::future::join(database, forward_all(remotes)).await;
    let data = data?;
    let answered = answered?;
    if compiled.planned.introspection.is_none() && answered.is_empty() {
        return Ok(Body::Json(data_body(data.as_deref().unwrap_or(b"{}"))));
    }
    let introspected = match &compiled.planned.introspection {
        Some((_, document)) => Some(introspect(state, role, document).await?),
        None => None,
    };
    // Only introspection fields (the usual client schema fetch): the answer is the data, its
    // keys already in document order.
    let only_introspection = compiled.planned.data.fields.is_empty() && answered.is_empty();
    if let (true, Some(answer)) = (only_introspection, &introspected) {
        return Ok(match answer {
            Introspected::Json(answer) => Body::Json(data_body(answer)),
            Introspected::Gzip(body) => Body::Gzip(body.clone()),
        });
    }
    let mut parts: Map<String, Value> = match &data {
        Some(bytes) => {
            serde_json::from_slice(bytes).map_err(|e| GraphqlError::Merge(e.to_string()))?
        }
        None => Map::new(),
    };
    if let (Some((keys, _)), Some(answer)) = (&compiled.planned.introspection, &introspected) {
        let answer = answer.answer().map_err(GraphqlError::Remembered)?;
        let answers: Map<String, Value> =
            serde_json::from_slice(&answer).map_err(|e| GraphqlError::Merge(e.to_string()))?;
        for key in keys {
            if let Some(v) = answers.get(key) {
                parts.insert(key.clone(), v.clone());
            }
        }
    }
    merge_remote(&mut parts, answered, &compiled.planned, cookies);
    Ok(Body::Json(in_document_order(parts, &compiled.planned.keys)))
}

/// The answer to an introspection document: remembered per role schema (one metadata
/// version), so a client fetching the schema again costs a lookup, not a run.
async fn introspect(
    state: &AppState,
    role: &RoleSchema,
    document: &str,
) -> Result<Introspected, GraphqlError> {
    if let Some(answer) = role.introspected(document) {
        return Ok(answer);
    }
    Counters::bump(&state.counters.introspections_run);
    let answer = Introspected::new(introspection::answer(&role.types, document)?)
        .map_err(GraphqlError::Remembered)?;
    role.remember_introspection(document, answer.clone());
    Ok(answer)
}

/// `{"data": …}` with the parts of a response (database, introspection, remote) under their
/// keys, in the order of the document.
fn in_document_order(mut parts: Map<String, Value>, keys: &[String]) -> Bytes {
    let mut ordered = Map::new();
    for key in keys {
        if let Some(v) = parts.remove(key) {
            ordered.insert(key.clone(), v);
        }
    }
    Bytes::from(json!({"data": ordered}).to_string())
}

/// The calls to remote schemas an operation makes, ready to send.
fn remote_calls<'a>(
    served: &'a Served,
    caller: Caller<'a>,
    planned: &'a plan::Planned,
    variables: &'a Map<String, Value>,
) -> Result<Vec<forward::Call<'a>>, GraphqlError> {
    planned
        .remote
        .iter()
        .map(|part| {
            let remote = served
                .schema
                .resolved
                .remote_schemas
                .iter()
                .find(|r| r.name() == part.remote)
                .ok_or_else(|| {
                    GraphqlError::Merge(format!("remote schema \"{}\" is gone", part.remote))
                })?;
            Ok(forward::Call {
                remote,
                document: &part.document,
                variables: part
                    .variables
                    .iter()
                    .filter_map(|name| variables.get(name).map(|v| (name.clone(), v.clone())))
                    .collect(),
                operation_name: part.operation_name.as_deref(),
                read_only: part.read_only,
                session: caller.session,
                client_headers: caller.headers,
            })
        })
        .collect()
}

/// Sends every remote call at once; the first failure (in document order) fails the
/// operation.
async fn forward_all(
    calls: Vec<forward::Call<'_>>,
) -> Result<Vec<forward::Answered>, GraphqlError> {
    if calls.is_empty() {
        return Ok(Vec::new());
    }
    let span = tracing::debug_span!("remote", calls = calls.len());
    let answers = futures_util::future::join_all(calls.into_iter().map(forward::send))
        .instrument(span)
        .await;
    answers
        .into_iter()
        .map(|a| a.map_err(GraphqlError::from))
        .collect()
}

/// Remote answers into the response parts, under the client's keys.
fn merge_remote(
    parts: &mut Map<String, Value>,
    answered: Vec<forward::Answered>,
    planned: &plan::Planned,
    cookies: &mut Vec<http::HeaderValue>,
) {
    for (part, mut answer) in planned.remote.iter().zip(answered) {
        for key in &part.keys {
            parts.insert(key.clone(), answer.data.remove(key).unwrap_or(Value::Null));
        }
        cookies.append(&mut answer.cookies);
    }
}

/// `{"data": <data>}` with Postgres's bytes spliced in as they are.
pub fn data_body(data: &[u8]) -> Bytes {
    let mut body = Vec::with_capacity(data.len() + 9);
    body.extend_from_slice(b"{\"data\":");
    body.extend_from_slice(data);
    body.push(b'}');
    Bytes::from(body)
}

/// Parses, plans and translates an operation (a plan-cache miss).
fn compile(
    state: &AppState,
    role: &RoleSchema,
    resolved: &crate::resolve::Resolved,
    query: &str,
    operation: Option<&str>,
    variables: &Map<String, Value>,
) -> Result<Arc<CachedPlan>, GraphqlError> {
    Counters::bump(&state.counters.documents_parsed);
    let prepared =
        tracing::debug_span!("graphql.parse").in_scope(|| plan::prepare(query, operation))?;
    let _span = tracing::debug_span!("graphql.plan").entered();
    let limits = Limits {
        max_depth: state.config.max_query_depth,
        max_root_fields: state.config.max_root_fields,
    };
    let planned = plan::plan(
        &role.model,
        &role.types,
        resolved,
        &prepared,
        variables,
        limits,
    )?;
    let reads = planned
        .data
        .fields
        .iter()
        .any(|(_, f)| !matches!(f, RootField::Constant(_)));
    // A read that nothing can observe the session in does not set it: one call less for
    // Postgres on every request. Live queries keep it: their multiplexed statement sets each
    // cohort's session, and their parameters are bound in that statement's order.
    let sets_session = planned.subscription || observes_session(&planned.data, resolved);
    let sql = reads.then(|| translate::query_for(&planned.data, sets_session));
    // Concurrent requests may share a statement only where none can observe another's
    // session, and where no action handler's output is bound.
    let shareable = reads
        && !sets_session
        && planned.data.fields.iter().all(|(_, f)| {
            matches!(
                f,
                RootField::Select(_) | RootField::Aggregate(_) | RootField::Constant(_)
            )
        });
    let program = planned.mutation.as_ref().map(translate::mutation);
    let shared = match (&planned.mutation, &program) {
        (Some(mutation), Some(program)) => shared_writes(mutation, program),
        _ => shareable.then(|| {
            Arc::new(execute::SharedStatement::new(translate::shared_query(
                &planned.data,
            )))
        }),
    };
    Counters::bump(&state.counters.plans_compiled);
    Ok(Arc::new(CachedPlan {
        prepared,
        planned,
        sql,
        program,
        shared,
    }))
}

/// The shareable form of a mutation whose one statement is an insert that concurrent
/// requests of one session can make together (see [`translate::shared_insert`]).
fn shared_writes(
    mutation: &crate::graphql::ir::MutationPlan,
    program: &MutationProgram,
) -> Option<Arc<execute::SharedStatement>> {
    let single = program
        .single
        .as_ref()
        .filter(|_| translate::shares_inserts(mutation))?;
    let mutation = mutation.clone();
    let build: execute::BuildCopies = Box::new(move |n| translate::shared_insert(&mutation, n));
    Some(Arc::new(execute::SharedStatement::writes(
        &single.params,
        build,
    )))
}

/// The `data` of an operation with no database reads (`__typename`, placeholders).
fn constants_only(plan: &QueryPlan) -> Option<Bytes> {
    let mut object = Map::new();
    for (key, field) in &plan.fields {
        if let RootField::Constant(v) = field {
            object.insert(key.clone(), v.clone());
        }
    }
    (!object.is_empty()).then(|| Bytes::from(Value::Object(object).to_string()))
}

/// A mutation to run, and what it runs with.
struct Mutation<'a> {
    state: &'a AppState,
    served: &'a Served,
    caller: Caller<'a>,
    program: &'a MutationProgram,
    /// The shareable form of its one statement, if it has one.
    shared: Option<&'a Arc<execute::SharedStatement>>,
    binding: Binding<'a>,
    planned: &'a plan::Planned,
}

impl Mutation<'_> {
    /// Runs the session setting, then every database root field's program in order, in one
    /// transaction (a synchronous action's handler is called at its field's turn, its output
    /// shaped in the same transaction); then the remote schemas' fields, each remote once.
    /// Any error rolls the database part back (a handler's or a remote's own writes cannot
    /// be), and no partial data is answered.
    async fn run(
        self,
        calls: &mut actions::Calls,
        remotes: Vec<forward::Call<'_>>,
        cookies: &mut Vec<http::HeaderValue>,
    ) -> Result<Bytes, GraphqlError> {
        let Mutation {
            state,
            served,
            caller,
            program,
            shared,
            binding,
            planned,
        } = self;
        let trace_context = crate::telemetry::current_trace_context();
        if let (Some(single), [(key, _)], true, None) = (
            &program.single,
            program.fields.as_slice(),
            remotes.is_empty(),
            &trace_context,
        ) {
            return one_statement(state, single, shared, key, &binding).await;
        }
        let mut written: Map<String, Value> = Map::new();
        let mut body = Vec::from(&b"{\"data\":{"[..]);
        let mut client = None;
        if !program.fields.is_empty() {
            client = Some(state.pool.get().await.map_err(ExecuteError::from)?);
        }
        let tx = match client.as_mut() {
            Some(client) => {
                Counters::bump(&state.counters.mutation_transactions);
                Some(client.transaction().await.map_err(ExecuteError::from)?)
            }
            None => None,
        };
        if let Some(tx) = &tx {
            let conn = Connection::of_transaction(tx, &state.counters);
            execute::statement(conn, &program.session, &binding).await?;
            if let Some(context) = &trace_context {
                execute::set_trace_context(conn, context).await?;
            }
            for (i, (key, field)) in program.fields.iter().enumerate() {
                if i > 0 {
                    body.push(b',');
                }
                json_string(&mut body, key);
                body.push(b':');
                let write = match field {
                    FieldProgram::Constant(v) => {
                        body.extend_from_slice(v.to_string().as_bytes());
                        continue;
                    }
                    FieldProgram::Write(write) => write,
                    FieldProgram::Action(answer) => {
                        let action = action_of(planned, key)?;
                        actions::call_one(served, caller, key, action, calls).await?;
                        answer
                    }
                };
                let binding = Binding {
                    actions: (!calls.is_empty()).then_some(&*calls),
                    ..binding
                };
                let bytes = execute::run_program(conn, write, &binding)
                    .await
                    .map_err(|error| GraphqlError::Execute {
                        field: (!error.is_request_level()).then(|| key.clone()),
                        error: Box::new(error),
                    })?;
                body.extend_from_slice(&bytes);
            }
        }
        body.extend_from_slice(b"}}");
        let answered = forward_all(remotes).await?;
        if let Some(tx) = tx {
            tx.commit().await.map_err(ExecuteError::from)?;
        }
        if answered.is_empty() {
            return Ok(Bytes::from(body));
        }
        // Remote fields mixed in: merge by key, in the order of the document.
        if !program.fields.is_empty() {
            let database: Value =
                serde_json::from_slice(&body).map_err(|e| GraphqlError::Merge(e.to_string()))?;
            if let Some(Value::Object(data)) = database.get("data") {
                written.extend(data.clone());
            }
        }
        merge_remote(&mut written, answered, planned, cookies);
        Ok(in_document_order(written, &planned.keys))
    }
}

/// Runs a mutation compiled to one statement (see [`MutationProgram::single`]) outside an
/// explicit transaction: its session, write, checks and answer in one round trip.
async fn one_statement(
    state: &AppState,
    single: &crate::sql::SqlText,
    shared: Option<&Arc<execute::SharedStatement>>,
    key: &str,
    binding: &Binding<'_>,
) -> Result<Bytes, GraphqlError> {
    let answer = async {
        match shared {
            Some(shared) if state.sharing.writes_in_flight > 0 => {
                let values = execute::bind(&single.params, binding, None)?;
                shared.run(&state.sharing, single, values).await
            }
            _ => {
                let client = state.pool.get().await?;
                let conn = Connection::of(&client, &state.counters);
                execute::run(conn, single, binding).await
            }
        }
    }
    .await
    .map_err(|error| GraphqlError::Execute {
        field: (!error.is_request_level()).then(|| key.to_owned()),
        error: Box::new(error),
    })?;
    let mut body = Vec::with_capacity(answer.len() + key.len() + 16);
    body.extend_from_slice(b"{\"data\":{");
    json_string(&mut body, key);
    body.push(b':');
    body.extend_from_slice(&answer);
    body.extend_from_slice(b"}}");
    Ok(Bytes::from(body))
}

/// Appends `text` as a JSON string.
fn json_string(out: &mut Vec<u8>, text: &str) {
    // Writing into a vector cannot fail, and a `str` always serializes.
    let _ = serde_json::to_writer(out, text);
}

/// The action a synchronous mutation action field at `key` calls.
fn action_of<'a>(planned: &'a plan::Planned, key: &str) -> Result<&'a str, GraphqlError> {
    planned
        .mutation
        .iter()
        .flat_map(|m| m.fields.iter())
        .find_map(|(k, f)| match f {
            crate::graphql::ir::MutationField::Action(a) if k == key => {
                Some(a.call.action.as_str())
            }
            _ => None,
        })
        .ok_or_else(|| GraphqlError::Merge(format!("no action call at \"{key}\"")))
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
    let mut session: std::collections::BTreeMap<String, String> = request
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
    let role = session
        .get("x-svc-role")
        .cloned()
        .unwrap_or_else(|| "admin".to_owned());
    let served = state.snapshot();
    let schema = served.role(&role, false, &state.counters);
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
        return Err(GraphqlError::ExplainMutation);
    }
    session.insert("x-svc-role".to_owned(), role);
    let binding = Binding {
        variables: &variables,
        session: &session,
        actions: None,
    };
    let client = state.pool.get().await.map_err(ExecuteError::from)?;
    let mut out = Vec::new();
    for (key, field) in &compiled.planned.data.fields {
        // Constants have no SQL; an action's statement needs its handler's answer first.
        if matches!(field, RootField::Constant(_) | RootField::Action(_)) {
            continue;
        }
        let single = QueryPlan {
            fields: vec![(key.clone(), field.clone())],
        };
        let sql = translate::query_for(&single, observes_session(&single, &served.schema.resolved));
        let params = execute::bind(&sql.params, &binding, None)?;
        let plan = execute::explain(&client, &sql, &params).await?;
        out.push(json!({"field": key, "sql": sql.sql, "params": params, "plan": plan}));
    }
    Ok(Value::Array(out))
}
