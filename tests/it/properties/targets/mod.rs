//! The three untrusted-input parsers as pure targets, and generators for their inputs.
//!
//! Shared by the property tests (`tests/it/properties/mod.rs`) and the cargo-fuzz targets
//! (`fuzz/fuzz_targets/*.rs` include this module with `#[path]`), so both drive the same code
//! with the same oracles. Everything here runs without a database: a fixed database model
//! (`tests/goldenfiles/blog/db.json`, the blog fixture introspected) and fixed metadata (the
//! blog metadata plus the `editor` role's rules, `tests/goldenfiles/blog/permissions/rules/`).
//!
//! - [`compile_graphql`] (`graphql.rs`): a GraphQL request, as a role, through prepare → plan →
//!   translate → print, as a plan-cache miss in the engine does.
//! - [`apply_request`] (`metadata_request.rs`): a `/v1/query` body through `Op::parse` and
//!   `ops::apply`, as the metadata transaction runs it between loading and storing (`run_sql`
//!   and the event log need a database and only parse here).
//! - [`check_permission_case`] (`permission.rs`): a permission (its BoolExps above all) through
//!   `resolve::check_bool_exp`, `resolve::check_permission` and `create_<kind>_permission`, and,
//!   when accepted, the SQL of the role's root fields.
//!
//! A target returns `Err` for input it rejects and panics on a defect: a panic anywhere, or an
//! oracle failing (an accepted document whose variables fail the plan cache's re-check, an
//! accepted metadata document that does not reload from its stored JSON, a role schema whose
//! introspection cannot be built).
//!
//! Generators read their choices from a byte string (`Tape`, in `tape.rs`): the fuzzer's input,
//! or bytes proptest draws and shrinks. A byte of 0 (or a tape run out) is always the plainest
//! choice, so shrinking towards zeros and shorter tapes gives small documents. This file holds
//! the fixture every target shares.

// Each fuzz target uses one of the three targets; the others are unused there.
#![allow(dead_code, unused_imports)]

mod graphql;
mod metadata_request;
mod permission;
mod tape;

pub use graphql::*;
pub use metadata_request::*;
pub use permission::*;

use basalt::catalog::CatalogVersion;
use basalt::db_model::{DbModel, DbTable};
use basalt::engine::{ApiVersion, RoleApi};
use basalt::graphql::plan;
use basalt::metadata::types::QualifiedTable;
use basalt::metadata::Metadata;
use basalt::ops;
use basalt::resolve::{self, Resolution};
use std::sync::{Arc, OnceLock};

/// The blog fixture as introspected (no OIDs).
const DB_JSON: &str = include_str!("../../../goldenfiles/blog/db.json");
/// The blog metadata with the `editor` role's rules.
pub const METADATA_JSON: &str =
    include_str!("../../../goldenfiles/blog/permissions/rules/metadata.json");

/// Planning limits, as the server's defaults.
const LIMITS: plan::Limits = plan::Limits {
    max_depth: 64,
    max_root_fields: 100,
};

/// Parsing limits of `/v1/query`.
const OP_LIMITS: ops::Limits = ops::Limits { max_batch_size: 8 };

/// A role and whether requests are backend-flagged.
#[derive(Debug, Clone, Copy)]
pub struct Session {
    /// The role.
    pub role: &'static str,
    /// `X-Svc-Use-Backend-Only-Permissions: true`.
    pub backend_only: bool,
}

/// The sessions GraphQL requests run as: admin, every role of the metadata (backend once
/// flagged), and a role without permissions.
pub const SESSIONS: &[Session] = &[
    Session {
        role: "admin",
        backend_only: false,
    },
    Session {
        role: "user",
        backend_only: false,
    },
    Session {
        role: "editor",
        backend_only: false,
    },
    Session {
        role: "guest",
        backend_only: false,
    },
    Session {
        role: "backend",
        backend_only: false,
    },
    Session {
        role: "backend",
        backend_only: true,
    },
    Session {
        role: "nobody",
        backend_only: false,
    },
];

/// The fixed database model and metadata, resolved, with every role's schema.
pub struct Fixture {
    /// The blog database.
    pub db: DbModel,
    /// The metadata.
    pub metadata: Metadata,
    /// The metadata resolved against the database.
    pub cache: Resolution,
    /// Every role's schema, as the server builds them.
    pub schemas: ApiVersion,
}

/// What the engine serves for a document resolved as `cache`: every role's schema, built as
/// the server builds them.
fn api_version(cache: &Resolution, metadata: &Metadata) -> ApiVersion {
    ApiVersion::new(
        Arc::new(CatalogVersion {
            version: 1,
            metadata: metadata.clone(),
            resolution: cache.clone(),
            ..Default::default()
        }),
        Default::default(),
    )
}

impl Fixture {
    /// The schema requests of `session` are planned against.
    pub fn role(&self, session: Session) -> Arc<RoleApi> {
        let counters = basalt::stats::Counters::default();
        self.schemas
            .role(session.role, session.backend_only, &counters)
    }

    /// Tracked tables.
    fn tables(&self) -> Vec<&QualifiedTable> {
        self.cache.resolved.tables.keys().collect()
    }

    fn db_table(&self, table: &QualifiedTable) -> Option<&DbTable> {
        self.cache.resolved.tables.get(table).map(|t| &*t.db)
    }
}

/// The fixture, built once per process.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let db = DbModel::from_json(serde_json::from_str(DB_JSON).expect("db.json"))
            .expect("db.json is a database model");
        let metadata: Metadata = serde_json::from_str(METADATA_JSON).expect("metadata.json");
        let cache = resolve::resolve(&metadata, &db);
        assert!(
            cache.inconsistencies.is_empty(),
            "{:?}",
            cache.inconsistencies
        );
        let schemas = api_version(&cache, &metadata);
        Fixture {
            db,
            metadata,
            cache,
            schemas,
        }
    })
}

/// The role and session variables a request for `session` runs with over HTTP.
pub fn headers(session: Session) -> Vec<(&'static str, &'static str)> {
    let mut headers = vec![
        ("x-svc-role", session.role),
        ("x-svc-user-id", "1"),
        ("x-svc-allowed-ids", "{1,2,3}"),
    ];
    if session.backend_only {
        headers.push(("x-svc-use-backend-only-permissions", "true"));
    }
    headers
}
