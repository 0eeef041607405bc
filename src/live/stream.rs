//! One poll of a stream group: the cohorts that are due (never polled, or last polled an
//! interval ago), their next batches in one multiplexed statement per batch of cohorts, and
//! each batch delivered to the cohort's members, whose cursor then moves to where it ended.
//! A cohort with no new rows gets nothing; a failed statement leaves the cursors where they
//! were.

use super::{Group, LiveEvent, LiveQueries};
use crate::engine::{self, GraphqlError};
use crate::execute::{self, Connection, ExecuteError};
use crate::stats::Counters;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// A cohort's batch and where it ends, `None` without rows, or the failure.
type Outcome = Result<Option<(Bytes, String)>, Arc<GraphqlError>>;

/// Polls the due cohorts of a stream group and delivers their batches.
pub(super) async fn poll(live: &LiveQueries, group: &Group, cursor: usize) {
    let interval = live.streaming.interval;
    let now = Instant::now();
    // Polled at most once per interval; a tick comes one interval after the last, so half
    // an interval tells the polls of two ticks apart.
    let due = |polled: Option<Instant>| polled.is_none_or(|at| now - at >= interval / 2);
    let cohorts: Vec<Vec<Option<String>>> = {
        let mut members = group.members();
        members.retain(|m| !m.stopped.load(Ordering::Relaxed));
        let mut seen = std::collections::HashSet::new();
        members
            .iter()
            .filter(|m| due(m.polled) && seen.insert(m.values.as_slice()))
            .map(|m| m.values.clone())
            .collect()
    };
    if cohorts.is_empty() {
        return;
    }
    let mut ran = 0u64;
    let mut outcomes: HashMap<&[Option<String>], Outcome> = HashMap::new();
    for chunk in cohorts.chunks(live.streaming.batch_size.max(1)) {
        let values: Vec<&[Option<String>]> = chunk.iter().map(Vec::as_slice).collect();
        ran += 1;
        match run_chunk(live, group, &values).await {
            Ok(rows) => {
                for (index, data, end) in rows {
                    if let Some(cohort) = values.get(index).copied() {
                        let batch = end.map(|end| (engine::data_body(&data), end));
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
    let counters = live.engine.counters();
    counters.live_statements.fetch_add(ran, Ordering::Relaxed);
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
        match outcome {
            Ok(None) => true,
            Ok(Some((body, end))) => {
                if let Some(slot) = m.values.get_mut(cursor) {
                    *slot = Some(end.clone());
                }
                (m.deliver)(LiveEvent::Data(body.clone()))
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
) -> Result<Vec<(usize, Bytes, Option<String>)>, ExecuteError> {
    let engine = &live.engine;
    let client = engine.pool().get().await?;
    let conn = Connection::of(&client, engine.counters());
    execute::run_multiplexed_stream(conn, &group.sql, cohorts).await
}
