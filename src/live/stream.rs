//! One poll of a stream group: the cohorts that are due (change detection decides, and
//! none is polled twice within an interval), their next batches in one multiplexed
//! statement per batch of cohorts, and each batch delivered to the cohort's members, whose
//! cursor then moves to where it ended.
//! A cohort with no new rows gets nothing; a failed statement leaves the cursors where they
//! were.

use super::poll::Due;
use super::{observe, Group, LiveEvent, LiveQueries};
use crate::engine::{self, GraphqlError};
use crate::execute::{self, Connection, ExecuteError};
use crate::stats::Counters;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// A cohort's batch, where it ends and whether it was full (`None` without rows), or the
/// failure.
type Outcome = Result<Option<(Bytes, String, bool)>, Arc<GraphqlError>>;

/// Polls the due cohorts of a stream group and delivers their batches: due for change
/// detection (see [`super::due`]; a cohort whose last batch was full stays due), and not
/// polled within the interval.
pub(super) async fn poll(live: &LiveQueries, group: &Group, cursor: usize, fallback_due: bool) {
    let kind = observe::kind(true);
    let interval = live.streaming.interval;
    let now = Instant::now();
    // Polled at most once per interval; a tick comes one interval after the last, so half
    // an interval tells the polls of two ticks apart.
    let on_time = |polled: Option<Instant>| polled.is_none_or(|at| now - at >= interval / 2);
    let marks = live.changes.marks(&group.footprint);
    group.opaque.store(marks.opaque(), Ordering::Relaxed);
    let due = Due::of(live, group, kind, &marks, fallback_due, |m| {
        on_time(m.polled)
    });
    let cohorts: Vec<&[Option<String>]> = due.cohorts().collect();
    if cohorts.is_empty() {
        return;
    }
    let counters = live.engine.counters();
    let mut ran = 0u64;
    let mut outcomes: HashMap<&[Option<String>], Outcome> = HashMap::new();
    for chunk in cohorts.chunks(live.streaming.batch_size.max(1)) {
        let values = chunk.to_vec();
        ran += 1;
        match run_chunk(live, group, &values).await {
            Ok(rows) => {
                for (index, data, end, full) in rows {
                    if let Some(cohort) = values.get(index).copied() {
                        let batch = end.map(|end| (engine::data_body(&data), end, full));
                        outcomes.insert(cohort, Ok(batch));
                    }
                }
            }
            Err(err) => {
                let err = Arc::new(GraphqlError::from(err));
                for cohort in values {
                    outcomes.insert(cohort, Err(err.clone()));
                }
            }
        }
    }
    counters.live_statements.fetch_add(ran, Ordering::Relaxed);
    live.metrics.statements(kind, ran);
    Counters::bump(&counters.live_polls);
    let mut members = group.members();
    members.retain_mut(|m| {
        if m.stopped.load(Ordering::Relaxed) {
            return false;
        }
        let Some(outcome) = outcomes.get(m.values.as_slice()) else {
            return true; // not due, or joined during this poll
        };
        m.polled = Some(now);
        let noticed = due.noticed(&m.values);
        match outcome {
            Ok(_) => m.watch.succeeded(&marks),
            // A failed poll keeps the old marks: the cohort stays due.
            Err(_) => m.watch.failed(),
        }
        match outcome {
            Ok(None) => {
                m.backlog = false;
                true
            }
            Ok(Some((body, end, full))) => {
                m.backlog = *full;
                if let Some(slot) = m.values.get_mut(cursor) {
                    *slot = Some(end.clone());
                }
                let open = (m.deliver)(LiveEvent::Data(body.clone()));
                if let Some(at) = noticed {
                    live.metrics.pushed(kind, at.elapsed().as_secs_f64());
                }
                open
            }
            Err(err) => (m.deliver)(LiveEvent::StreamError(err.clone())),
        }
    });
}

/// One multiplexed stream statement on a pooled connection.
async fn run_chunk(
    live: &LiveQueries,
    group: &Group,
    cohorts: &[&[Option<String>]],
) -> Result<Vec<execute::StreamAnswer>, ExecuteError> {
    let engine = &live.engine;
    let client = engine.pool().get().await?;
    let conn = Connection::of(&client, engine.counters());
    execute::run_multiplexed_stream(conn, &group.sql, cohorts).await
}
