//! The GraphQL schemas of one metadata version: a [`RoleSchema`] per role (model, introspection
//! schema, plan cache), built once when the version is installed, never per request.

use super::model::{self, RoleModel};
use super::plan::{Planned, Prepared};
use super::remote::RemoteTypes;
use super::types::{Name, TypeDef, TypeSystem};
use crate::execute::SharedStatement;
use crate::resolve::Resolved;
use crate::sql::program::MutationProgram;
use crate::sql::SqlText;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// Largest document (and variables) whose plan is cached, in bytes.
const MAX_CACHED_DOCUMENT: usize = 64 * 1024;

/// Largest introspection answer remembered as it is, in bytes; larger ones are remembered
/// gzip-compressed ([`Introspected::Gzip`]).
pub const MAX_PLAIN_INTROSPECTION: usize = 1024 * 1024;

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
    /// The statement concurrent requests of this plan may share: a query's when `sql` cannot
    /// observe the session and reads no action's output; a mutation's when its one statement
    /// is an insert that requests of one session can make together.
    pub shared: Option<Arc<SharedStatement>>,
}

/// (query text, operation name, variables when they shape the plan).
/// Plans by document text; per document, by operation name and, for plans whose shape depends
/// on the variables, by the variables. Looked up with the request's `&str`: no key is built on
/// a hit.
#[derive(Default)]
struct PlanCache {
    by_document: HashMap<String, Vec<PlanEntry>>,
    entries: usize,
}

struct PlanEntry {
    operation: Option<String>,
    /// The variables (serialized) a shape-dependent plan was made for; `None`: any.
    variables: Option<String>,
    plan: Arc<CachedPlan>,
}

/// One role's schema.
pub struct RoleSchema {
    /// What the role may query and write.
    pub model: RoleModel,
    /// The role's GraphQL types, which documents are validated against and introspection
    /// answers from.
    pub types: TypeSystem,
    plans: Mutex<PlanCache>,
    /// Answers to introspection documents, by document.
    introspected: Mutex<HashMap<String, Introspected>>,
}

/// A remembered answer to an introspection document.
#[derive(Debug, Clone)]
pub enum Introspected {
    /// The answer's JSON (the `data` object).
    Json(bytes::Bytes),
    /// A whole response body, `{"data": answer}`, gzip-compressed: a large answer (tens of MB
    /// for a schema of a thousand tables) is kept at a twentieth of its size or less, sent as
    /// it is to a client that accepts gzip and decompressed, faster than it is written, for
    /// one that does not.
    Gzip(bytes::Bytes),
}

impl Introspected {
    /// Remembers an answer: as it is when it is small, compressed when it is large.
    pub fn new(answer: Vec<u8>) -> std::io::Result<Self> {
        if answer.len() <= MAX_PLAIN_INTROSPECTION {
            return Ok(Introspected::Json(answer.into()));
        }
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(
            Vec::with_capacity(answer.len() / 16),
            flate2::Compression::default(),
        );
        encoder.write_all(DATA_PREFIX)?;
        encoder.write_all(&answer)?;
        encoder.write_all(DATA_SUFFIX)?;
        Ok(Introspected::Gzip(encoder.finish()?.into()))
    }

    /// The answer's JSON (the `data` object).
    pub fn answer(&self) -> std::io::Result<bytes::Bytes> {
        let gzip = match self {
            Introspected::Json(answer) => return Ok(answer.clone()),
            Introspected::Gzip(gzip) => gzip,
        };
        let body = gunzip(gzip)?;
        if body.len() < DATA_PREFIX.len() + DATA_SUFFIX.len()
            || !(body.starts_with(DATA_PREFIX) && body.ends_with(DATA_SUFFIX))
        {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not a response body",
            ));
        }
        Ok(body.slice(DATA_PREFIX.len()..body.len() - DATA_SUFFIX.len()))
    }
}

/// Decompresses a remembered gzip body ([`Introspected::Gzip`]).
pub fn gunzip(gzip: &[u8]) -> std::io::Result<bytes::Bytes> {
    use std::io::Read;
    let mut body = Vec::with_capacity(gzip.len() * 32);
    flate2::read::GzDecoder::new(gzip).read_to_end(&mut body)?;
    Ok(body.into())
}

/// What a response body holds before and after its `data` object.
const DATA_PREFIX: &[u8] = b"{\"data\":";
const DATA_SUFFIX: &[u8] = b"}";

impl std::fmt::Debug for RoleSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleSchema")
            .field("role", &self.model.role)
            .finish()
    }
}

impl RoleSchema {
    /// The schema of a role's model: its types with the remote schemas merged in, holding
    /// the definitions of `shared` wherever they are equal (see [`TypeSystem::share`]).
    pub fn new(
        model: RoleModel,
        remotes: &[RemoteTypes],
        shared: &RwLock<HashMap<Name, Arc<TypeDef>>>,
    ) -> Self {
        let mut types = {
            let known = shared.read().unwrap_or_else(|p| p.into_inner());
            super::typegen::build_sharing(&model, &known)
        };
        for remote in remotes {
            super::remote::merge(&mut types, remote);
        }
        types.share(&mut shared.write().unwrap_or_else(|p| p.into_inner()));
        RoleSchema {
            model,
            types,
            plans: Mutex::new(PlanCache::default()),
            introspected: Mutex::new(HashMap::new()),
        }
    }

    /// A cached plan: first one valid for any variables, then one for exactly these
    /// (`variables` serializes them, called only when a shape-dependent plan is looked for).
    pub fn cached(
        &self,
        query: &str,
        operation: Option<&str>,
        variables: impl FnOnce() -> String,
    ) -> Option<Arc<CachedPlan>> {
        let plans = self.plans.lock().unwrap_or_else(|p| p.into_inner());
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

    /// The remembered answer to an introspection document.
    pub fn introspected(&self, document: &str) -> Option<Introspected> {
        let answers = self.introspected.lock().unwrap_or_else(|p| p.into_inner());
        answers.get(document).cloned()
    }

    /// Remembers the answer to an introspection document (documents up to
    /// `MAX_CACHED_DOCUMENT`, a bounded number of them: clients send the same few).
    pub fn remember_introspection(&self, document: &str, answer: Introspected) {
        if document.len() > MAX_CACHED_DOCUMENT {
            return;
        }
        let mut answers = self.introspected.lock().unwrap_or_else(|p| p.into_inner());
        if answers.len() >= INTROSPECTION_CACHE_SIZE {
            answers.clear();
        }
        answers.insert(document.to_owned(), answer);
    }

    /// Remembers a plan (`variables` serializes the request's variables, called only for a
    /// shape-dependent plan).
    pub fn remember(
        &self,
        query: &str,
        operation: Option<&str>,
        variables: impl FnOnce() -> String,
        plan: Arc<CachedPlan>,
    ) {
        let variables = plan.planned.shape_dependent.then(variables);
        // Very large documents (or variables, for shape-dependent plans) are not worth keeping.
        if query.len() > MAX_CACHED_DOCUMENT
            || variables
                .as_ref()
                .is_some_and(|v| v.len() > MAX_CACHED_DOCUMENT)
        {
            return;
        }
        let mut plans = self.plans.lock().unwrap_or_else(|p| p.into_inner());
        if plans.entries >= PLAN_CACHE_SIZE {
            *plans = PlanCache::default();
        }
        let cache = &mut *plans;
        let operation = operation.map(str::to_owned);
        let entries = cache.by_document.entry(query.to_owned()).or_default();
        let before = entries.len();
        entries.retain(|e| !(e.operation == operation && e.variables == variables));
        entries.push(PlanEntry {
            operation,
            variables,
            plan,
        });
        cache.entries = cache.entries + entries.len() - before;
    }
}

/// Every role's schema for one metadata version, each built when first asked for: installing
/// a version costs nothing per role, a role no request uses is never built, and a burst of
/// metadata changes (a GitOps sync, the controller's group commits) builds only the schemas
/// that requests between them need.
#[derive(Debug, Default)]
pub struct Schemas {
    /// Admin and every role named by a permission (a role's schema is built once).
    roles: HashMap<String, OnceLock<Arc<RoleSchema>>>,
    /// The schema of roles without permissions (nothing to query).
    fallback: OnceLock<Arc<RoleSchema>>,
    /// The served remote schemas, merged into every role's types.
    remotes: Vec<RemoteTypes>,
    /// Schemas of backend-flagged requests, by role, built when first needed.
    flagged: Mutex<HashMap<String, Arc<RoleSchema>>>,
    /// Every type definition of the role schemas built so far, by name: a role built later
    /// shares those it has equal.
    shared: RwLock<HashMap<Name, Arc<TypeDef>>>,
    /// Normalized documents of the allow-listed collections.
    pub allowlist: std::collections::HashSet<String>,
}

impl Schemas {
    /// The schemas of admin and of every role named by a permission, none built yet.
    pub fn build(resolved: &Resolved, metadata: &crate::metadata::Metadata) -> Self {
        let mut roles: HashMap<String, OnceLock<Arc<RoleSchema>>> = resolved
            .roles
            .iter()
            .map(|r| (r.clone(), OnceLock::new()))
            .collect();
        roles.insert(model::ADMIN.to_owned(), OnceLock::new());
        Schemas {
            roles,
            fallback: OnceLock::new(),
            remotes: super::remote::parse_all(resolved),
            flagged: Mutex::new(HashMap::new()),
            shared: RwLock::new(HashMap::new()),
            allowlist: super::allowlist::build(metadata),
        }
    }

    /// The schema of a role, built from `resolved` (the metadata these schemas were made for)
    /// on first use; roles without permissions get an empty schema. Backend-flagged requests
    /// of non-admin roles see only backend-only insert permissions. `built` is told how long
    /// each schema this call had to build took.
    pub fn role(
        &self,
        resolved: &Resolved,
        role: &str,
        backend_flagged: bool,
        built: impl Fn(std::time::Duration),
    ) -> Arc<RoleSchema> {
        let make = |role: &str, flagged: bool| {
            let started = std::time::Instant::now();
            let model = model::build_for(resolved, role, flagged);
            let schema = Arc::new(RoleSchema::new(model, &self.remotes, &self.shared));
            built(started.elapsed());
            schema
        };
        let Some(cell) = self.roles.get(role) else {
            return self.fallback.get_or_init(|| make("", false)).clone();
        };
        if !backend_flagged || role == model::ADMIN {
            return cell.get_or_init(|| make(role, false)).clone();
        }
        let mut flagged = self.flagged.lock().unwrap_or_else(|p| p.into_inner());
        flagged
            .entry(role.to_owned())
            .or_insert_with(|| make(role, true))
            .clone()
    }
}
