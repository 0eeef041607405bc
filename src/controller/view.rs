//! One view of the catalog and the database shared by every reconcile (`docs/kubernetes.md`,
//! "One view of the catalog"): the metadata and its resolution against the database model, and
//! the ownership rows, built once per change of the catalog, of the ownership rows or of the
//! database's DDL ([`catalog::versions`]) instead of once per reconcile. Applying N
//! resources, each of which re-triggers all the others through the catalog's `NOTIFY`, then
//! reads the database once per version rather than N² times.
//!
//! A reconcile plans against the view and writes with compare-and-swap on its catalog version,
//! so a view that went stale in between costs a retry, never a wrong write.

use super::diff::Ownership;
use crate::catalog::versions::{self, Versions};
use crate::catalog::{managed, CatalogVersion};
use crate::metadata::objects::{self, Object};
use crate::transaction::{CommittedView, TransactionError};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// How long a view is trusted when DDL is not counted (no superuser to create the event
/// trigger): direct DDL is then seen within this time.
pub const UNTRACKED_DDL_REFRESH: Duration = Duration::from_secs(2);

/// What the catalog and the database held at [`View::versions`], read in one transaction.
#[derive(Debug)]
pub struct View {
    /// The counters the view was read at.
    pub versions: Versions,
    /// Metadata, its version, and its resolution against the database model (shared with the
    /// group commit's [`crate::transaction::LastWrite`] when the view came from a commit).
    pub catalog: Arc<CatalogVersion>,
    /// Every ownership row (without its definition: plans compare `desired_hash`), indexed
    /// for planning.
    pub rows: Ownership,
    /// The metadata's ownable objects by key, computed once for every plan made on the view.
    pub objects: BTreeMap<String, Object>,
    /// When it was read.
    read_at: Instant,
}

impl View {
    fn serves(&self, wanted: &Versions) -> bool {
        self.versions.covers(wanted)
            && (self.versions.ddl.is_some() || self.read_at.elapsed() < UNTRACKED_DDL_REFRESH)
    }
}

/// The current view, rebuilt by one reconcile at a time while the others wait for it.
#[derive(Debug, Default)]
pub struct SharedView {
    current: Mutex<Option<Arc<View>>>,
}

impl SharedView {
    /// A view at least as recent as the catalog and the database are now.
    pub async fn current(
        &self,
        pool: &deadpool_postgres::Pool,
    ) -> Result<Arc<View>, TransactionError> {
        let wanted = versions::read(&**pool.get().await?).await?;
        let mut current = self.current.lock().await;
        if let Some(view) = current.as_ref().filter(|v| v.serves(&wanted)) {
            return Ok(view.clone());
        }
        let mut client = pool.get().await?;
        let view = Arc::new(read(&mut client).await?);
        *current = Some(view.clone());
        Ok(view)
    }

    /// Takes what a group commit read in its transaction as the current view, unless the
    /// current one is more recent.
    pub async fn offer(&self, committed: CommittedView) {
        let objects = objects::catalog_objects(&committed.catalog.metadata);
        let view = View {
            versions: committed.versions,
            catalog: committed.catalog,
            rows: Ownership::new(committed.rows),
            objects,
            read_at: Instant::now(),
        };
        let mut current = self.current.lock().await;
        if current
            .as_ref()
            .is_none_or(|c| view.versions.covers(&c.versions))
        {
            *current = Some(Arc::new(view));
        }
    }
}

/// Reads the counters and everything a reconcile plans against in one `REPEATABLE READ`
/// snapshot, so the counters describe exactly what was read.
async fn read(client: &mut tokio_postgres::Client) -> Result<View, TransactionError> {
    let tx = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    let versions = versions::read(&tx).await?;
    let catalog = Arc::new(crate::transaction::read(&tx).await?);
    let rows = Ownership::new(managed::load_for_plans(&tx).await?);
    tx.commit().await?;
    let objects = objects::catalog_objects(&catalog.metadata);
    Ok(View {
        versions,
        catalog,
        rows,
        objects,
        read_at: Instant::now(),
    })
}
