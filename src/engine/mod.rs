//! The GraphQL engine: one request walks five named stages, each its own module with its own
//! types.
//!
//! 1. [`parse`]: the text into a document, its operation chosen.
//! 2. [`validate`]: may this caller run it (transport, allow-list, the depth and node
//!    limits), and does it fit the role's schema (the planner checks as it lowers the
//!    operation to IR).
//! 3. [`plan`]: the IR compiled into SQL or a mutation program, kept per role and version
//!    ([`plan_cache`]): a request whose plan is kept skips stages 1 to 3.
//! 4. execute: a query's statement, action handlers, remote schemas and introspection
//!    ([`execute`]), or a mutation's transaction ([`mutation`]), within the role's time
//!    limit ([`deadline`]).
//! 5. [`respond`]: Postgres's bytes spliced into the body, other fields placed among them in
//!    document order.
//!
//! What is served for one metadata version is an [`ApiVersion`], swapped whole on every
//! rebuild ([`Engine::install`]). Subscriptions stop after stage 3: `crate::live` runs them.
//! Errors are [`GraphqlError`]s; `http/error.rs` turns them into bodies.

mod actions;
mod deadline;
mod error;
mod execute;
mod explain;
mod introspection;
mod join;
pub mod join_slots;
mod mutation;
mod parse;
mod plan;
mod plan_cache;
mod remote;
mod request;
mod respond;
mod table_join;
mod validate;
mod version;

pub use error::{GraphqlError, InternalError};
pub use explain::ExplainRequest;
pub use introspection::MAX_PLAIN_INTROSPECTION;
pub use plan::{observes_session, ExecutionPlan, Reads};
pub use request::{Caller, GraphqlRequest, Transport};
pub use respond::{data_body, data_of, Body};
pub use version::{ApiVersion, RoleApi};

use crate::catalog::CatalogVersion;
use crate::execute::Sharing;
use crate::graphql::plan::Limits;
use crate::limits;
use crate::session::Session;
use crate::stats::Counters;
use async_graphql_parser::types::OperationType;
use bytes::Bytes;
use deadpool_postgres::Pool;
use serde_json::{Map, Value};
use std::sync::{Arc, RwLock};

#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Bounds on documents (depth, root fields).
    pub limits: Limits,
    /// Whether non-admin roles may run only the allow-listed documents.
    pub enforce_allowlist: bool,
    /// What shapes each role's model.
    pub model: crate::graphql::model::ModelSettings,
}

/// The engine of one server: where it runs statements, what it serves now, and how.
pub struct Engine {
    pool: Pool,
    counters: Arc<Counters>,
    sharing: Sharing,
    settings: Settings,
    /// What is served, swapped whole by [`Engine::install`].
    current: RwLock<Arc<ApiVersion>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("version", &self.current().version())
            .finish()
    }
}

/// The answer to one request, and the kind of operation it was (`query`, `mutation`,
/// `subscription`, or `unknown` when the document did not get that far), for the metrics.
#[derive(Debug)]
pub struct Answer {
    pub kind: &'static str,
    /// The response body, or why there is none.
    pub body: Result<Body, GraphqlError>,
    /// `Set-Cookie` headers of remote schemas' responses, for the HTTP response.
    pub cookies: Vec<http::HeaderValue>,
}

/// One request ready to execute: the version and role it runs as, its plan and its
/// variables.
#[derive(Debug)]
pub struct Execution {
    pub version: Arc<ApiVersion>,
    pub role: Arc<RoleApi>,
    pub plan: Arc<ExecutionPlan>,
    pub variables: Map<String, Value>,
    /// The document's text, as action handlers receive it (`request_query`).
    pub document: String,
}

impl Execution {
    /// The body of an operation that reads nothing (`subscription { __typename }`): its
    /// constant fields. `None` for one that reads the database.
    pub fn constant_body(&self) -> Option<Bytes> {
        if self.plan.reads.is_some() {
            return None;
        }
        let mut fields = respond::Fields::default();
        execute::constants(&self.plan, &mut fields);
        let body = respond::body(respond::Output::Fields(fields), &self.plan.operation.keys);
        body.and_then(Body::json).ok()
    }
}

/// What an operation sent over a WebSocket turns into.
#[derive(Debug)]
pub enum SocketOperation {
    /// A query or mutation, already run: its one response body.
    Once(Bytes),
    /// A subscription, planned: `crate::live` runs it.
    Subscribe(Box<Execution>),
}

impl Engine {
    /// An engine serving nothing yet (version -1, so the first install is taken).
    pub fn new(pool: Pool, counters: Arc<Counters>, sharing: Sharing, settings: Settings) -> Self {
        let nothing = Arc::new(CatalogVersion {
            version: -1,
            ..CatalogVersion::default()
        });
        Engine {
            pool,
            counters,
            sharing,
            settings,
            current: RwLock::new(Arc::new(ApiVersion::new(nothing, settings.model))),
        }
    }

    /// What is served now.
    pub fn current(&self) -> Arc<ApiVersion> {
        match self.current.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Where statements run.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// Serves `catalog` from now on, unless a newer version is served already (or, without
    /// `force`, the same one). The caller serializes installs.
    pub fn install(&self, catalog: Arc<CatalogVersion>, force: bool) {
        let current = self.current().version();
        if catalog.version < current || (catalog.version == current && !force) {
            return;
        }
        // Built outside the lock; requests keep using the old version meanwhile. Role
        // schemas are built by the requests that need them.
        let next = Arc::new(ApiVersion::new(catalog, self.settings.model));
        Counters::bump(&self.counters.schema_builds);
        let mut guard = match self.current.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if next.version() < guard.version() {
            return;
        }
        let previous = std::mem::replace(&mut *guard, next);
        drop(guard);
        // Freed after the lock: the old version's role schemas take a while to free for a
        // large schema, and every request asking for the current version would wait. (Freed
        // here, not on another thread: mimalloc returns memory freed by another thread only
        // when its owner allocates again.)
        drop(previous);
    }

    /// Runs one HTTP request (a query or a mutation; a subscription needs a WebSocket).
    pub async fn run(
        &self,
        caller: Caller<'_>,
        request: GraphqlRequest,
        transport: Transport,
    ) -> Answer {
        let execution = match self.prepare(caller.session, request, transport) {
            Ok(execution) => execution,
            Err(err) => {
                return Answer {
                    kind: "unknown",
                    body: Err(err),
                    cookies: Vec::new(),
                }
            }
        };
        let kind = match execution.plan.kind() {
            Some(OperationType::Query) => "query",
            Some(OperationType::Mutation) => "mutation",
            Some(OperationType::Subscription) => "subscription",
            None => "unknown",
        };
        let mut cookies = Vec::new();
        let body = match execution.plan.operation.subscription {
            true => Err(GraphqlError::SubscriptionOverHttp),
            false => self.execute(caller, &execution, &mut cookies).await,
        };
        Answer {
            kind,
            body,
            cookies,
        }
    }

    /// Runs a query or mutation sent over a WebSocket, or plans a subscription for
    /// `crate::live` to run. Remote schemas' cookies have nowhere to go there and are dropped.
    pub async fn run_socket(
        &self,
        caller: Caller<'_>,
        request: GraphqlRequest,
    ) -> Result<SocketOperation, GraphqlError> {
        let execution = self.prepare(caller.session, request, Transport::Socket)?;
        if execution.plan.operation.subscription {
            return Ok(SocketOperation::Subscribe(Box::new(execution)));
        }
        let body = self.execute(caller, &execution, &mut Vec::new()).await?;
        body.json().map(SocketOperation::Once)
    }

    /// Stages 1 to 3: the request's plan, from the role's cache or made anew, checked for
    /// this caller.
    pub fn prepare(
        &self,
        session: &Session,
        request: GraphqlRequest,
        transport: Transport,
    ) -> Result<Execution, GraphqlError> {
        let version = self.current();
        let role = version.role(&session.role, session.backend_only, &self.counters);
        let enforced = self.settings.enforce_allowlist && !session.is_admin();
        let GraphqlRequest {
            query,
            variables,
            operation_name,
        } = request;
        let variables = variables.unwrap_or_default();
        let variables_key = || Value::Object(variables.clone()).to_string();
        let operation = operation_name.as_deref();
        let resolved = &version.catalog.resolution.resolved;
        // The server's depth limit holds every role; the role's API limits tighten it.
        let api = version.limits.of(&session.role);
        let max_depth = limits::tightest(self.settings.limits.max_depth, api.and_then(|l| l.depth));
        let max_nodes = api.and_then(|l| l.nodes);
        let plan = match role.plans.get(&query, operation, variables_key) {
            Some(plan) => {
                Counters::bump(&self.counters.plan_cache_hits);
                validate::transport(&plan.document, transport)?;
                validate::admitted(&plan, enforced)?;
                let measured = validate::measure_of(&plan, &variables);
                validate::size(measured, max_depth, max_nodes)?;
                validate::variables(&role, resolved, &plan, &variables)?;
                plan
            }
            None => {
                let document = match parse::parse(&self.counters, &query, operation) {
                    Ok(document) => document,
                    // A document that does not parse is on no allow-list.
                    Err(_) if enforced => return Err(GraphqlError::NotAllowListed),
                    Err(err) => return Err(err.into()),
                };
                validate::transport(&document, transport)?;
                let allowlisted = validate::allowlisted(&version, &document, enforced);
                if !allowlisted {
                    return Err(GraphqlError::NotAllowListed);
                }
                let measured = validate::measure(&document, &variables);
                validate::size(measured, max_depth, max_nodes)?;
                let limits = self.settings.limits;
                let ir = validate::operation(&role, resolved, &document, &variables, limits)?;
                let plan = plan::compile(document, ir, resolved, allowlisted, measured);
                let plan = Arc::new(plan);
                Counters::bump(&self.counters.plans_compiled);
                role.plans
                    .insert(&query, operation, variables_key, plan.clone());
                plan
            }
        };
        Ok(Execution {
            version,
            role,
            plan,
            variables,
            document: query,
        })
    }

    /// Stages 4 and 5.
    async fn execute(
        &self,
        caller: Caller<'_>,
        execution: &Execution,
        cookies: &mut Vec<http::HeaderValue>,
    ) -> Result<Body, GraphqlError> {
        let version = &execution.version;
        let limits = version.limits.of(&caller.session.role);
        let run = execute::Run {
            engine: self,
            caller,
            version,
            role: &execution.role,
            plan: &execution.plan,
            variables: &execution.variables,
            document: &execution.document,
            deadline: limits
                .and_then(|l| l.time)
                .map(deadline::Deadline::starting_now),
        };
        let keys = &execution.plan.operation.keys;
        let output = match &execution.plan.program {
            Some(program) => match mutation::run(run, program, cookies).await? {
                mutation::MutationOutput::Body(body) => return Ok(Body::Json(body)),
                mutation::MutationOutput::Output(output) => output,
            },
            None => execute::query(run, cookies).await?,
        };
        respond::body(output, keys)
    }
}
