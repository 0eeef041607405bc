//! The GraphQL schemas of one metadata version: a [`RoleSchema`] per role (model, introspection
//! schema, plan cache), built once when the version is installed, never per request.

use super::model::{self, RoleModel};
use super::plan::{Planned, Prepared};
use super::remote::RemoteTypes;
use super::types::TypeSystem;
use crate::schema::Resolved;
use crate::sql::program::MutationProgram;
use crate::sql::SqlText;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Largest document (and variables) whose plan is cached, in bytes.
const MAX_CACHED_DOCUMENT: usize = 64 * 1024;

/// Introspection answers kept per role before that cache is emptied.
const INTROSPECTION_CACHE_SIZE: usize = 16;

/// Plans kept per role before the cache is emptied.
const PLAN_CACHE_SIZE: usize = 1000;

/// A planned and compiled operation, reusable for the same document.
#[derive(Debug)]
pub struct CachedPlan {
    /// The parsed document (variables are checked against it on every use).
    pub prepared: Prepared,
    /// The plan.
    pub planned: Planned,
    /// The SQL, when the operation is a query that reads data.
    pub sql: Option<SqlText>,
    /// The program, when the operation is a mutation.
    pub program: Option<MutationProgram>,
}

/// (query text, operation name, variables when they shape the plan).
type PlanKey = (String, Option<String>, Option<String>);

/// One role's schema.
pub struct RoleSchema {
    /// What the role may query and write.
    pub model: RoleModel,
    /// The role's GraphQL types, which documents are validated against and introspection
    /// answers from.
    pub types: TypeSystem,
    plans: Mutex<HashMap<PlanKey, Arc<CachedPlan>>>,
    /// Answers to introspection documents (JSON bytes), by document.
    introspected: Mutex<HashMap<String, bytes::Bytes>>,
}

impl std::fmt::Debug for RoleSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleSchema")
            .field("role", &self.model.role)
            .finish()
    }
}

impl RoleSchema {
    /// The schema of a role's model: its types with the remote schemas merged in.
    pub fn new(model: RoleModel, remotes: &[RemoteTypes]) -> Self {
        let mut types = super::typegen::build(&model);
        for remote in remotes {
            super::remote::merge(&mut types, remote);
        }
        RoleSchema {
            model,
            types,
            plans: Mutex::new(HashMap::new()),
            introspected: Mutex::new(HashMap::new()),
        }
    }

    fn key(query: &str, operation: Option<&str>, variables: Option<String>) -> PlanKey {
        (query.to_owned(), operation.map(str::to_owned), variables)
    }

    /// A cached plan: first one valid for any variables, then one for exactly these.
    pub fn cached(
        &self,
        query: &str,
        operation: Option<&str>,
        variables: &str,
    ) -> Option<Arc<CachedPlan>> {
        let plans = self.plans.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(plan) = plans.get(&Self::key(query, operation, None)) {
            return Some(plan.clone());
        }
        plans
            .get(&Self::key(query, operation, Some(variables.to_owned())))
            .cloned()
    }

    /// The remembered answer to an introspection document.
    pub fn introspected(&self, document: &str) -> Option<bytes::Bytes> {
        let answers = self.introspected.lock().unwrap_or_else(|p| p.into_inner());
        answers.get(document).cloned()
    }

    /// Remembers the answer to an introspection document (small documents only, a bounded
    /// number of them: clients send the same few).
    pub fn remember_introspection(&self, document: &str, answer: bytes::Bytes) {
        if document.len() > MAX_CACHED_DOCUMENT {
            return;
        }
        let mut answers = self.introspected.lock().unwrap_or_else(|p| p.into_inner());
        if answers.len() >= INTROSPECTION_CACHE_SIZE {
            answers.clear();
        }
        answers.insert(document.to_owned(), answer);
    }

    /// Remembers a plan.
    pub fn remember(
        &self,
        query: &str,
        operation: Option<&str>,
        variables: &str,
        plan: Arc<CachedPlan>,
    ) {
        // Very large documents (or variables, for shape-dependent plans) are not worth keeping.
        if query.len() > MAX_CACHED_DOCUMENT
            || (plan.planned.shape_dependent && variables.len() > MAX_CACHED_DOCUMENT)
        {
            return;
        }
        let mut plans = self.plans.lock().unwrap_or_else(|p| p.into_inner());
        if plans.len() >= PLAN_CACHE_SIZE {
            plans.clear();
        }
        let vars = plan.planned.shape_dependent.then(|| variables.to_owned());
        plans.insert(Self::key(query, operation, vars), plan);
    }
}

/// Every role's schema for one metadata version.
#[derive(Debug, Default)]
pub struct Schemas {
    roles: HashMap<String, Arc<RoleSchema>>,
    fallback: Option<Arc<RoleSchema>>,
    /// The metadata, for schemas built on first use (backend-flagged variants).
    resolved: Arc<Resolved>,
    /// The served remote schemas, merged into every role's types.
    remotes: Arc<Vec<RemoteTypes>>,
    /// Schemas of backend-flagged requests, by role, built when first needed.
    flagged: Mutex<HashMap<String, Arc<RoleSchema>>>,
    /// Normalized documents of the allow-listed collections.
    pub allowlist: std::collections::HashSet<String>,
}

impl Schemas {
    /// Builds the schema of admin and of every role named by a permission.
    pub fn build(resolved: &Resolved, metadata: &crate::metadata::Metadata) -> Self {
        let remotes = super::remote::parse_all(resolved);
        let roles = model::build_all(resolved)
            .into_iter()
            .map(|(role, m)| (role, Arc::new(RoleSchema::new(m, &remotes))))
            .collect();
        let fallback = Some(Arc::new(RoleSchema::new(
            model::build(resolved, ""),
            &remotes,
        )));
        Schemas {
            roles,
            fallback,
            resolved: Arc::new(resolved.clone()),
            remotes: Arc::new(remotes),
            flagged: Mutex::new(HashMap::new()),
            allowlist: super::allowlist::build(metadata),
        }
    }

    /// The schema of a role; roles without permissions get an empty schema. Backend-flagged
    /// requests of non-admin roles see only backend-only insert permissions.
    pub fn role(&self, role: &str, backend_flagged: bool) -> Option<Arc<RoleSchema>> {
        if !backend_flagged || role == model::ADMIN || !self.roles.contains_key(role) {
            return self
                .roles
                .get(role)
                .cloned()
                .or_else(|| self.fallback.clone());
        }
        let mut flagged = self.flagged.lock().unwrap_or_else(|p| p.into_inner());
        let schema = flagged.entry(role.to_owned()).or_insert_with(|| {
            Arc::new(RoleSchema::new(
                model::build_for(&self.resolved, role, true),
                &self.remotes,
            ))
        });
        Some(schema.clone())
    }
}
