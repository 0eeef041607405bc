//! The state a process's last write left ([`LastWrite`]), kept so that its next write starts
//! from it instead of reading the catalog and the database model again: for a large document,
//! loading, reading the model and resolving the state before a change are a large part of a
//! metadata operation, and this replaces them with one query of the change counters
//! ([`crate::catalog::versions::read`]).
//!
//! A last write is used only while it is exactly what reading again would find: the catalog version
//! and the DDL count (`basalt_catalog.change_counts`, kept by an event trigger) must both be the
//! ones it was recorded at, so a peer's write or any DDL, Basalt's or not, sends the next
//! request back to the database. What those counters do not cover is never cached: a document
//! with enum tables (their rows change without DDL) or remote schemas (their stored
//! introspection changes with `reload_remote_schema`), and a database without the DDL event
//! trigger (no superuser at migration). `reload_metadata` always reads everything again.

use crate::catalog::versions::Versions;
use crate::catalog::CatalogVersion;
use crate::db_model::DbModel;
use crate::metadata::Metadata;
use crate::ops::Op;
use std::sync::{Arc, Mutex};

/// A committed state: the document, the database model it was resolved against and the
/// resolution, at the counters it was read or written at.
#[derive(Debug)]
pub struct LastWrite {
    /// Catalog version and DDL count (`Some`) when this was recorded.
    pub versions: Versions,
    /// The database model (shared with the write that recorded it).
    pub db: Arc<DbModel>,
    /// The document, its version and its resolution against `db` (shared with what the
    /// replica serves).
    pub catalog: Arc<CatalogVersion>,
}

impl LastWrite {
    /// Whether a document can be cached at all (see the module's notes).
    pub fn cacheable(metadata: &Metadata) -> bool {
        metadata.remote_schemas.is_empty() && metadata.enum_tables().is_empty()
    }

    /// Whether `ops` may start from this state when the database stands at `now`.
    fn serves<'o>(&self, mut ops: impl Iterator<Item = &'o Op>, now: &Versions) -> bool {
        now.ddl.is_some()
            && now.ddl == self.versions.ddl
            && now.catalog == self.versions.catalog
            && ops.all(|op| {
                !op.may_introspect() && !op.rereads_database() && op.enum_candidates().is_empty()
            })
    }

    /// The state a transaction that committed `catalog` leaves, if it may be kept: `started`
    /// and `ended` are the counters read once the catalog row was locked and just before the
    /// commit. Nothing else may have changed in between: no DDL (this transaction's own, from
    /// `run_sql` or capture triggers, or anyone's) and no other catalog write.
    pub(super) fn after(
        started: &Versions,
        ended: Versions,
        db: Arc<DbModel>,
        catalog: &Arc<CatalogVersion>,
    ) -> Option<LastWrite> {
        (ended.ddl == started.ddl
            && ended.catalog == catalog.version
            && LastWrite::cacheable(&catalog.metadata))
        .then(|| LastWrite {
            versions: ended,
            db,
            catalog: catalog.clone(),
        })
    }
}

/// The last [`LastWrite`] of one process, shared by its writers (see [`super::Writer::Api`]).
#[derive(Debug, Default)]
pub struct LastWriteCache(Mutex<Option<Arc<LastWrite>>>);

impl LastWriteCache {
    /// The last write `ops` may start from, given the counters read in their transaction.
    pub(super) fn take_for<'o>(
        &self,
        ops: impl Iterator<Item = &'o Op>,
        now: &Versions,
    ) -> Option<Arc<LastWrite>> {
        let guard = match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        guard.clone().filter(|last| last.serves(ops, now))
    }

    /// Records the state a write committed, unless a later one is already recorded (two
    /// writers of one process finishing out of order).
    pub(super) fn set(&self, last: LastWrite) {
        let mut guard = match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if guard
            .as_ref()
            .is_some_and(|held| held.versions.catalog > last.versions.catalog)
        {
            return;
        }
        *guard = Some(Arc::new(last));
    }
}
