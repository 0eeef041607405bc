//! The metadata document (format version 2, see `docs/metadata-api.md`) as serde types, one
//! file per part of the document. Every type is re-exported here, so paths stay
//! `crate::metadata::types::X`.
//!
//! Serialization is the export format (`docs/metadata-api.md`, "`export_metadata`"): keys in
//! its order, empty parts omitted. BoolExps
//! and presets stay JSON values, stored exactly as submitted (`$eq` and `_eq` both survive).
//! Owns only the shapes; it must not depend on anything outside `metadata`.

mod actions;
mod collections;
mod computed_fields;
mod cron_triggers;
mod custom_types;
mod document;
mod events;
mod functions;
mod names;
mod native_queries;
mod permissions;
mod relationships;
mod remote_relationships;
mod rest;
mod roles;
mod tables;

pub use actions::*;
pub use collections::*;
pub use computed_fields::*;
pub use cron_triggers::*;
pub use custom_types::*;
pub use document::*;
pub use events::*;
pub use functions::*;
pub use names::*;
pub use native_queries::*;
pub use permissions::*;
pub use relationships::*;
pub use remote_relationships::*;
pub use rest::*;
pub use roles::*;
pub use tables::*;

/// `skip_serializing_if` for flags exported only when set.
fn is_false(b: &bool) -> bool {
    !*b
}
