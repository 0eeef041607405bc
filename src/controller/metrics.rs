//! The controller's Prometheus metrics, served on its probe port (`/metrics`, beside `/healthz`
//! and `/readyz`): reconciles and their failures by kind, reconciles running now, writes
//! waiting for a group commit, and whether this replica holds the leader lock. See
//! `docs/operations.md`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// A resource kind, as a label.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    /// `TrackedTable`, `Permission`, …
    pub kind: String,
}

/// The controller's metrics. Cheap to clone (the series are shared).
#[derive(Debug, Clone, Default)]
pub struct ControllerMetrics {
    reconciles: Family<KindLabels, Counter>,
    errors: Family<KindLabels, Counter>,
    running: Gauge,
    commit_queue: Gauge,
    leader: Gauge,
    introspections: Counter,
    orphaned: Gauge,
}

impl ControllerMetrics {
    /// A reconcile of `kind` starts; the returned guard marks its end when dropped.
    pub fn start(&self, kind: &str) -> Running<'_> {
        self.running.inc();
        Running {
            metrics: self,
            kind: kind.to_owned(),
            failed: true,
        }
    }

    /// Whether this replica leads (reconciles and writes) or stands by.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// How many managed objects have lost their resource (the last orphan scan's count).
    pub fn set_orphaned(&self, objects: usize) {
        self.orphaned
            .set(i64::try_from(objects).unwrap_or(i64::MAX));
    }

    /// The gauge of writes waiting for a group commit (kept by the commit queue).
    pub fn commit_queue(&self) -> Gauge {
        self.commit_queue.clone()
    }

    /// Counts the reads of the database model by the work it runs
    /// ([`crate::catalog::database::counting`]).
    pub fn introspections(&self) -> Counter {
        self.introspections.clone()
    }

    /// The metrics in the Prometheus text format.
    pub fn render(&self) -> Result<String, std::fmt::Error> {
        let mut registry = Registry::with_prefix("basalt_controller");
        registry.register(
            "reconciles",
            "Reconciles finished, by resource kind",
            self.reconciles.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Reconciles that failed (and were scheduled again), by resource kind",
            self.errors.clone(),
        );
        registry.register(
            "reconciles_running",
            "Reconciles in progress: work taken from the queue and not finished",
            self.running.clone(),
        );
        registry.register(
            "commit_queue",
            "Catalog writes of reconciles waiting for their group commit",
            self.commit_queue.clone(),
        );
        registry.register(
            "introspections",
            "Reads of the database model by reconciles (one per catalog or database change when they share their view)",
            self.introspections.clone(),
        );
        registry.register(
            "orphaned_objects",
            "Managed objects whose resource no longer exists, as of the last scan",
            self.orphaned.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the leader lock",
            self.leader.clone(),
        );
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry)?;
        Ok(text)
    }
}

/// One reconcile in progress.
#[derive(Debug)]
pub struct Running<'a> {
    metrics: &'a ControllerMetrics,
    kind: String,
    failed: bool,
}

impl Running<'_> {
    /// The reconcile succeeded.
    pub fn succeeded(mut self) {
        self.failed = false;
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.metrics.running.dec();
        let labels = KindLabels {
            kind: self.kind.clone(),
        };
        self.metrics.reconciles.get_or_create(&labels).inc();
        if self.failed {
            self.metrics.errors.get_or_create(&labels).inc();
        }
    }
}
