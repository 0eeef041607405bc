//! From a GraphQL document to a plan: pick the operation ([`document`]), coerce variables and
//! arguments ([`input`]), collect fields through fragments and directives ([`collect`]), and
//! build the IR of the query root ([`query`], [`select`], [`filter`]) or the mutation root
//! ([`mutation`], [`insert`]) with the role's permissions folded in ([`permission`]).
//! Introspection root fields are set aside, printed for [`crate::graphql::introspection`].
//! Pure: no SQL, no IO. See `docs/architecture.md`.

mod action;
mod collect;
mod document;
mod error;
mod filter;
mod function;
mod input;
mod insert;
mod introspection;
mod mutation;
mod native;
mod permission;
mod query;
mod remote;
mod remote_join;
mod remote_table;
mod select;
mod stream;
mod update;

pub use document::{prepare, Document};
pub use error::{PlanError, PlanErrorKind, Problem};
pub use input::Input;
use input::Keep;
pub use remote::RemotePart;
pub use select::json_path;

use super::ir::*;
use super::model::{RoleModel, RoleTable};
use super::types::{TypeRef, TypeSystem};
use crate::metadata::types::QualifiedTable;
use crate::resolve::Resolved;
use async_graphql_parser::types::{
    ExecutableDocument, Field as AstField, OperationDefinition, OperationType,
};
use indexmap::IndexMap;
use serde_json::{Map, Value};

pub(super) type Result<T> = std::result::Result<T, PlanError>;

/// Limits on documents.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Deepest selection nesting.
    pub max_depth: usize,
    /// Most root fields in one operation.
    pub max_root_fields: usize,
}

/// The IR of one operation: what each root field reads, writes or asks elsewhere.
#[derive(Debug, Clone)]
pub struct OperationIr {
    /// Data root fields, and constants.
    pub data: QueryPlan,
    /// Response keys of introspection root fields, in document order, with the standalone
    /// document that answers them.
    pub introspection: Option<(Vec<String>, String)>,
    /// Root fields answered by remote schemas: one part per remote.
    pub remote: Vec<RemotePart>,
    /// Every response key in document order (data, introspection and remote).
    pub keys: Vec<String>,
    /// For mutation operations: the writes, in order.
    pub mutation: Option<MutationPlan>,
    /// Variable values changed the plan's shape, so it may only be reused with equal variables.
    pub shape_dependent: bool,
    /// A subscription operation: `data` is a live query, re-run until the client stops it.
    pub subscription: bool,
    /// Remote relationship occurrences, by occurrence number.
    pub joins: Vec<crate::graphql::ir::RemoteJoinPart>,
    /// Remote schema → table relationship occurrences, by occurrence number.
    pub table_joins: Vec<crate::graphql::ir::TableJoinPart>,
}

/// Plans the chosen query operation for a role.
pub fn plan(
    model: &RoleModel,
    types: &TypeSystem,
    resolved: &Resolved,
    prepared: &Document,
    variables: &Map<String, Value>,
    limits: Limits,
) -> Result<OperationIr> {
    let Some(operation) = prepared.operation() else {
        return Err(PlanError::at("$", Problem::NoOperation));
    };
    match operation.ty {
        OperationType::Query => {}
        OperationType::Mutation if types.mutation_root.is_none() => {
            return Err(PlanError::at("$", Problem::NoMutations))
        }
        OperationType::Mutation => {}
        OperationType::Subscription if types.subscription_root.is_none() => {
            return Err(PlanError::at("$", Problem::NoSubscriptions))
        }
        OperationType::Subscription => {}
    }
    let mut planner = Planner::new(model, types, resolved, prepared, limits);
    planner.coerce_variables(operation, variables, Keep::Values)?;
    let mut ir = match operation.ty {
        OperationType::Mutation => planner.mutation_root(&operation.selection_set.node),
        OperationType::Subscription => planner.root(&operation.selection_set.node, true),
        OperationType::Query => planner.root(&operation.selection_set.node, false),
    }?;
    ir.data.cells = model.cells.clone();
    if let Some(m) = &mut ir.mutation {
        m.cells = model.cells.clone();
    }
    Ok(ir)
}

/// Checks a document's chosen operation against the role's types without variable values
/// (a stored document, before any request): what planning it would refuse, whatever the values.
pub fn validate(
    model: &RoleModel,
    types: &TypeSystem,
    resolved: &Resolved,
    prepared: &Document,
    limits: Limits,
) -> Result<()> {
    let Some(operation) = prepared.operation() else {
        return Err(PlanError::at("$", Problem::NoOperation));
    };
    let mut planner = Planner::new(model, types, resolved, prepared, limits);
    planner.coerce_variables(operation, &Map::new(), Keep::Types)?;
    match operation.ty {
        OperationType::Mutation if types.mutation_root.is_none() => {
            Err(PlanError::at("$", Problem::NoMutations))
        }
        OperationType::Mutation => planner
            .mutation_root(&operation.selection_set.node)
            .map(drop),
        OperationType::Subscription => planner.root(&operation.selection_set.node, true).map(drop),
        OperationType::Query => planner.root(&operation.selection_set.node, false).map(drop),
    }
}

/// Checks request variables against the operation's definitions (for reused plans).
pub fn check_variables(
    model: &RoleModel,
    types: &TypeSystem,
    resolved: &Resolved,
    prepared: &Document,
    variables: &Map<String, Value>,
) -> Result<()> {
    let Some(operation) = prepared.operation() else {
        return Err(PlanError::at("$", Problem::NoOperation));
    };
    let limits = Limits {
        max_depth: usize::MAX,
        max_root_fields: usize::MAX,
    };
    Planner::new(model, types, resolved, prepared, limits).coerce_variables(
        operation,
        variables,
        Keep::Nothing,
    )
}

pub(super) struct Planner<'a> {
    pub(super) model: &'a RoleModel,
    pub(super) resolved: &'a Resolved,
    pub(super) types: &'a TypeSystem,
    pub(super) document: &'a ExecutableDocument,
    pub(super) var_types: IndexMap<String, (TypeRef, bool)>,
    pub(super) variables: Map<String, Value>,
    pub(super) shape_dependent: bool,
    pub(super) limits: Limits,
    /// Selections collected so far, fragments expanded (bounded by `collect`).
    pub(super) collected: usize,
    /// Remote root fields so far, by remote schema.
    pub(super) remote_drafts: IndexMap<String, remote::Draft>,
    /// The operation's name, kept in documents sent to remote schemas.
    pub(super) operation_name: Option<&'a str>,
    /// The operation planned (its variables' definitions and defaults).
    pub(super) operation: Option<&'a OperationDefinition>,
    /// A subscription is being planned (some fields are refused in one).
    pub(super) subscription: bool,
    /// Remote relationship occurrences so far.
    pub(super) joins: Vec<crate::graphql::ir::RemoteJoinPart>,
    /// Remote schema → table relationship occurrences so far.
    pub(super) table_joins: Vec<crate::graphql::ir::TableJoinPart>,
    /// A stored document is checked without variable values ([`validate`]; set by
    /// [`Keep::Types`]).
    pub(super) without_values: bool,
}

/// Fields grouped by response key, in document order.
pub(super) type Collected<'d> = Vec<(String, Vec<&'d AstField>)>;

impl<'a> Planner<'a> {
    fn new(
        model: &'a RoleModel,
        types: &'a TypeSystem,
        resolved: &'a Resolved,
        prepared: &'a Document,
        limits: Limits,
    ) -> Self {
        Planner {
            model,
            resolved,
            types,
            document: &prepared.document,
            var_types: IndexMap::new(),
            variables: Map::new(),
            shape_dependent: false,
            limits,
            collected: 0,
            remote_drafts: IndexMap::new(),
            operation_name: prepared.chosen_name(),
            operation: prepared.operation(),
            subscription: false,
            joins: Vec::new(),
            table_joins: Vec::new(),
            without_values: false,
        }
    }

    pub(super) fn table(&self, name: &QualifiedTable, path: &str) -> Result<&'a RoleTable> {
        let model: &'a RoleModel = self.model;
        model
            .tables
            .get(name)
            .ok_or_else(|| PlanError::at(path, Problem::TableNotAvailable(name.to_string())))
    }
}
