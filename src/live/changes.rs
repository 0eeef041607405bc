//! What change detection knows (`docs/graphql.md`, "When subscriptions run"): a counter per
//! watched table, moved by each `basalt_live_change` notification the catalog listener
//! receives and, all at once, by every (re)connect of that listener; whether the listener is
//! up; and which tables the triggers cover, from the last schema build. A cohort remembers the
//! counters of the tables it reads as they were before its last successful poll, and is due
//! again when one of them moved.

use crate::catalog::live_change::Coverage;
use crate::graphql::ir::Footprint;
use crate::names::QualifiedName;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// The change-detection state of one engine.
#[derive(Debug)]
pub struct Changes {
    /// Change detection is on (`BASALT_LIVE_QUERIES_CHANGE_DETECTION`).
    pub on: bool,
    /// The longest a watched cohort goes without a poll (`None`: no fallback poll).
    pub fallback: Option<Duration>,
    /// Tables left without a trigger (`schema.table`).
    pub exclude: Vec<String>,
    counters: Mutex<HashMap<u32, u64>>,
    /// Added to every counter: moved by each (re)connect of the listener.
    epoch: AtomicU64,
    listener_up: AtomicBool,
    coverage: RwLock<Arc<Coverage>>,
    /// Notifications received.
    pub notifications: AtomicU64,
    /// Connects of the listener after the first.
    pub reconnects: AtomicU64,
    connected_once: AtomicBool,
}

impl Changes {
    pub fn new(on: bool, fallback: Option<Duration>, exclude: Vec<String>) -> Self {
        Changes {
            on,
            fallback,
            exclude,
            counters: Mutex::new(HashMap::new()),
            epoch: AtomicU64::new(0),
            listener_up: AtomicBool::new(false),
            coverage: RwLock::new(Arc::new(Coverage::default())),
            notifications: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            connected_once: AtomicBool::new(false),
        }
    }

    /// A table's trigger fired.
    pub fn changed(&self, oid: u32) {
        *self
            .counters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(oid)
            .or_default() += 1;
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

    /// The counters of `tables` now.
    pub fn counters(&self, tables: &[u32]) -> Vec<u64> {
        let epoch = self.epoch.load(Ordering::SeqCst);
        let counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        tables
            .iter()
            .map(|t| counters.get(t).copied().unwrap_or_default() + epoch)
            .collect()
    }

    /// What the triggers cover since the last schema build.
    pub fn set_coverage(&self, coverage: Coverage) {
        *self.coverage.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(coverage);
    }

    /// The tables a statement reads, as the OIDs whose writes show in it; `None` when it
    /// reads something change detection does not watch (a view, an uncovered or excluded
    /// table, a function), or when change detection is off: such a cohort runs every
    /// interval.
    pub fn read_set(&self, footprint: &Footprint) -> Option<Vec<u32>> {
        if !self.on || footprint.calls_functions {
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

/// A group's tables and their counters just before a poll.
#[derive(Debug)]
pub struct Marks {
    /// The read set; `None`: opaque (or change detection off).
    tables: Option<Vec<u32>>,
    counters: Vec<u64>,
    /// Every cohort is due: opaque, change detection off, or the listener down.
    always: bool,
}

/// What a cohort saw at its last successful poll: its read set and their counters.
pub type Seen = Option<(Vec<u32>, Vec<u64>)>;

impl Changes {
    /// The marks of a statement reading `footprint`, taken now (before its poll's statement,
    /// so a change notified meanwhile makes the cohort due again).
    pub fn marks(&self, footprint: &Footprint) -> Marks {
        let tables = self.read_set(footprint);
        let counters = tables
            .as_deref()
            .map(|t| self.counters(t))
            .unwrap_or_default();
        Marks {
            always: tables.is_none() || !self.listener_up(),
            tables,
            counters,
        }
    }
}

impl Marks {
    /// Whether a cohort that saw `seen` must run: never polled (or its last poll failed),
    /// always-due, or a table it reads changed since.
    pub fn due(&self, seen: &Seen) -> bool {
        if self.always {
            return true;
        }
        match (seen, &self.tables) {
            (Some((tables, counters)), Some(now_tables)) => {
                tables != now_tables || counters.iter().zip(&self.counters).any(|(s, n)| n > s)
            }
            _ => true,
        }
    }

    /// What a cohort polled successfully with these marks has seen.
    pub fn seen(&self) -> Seen {
        self.tables.clone().map(|t| (t, self.counters.clone()))
    }

    /// The group cannot be watched (opaque, or change detection off).
    pub fn opaque(&self) -> bool {
        self.tables.is_none()
    }
}
