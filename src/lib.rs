//! Basalt: a GraphQL engine over Postgres whose metadata lives in a catalog inside Postgres.
//!
//! # Layout
//! The data flow of a metadata request is
//! `http` → `auth` → `ops` (parse + pure apply) → `catalog` (one transaction) →
//! `introspect` + `schema` (resolve the metadata against the database) → swap the schema cache
//! (`state`).
//!
//! - [`config`]: CLI flags and `BASALT_*` environment variables.
//! - [`embedded`]: the private PostgreSQL cluster used when no database URL is given.
//! - [`app`]: startup, the catalog watcher (reload on NOTIFY or poll), graceful shutdown.
//! - [`state`]: `AppState`, the shared state, and the served snapshot swapped on rebuilds.
//! - [`pool`]: connection pools from a database URL.
//! - [`shutdown`]: the SIGINT or SIGTERM that stops a process.
//! - [`http`]: routes, extractors and the one place errors become HTTP bodies.
//! - [`session`]: who is calling (admin secret, role).
//! - [`metadata`]: the metadata document, its names, object ids, paths and errors (the leaf).
//! - [`ops`]: `/v1/query` operations: parsing, their pure `apply`, dependencies, `run_sql`
//!   reconciliation.
//! - [`catalog`]: the `basalt_catalog` schema: migrations, load, transactional commit, NOTIFY.
//! - [`introspect`]: one query reading tables, columns, keys and functions from Postgres.
//! - [`schema`]: metadata resolved against the database, with the inconsistent objects.
//! - [`sql`]: identifier quoting; no other module formats SQL identifiers.
#![warn(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod app;
pub mod auth;
pub mod catalog;
pub mod config;
pub mod controller;
pub mod embedded;
pub mod engine;
pub mod execute;
pub mod graphql;
pub mod http;
pub mod introspect;
pub mod json_path;
pub mod metadata;
pub mod ops;
pub mod pool;
pub mod schema;
pub mod session;
pub mod shutdown;
pub mod sql;
pub mod state;
pub mod stats;
pub mod telemetry;
pub mod translate;
