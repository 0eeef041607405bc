//! The GraphQL layer: per-role models and type systems ([`model`], [`types`]), introspection
//! ([`introspection`]), and turning documents into plans ([`plan`]) that [`crate::translate`]
//! compiles to SQL. No SQL text and no IO here, except running the introspection schema.

pub mod allowlist;
pub mod introspection;
pub mod ir;
pub mod model;
pub mod mutations;
pub mod plan;
mod plan_mutation;
pub mod schemas;
pub mod types;
