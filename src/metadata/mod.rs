//! The metadata document and what names its parts: [`types`] (the document as serde
//! types), [`ids`] (object identities and definition JSON), [`path`] (JSON paths of errors),
//! [`error`] (`MetadataError`), [`parse`] (typed parsing with error paths) and [`objects`]
//! (the document as ownable objects, drift, hashing), [`place`] (objects put into a document
//! and taken out).
//!
//! The leaf of the crate: must not depend on anything outside `metadata` (the operations on
//! the document live in the crate's `ops` module, above `resolve`). Pure: no IO. See
//! `docs/metadata-api.md` and `docs/architecture.md`.

pub mod digest;
pub mod error;
pub mod ids;
pub mod objects;
pub mod parse;
pub mod path;
pub mod place;
pub mod types;

pub use error::{Code, MetadataError, Missing};
pub use ids::{ObjectId, PermissionKind};
pub use path::JsonPath;
pub use types::Metadata;
