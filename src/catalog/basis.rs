//! The state a replica's last write left, kept so that its next write starts from it instead
//! of reading the catalog and introspecting the database again. At 1,000 tables loading the
//! document, introspecting and resolving the state before a change cost about half of a
//! metadata operation; a [`Basis`] replaces them with one query of the change counters
//! ([`super::versions::read`]).
//!
//! A basis is used only while it is exactly what reading again would find: the catalog version
//! and the DDL count (`basalt_catalog.change_counts`, kept by an event trigger) must both be the
//! ones it was recorded at, so a peer's write or any DDL, Basalt's or not, sends the next
//! request back to the database. What those counters do not cover is never cached: a document
//! with enum tables (their rows change without DDL) or remote schemas (their stored
//! introspection changes with `reload_remote_schema`), and a database without the DDL event
//! trigger (no superuser at migration). `reload_metadata` always reads everything again.

use super::versions::Versions;
use super::Snapshot;
use crate::db_model::DbModel;
use crate::metadata::Metadata;
use crate::ops::Op;
use std::sync::{Arc, Mutex};

/// A committed state: the document, the database model it was resolved against and the
/// resolution, at the counters it was read or written at.
#[derive(Debug)]
pub struct Basis {
    /// Catalog version and DDL count (`Some`) when this was recorded.
    pub versions: Versions,
    /// The database model (shared with the write that recorded it).
    pub db: Arc<DbModel>,
    /// The document, its version and its resolution against `db` (shared with what the
    /// replica serves).
    pub snapshot: Arc<Snapshot>,
}

impl Basis {
    /// Whether a document can be cached at all (see the module's notes).
    pub fn cacheable(metadata: &Metadata) -> bool {
        metadata.remote_schemas.is_empty() && metadata.enum_tables().is_empty()
    }

    /// Whether `ops` may start from this basis when the database stands at `now`.
    fn serves<'o>(&self, mut ops: impl Iterator<Item = &'o Op>, now: &Versions) -> bool {
        now.ddl.is_some()
            && now.ddl == self.versions.ddl
            && now.catalog == self.versions.catalog
            && ops.all(|op| {
                !op.may_introspect() && !op.rereads_database() && op.enum_candidates().is_empty()
            })
    }

    /// The basis a transaction that committed `snapshot` leaves, if it may be kept: `started`
    /// and `ended` are the counters read once the catalog row was locked and just before the
    /// commit. Nothing else may have changed in between: no DDL (this transaction's own, from
    /// `run_sql` or capture triggers, or anyone's) and no other catalog write.
    pub(super) fn after(
        started: &Versions,
        ended: Versions,
        db: Arc<DbModel>,
        snapshot: &Arc<Snapshot>,
    ) -> Option<Basis> {
        (ended.ddl == started.ddl
            && ended.catalog == snapshot.version
            && Basis::cacheable(&snapshot.metadata))
        .then(|| Basis {
            versions: ended,
            db,
            snapshot: snapshot.clone(),
        })
    }
}

/// The last [`Basis`] of one process, shared by its writers (see [`super::Writer::Api`]).
#[derive(Debug, Default)]
pub struct BasisCache(Mutex<Option<Arc<Basis>>>);

impl BasisCache {
    /// The basis `ops` may start from, given the counters read in their transaction.
    pub(super) fn take_for<'o>(
        &self,
        ops: impl Iterator<Item = &'o Op>,
        now: &Versions,
    ) -> Option<Arc<Basis>> {
        let guard = match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        guard.clone().filter(|basis| basis.serves(ops, now))
    }

    /// Records the state a write committed, unless a later one is already recorded (two
    /// writers of one process finishing out of order).
    pub(super) fn set(&self, basis: Basis) {
        let mut guard = match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if guard
            .as_ref()
            .is_some_and(|held| held.versions.catalog > basis.versions.catalog)
        {
            return;
        }
        *guard = Some(Arc::new(basis));
    }
}
