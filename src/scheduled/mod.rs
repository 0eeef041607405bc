//! Scheduled-event delivery (`docs/scheduled-triggers.md`): every replica runs this worker.
//! At each look (every `BASALT_SCHEDULED_EVENTS_FETCH_INTERVAL`) it claims due cron and
//! one-off events under a lease (`FOR UPDATE SKIP LOCKED`; a lease that ran out, a crashed
//! worker's, is taken over), turns those past their tolerance `dead` without calling anyone,
//! and delivers the rest concurrently within the HTTP pool it shares with event triggers,
//! renewing the leases while they run. Every minute it tops each cron trigger up to its 100
//! upcoming events (idempotent, so every replica may). The clock is the configured one
//! ([`crate::config::Clock`]), bound into every statement. On shutdown it stops claiming,
//! lets deliveries finish within the grace period and gives the rest back.

mod deliver;
pub mod store;

use crate::catalog::scheduled::EventTable;
use crate::state::AppState;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::{Next, Outcome};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::JoinSet;

/// How often cron triggers are topped up to their upcoming events.
const GENERATE_EVERY: Duration = Duration::from_secs(60);

/// Most events of one table claimed by one look.
const CLAIM_BATCH: usize = 100;

/// Claims of this process not recorded yet: event id → (table, lease).
type InFlight = Arc<Mutex<HashMap<String, (EventTable, String)>>>;

fn lock(set: &InFlight) -> std::sync::MutexGuard<'_, HashMap<String, (EventTable, String)>> {
    set.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs the worker until `stop` turns true, then drains. `permits` is the HTTP pool shared
/// with event-trigger delivery.
pub async fn run(state: AppState, permits: Arc<Semaphore>, mut stop: watch::Receiver<bool>) {
    let events = state.config.events.clone();
    let clock = state.config.scheduled.clock.clone();
    let lease = events.lease_seconds.max(1) as f64;
    let http = match reqwest::Client::builder()
        .pool_max_idle_per_host(events.http_pool_size.max(1))
        .build()
    {
        Ok(http) => http,
        Err(e) => {
            tracing::error!(error = %e, "scheduled event delivery is off: no HTTP client");
            return;
        }
    };
    let in_flight: InFlight = Arc::default();
    let (done, outcomes) = mpsc::channel::<Outcome>(events.http_pool_size.max(1) * 2);
    let recorder = tokio::spawn(record(state.clone(), outcomes, in_flight.clone()));
    let mut background = JoinSet::new();
    background.spawn(renew(state.clone(), in_flight.clone(), lease));
    background.spawn(generate(state.clone(), lease));
    if events.retention_hours > 0 {
        background.spawn(clean_up(
            state.clone(),
            events.retention_hours as f64,
            Duration::from_secs(events.cleanup_interval_seconds.max(1)),
        ));
    }
    let interval = Duration::from_millis(state.config.scheduled.scheduled_poll_interval_ms.max(10));
    let mut deliveries = JoinSet::new();
    loop {
        if *stop.borrow() {
            break;
        }
        while deliveries.try_join_next().is_some() {}
        let snapshot = state.snapshot();
        let triggers = &snapshot.resolution.resolved.cron_triggers;
        let names: Vec<String> = triggers.keys().cloned().collect();
        let now = clock.now();
        let mut claimed = Vec::new();
        // A full batch means more are due: look again at once instead of after the interval.
        let mut full = false;
        if let Ok(client) = state.pool.get().await {
            let room = permits.available_permits().clamp(1, CLAIM_BATCH) as i64;
            if !names.is_empty() {
                match store::claim_cron(&**client, &names, now, lease, room).await {
                    Ok(c) => {
                        full |= c.len() as i64 == room;
                        claimed.extend(c)
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot claim cron events"),
                }
            }
            match store::claim_one_off(&**client, now, lease, room).await {
                Ok(c) => {
                    full |= c.len() as i64 == room;
                    claimed.extend(c)
                }
                Err(e) => tracing::warn!(error = %e, "cannot claim scheduled events"),
            }
            if let Ok((cron, one_off)) = store::due(&**client, &names, now).await {
                state.scheduled.set_due(cron, one_off);
            }
        }
        // Held from the claim on: renewed while waiting for room, given back at shutdown.
        {
            let mut held = lock(&in_flight);
            for event in &claimed {
                held.insert(event.id.clone(), (event.table, event.lease.clone()));
            }
        }
        for event in claimed {
            let (retry, tolerance) = deliver::retry_of(&event, triggers);
            let late = (event.claimed_at - event.scheduled_time).num_milliseconds() as f64 / 1000.0;
            if late > tolerance {
                let _ = done.send(deliver::dead(&event)).await;
                continue;
            }
            let permit = tokio::select! {
                permit = permits.clone().acquire_owned() => match permit { Ok(p) => p, Err(_) => break },
                _ = stop.wait_for(|s| *s) => break,
            };
            let trigger = event
                .trigger
                .as_ref()
                .and_then(|t| triggers.get(t))
                .cloned();
            let (http, done) = (http.clone(), done.clone());
            deliveries.spawn(async move {
                let outcome = deliver::attempt(&http, &event, trigger.as_ref(), &retry).await;
                let _ = done.send(outcome).await;
                drop(permit);
            });
        }
        if !full {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
    }
    // Draining: finish what can be finished in time, give the rest back.
    let grace = Duration::from_secs(events.shutdown_grace_seconds);
    crate::events::drain(&mut deliveries, grace).await;
    drop(done);
    let _ = recorder.await;
    background.abort_all();
    let left: Vec<(String, (EventTable, String))> = lock(&in_flight).drain().collect();
    if left.is_empty() {
        return;
    }
    let Ok(client) = state.pool.get().await else {
        tracing::warn!("cannot give scheduled events back; their leases will expire");
        return;
    };
    for table in [EventTable::Cron, EventTable::OneOff] {
        let held = of_table(&left, table);
        if held.is_empty() {
            continue;
        }
        match store::release(&**client, table, &held).await {
            Ok(n) => tracing::info!(events = n, "gave unfinished scheduled events back"),
            Err(e) => tracing::warn!(error = %e, "cannot give scheduled events back"),
        }
    }
}

/// The `(id, lease)` pairs of `held` in `table`.
fn of_table(held: &[(String, (EventTable, String))], table: EventTable) -> Vec<(String, String)> {
    held.iter()
        .filter(|(_, (t, _))| *t == table)
        .map(|(id, (_, lease))| (id.clone(), lease.clone()))
        .collect()
}

/// Writes outcomes as they come, in batches (one transaction per table and batch). A cron
/// event whose trigger is gone is not retried.
async fn record(state: AppState, mut outcomes: mpsc::Receiver<Outcome>, in_flight: InFlight) {
    let mut batch = Vec::with_capacity(256);
    let clock = state.config.scheduled.clock.clone();
    while outcomes.recv_many(&mut batch, 256).await > 0 {
        let snapshot = state.snapshot();
        let gone = |o: &Outcome| {
            o.table == EventTable::Cron
                && !(snapshot.metadata.cron_triggers.iter())
                    .any(|t| Some(&t.name) == o.trigger.as_ref())
        };
        for o in batch.iter_mut() {
            if matches!(o.next, Next::Retry(_)) && gone(o) {
                o.next = Next::Failed;
            }
            let kind = usize::from(o.table == EventTable::OneOff);
            let outcome = match o.next {
                Next::Delivered => 0,
                Next::Retry(_) => 1,
                Next::Failed => 2,
                Next::Dead => 3,
            };
            state.scheduled.processed(kind, outcome);
        }
        let now = clock.now();
        for table in [EventTable::Cron, EventTable::OneOff] {
            let part: Vec<&Outcome> = batch.iter().filter(|o| o.table == table).collect();
            if part.is_empty() {
                continue;
            }
            let mut written = false;
            for wait in [0u64, 200, 1000, 5000] {
                tokio::time::sleep(Duration::from_millis(wait)).await;
                let Ok(mut client) = state.pool.get().await else {
                    continue;
                };
                match store::record(&mut client, table, &part, now).await {
                    Ok(()) => {
                        written = true;
                        break;
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot record scheduled deliveries"),
                }
            }
            if !written {
                // The claims stay: the leases expire and the events are delivered again.
                tracing::error!(
                    events = part.len(),
                    "scheduled event deliveries not recorded"
                );
            }
        }
        let mut set = lock(&in_flight);
        for o in batch.drain(..) {
            set.remove(&o.id);
        }
    }
}

/// Renews the leases of claims in flight, a few times per lease.
async fn renew(state: AppState, in_flight: InFlight, lease_seconds: f64) {
    let every = Duration::from_secs_f64((lease_seconds / 3.0).max(0.2));
    let clock = state.config.scheduled.clock.clone();
    loop {
        tokio::time::sleep(every).await;
        let held: Vec<(String, (EventTable, String))> = lock(&in_flight)
            .iter()
            .map(|(id, held)| (id.clone(), held.clone()))
            .collect();
        if held.is_empty() {
            continue;
        }
        let Ok(client) = state.pool.get().await else {
            continue;
        };
        for table in [EventTable::Cron, EventTable::OneOff] {
            let part = of_table(&held, table);
            if part.is_empty() {
                continue;
            }
            if let Err(e) = store::renew(&**client, table, &part, clock.now()).await {
                tracing::warn!(error = %e, "cannot renew scheduled event leases");
            }
        }
    }
}

/// Every minute: tops every consistent cron trigger up to its upcoming events, deletes the
/// waiting events of triggers that are gone, and counts the upcoming ones for `/metrics`, all
/// in one transaction that holds the catalog's version steady, so a trigger deleted meanwhile
/// is not planned again.
async fn generate(state: AppState, lease_seconds: f64) {
    let clock = state.config.scheduled.clock.clone();
    loop {
        if let Err(e) = plan(&state, clock.now(), lease_seconds).await {
            tracing::warn!(error = %e, "cannot plan cron events");
        }
        tokio::time::sleep(GENERATE_EVERY).await;
    }
}

async fn plan(
    state: &AppState,
    now: Option<chrono::DateTime<chrono::Utc>>,
    lease_seconds: f64,
) -> Result<(), crate::catalog::CatalogError> {
    let snapshot = state.snapshot();
    let known: Vec<String> = (snapshot.metadata.cron_triggers.iter())
        .map(|t| t.name.clone())
        .collect();
    let mut client = state.pool.get().await?;
    let tx = (**client).transaction().await?;
    let Some(now) = store::planning(&tx, snapshot.version, &known, now, lease_seconds).await?
    else {
        return Ok(());
    };
    for trigger in &snapshot.metadata.cron_triggers {
        if snapshot
            .resolution
            .resolved
            .cron_triggers
            .contains_key(&trigger.name)
        {
            crate::catalog::scheduled::generate(&tx, trigger, now).await?;
        }
    }
    let counts = store::upcoming(&tx, now).await?;
    tx.commit().await?;
    state.scheduled.set_upcoming(counts);
    Ok(())
}

/// Deletes finished events and logs the retention period no longer keeps, every `every`.
async fn clean_up(state: AppState, hours: f64, every: Duration) {
    let clock = state.config.scheduled.clock.clone();
    tokio::time::sleep(every.min(Duration::from_secs(60))).await;
    loop {
        if let Ok(mut client) = state.pool.get().await {
            match store::clean_up(&mut client, hours, clock.now()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(events = n, "deleted old scheduled events"),
                Err(e) => tracing::warn!(error = %e, "cannot clean up old scheduled events"),
            }
        }
        tokio::time::sleep(every).await;
    }
}
