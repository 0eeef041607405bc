//! Event-trigger delivery (`docs/events.md`): every engine replica runs these workers. They
//! claim pending events in batches (`FOR UPDATE SKIP LOCKED`, under a lease the workers renew
//! while a delivery runs), deliver them concurrently up to the HTTP pool size, and record each
//! attempt in batches. A `NOTIFY` from the capture helper wakes them; a poll backs it up. A
//! process that dies leaves its claims to expire, so another worker takes them: at least once.
//! On shutdown the workers stop claiming, finish what they can within the grace period and give
//! the rest back.

pub(crate) mod deliver;
pub mod store;

use crate::catalog::events::EVENTS_CHANNEL;
use crate::state::AppState;
use crate::stats::EventCounters;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::Attempt;
use tokio::sync::{mpsc, watch, Notify, Semaphore};
use tokio::task::JoinSet;

/// Events claimed by this process and not recorded yet.
type InFlight = Arc<Mutex<HashSet<String>>>;

fn lock(set: &InFlight) -> std::sync::MutexGuard<'_, HashSet<String>> {
    set.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs the workers until `stop` turns true, then drains. `permits` is the HTTP pool, shared
/// with scheduled-event delivery.
pub async fn run(
    state: AppState,
    pg_config: tokio_postgres::Config,
    permits: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) {
    let config = state.config.events.clone();
    let counters = state.events.clone();
    let wake = Arc::new(Notify::new());
    let in_flight: InFlight = Arc::default();
    let http = match reqwest::Client::builder()
        .pool_max_idle_per_host(config.http_pool_size.max(1))
        .build()
    {
        Ok(http) => http,
        Err(e) => {
            tracing::error!(error = %e, "event delivery is off: no HTTP client");
            return;
        }
    };
    let (done, outcomes) = mpsc::channel::<Attempt>(config.http_pool_size.max(1) * 2);
    let recorder = tokio::spawn(record(state.clone(), outcomes, in_flight.clone()));
    let mut background = JoinSet::new();
    background.spawn(listen(pg_config, EVENTS_CHANNEL, wake.clone()));
    background.spawn(renew(
        state.clone(),
        in_flight.clone(),
        config.lease_seconds,
    ));
    background.spawn(clean_up(
        state.clone(),
        config.retention_hours,
        Duration::from_secs(config.cleanup_interval_seconds.max(1)),
    ));
    let mut deliveries = JoinSet::new();
    let interval = Duration::from_millis(config.fetch_interval_ms.max(10));
    loop {
        if *stop.borrow() {
            break;
        }
        while deliveries.try_join_next().is_some() {}
        // Wait for room in the HTTP pool before claiming.
        let first = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit { Ok(p) => p, Err(_) => break },
            _ = stop.wait_for(|s| *s) => break,
        };
        let snapshot = state.snapshot();
        let triggers = &snapshot.resolution.resolved.event_triggers;
        let room = permits.available_permits() + 1;
        let want = room.min(config.fetch_batch_size.max(1));
        let claimed = match triggers.is_empty() {
            true => Vec::new(),
            false => claim(&state, triggers, want, config.lease_seconds).await,
        };
        let full = claimed.len() == want;
        let mut first = Some(first);
        for event in claimed {
            let Some(trigger) = triggers.get(&event.trigger).cloned() else {
                continue;
            };
            // Only this loop takes permits, so the room counted above is still there.
            let permit = first
                .take()
                .or_else(|| permits.clone().try_acquire_owned().ok());
            lock(&in_flight).insert(event.id.clone());
            counters.in_flight.fetch_add(1, Ordering::Relaxed);
            let (http, done, counters) = (http.clone(), done.clone(), counters.clone());
            deliveries.spawn(async move {
                let attempt = deliver_one(&http, &event, &trigger, &counters).await;
                let _ = done.send(attempt).await;
                drop(permit);
            });
        }
        drop(first);
        if !full {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(interval) => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
    }
    // Draining: finish what can be finished in time, give the rest back.
    drain(
        &mut deliveries,
        Duration::from_secs(config.shutdown_grace_seconds),
    )
    .await;
    drop(done);
    let _ = recorder.await;
    background.abort_all();
    let left: Vec<String> = lock(&in_flight).drain().collect();
    if !left.is_empty() {
        if let Ok(client) = state.pool.get().await {
            match store::release(&**client, &left).await {
                Ok(n) => tracing::info!(events = n, "gave unfinished events back"),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot give events back; their leases will expire")
                }
            }
        }
    }
}

/// Waits for `tasks` to finish within `grace`, then aborts the rest: a worker's shutdown (event
/// and scheduled deliveries, asynchronous action calls).
pub(crate) async fn drain(tasks: &mut JoinSet<()>, grace: Duration) {
    let finished =
        tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    if finished.is_err() {
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
}

/// Claims up to `want` pending events of `triggers` under a lease; none when the database
/// cannot be reached (logged; the next pass tries again).
async fn claim(
    state: &AppState,
    triggers: &std::collections::BTreeMap<String, crate::resolve::events::ResolvedEventTrigger>,
    want: usize,
    lease_seconds: u64,
) -> Vec<store::Claimed> {
    let names: Vec<String> = triggers.keys().cloned().collect();
    match state.pool.get().await {
        Ok(client) => {
            match store::claim(&**client, &names, want as i64, lease_seconds as f64).await {
                Ok(events) => events,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot claim events");
                    Vec::new()
                }
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot claim events: no connection");
            Vec::new()
        }
    }
}

/// One delivery attempt, in its own span (a child of the trace captured with the event),
/// counted.
async fn deliver_one(
    http: &reqwest::Client,
    event: &store::Claimed,
    trigger: &crate::resolve::events::ResolvedEventTrigger,
    counters: &EventCounters,
) -> Attempt {
    let span = tracing::debug_span!("event.deliver", "otel.kind" = "client", trigger = %event.trigger, event = %event.id);
    if let Some(parent) = deliver::traceparent(event) {
        crate::telemetry::accept_traceparent(&span, &parent);
    }
    let attempt =
        tracing::Instrument::instrument(deliver::attempt(http, event, trigger), span).await;
    counters.in_flight.fetch_sub(1, Ordering::Relaxed);
    match attempt.next {
        store::Next::Delivered => {
            counters.delivered.fetch_add(1, Ordering::Relaxed);
        }
        store::Next::Retry(_) => {
            counters.failed_attempts.fetch_add(1, Ordering::Relaxed);
        }
        store::Next::Failed => {
            counters.failed_attempts.fetch_add(1, Ordering::Relaxed);
            counters.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
    attempt
}

/// Writes attempts as they come, in batches (one transaction per batch).
async fn record(state: AppState, mut outcomes: mpsc::Receiver<Attempt>, in_flight: InFlight) {
    let mut batch = Vec::with_capacity(256);
    while outcomes.recv_many(&mut batch, 256).await > 0 {
        let mut written = false;
        for wait in [0u64, 200, 1000, 5000] {
            tokio::time::sleep(Duration::from_millis(wait)).await;
            let Ok(mut client) = state.pool.get().await else {
                continue;
            };
            match store::record(&mut client, &batch).await {
                Ok(()) => {
                    written = true;
                    break;
                }
                Err(e) => tracing::warn!(error = %e, "cannot record event deliveries; retrying"),
            }
        }
        if !written {
            // The claims stay: the leases expire and the events are delivered again.
            tracing::error!(events = batch.len(), "event deliveries not recorded");
        }
        let mut set = lock(&in_flight);
        for attempt in batch.drain(..) {
            set.remove(&attempt.event_id);
        }
    }
}

/// Wakes a claim loop on every `NOTIFY` on `channel` (the event workers', the action
/// workers'); reconnects after failures.
pub(crate) async fn listen(
    pg_config: tokio_postgres::Config,
    channel: &'static str,
    wake: Arc<Notify>,
) {
    loop {
        match pg_config.connect(tokio_postgres::NoTls).await {
            Ok((client, mut connection)) => {
                let (tx, mut rx) = mpsc::unbounded_channel();
                let driver = tokio::spawn(async move {
                    let mut messages =
                        futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                    while let Some(message) = futures_util::StreamExt::next(&mut messages).await {
                        match message {
                            Ok(tokio_postgres::AsyncMessage::Notification(_)) => {
                                if tx.send(()).is_err() {
                                    break;
                                }
                            }
                            Ok(_) => {}
                            Err(_) => break,
                        }
                    }
                });
                if client
                    .batch_execute(&crate::sql::helpers::listen(channel))
                    .await
                    .is_ok()
                {
                    // Anything captured while not listening is found by this first look.
                    wake.notify_one();
                    while rx.recv().await.is_some() {
                        wake.notify_one();
                    }
                }
                driver.abort();
            }
            Err(e) => tracing::warn!(error = %e, channel, "cannot listen for notifications"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Renews the leases of events in flight, a few times per lease.
async fn renew(state: AppState, in_flight: InFlight, lease_seconds: u64) {
    let every = Duration::from_secs_f64((lease_seconds.max(1) as f64 / 3.0).max(0.2));
    loop {
        tokio::time::sleep(every).await;
        let ids: Vec<String> = lock(&in_flight).iter().cloned().collect();
        if ids.is_empty() {
            continue;
        }
        match state.pool.get().await {
            Ok(client) => {
                if let Err(e) = store::renew(&**client, &ids).await {
                    tracing::warn!(error = %e, "cannot renew event leases");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot renew event leases"),
        }
    }
}

/// Deletes what the retention period no longer keeps, every `every` (ten minutes by
/// default), the first time a minute after start (out of the way of startup work) or after
/// `every` when that is shorter. A retention of 0 keeps everything.
async fn clean_up(state: AppState, retention_hours: u64, every: Duration) {
    if retention_hours == 0 {
        return;
    }
    tokio::time::sleep(every.min(Duration::from_secs(60))).await;
    loop {
        if let Ok(mut client) = state.pool.get().await {
            match store::clean_up(&mut client, retention_hours as f64).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(events = n, "deleted old events"),
                Err(e) => tracing::warn!(error = %e, "cannot clean up old events"),
            }
        }
        tokio::time::sleep(every).await;
    }
}
