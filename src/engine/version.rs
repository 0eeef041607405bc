//! What the engine serves for one metadata version ([`ApiVersion`]): the catalog state it was
//! built from, the allow-list, the API limits of each role, and per role a [`RoleApi`] (the
//! role's GraphQL schema, its plan cache and its remembered introspection answers). Built when
//! the version is installed, each role's part when a request first needs it; replaced whole by
//! the next version.

use super::introspection::AnswerCache;
use super::plan_cache::PlanCache;
use crate::catalog::CatalogVersion;
use crate::graphql::schemas::{self, RoleSchema, SchemaBuilder};
use crate::limits::RoleLimits;
use crate::stats::Counters;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

/// One role's API at one version.
#[derive(Debug)]
pub struct RoleApi {
    pub schema: RoleSchema,
    /// Plans compiled for this role's requests.
    pub(super) plans: PlanCache,
    /// Answers to introspection documents, by document.
    pub(super) answers: AnswerCache,
}

/// The GraphQL API of one metadata version. Building it costs nothing per role: a role's
/// schema is built by the first request that needs it, so a role no request uses is never
/// built, and a burst of metadata changes (a GitOps sync, the controller's group commits)
/// builds only the schemas that requests between them need.
#[derive(Debug)]
pub struct ApiVersion {
    /// The catalog state served: version, document, resolution.
    pub catalog: Arc<CatalogVersion>,
    builder: SchemaBuilder,
    /// Admin and every role named by a permission (each built once).
    roles: HashMap<String, OnceLock<Arc<RoleApi>>>,
    /// The schema of roles without permissions (nothing to query).
    fallback: OnceLock<Arc<RoleApi>>,
    /// Backend-flagged requests' schemas, by role, built when first needed.
    flagged: Mutex<HashMap<String, Arc<RoleApi>>>,
    /// Normalized documents of the allow-listed collections.
    pub allowlist: HashSet<String>,
    /// What each role is held to by the metadata's API limits.
    pub limits: RoleLimits,
}

impl ApiVersion {
    /// The API of `catalog`, no role's schema built yet.
    pub fn new(
        catalog: Arc<CatalogVersion>,
        settings: crate::graphql::model::ModelSettings,
    ) -> Self {
        let resolved = &catalog.resolution.resolved;
        let roles = schemas::roles(resolved)
            .map(|role| (role.to_owned(), OnceLock::new()))
            .collect();
        ApiVersion {
            builder: SchemaBuilder::new(resolved, settings),
            roles,
            fallback: OnceLock::new(),
            flagged: Mutex::new(HashMap::new()),
            allowlist: crate::graphql::allowlist::build(&catalog.metadata),
            limits: RoleLimits::new(&catalog.metadata.api_limits),
            catalog,
        }
    }

    /// The metadata version.
    pub fn version(&self) -> i64 {
        self.catalog.version
    }

    /// The API of a role, its schema built on first use (counted in
    /// [`Counters::role_schema_builds`] and timed in [`Counters::schema_build_seconds`]).
    /// Roles without permissions share an empty schema; backend-flagged requests of a
    /// non-admin role get a schema of their own.
    pub fn role(&self, role: &str, backend_flagged: bool, counters: &Counters) -> Arc<RoleApi> {
        let make = |role: &str, flagged: bool| {
            let started = std::time::Instant::now();
            let schema = self
                .builder
                .build(&self.catalog.resolution.resolved, role, flagged);
            Counters::bump(&counters.role_schema_builds);
            counters
                .schema_build_seconds
                .observe(started.elapsed().as_secs_f64());
            Arc::new(RoleApi {
                schema,
                plans: PlanCache::default(),
                answers: AnswerCache::default(),
            })
        };
        let Some(cell) = self.roles.get(role) else {
            return self.fallback.get_or_init(|| make("", false)).clone();
        };
        if !backend_flagged || role == crate::graphql::model::ADMIN {
            return cell.get_or_init(|| make(role, false)).clone();
        }
        let mut flagged = self.flagged.lock().unwrap_or_else(|p| p.into_inner());
        flagged
            .entry(role.to_owned())
            .or_insert_with(|| make(role, true))
            .clone()
    }
}
