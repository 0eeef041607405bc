//! Stage 1, parse: the request's text into a [`Document`] with the operation to run chosen.
//! It runs only for a request whose plan is not cached, and nothing else parses a request's
//! document.

use crate::graphql::plan::{self, Document, PlanError};
use crate::stats::Counters;

/// Parses the request's document and picks its operation.
pub(super) fn parse(
    counters: &Counters,
    query: &str,
    operation: Option<&str>,
) -> Result<Document, PlanError> {
    Counters::bump(&counters.documents_parsed);
    let _span = tracing::debug_span!("graphql.parse").entered();
    plan::prepare(query, operation)
}
