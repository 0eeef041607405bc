//! The plans of one role at one version, by request: a request whose plan is here skips the
//! parse, validate and plan stages. Looked up with the request's own `&str`s, so a hit builds
//! no key. Bounded: past [`PLAN_CACHE_SIZE`] plans it starts over, and very large documents
//! are never kept.

use super::plan::ExecutionPlan;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Largest document (and variables) whose plan is kept, in bytes; the same bound applies to
/// remembered introspection answers' documents.
pub(super) const MAX_CACHED_DOCUMENT: usize = 64 * 1024;

/// Plans kept per role before the cache is emptied.
const PLAN_CACHE_SIZE: usize = 1000;

/// Plans by document text; per document, by operation name and, for plans whose shape
/// depends on the variables, by the variables.
#[derive(Debug, Default)]
pub(super) struct PlanCache(Mutex<Plans>);

#[derive(Debug, Default)]
struct Plans {
    by_document: HashMap<String, Vec<Entry>>,
    entries: usize,
}

#[derive(Debug)]
struct Entry {
    operation: Option<String>,
    /// The variables (serialized) a shape-dependent plan was made for; `None`: any.
    variables: Option<String>,
    plan: Arc<ExecutionPlan>,
}

impl PlanCache {
    /// A plan for this request: first one valid for any variables, then one for exactly
    /// these (`variables` serializes them, called only when a shape-dependent plan is looked
    /// for).
    pub(super) fn get(
        &self,
        query: &str,
        operation: Option<&str>,
        variables: impl FnOnce() -> String,
    ) -> Option<Arc<ExecutionPlan>> {
        let plans = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let entries = plans.by_document.get(query)?;
        let mut for_operation = entries
            .iter()
            .filter(|e| e.operation.as_deref() == operation);
        if let Some(any) = for_operation.clone().find(|e| e.variables.is_none()) {
            return Some(any.plan.clone());
        }
        let first = for_operation.next()?;
        let variables = variables();
        std::iter::once(first)
            .chain(for_operation)
            .find(|e| e.variables.as_deref() == Some(variables.as_str()))
            .map(|e| e.plan.clone())
    }

    /// Keeps a plan (`variables` serializes the request's variables, called only for a
    /// shape-dependent plan).
    pub(super) fn insert(
        &self,
        query: &str,
        operation: Option<&str>,
        variables: impl FnOnce() -> String,
        plan: Arc<ExecutionPlan>,
    ) {
        let variables = plan.operation.shape_dependent.then(variables);
        if query.len() > MAX_CACHED_DOCUMENT
            || variables
                .as_ref()
                .is_some_and(|v| v.len() > MAX_CACHED_DOCUMENT)
        {
            return;
        }
        let mut plans = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if plans.entries >= PLAN_CACHE_SIZE {
            *plans = Plans::default();
        }
        let plans = &mut *plans;
        let operation = operation.map(str::to_owned);
        let entries = plans.by_document.entry(query.to_owned()).or_default();
        let before = entries.len();
        entries.retain(|e| !(e.operation == operation && e.variables == variables));
        entries.push(Entry {
            operation,
            variables,
            plan,
        });
        plans.entries = plans.entries + entries.len() - before;
    }
}
