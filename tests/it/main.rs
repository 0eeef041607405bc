//! Integration tests: Basalt's HTTP API against a real PostgreSQL.
//!
//! One folder per area of the code. `slow/` is the slow tier (real processes killed or soaked,
//! a browser, a real cluster): `cargo test --test it -- --skip slow::` runs the rest alone,
//! `cargo test --test it slow::` runs only the slow tier; `docs/testing.md` says more.

mod harness;

mod actions;
mod architecture;
mod auth;
mod controller;
mod docs;
mod events;
mod functions;
mod graphql;
mod http;
mod metadata;
mod native_queries;
mod properties;
mod remote_schemas;
mod rest;
mod scheduled;
mod slow;
