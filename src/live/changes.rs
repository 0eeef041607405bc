//! What change detection knows (`docs/graphql.md`, "When subscriptions run"): a counter per
//! watched table, moved by each `basalt_live_change` notification the catalog listener
//! receives and, all at once, by every (re)connect of that listener; whether the listener is
//! up; and which tables the triggers cover, from the last schema build. A cohort remembers the
//! counters of the tables it reads as they were before its last successful poll, and is due
//! again when one of them moved ([`super::due`]).

use crate::graphql::ir::Footprint;
use crate::names::QualifiedName;
use crate::resolve::live_change::{Coverage, LivePolicy, TriggerPlan};
use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// How many arrival times are kept per table, for the change-to-push latency.
const RECENT: usize = 32;

/// One table's notifications: how many, and when the last few arrived.
#[derive(Debug, Default)]
struct TableCount {
    n: u64,
    recent: VecDeque<Instant>,
}

/// The change-detection state of one engine.
#[derive(Debug)]
pub struct Changes {
    /// Whether change detection is on, and the tables it leaves out.
    pub policy: LivePolicy,
    /// The longest a watched cohort goes without a poll (`None`: no fallback poll).
    pub fallback: Option<Duration>,
    /// The last trigger changes tried outside a metadata write: not tried again while the
    /// model still asks for exactly them (a table the role does not own stays uncovered).
    tried: Mutex<Option<TriggerPlan>>,
    /// The last sampled `pg_notification_queue_usage()`, in millionths.
    queue_usage: AtomicU64,
    /// Tables the fallback check found without their trigger since the last schema build.
    lost: Mutex<std::collections::BTreeSet<u32>>,
    counters: Mutex<HashMap<u32, TableCount>>,
    /// Added to every counter: moved by each (re)connect of the listener.
    epoch: AtomicU64,
    listener_up: AtomicBool,
    coverage: RwLock<Arc<Coverage>>,
    /// Notifications received.
    pub notifications: AtomicU64,
    /// Connects of the listener after the first.
    pub reconnects: AtomicU64,
    connected_once: AtomicBool,
    /// The start-up installation is done: later schema builds install what is missing.
    ready: AtomicBool,
}

impl Changes {
    pub fn new(policy: LivePolicy, fallback: Option<Duration>) -> Self {
        Changes {
            policy,
            fallback,
            tried: Mutex::new(None),
            queue_usage: AtomicU64::new(0),
            lost: Mutex::new(std::collections::BTreeSet::new()),
            counters: Mutex::new(HashMap::new()),
            epoch: AtomicU64::new(0),
            listener_up: AtomicBool::new(false),
            coverage: RwLock::new(Arc::new(Coverage::default())),
            notifications: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            connected_once: AtomicBool::new(false),
            ready: AtomicBool::new(false),
        }
    }

    /// A table's trigger fired.
    pub fn changed(&self, oid: u32) {
        let now = Instant::now();
        let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        let count = counters.entry(oid).or_default();
        count.n += 1;
        if count.recent.len() == RECENT {
            count.recent.pop_front();
        }
        count.recent.push_back(now);
        drop(counters);
        self.notifications.fetch_add(1, Ordering::Relaxed);
    }

    /// The listener is (again) LISTENing: every counter moves, so every cohort polls once more
    /// and sees what was committed while notifications could be lost.
    pub fn connected(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        self.listener_up.store(true, Ordering::SeqCst);
        if self.connected_once.swap(true, Ordering::SeqCst) {
            self.reconnects.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The listener's session is gone: every cohort is due at every tick until it is back.
    pub fn disconnected(&self) {
        self.listener_up.store(false, Ordering::SeqCst);
    }

    /// Whether the listener is LISTENing.
    pub fn listener_up(&self) -> bool {
        self.listener_up.load(Ordering::SeqCst)
    }

    /// The counters of `tables` now, and the listener epoch they were read in.
    pub fn counters(&self, tables: &[u32]) -> (Vec<u64>, u64) {
        let epoch = self.epoch.load(Ordering::SeqCst);
        let counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        let now = tables
            .iter()
            .map(|t| counters.get(t).map_or(0, |c| c.n) + epoch)
            .collect();
        (now, epoch)
    }

    /// When the first of the notifications counted after `seen` (counters of `tables` read
    /// in `epoch`, as [`Changes::counters`] gives them) arrived: `None` when none did, or
    /// when the listener reconnected since (the counts then no longer line up).
    pub fn first_unseen(&self, tables: &[u32], seen: &[u64], epoch: u64) -> Option<Instant> {
        if self.epoch.load(Ordering::SeqCst) != epoch {
            return None;
        }
        let counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        let mut first: Option<Instant> = None;
        for (table, seen) in tables.iter().zip(seen) {
            let Some(count) = counters.get(table) else {
                continue;
            };
            let seen = seen.saturating_sub(epoch);
            if count.n <= seen {
                continue;
            }
            // `recent[0]` is the arrival of count `oldest`, the last one that of count `n`.
            let oldest = count.n + 1 - count.recent.len() as u64;
            let index = (seen + 1).saturating_sub(oldest) as usize;
            let at = count.recent.get(index).or(count.recent.front());
            if let Some(at) = at {
                first = Some(first.map_or(*at, |f| f.min(*at)));
            }
        }
        first
    }

    /// What the triggers cover since the last schema build.
    pub fn set_coverage(&self, coverage: Coverage) {
        *self.coverage.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(coverage);
        self.lost.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// What the triggers cover now.
    pub fn coverage(&self) -> Arc<Coverage> {
        self.coverage
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The OIDs of every table the coverage relies on.
    pub fn covered_oids(&self) -> Vec<u32> {
        let coverage = self.coverage.read().unwrap_or_else(|p| p.into_inner());
        let mut oids: Vec<u32> = coverage.watched.values().flatten().copied().collect();
        oids.sort_unstable();
        oids.dedup();
        oids
    }

    /// How many tables should carry the trigger, firing always, and do not: it could not be
    /// put there at the last schema build, or the fallback check found it gone since.
    pub fn uncovered(&self) -> usize {
        let built = self
            .coverage
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .uncovered
            .len();
        built + self.lost.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// The fallback check found these tables' triggers missing or not firing always: every
    /// relation resting on one of them runs every interval until the next schema build.
    pub fn lost(&self, oids: &[u32]) {
        if oids.is_empty() {
            return;
        }
        self.lost
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(oids.iter().copied());
        let mut guard = self.coverage.write().unwrap_or_else(|p| p.into_inner());
        let mut coverage = (**guard).clone();
        coverage
            .watched
            .retain(|_, tables| !tables.iter().any(|t| oids.contains(t)));
        *guard = Arc::new(coverage);
        tracing::warn!(
            tables = ?oids,
            "a live-query change trigger is missing or disabled: subscriptions reading these tables run every interval until the next schema build"
        );
    }

    /// The start-up installation is done.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::SeqCst);
    }

    /// Whether the start-up installation is done.
    pub fn ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }

    /// Whether `plan` is worth trying: it differs from the last one tried.
    pub fn first_try(&self, plan: &TriggerPlan) -> bool {
        let mut tried = self.tried.lock().unwrap_or_else(|p| p.into_inner());
        if tried.as_ref() == Some(plan) {
            return false;
        }
        *tried = Some(plan.clone());
        true
    }

    /// The last try failed: the next schema build tries again.
    pub fn forget_try(&self) {
        *self.tried.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Records a sample of the notification queue's usage (0 to 1).
    pub fn set_queue_usage(&self, usage: f64) {
        let millionths = (usage.clamp(0.0, 1.0) * 1e6) as u64;
        self.queue_usage.store(millionths, Ordering::Relaxed);
    }

    /// The last sampled notification queue usage (0 to 1).
    pub fn queue_usage(&self) -> f64 {
        self.queue_usage.load(Ordering::Relaxed) as f64 / 1e6
    }

    /// The tables a statement reads, as the OIDs whose writes show in it; `None` when it
    /// reads something change detection does not watch (a view over something it cannot
    /// watch, an uncovered or excluded table, a function), or when change detection is off:
    /// such a cohort runs every interval.
    pub fn read_set(&self, footprint: &Footprint) -> Option<Vec<u32>> {
        if !self.policy.on || footprint.calls_functions {
            return None;
        }
        let coverage = self
            .coverage
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut oids = Vec::new();
        for table in &footprint.relations {
            let name = QualifiedName::new(table.schema.as_str(), table.name.as_str());
            oids.extend(coverage.watched.get(&name)?.iter().copied());
        }
        oids.sort_unstable();
        oids.dedup();
        Some(oids)
    }
}
