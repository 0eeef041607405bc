//! Stage 4, execute, for a query: the action handlers it calls, then its one statement (shared
//! with concurrent requests of the same plan where it may be), and at the same time each
//! remote schema's part, all within the role's time limit ([`super::deadline`]); then its
//! introspection fields from the role's remembered answers.
//! What it produces is written by [`super::respond`]. Mutations run in
//! [`super::mutation`].

use super::actions::{self, Calls};
use super::deadline::{self, Deadline};
use super::error::GraphqlError;
use super::introspection;
use super::plan::{ExecutionPlan, Reads};
use super::remote;
use super::request::Caller;
use super::respond::{FieldValue, Fields, Output};
use super::version::{ApiVersion, RoleApi};
use super::Engine;
use crate::execute::{self, Binding, Connection, ExecuteError};
use crate::graphql::ir::RootField;
use bytes::Bytes;
use serde_json::{Map, Value};
use tracing::Instrument;

/// What one run of an operation works with.
#[derive(Clone, Copy)]
pub(super) struct Run<'a> {
    pub(super) engine: &'a Engine,
    pub(super) caller: Caller<'a>,
    pub(super) version: &'a ApiVersion,
    pub(super) role: &'a RoleApi,
    pub(super) plan: &'a ExecutionPlan,
    pub(super) variables: &'a Map<String, Value>,
    /// The document's text, as action handlers receive it (`request_query`).
    pub(super) document: &'a str,
    /// When the operation must have finished (the role's time limit), if ever.
    pub(super) deadline: Option<Deadline>,
}

impl<'a> Run<'a> {
    /// The operation's action calls, their values worked out from the request.
    pub(super) fn action_calls(&self) -> Result<Calls, GraphqlError> {
        let operation = &self.plan.operation;
        actions::prepare(
            self.version,
            self.caller,
            operation,
            self.variables,
            self.document,
        )
    }

    /// The operation's calls to remote schemas, ready to send.
    pub(super) fn remote_calls(
        &self,
    ) -> Result<Vec<crate::remote::forward::Call<'a>>, GraphqlError> {
        remote::calls(
            self.version,
            self.caller,
            &self.plan.operation,
            self.variables,
        )
    }
}

/// What the database read produced.
enum Read {
    /// Nothing to read: constants only.
    Nothing,
    /// The whole `data` object.
    Whole(Bytes),
    /// One value per database field.
    Fields(Vec<Bytes>),
}

/// Runs a query; `cookies` collects the remote schemas' `Set-Cookie` headers.
pub(super) async fn query(
    run: Run<'_>,
    cookies: &mut Vec<http::HeaderValue>,
) -> Result<Output, GraphqlError> {
    let operation = &run.plan.operation;
    let mut calls = run.action_calls()?;
    let remotes = run.remote_calls()?;
    let database = async {
        let called = actions::call_queries(run.version, run.caller, operation, &mut calls);
        deadline::bounded(run.deadline, called).await?;
        read(run, &calls).await
    };
    let remote = deadline::bounded(run.deadline, remote::send_all(remotes));
    let (read, answered) = futures_util::future::join(database, remote).await;
    let read = match read? {
        Read::Whole(data) => Read::Whole(super::join::complete(&run, data).await?),
        Read::Fields(values) => {
            let mut done = Vec::with_capacity(values.len());
            for value in values {
                done.push(super::join::complete(&run, value).await?);
            }
            Read::Fields(done)
        }
        other => other,
    };
    let mut answered = answered?;
    super::table_join::complete_roots(&run, &mut answered).await?;
    let introspected = match &operation.introspection {
        Some((_, document)) => Some(introspection::answer(
            &run.engine.counters,
            run.role,
            document,
        )?),
        None => None,
    };
    let constants_only = || {
        let mut fields = Fields::default();
        constants(run.plan, &mut fields);
        fields
    };
    let mut fields = match (read, introspected) {
        (Read::Whole(data), None) if answered.is_empty() => return Ok(Output::Data(data)),
        (Read::Nothing, None) if answered.is_empty() => {
            return Ok(Output::Fields(constants_only()))
        }
        // Only introspection fields: the remembered answer is the whole `data` object.
        (Read::Nothing, Some(answer))
            if operation.data.fields.is_empty() && answered.is_empty() =>
        {
            return Ok(Output::Introspection(answer))
        }
        (read, introspected) => {
            let mut fields = constants_only();
            if let (Read::Fields(values), Some(Reads::Fields { keys, .. })) =
                (read, &run.plan.reads)
            {
                for (key, value) in keys.iter().zip(values) {
                    fields.push(key, FieldValue::Json(value));
                }
            }
            if let Some(answer) = &introspected {
                fields.introspection(answer)?;
            }
            fields
        }
    };
    remote::merge(&mut fields, answered, operation, cookies);
    Ok(Output::Fields(fields))
}

/// The operation's constant fields (`__typename` and the like).
pub(super) fn constants(plan: &ExecutionPlan, fields: &mut Fields) {
    for (key, field) in &plan.operation.data.fields {
        if let RootField::Constant(value) = field {
            fields.push(key, FieldValue::Value(value.clone()));
        }
    }
}

/// Runs the operation's statement, if it has one.
/// `sql` in a read-only transaction: a native query's code cannot write, whatever it calls.
async fn read_only(
    client: &mut deadpool_postgres::Client,
    counters: &crate::stats::Counters,
    sql: &crate::sql::SqlText,
    binding: &Binding<'_>,
) -> Result<Bytes, GraphqlError> {
    let postgres = |e: tokio_postgres::Error| GraphqlError::from(ExecuteError::from(e));
    let tx = (client.build_transaction().read_only(true).start().await).map_err(postgres)?;
    let data = execute::run(Connection::of_transaction(&tx, counters), sql, binding).await?;
    tx.commit().await.map_err(postgres)?;
    Ok(data)
}

/// The columns of a read's statement with one column per field, in a read-only transaction
/// when it runs a native query's code.
async fn fields(
    client: &mut deadpool_postgres::Client,
    counters: &crate::stats::Counters,
    sql: &crate::sql::SqlText,
    binding: &Binding<'_>,
    read_only: bool,
) -> Result<Vec<Bytes>, GraphqlError> {
    if !read_only {
        let conn = Connection::of(client, counters);
        return Ok(execute::run_fields(conn, sql, binding).await?);
    }
    let postgres = |e: tokio_postgres::Error| GraphqlError::from(ExecuteError::from(e));
    let tx = (client.build_transaction().read_only(true).start().await).map_err(postgres)?;
    let values =
        execute::run_fields(Connection::of_transaction(&tx, counters), sql, binding).await?;
    tx.commit().await.map_err(postgres)?;
    Ok(values)
}

async fn read(run: Run<'_>, calls: &Calls) -> Result<Read, GraphqlError> {
    let engine = run.engine;
    let provided = actions::provided(calls);
    let binding = Binding {
        variables: run.variables,
        session: &run.caller.session.variables,
        provided: provided.as_ref(),
    };
    let span = || tracing::debug_span!("sql", "db.system" = "postgresql", kind = "query");
    let (sql, shared) = match &run.plan.reads {
        None => return Ok(Read::Nothing),
        Some(Reads::Fields { sql, .. }) => {
            let mut client = connection(run).await?;
            let guard = deadline::guard(run.deadline, &client);
            let values = fields(
                &mut client,
                &engine.counters,
                sql,
                &binding,
                run.plan.read_only,
            )
            .instrument(span());
            let values = deadline::on_connection(guard.as_ref(), values).await;
            deadline::release(guard, client);
            return Ok(Read::Fields(values?));
        }
        Some(Reads::Whole(sql)) => (sql, &run.plan.shared),
    };
    let data = match shared {
        // A statement shared with other requests cannot be cancelled for one of them, so an
        // operation under a time limit runs its own.
        Some(shared)
            if engine.sharing.in_flight > 0 && run.deadline.is_none() && !run.plan.read_only =>
        {
            let values = execute::bind(&sql.params, &binding, None)?;
            shared
                .run(&engine.sharing, sql, values)
                .instrument(span())
                .await?
        }
        _ if run.plan.read_only => {
            let mut client = connection(run).await?;
            let guard = deadline::guard(run.deadline, &client);
            let data = read_only(&mut client, &engine.counters, sql, &binding).instrument(span());
            let data = deadline::on_connection(guard.as_ref(), data).await;
            deadline::release(guard, client);
            data?
        }
        _ => {
            let client = connection(run).await?;
            let guard = deadline::guard(run.deadline, &client);
            let conn = Connection::of(&client, &engine.counters);
            let data = execute::run(conn, sql, &binding).instrument(span());
            let data = deadline::on_connection(guard.as_ref(), data).await;
            deadline::release(guard, client);
            data?
        }
    };
    Ok(Read::Whole(data))
}

/// A pooled connection, waited for within the operation's deadline.
pub(super) async fn connection(run: Run<'_>) -> Result<deadpool_postgres::Client, GraphqlError> {
    let pool = &run.engine.pool;
    deadline::bounded(run.deadline, async {
        pool.get().await.map_err(ExecuteError::from)
    })
    .await
}
