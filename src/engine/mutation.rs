//! Stage 4, execute, for a mutation: every database root field's program in one transaction,
//! in document order, after the session setting; a synchronous action's handler called at
//! its field's turn; then the remote schemas' fields, each remote once. Any error rolls the
//! database part back (a handler's or a remote's own writes cannot be), and no partial data is
//! answered. A mutation of one field compiled to one statement runs without an explicit
//! transaction, shared with concurrent requests of its plan where it may be. All of it runs
//! within the role's time limit ([`super::deadline`]).

use super::actions;
use super::deadline::{self, Deadline};
use super::error::{GraphqlError, InternalError};
use super::execute::Run;
use super::remote;
use super::respond::{self, FieldValue, Fields, Output};
use crate::execute::{self, Binding, Connection, ExecuteError, SharedStatement};
use crate::graphql::ir::MutationField;
use crate::graphql::plan::OperationIr;
use crate::sql::program::{FieldProgram, MutationProgram};
use crate::stats::Counters;
use bytes::Bytes;
use std::sync::Arc;
use tracing::Instrument;

/// What a mutation produced: its whole body (one field, one statement) or its fields.
pub(super) enum MutationOutput {
    Body(Bytes),
    Output(Output),
}

/// Runs a mutation's program; `cookies` collects the remote schemas' `Set-Cookie` headers.
pub(super) async fn run(
    run: Run<'_>,
    program: &MutationProgram,
    cookies: &mut Vec<http::HeaderValue>,
) -> Result<MutationOutput, GraphqlError> {
    let calls = run.action_calls()?;
    let binding = Binding {
        variables: run.variables,
        session: &run.caller.session.variables,
        provided: None,
    };
    let remotes = run.remote_calls()?;
    let span = tracing::debug_span!("sql", "db.system" = "postgresql", kind = "mutation");
    let transaction = Transaction {
        run,
        program,
        binding,
        calls,
    };
    transaction.run(remotes, cookies).instrument(span).await
}

/// A mutation to run, and what it runs with.
struct Transaction<'a> {
    run: Run<'a>,
    program: &'a MutationProgram,
    binding: Binding<'a>,
    calls: actions::Calls,
}

impl Transaction<'_> {
    async fn run(
        self,
        remotes: Vec<crate::remote::forward::Call<'_>>,
        cookies: &mut Vec<http::HeaderValue>,
    ) -> Result<MutationOutput, GraphqlError> {
        let Transaction {
            run,
            program,
            binding,
            mut calls,
        } = self;
        let operation = &run.plan.operation;
        let trace_context = crate::telemetry::current_trace_context();
        if let (Some(single), [(key, _)], true, None) = (
            &program.single,
            program.fields.as_slice(),
            remotes.is_empty(),
            &trace_context,
        ) {
            let shared = run.plan.shared.as_ref();
            return one_statement(run, single, shared, key, &binding)
                .await
                .map(MutationOutput::Body);
        }
        let engine = run.engine;
        let mut client = None;
        if !program.fields.is_empty() {
            client = Some(super::execute::connection(run).await?);
        }
        let guard = client
            .as_ref()
            .and_then(|client| deadline::guard(run.deadline, client));
        let work = async {
            let mut fields = Fields::default();
            let tx = match client.as_mut() {
                Some(client) => {
                    Counters::bump(&engine.counters.mutation_transactions);
                    Some(client.transaction().await.map_err(ExecuteError::from)?)
                }
                None => None,
            };
            if let Some(tx) = &tx {
                let conn = Connection::of_transaction(tx, &engine.counters);
                execute::statement(conn, &program.session, &binding).await?;
                if let Some(context) = &trace_context {
                    execute::set_trace_context(conn, context).await?;
                }
                for (key, field) in &program.fields {
                    let write = match field {
                        FieldProgram::Constant(value) => {
                            fields.push(key, FieldValue::Value(value.clone()));
                            continue;
                        }
                        FieldProgram::Write(write) => write,
                        FieldProgram::Action(answer) => {
                            let action = action_of(operation, key)?;
                            let called =
                                actions::call_one(run.version, run.caller, key, action, &mut calls);
                            deadline::bounded(run.deadline, called).await?;
                            answer
                        }
                    };
                    Deadline::check(run.deadline)?;
                    let provided = actions::provided(&calls);
                    let binding = Binding {
                        provided: provided.as_ref(),
                        ..binding
                    };
                    let bytes = execute::run_program(conn, write, &binding)
                        .await
                        .map_err(|error| at_field(error, key))?;
                    fields.push(key, FieldValue::Json(bytes));
                }
            }
            let answered = deadline::bounded(run.deadline, remote::send_all(remotes)).await?;
            if let Some(tx) = tx {
                // Work done past the deadline (a cancel the connection missed) is not kept.
                Deadline::check(run.deadline)?;
                tx.commit().await.map_err(ExecuteError::from)?;
            }
            Ok::<_, GraphqlError>((fields, answered))
        };
        // Past the time limit, the running statement is cancelled; the transaction then
        // fails and rolls back as it drops.
        let done = deadline::on_connection(guard.as_ref(), work).await;
        if let Some(client) = client {
            deadline::release(guard, client);
        }
        let (mut fields, mut answered) = done?;
        super::table_join::complete_roots(&run, &mut answered).await?;
        // Remote relationships in the answers are sent once the writes are committed.
        for bytes in fields.json_mut() {
            *bytes = super::join::complete(&run, std::mem::take(bytes)).await?;
        }
        remote::merge(&mut fields, answered, operation, cookies);
        Ok(MutationOutput::Output(Output::Fields(fields)))
    }
}

/// Runs a mutation compiled to one statement (see [`MutationProgram::single`]) outside an
/// explicit transaction: its session, write, checks and answer in one round trip.
async fn one_statement(
    run: Run<'_>,
    single: &crate::sql::SqlText,
    shared: Option<&Arc<SharedStatement>>,
    key: &str,
    binding: &Binding<'_>,
) -> Result<Bytes, GraphqlError> {
    let engine = run.engine;
    let answer = match shared {
        // A shared statement cannot be cancelled for one of its requests, so an operation
        // under a time limit runs its own.
        Some(shared) if engine.sharing.writes_in_flight > 0 && run.deadline.is_none() => {
            let answer = async {
                let values = execute::bind(&single.params, binding, None)?;
                shared.run(&engine.sharing, single, values).await
            };
            answer.await.map_err(|error| at_field(error, key))?
        }
        _ => {
            let pool = &engine.pool;
            let waited = async { pool.get().await.map_err(|e| at_field(e.into(), key)) };
            let client = deadline::bounded(run.deadline, waited).await?;
            let guard = deadline::guard(run.deadline, &client);
            let conn = Connection::of(&client, &engine.counters);
            let answer = async {
                execute::run(conn, single, binding)
                    .await
                    .map_err(|error| at_field(error, key))
            };
            let answer = deadline::on_connection(guard.as_ref(), answer).await;
            deadline::release(guard, client);
            answer?
        }
    };
    let answer = super::join::complete(&run, answer).await?;
    Ok(respond::one_field(key, &answer))
}

/// A statement's failure, located at the root field `key` unless it concerns the whole
/// request.
fn at_field(error: ExecuteError, key: &str) -> GraphqlError {
    GraphqlError::Execute {
        field: (!error.is_request_level()).then(|| key.to_owned()),
        error: Box::new(error),
    }
}

/// The action a synchronous mutation action field at `key` calls.
fn action_of<'a>(operation: &'a OperationIr, key: &str) -> Result<&'a str, GraphqlError> {
    operation
        .mutation
        .iter()
        .flat_map(|m| m.fields.iter())
        .find_map(|(k, f)| match f {
            MutationField::Action(a) if k == key => Some(a.call.action.as_str()),
            _ => None,
        })
        .ok_or_else(|| InternalError::NoActionCall(key.to_owned()).into())
}
