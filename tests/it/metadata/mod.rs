//! The metadata API (`/v1/query`) and the catalog that stores it: tables, relationships,
//! permissions (with the root fields they allow), custom types and collections, `run_sql`,
//! export and replace, the catalog across processes, and `basalt diff`'s preview of a change.

mod catalog;
mod diff;
mod manage;
mod permissions;
mod relationships;
mod root_fields;
mod run_sql;
mod tables;
mod types_and_collections;
