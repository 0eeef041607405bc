//! Basalt: a GraphQL engine over Postgres whose metadata lives in a catalog inside Postgres.
//!
//! # Layout
//! The stages, their signatures and the arrows between them are in `docs/architecture.md`.
//! A metadata request flows `http` → `auth` → `ops` (parse + pure apply) → `catalog` (one
//! transaction) → `catalog::database` + `resolve` (resolve the metadata against the database) → swap
//! what is served (`state`). A GraphQL request flows `http` → `auth` → `engine` →
//! `graphql::plan` (IR) → `translate` (SQL AST) → `sql::print` → `execute` → Postgres's bytes.
//!
//! - [`config`], [`telemetry`]: CLI flags and `BASALT_*` environment variables; logging.
//! - [`embedded`]: the private PostgreSQL cluster used when no database URL is given.
//! - [`app`]: startup, the catalog watcher (reload on NOTIFY or poll), graceful shutdown.
//! - [`state`]: `AppState`, the shared state, and the served snapshot swapped on rebuilds.
//! - [`pool`]: connection pools from a database URL.
//! - [`shutdown`]: the SIGINT or SIGTERM that stops a process.
//! - [`http`]: routes, extractors and the one place errors become HTTP bodies.
//! - [`auth`], [`session`]: who is calling (admin secret, JWT, webhook) and as which role.
//! - [`metadata`]: the metadata document, its names, object ids, paths and errors (the leaf).
//! - [`ops`]: `/v1/query` operations: parsing, their pure `apply`, dependencies, `run_sql`
//!   reconciliation.
//! - [`catalog`]: the `basalt_catalog` schema: migrations, load, transactional commit, NOTIFY.
//! - [`capture`]: the Postgres triggers that write event-trigger row changes to the event log
//!   (DDL, pure).
//! - [`names`]: the schema-qualified name every layer shares.
//! - [`db_model`]: the database model (tables, columns, keys, functions, Postgres types);
//!   `catalog::database` reads it.
//! - [`resolve`]: metadata resolved against the database model, with the inconsistent objects
//!   and permissions as typed rules.
//! - [`graphql`]: per role, what it may do, its GraphQL types, and documents planned into IR.
//! - [`translate`]: IR → SQL AST (queries as one statement, mutations as programs).
//! - [`sql`]: the SQL AST, Postgres types, programs, the one printer and quoting.
//! - [`execute`]: binding, prepared statements, running statements and programs.
//! - [`engine`]: one GraphQL request end to end.
//! - [`events`]: event-trigger delivery workers (claim, deliver, retry, record, clean up).
//! - [`live`]: subscriptions as multiplexed live queries, polled per group of subscribers.
//! - [`controller`]: the Kubernetes controller and `basalt export`.
//! - [`preview`]: `basalt diff`, what applying resources or a metadata file would change.
//! - [`stats`]: work counters the tests count.
//! - [`metrics`]: Prometheus `/metrics`: request counts and latencies, and the counters, pool,
//!   catalog and live-query state read at scrape time.
//! - [`json_path`]: JSON select paths.
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod actions;
pub mod app;
pub mod async_actions;
pub mod auth;
pub mod capture;
pub mod catalog;
pub mod config;
pub mod controller;
pub mod db_model;
pub mod embedded;
pub mod engine;
pub mod events;
pub mod execute;
pub mod graphql;
pub mod http;
pub mod json_path;
pub mod live;
pub mod metadata;
pub mod metrics;
pub mod names;
pub mod ops;
pub mod outgoing;
pub mod pool;
pub mod preview;
pub mod remote;
pub mod resolve;
pub mod session;
pub mod shutdown;
pub mod sql;
pub mod state;
pub mod stats;
pub mod telemetry;
pub mod transaction;
pub mod translate;
