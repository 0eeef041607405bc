//! The GraphQL layer: per role and metadata version, what the role may do ([`model`]) and the
//! GraphQL types that follow ([`typegen`], as plain data in [`types`]); introspection answered
//! from those types ([`introspection`]); turning documents into plans ([`plan`], producing
//! [`ir`]) that [`crate::translate`] compiles to SQL; the schemas and plan caches served
//! ([`schemas`]), the allow-list ([`allowlist`]), the size of an operation as the API limits
//! count it ([`measure`]) and remote schemas' types ([`remote`], checked whole by
//! [`checked`]). No SQL text and no IO here. See `docs/architecture.md`.

pub mod allowlist;
pub mod checked;
pub mod introspection;
pub mod ir;
pub mod measure;
pub mod model;
pub mod openapi;
pub mod plan;
pub mod remote;
pub mod remote_join;
pub mod remote_to_table;
pub mod rest;
pub mod schemas;
pub mod typegen;
pub mod types;
