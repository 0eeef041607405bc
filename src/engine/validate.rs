//! Stage 2, validate: whether the parsed operation may run for this caller, whether it is
//! within the depth and node limits, and whether it fits the role's schema. The planner checks an operation against the role's types as it
//! lowers it to IR, so a new document's IR comes out of this stage; a cached plan's document
//! is only checked against the request's variables.

use super::error::GraphqlError;
use super::plan::ExecutionPlan;
use super::request::Transport;
use super::version::{ApiVersion, RoleApi};
use crate::graphql::measure::{self, Measure};
use crate::graphql::plan::{self, Document, Limits, OperationIr, PlanError};
use crate::resolve::Resolved;
use async_graphql_parser::types::OperationType;
use serde_json::{Map, Value};

/// A GET carries queries only.
pub(super) fn transport(document: &Document, transport: Transport) -> Result<(), GraphqlError> {
    match (transport, document.operation_type()) {
        (Transport::Get, Some(OperationType::Mutation | OperationType::Subscription)) => {
            Err(GraphqlError::NotAllowedOverGet)
        }
        _ => Ok(()),
    }
}

/// Whether the allow-list lets a document through: always when the list is not enforced
/// for the caller, otherwise when the document's normalized form is listed.
pub(super) fn allowlisted(version: &ApiVersion, document: &Document, enforced: bool) -> bool {
    !enforced
        || version
            .allowlist
            .contains(&crate::graphql::allowlist::normalize_document(
                &document.document,
            ))
}

/// Fails a request whose (cached) plan is not on the enforced allow-list.
pub(super) fn admitted(plan: &ExecutionPlan, enforced: bool) -> Result<(), GraphqlError> {
    match enforced && !plan.allowlisted {
        true => Err(GraphqlError::NotAllowListed),
        false => Ok(()),
    }
}

/// The size of a document's chosen operation with the request's variables.
pub(super) fn measure(document: &Document, variables: &Map<String, Value>) -> Measure {
    match document.operation() {
        Some(operation) => measure::measure(&document.document, operation, variables),
        None => Measure::default(),
    }
}

/// The size a plan's operation has with this request's variables: the one kept with the
/// plan, unless `@skip`/`@include` conditions read variables.
pub(super) fn measure_of(plan: &ExecutionPlan, variables: &Map<String, Value>) -> Measure {
    match plan.measure.reads_variables {
        true => measure(&plan.document, variables),
        false => plan.measure,
    }
}

/// Fails an operation deeper than `max_depth` or with more nodes than `max_nodes`.
pub(super) fn size(
    measured: Measure,
    max_depth: usize,
    max_nodes: Option<u32>,
) -> Result<(), GraphqlError> {
    if usize::try_from(measured.depth).unwrap_or(usize::MAX) > max_depth {
        return Err(GraphqlError::TooDeep { limit: max_depth });
    }
    match max_nodes {
        Some(limit) if measured.nodes > u64::from(limit) => {
            Err(GraphqlError::TooManyNodes { limit })
        }
        _ => Ok(()),
    }
}

/// The operation checked against the role's schema and lowered to its IR, within `limits`.
pub(super) fn operation(
    role: &RoleApi,
    resolved: &Resolved,
    document: &Document,
    variables: &Map<String, Value>,
    limits: Limits,
) -> Result<OperationIr, PlanError> {
    let _span = tracing::debug_span!("graphql.plan").entered();
    let schema = &role.schema;
    plan::plan(
        &schema.model,
        &schema.types,
        resolved,
        document,
        variables,
        limits,
    )
}

/// A cached plan's variables checked against its operation's definitions.
pub(super) fn variables(
    role: &RoleApi,
    resolved: &Resolved,
    plan: &ExecutionPlan,
    variables: &Map<String, Value>,
) -> Result<(), PlanError> {
    let schema = &role.schema;
    plan::check_variables(
        &schema.model,
        &schema.types,
        resolved,
        &plan.document,
        variables,
    )
}
