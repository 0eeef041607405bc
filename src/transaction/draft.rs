//! What a metadata transaction holds while its operations run ([`Draft`]): the document so
//! far, the database as the next operation sees it, the remote schemas' stored state, and the
//! last resolution made, from which the next one starts when the database model is the same
//! (a `bulk`'s operations and a group's writes each start from the previous one's).

use super::last_write::LastWrite;
use crate::db_model::{DbModel, QualifiedName};
use crate::metadata::Metadata;
use crate::resolve::remote::{Fetched, Remotes};
use crate::resolve::{self, Resolution};
use crate::session::Session;
use std::sync::Arc;

/// A transaction's state between its operations.
pub(super) struct Draft {
    /// The document so far.
    pub(super) metadata: Metadata,
    /// The database as the next operation sees it (shared with `db_before` and the last
    /// write until an operation changes it).
    pub(super) db: Arc<DbModel>,
    /// The caller (`invoke_event_trigger` records it).
    pub(super) session: Session,
    /// Tables whose enum rows each read of the database model loads.
    pub(super) enum_candidates: Vec<QualifiedName>,
    /// An operation enforced its own consistency rules (replace, reload, unchecked SQL).
    pub(super) own_consistency_rules: bool,
    /// The database model changed: rebuild here and on peers even without a metadata write.
    pub(super) rebuild: bool,
    /// The database as the transaction found it.
    pub(super) db_before: Arc<DbModel>,
    /// Remote schemas' stored state with this transaction's introspection results laid over.
    pub(super) remotes: Remotes,
    /// Remote schemas' stored state as the transaction found it.
    pub(super) remotes_before: Remotes,
    /// The last resolution made (or the last write's, when the transaction started from it).
    resolved: Option<ResolvedDocument>,
}

/// A document resolved against a database model.
struct ResolvedDocument {
    db: Arc<DbModel>,
    metadata: Metadata,
    resolution: ResolutionRef,
}

/// A resolution a transaction holds: the last write's, shared, or one of its own.
enum ResolutionRef {
    Shared(Arc<LastWrite>),
    Own(Box<Resolution>),
}

impl ResolvedDocument {
    fn schema(&self) -> &Resolution {
        match &self.resolution {
            ResolutionRef::Shared(last) => &last.catalog.resolution,
            ResolutionRef::Own(schema) => schema,
        }
    }
}

impl Draft {
    /// A draft of `metadata` over `db`, with the remote schemas' `stored` state and this
    /// transaction's introspections of them (`fetched`), starting from `last` (the last
    /// write's state, when it is what the transaction found).
    pub(super) fn new(
        metadata: Metadata,
        db: Arc<DbModel>,
        (stored, fetched): (Remotes, &[Fetched]),
        session: Session,
        enum_candidates: Vec<QualifiedName>,
        last: Option<&Arc<LastWrite>>,
    ) -> Self {
        let mut remotes = stored.clone();
        remotes.record(fetched);
        let resolved = last.map(|last| ResolvedDocument {
            db: last.db.clone(),
            metadata: last.catalog.metadata.clone(),
            resolution: ResolutionRef::Shared(last.clone()),
        });
        Draft {
            metadata,
            db_before: db.clone(),
            db,
            session,
            enum_candidates,
            own_consistency_rules: false,
            rebuild: false,
            remotes_before: stored,
            remotes,
            resolved,
        }
    }

    /// The current document resolved (kept for the next operation), and what an operation
    /// reads beside it: the document, the database model and the remote schemas.
    pub(super) fn view(&mut self) -> (&Resolution, &Metadata, &Arc<DbModel>, &Remotes) {
        let next = current(
            self.resolved.take(),
            &self.metadata,
            &self.db,
            &self.remotes,
        );
        let schema = self.resolved.insert(next).schema();
        (schema, &self.metadata, &self.db, &self.remotes)
    }

    /// The current document's resolution, taken to keep (the next one starts afresh).
    /// Asks Postgres what the model does not know yet of the document's native queries and
    /// logical models, on the transaction's connection (so its uncommitted DDL is seen).
    pub(super) async fn probe(
        &mut self,
        tx: &impl tokio_postgres::GenericClient,
    ) -> Result<(), crate::catalog::CatalogError> {
        if !crate::catalog::probes::needs(&self.db, &self.metadata) {
            return Ok(());
        }
        let db = Arc::make_mut(&mut self.db);
        crate::catalog::probes::probe(tx, db, &self.metadata).await?;
        Ok(())
    }

    pub(super) fn take_resolution(&mut self) -> Resolution {
        let last = self.resolved.take();
        match current(last, &self.metadata, &self.db, &self.remotes).resolution {
            ResolutionRef::Own(schema) => *schema,
            ResolutionRef::Shared(last) => last.catalog.resolution.clone(),
        }
    }

    /// The document as the transaction found it, resolved against the database as it found
    /// it (what "no new inconsistency" compares with when the transaction did not start from
    /// its process's last write).
    pub(super) fn resolution_before(&self, metadata: &Metadata) -> Resolution {
        resolve::resolve_with(metadata, &self.db_before, &self.remotes_before)
    }
}

/// `metadata` resolved against `db`: `last` itself when it is that already, resolved from it
/// when it is of the same model (only what the changes reach), otherwise resolved whole.
fn current(
    last: Option<ResolvedDocument>,
    metadata: &Metadata,
    db: &Arc<DbModel>,
    remotes: &Remotes,
) -> ResolvedDocument {
    let own = |schema| ResolvedDocument {
        db: db.clone(),
        metadata: metadata.clone(),
        resolution: ResolutionRef::Own(Box::new(schema)),
    };
    match last.filter(|l| Arc::ptr_eq(&l.db, db)) {
        Some(same) if same.metadata == *metadata => same,
        Some(earlier) => {
            let _span = tracing::debug_span!("schema.rebuild", incremental = true).entered();
            let schema =
                resolve::resolve_from(earlier.schema(), &earlier.metadata, metadata, db, remotes);
            own(schema)
        }
        None => {
            let _span = tracing::debug_span!("schema.rebuild", incremental = false).entered();
            own(resolve::resolve_with(metadata, db, remotes))
        }
    }
}
