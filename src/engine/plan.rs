//! Stage 3, plan: an operation's IR compiled into what executes it: the statement of a read
//! (or, for an operation whose other fields come from elsewhere, its one column per database
//! field), the program of a mutation, and the statement concurrent requests of the plan may
//! share. A plan is kept per role and version ([`super::plan_cache`]), so this stage runs once
//! per distinct request.

use crate::execute::{self, SharedStatement};
use crate::graphql::ir::{JoinOwner, MutationPlan, QueryPlan, RootField, TableJoinPart};
use crate::graphql::measure::Measure;
use crate::graphql::plan::{Document, OperationIr};
use crate::resolve::Resolved;
use crate::sql::program::MutationProgram;
use crate::sql::SqlText;
use crate::translate;
use async_graphql_parser::types::OperationType;
use std::sync::Arc;

/// A compiled operation, reusable for every request of the same document (and, for a
/// shape-dependent plan, the same variables).
#[derive(Debug)]
pub struct ExecutionPlan {
    /// The parsed document (a cached plan's variables are checked against it).
    pub document: Document,
    /// The operation's IR.
    pub operation: OperationIr,
    /// How the operation reads the database, when it does.
    pub reads: Option<Reads>,
    /// The program, when the operation is a mutation.
    pub program: Option<MutationProgram>,
    /// The statement concurrent requests of this plan may share: a read's when its SQL
    /// cannot observe the session and reads no action's output; a mutation's when its one
    /// statement is an insert that requests of one session can make together.
    pub shared: Option<Arc<SharedStatement>>,
    /// Whether the document is on the allow-list (always, where the list does not apply).
    pub allowlisted: bool,
    /// The operation's size as the depth and node limits count it, kept so that a request
    /// answered from the cache is checked without walking the document again.
    pub measure: Measure,
    /// The statements that read remote schema → table relationships: one per answer that
    /// holds them (the remote root fields', or one table → remote occurrence's).
    pub table_joins: Vec<(JoinOwner, SqlText)>,
    /// Its read runs in a read-only transaction: it runs a native query's code.
    pub read_only: bool,
}

/// The statement that reads an operation's database fields.
#[derive(Debug)]
pub enum Reads {
    /// Its one `json` cell is the whole `data` object: the database fields and constants,
    /// in document order.
    Whole(SqlText),
    /// One `json` column per database field, in the order of `keys`: for an operation whose
    /// response also holds introspection or remote fields, so that every field's bytes can be
    /// placed without reading the others back.
    Fields {
        sql: SqlText,
        /// The response key of each column.
        keys: Vec<String>,
    },
}

impl ExecutionPlan {
    /// The operation's kind.
    pub fn kind(&self) -> Option<OperationType> {
        self.document.operation_type()
    }

    /// The whole-`data` statement of a read (the only form a subscription has).
    pub fn whole_sql(&self) -> Option<&SqlText> {
        match &self.reads {
            Some(Reads::Whole(sql)) => Some(sql),
            _ => None,
        }
    }
}

/// Compiles an operation planned for a role against `resolved`.
pub(super) fn compile(
    document: Document,
    operation: OperationIr,
    resolved: &Resolved,
    allowlisted: bool,
    measure: Measure,
) -> ExecutionPlan {
    let data = &operation.data;
    let reads_database = data
        .fields
        .iter()
        .any(|(_, f)| !matches!(f, RootField::Constant(_)));
    // A read that nothing can observe the session in does not set it: one call less for
    // Postgres on every request. Live queries keep it: their multiplexed statement sets each
    // cohort's session, and their parameters are bound in that statement's order.
    let sets_session = operation.subscription || observes_session(data, resolved);
    let mixed = operation.introspection.is_some() || !operation.remote.is_empty();
    let reads = reads_database.then(|| match mixed {
        false => Reads::Whole(translate::query_for(data, sets_session)),
        true => {
            let (sql, keys) = translate::query_fields(data, sets_session);
            Reads::Fields { sql, keys }
        }
    });
    // Concurrent requests may share a statement only where none can observe another's
    // session, and where no action handler's output is bound.
    let shareable = reads_database
        && !mixed
        && !sets_session
        && data.fields.iter().all(|(_, f)| {
            matches!(
                f,
                RootField::Select(_) | RootField::Aggregate(_) | RootField::Constant(_)
            )
        });
    let program = operation.mutation.as_ref().map(translate::mutation);
    let shared = match (&operation.mutation, &program) {
        (Some(mutation), Some(program)) => shared_writes(mutation, program),
        _ => shareable.then(|| Arc::new(SharedStatement::new(translate::shared_query(data)))),
    };
    let table_joins = table_join_statements(&operation);
    let read_only = operation.mutation.is_none() && data.footprint().runs_code;
    ExecutionPlan {
        read_only,
        document,
        operation,
        reads,
        program,
        shared,
        allowlisted,
        measure,
        table_joins,
    }
}

/// One statement per answer holding remote schema → table relationships, in the order their
/// owners first appear.
fn table_join_statements(operation: &OperationIr) -> Vec<(JoinOwner, SqlText)> {
    let mut owners: Vec<JoinOwner> = Vec::new();
    for part in &operation.table_joins {
        if !owners.contains(&part.owner) {
            owners.push(part.owner);
        }
    }
    owners
        .into_iter()
        .map(|owner| {
            let parts: Vec<&TableJoinPart> = operation
                .table_joins
                .iter()
                .filter(|p| p.owner == owner)
                .collect();
            (owner, translate::table_joins(&parts, &operation.data.cells))
        })
        .collect()
}

/// Whether running `plan` can observe the `basalt.user` setting: it calls a function
/// (computed fields, function sources) or reads a relation that is not a plain table (a
/// view) or has row-level security. See `docs/graphql.md`, "The session inside SQL".
pub fn observes_session(plan: &QueryPlan, resolved: &Resolved) -> bool {
    let footprint = plan.footprint();
    footprint.calls_functions
        || footprint.relations.iter().any(|t| {
            resolved
                .tables
                .get(t)
                .is_none_or(|t| t.db.may_observe_session())
        })
}

/// The shareable form of a mutation whose one statement is an insert that concurrent
/// requests of one session can make together (see [`translate::shared_insert`]).
fn shared_writes(
    mutation: &MutationPlan,
    program: &MutationProgram,
) -> Option<Arc<SharedStatement>> {
    let single = program
        .single
        .as_ref()
        .filter(|_| translate::shares_inserts(mutation))?;
    let mutation = mutation.clone();
    let build: execute::BuildCopies = Box::new(move |n| translate::shared_insert(&mutation, n));
    Some(Arc::new(SharedStatement::writes(&single.params, build)))
}
