//! GraphQL over HTTP and WebSocket on the blog fixture: queries, mutations, introspection,
//! subscriptions, statements shared by concurrent requests, and the SQL generated for them
//! (translation goldenfiles in `tests/goldenfiles/`, insta snapshots in `snapshots/`).

mod goldenfiles;
pub(crate) mod introspection;
mod mutations;
mod queries;
mod shared_statements;
mod sql_snapshots;
pub(crate) mod subscriptions;
