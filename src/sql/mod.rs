//! SQL as values: a small typed AST of the statements Basalt generates ([`ast`], with the
//! [`names`] it prints), how Postgres types are spelled in it ([`types`]; the types themselves
//! are [`crate::db_model::PgType`]), programs of statements for writes ([`program`]), the one
//! printer ([`print`](mod@print)), identifier quoting ([`quote`]) and native queries' code read
//! into pieces ([`template`]). Nothing here knows GraphQL or
//! metadata; no other module formats SQL. See `docs/architecture.md`.

pub mod ast;
pub mod capture;
pub mod helpers;
pub mod live_change;
pub mod names;
pub mod print;
pub mod program;
pub mod quote;
pub mod template;
pub mod types;

pub use print::SqlText;
