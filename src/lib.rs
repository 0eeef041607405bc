//! Basalt: a GraphQL engine over Postgres whose metadata lives in a catalog inside Postgres.
//!
//! # Layout
//! `docs/architecture.md` gives the paths, the modules, who may use whom and why.
//! A GraphQL request flows `http` → `auth` → `engine` (parse → validate → plan, cached →
//! execute → respond) over `graphql`, `translate`, `sql` and `execute`. A metadata request
//! flows `http` → `auth` → `ops` (parse) → `transaction` (one Postgres transaction: `ops`
//! applied, `resolve`, stored in `catalog`) → the engine serves the new version.
//!
//! Foundations:
//! - [`names`]: the schema-qualified name every layer shares.
//! - [`metadata`]: the document, its paths, object ids, ownership and errors.
//! - [`db_model`]: the database model and Postgres's types; `catalog::database` reads it.
//! - [`session`]: the caller as a role and session variables; the session headers' names.
//! - [`sql`]: the SQL AST, the one printer, quoting: every SQL text Basalt builds.
//!
//! Metadata:
//! - [`resolve`]: metadata resolved against the database model; permissions as typed rules.
//! - [`ops`]: `/v1/query` operations: parsing, their pure `apply`, typed answers.
//! - [`capture`]: the capture triggers an event trigger needs.
//! - [`catalog`]: storage in `basalt_catalog`: migrations, load and store, notifications.
//! - [`transaction`]: the metadata transaction, group commits, the last-write shortcut.
//!
//! GraphQL:
//! - [`graphql`]: per role, what it may do, its types, and documents planned into IR.
//! - [`translate`]: IR → SQL AST (queries as one statement, mutations as programs).
//! - [`execute`]: binding, prepared and shared statements, Postgres's bytes.
//! - [`engine`]: one request through its stages; what is served per version.
//! - [`limits`]: each role's API limits per version; the per-process rate limiter.
//! - [`live`]: subscriptions as multiplexed live queries.
//! - [`actions`], [`remote`]: calling action handlers and remote GraphQL servers.
//!
//! Server, workers and tools:
//! - [`http`]: routes and the one place errors become HTTP bodies.
//! - [`auth`]: who is calling (admin secret, JWT, webhook).
//! - [`state`], [`app`]: the shared state and rebuilds; startup, the catalog watcher, shutdown.
//! - [`events`], [`async_actions`]: the workers delivering event triggers and asynchronous
//!   actions.
//! - [`controller`], [`preview`]: the Kubernetes controller and its kinds; `basalt diff`.
//! - [`config`], [`telemetry`], [`embedded`], [`pool`], [`shutdown`], [`stats`], [`metrics`],
//!   [`json_path`], [`outgoing`]: the CLI, logs and traces, the private Postgres, pools,
//!   signals, work counters, request metrics, JSON paths, retries of calls that only read.
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod actions;
pub mod app;
pub mod async_actions;
pub mod auth;
pub mod capture;
pub mod catalog;
pub mod config;
pub mod controller;
pub mod cron;
pub mod db_model;
pub mod embedded;
pub mod engine;
pub mod events;
pub mod execute;
pub mod graphql;
pub mod http;
pub mod json_path;
pub mod limits;
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
pub mod scheduled;
pub mod session;
pub mod shutdown;
pub mod sql;
pub mod state;
pub mod stats;
pub mod telemetry;
pub mod transaction;
pub mod translate;
