//! The poll decision of change detection (`docs/graphql.md`, "When subscriptions run"): at
//! each tick, a cohort is due for the first of these reasons that holds, in this order:
//! never polled, or its last poll failed; it cannot be watched, change detection is off, or
//! the listener is down; a table it reads changed since its last successful poll; (streams)
//! its last batch was full; a new metadata version planned it again; the fallback tick came.
//! A cohort that is not due is skipped. The marks are taken before the poll's statement, so
//! a change notified while the statement runs leaves the cohort due at the next tick.

use super::changes::Changes;
use crate::graphql::ir::Footprint;
use std::time::Instant;

/// Why a cohort ran (the label of `basalt_subscription_poll_reasons_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    Initial,
    Failed,
    Opaque,
    DetectionOff,
    ListenerDown,
    Changed,
    Backlog,
    Metadata,
    Fallback,
}

impl Reason {
    pub fn label(self) -> &'static str {
        match self {
            Reason::Initial => "initial",
            Reason::Failed => "failed",
            Reason::Opaque => "opaque",
            Reason::DetectionOff => "detection_off",
            Reason::ListenerDown => "listener_down",
            Reason::Changed => "changed",
            Reason::Backlog => "backlog",
            Reason::Metadata => "metadata",
            Reason::Fallback => "fallback",
        }
    }
}

/// How a member's last poll went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum LastPoll {
    #[default]
    Never,
    Failed,
    /// It succeeded, and a new metadata version planned the member again since.
    Replanned,
    Succeeded,
}

/// What a member's cohort saw: the read set and its counters at its last successful poll.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    seen: Option<(Vec<u32>, Vec<u64>, u64)>,
    last: LastPoll,
}

impl Watch {
    /// A new metadata version planned the member again: it runs once more, unless it has
    /// never run.
    pub fn replanned(&mut self) {
        if self.last == LastPoll::Succeeded {
            self.last = LastPoll::Replanned;
        }
    }

    /// Its cohort's poll with `marks` succeeded.
    pub fn succeeded(&mut self, marks: &Marks) {
        self.seen = marks
            .tables
            .clone()
            .map(|t| (t, marks.counters.clone(), marks.epoch));
        self.last = LastPoll::Succeeded;
    }

    /// Its cohort's poll failed: what it saw stays, so it is due again.
    pub fn failed(&mut self) {
        self.last = LastPoll::Failed;
    }

    /// Whether its cohort has an answer that is current as far as change detection knows,
    /// so a member joining it may be sent that answer at once.
    pub fn current(&self, marks: &Marks) -> bool {
        self.last == LastPoll::Succeeded && marks.reason(self, false, false).is_none()
    }
}

/// A group's read set and its counters, taken just before a poll.
#[derive(Debug)]
pub struct Marks {
    /// `None`: opaque, or change detection off.
    tables: Option<Vec<u32>>,
    counters: Vec<u64>,
    epoch: u64,
    on: bool,
    listener_up: bool,
}

impl Changes {
    /// The marks of a statement reading `footprint`, taken now.
    pub fn marks(&self, footprint: &Footprint) -> Marks {
        let tables = self.read_set(footprint);
        let (counters, epoch) = tables
            .as_deref()
            .map(|t| self.counters(t))
            .unwrap_or_default();
        Marks {
            tables,
            counters,
            epoch,
            on: self.policy.on,
            listener_up: self.listener_up(),
        }
    }

    /// When the oldest change a cohort that saw `watch` has not seen was notified.
    pub fn change_noticed(&self, watch: &Watch) -> Option<Instant> {
        let (tables, counters, epoch) = watch.seen.as_ref()?;
        self.first_unseen(tables, counters, *epoch)
    }
}

impl Marks {
    /// Why a cohort that saw `watch` must run now (`None`: it is skipped); `backlog`: a
    /// stream whose last batch was full; `fallback`: its poller's fallback tick.
    pub fn reason(&self, watch: &Watch, backlog: bool, fallback: bool) -> Option<Reason> {
        match watch.last {
            LastPoll::Never => return Some(Reason::Initial),
            LastPoll::Failed => return Some(Reason::Failed),
            LastPoll::Replanned | LastPoll::Succeeded => {}
        }
        let Some(tables) = &self.tables else {
            return Some(match self.on {
                true => Reason::Opaque,
                false => Reason::DetectionOff,
            });
        };
        if !self.listener_up {
            return Some(Reason::ListenerDown);
        }
        let unchanged = watch.seen.as_ref().is_some_and(|(seen, counters, _)| {
            seen == tables && !self.counters.iter().zip(counters).any(|(now, s)| now > s)
        });
        if !unchanged {
            return Some(Reason::Changed);
        }
        if backlog {
            return Some(Reason::Backlog);
        }
        if watch.last == LastPoll::Replanned {
            return Some(Reason::Metadata);
        }
        fallback.then_some(Reason::Fallback)
    }

    /// The group cannot be watched (opaque, or change detection off).
    pub fn opaque(&self) -> bool {
        self.tables.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(tables: Option<Vec<u32>>, counters: Vec<u64>) -> Marks {
        Marks {
            tables,
            counters,
            epoch: 1,
            on: true,
            listener_up: true,
        }
    }

    #[test]
    fn reasons_come_in_order() {
        let first = marks(Some(vec![7]), vec![3]);
        let mut watch = Watch::default();
        assert_eq!(first.reason(&watch, true, true), Some(Reason::Initial));
        watch.succeeded(&first);
        assert_eq!(first.reason(&watch, false, false), None);
        assert_eq!(first.reason(&watch, true, true), Some(Reason::Backlog));
        assert_eq!(first.reason(&watch, false, true), Some(Reason::Fallback));
        let moved = marks(Some(vec![7]), vec![4]);
        assert_eq!(moved.reason(&watch, true, true), Some(Reason::Changed));
        watch.replanned();
        assert_eq!(first.reason(&watch, false, true), Some(Reason::Metadata));
        watch.failed();
        // A failed poll keeps the old marks, and runs again whatever they say.
        assert_eq!(first.reason(&watch, false, false), Some(Reason::Failed));
        watch.succeeded(&first);
        assert_eq!(
            marks(None, vec![]).reason(&watch, false, false),
            Some(Reason::Opaque)
        );
        let mut down = marks(Some(vec![7]), vec![3]);
        down.listener_up = false;
        assert_eq!(
            down.reason(&watch, false, false),
            Some(Reason::ListenerDown)
        );
        let mut off = marks(None, vec![]);
        off.on = false;
        assert_eq!(off.reason(&watch, false, false), Some(Reason::DetectionOff));
        let other_tables = marks(Some(vec![7, 9]), vec![3, 0]);
        assert_eq!(
            other_tables.reason(&watch, false, false),
            Some(Reason::Changed)
        );
    }
}
