//! The metadata document and the `/v1/query` operations on it.
//!
//! [`types`] is the document; [`ops`] parses `{type, args, version}` requests into [`ops::Op`]
//! and applies them as pure functions `Metadata × args → Metadata`, consulting the read-only
//! database model and the resolved schema (from [`crate::schema`]) to validate. No IO here.

pub mod dependencies;
pub mod error;
pub mod ids;
pub mod objects;
pub mod ops;
pub mod parse;
pub mod path;
pub mod schema_changes;
pub mod types;

pub use error::{Code, MetadataError};
pub use ids::{ObjectId, PermissionKind};
pub use path::JsonPath;
pub use types::Metadata;
