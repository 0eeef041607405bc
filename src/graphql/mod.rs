//! The GraphQL layer: per role and metadata version, what the role may do ([`model`]) and the
//! GraphQL types that follow ([`typegen`], as plain data in [`types`]); introspection
//! ([`introspection`]); turning documents into plans ([`plan`], producing [`ir`]) that
//! [`crate::translate`] compiles to SQL; the schemas and plan caches served ([`schemas`]) and
//! the allow-list ([`allowlist`]). No SQL text and no IO here, except running the introspection
//! schema. See `docs/architecture.md`.

pub mod allowlist;
pub mod introspection;
pub mod ir;
pub mod model;
pub mod plan;
pub mod remote;
pub mod schemas;
pub mod typegen;
pub mod types;
