//! The document of a request: parsed once, with the operation to run chosen.

use super::{PlanError, Problem, Result};
use async_graphql_parser::types::{
    DocumentOperations, ExecutableDocument, OperationDefinition, OperationType,
};

/// A parsed document with its chosen operation.
#[derive(Debug)]
pub struct Document {
    pub document: ExecutableDocument,
    /// Name of the chosen operation, if named.
    pub operation_name: Option<String>,
}

impl Document {
    /// The chosen operation's name, if it has one.
    pub fn chosen_name(&self) -> Option<&str> {
        match &self.document.operations {
            DocumentOperations::Single(_) => None,
            DocumentOperations::Multiple(ops) => match &self.operation_name {
                Some(name) => Some(name.as_str()),
                None if ops.len() == 1 => ops.keys().next().map(|n| n.as_str()),
                None => None,
            },
        }
    }

    /// The chosen operation.
    pub fn operation(&self) -> Option<&OperationDefinition> {
        match &self.document.operations {
            DocumentOperations::Single(op) => Some(&op.node),
            DocumentOperations::Multiple(ops) => match &self.operation_name {
                Some(name) => ops.get(name.as_str()).map(|o| &o.node),
                None if ops.len() == 1 => ops.values().next().map(|o| &o.node),
                None => None,
            },
        }
    }

    /// The operation's kind.
    pub fn operation_type(&self) -> Option<OperationType> {
        self.operation().map(|o| o.ty)
    }
}

/// Parses `query` and picks the operation named `operation_name` (required with several).
pub fn prepare(query: &str, operation_name: Option<&str>) -> Result<Document> {
    let document = async_graphql_parser::parse_query(query)
        .map_err(|e| PlanError::at("$.query", Problem::Syntax(e.to_string())))?;
    let prepared = Document {
        document,
        operation_name: operation_name.map(str::to_owned),
    };
    if prepared.operation().is_none() {
        let problem = match (&prepared.document.operations, operation_name) {
            (DocumentOperations::Multiple(_), None) => Problem::OperationNameRequired,
            (_, Some(name)) => Problem::NoSuchOperation(name.to_owned()),
            _ => Problem::NoOperation,
        };
        return Err(PlanError::at("$", problem));
    }
    Ok(prepared)
}
