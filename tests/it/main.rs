//! Integration tests: Basalt's HTTP API against a real PostgreSQL.

mod harness;

mod actions;
mod auth;
mod catalog;
mod console;
mod controller;
mod counters;
mod crashes;
mod crds;
mod diff;
mod e2e_cluster;
mod events;
mod events_delivery;
mod goldenfiles;
mod graphql_introspection;
mod graphql_mutations;
mod graphql_queries;
mod http;
mod injection;
mod kube_fake;
mod manage;
mod permissions;
mod properties;
mod relationships;
mod remote_schemas;
mod remote_server;
mod run_sql;
mod shared_statements;
mod soak;
mod sql_snapshots;
mod subscriptions;
mod tables;
mod token_attacks;
mod traces;
mod types_and_collections;
