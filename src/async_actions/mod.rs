//! The asynchronous-action workers (`docs/actions.md`, "Asynchronous actions"): every engine
//! replica runs one. It claims accepted calls (`FOR UPDATE SKIP LOCKED`), calls their
//! handlers concurrently with the stored input, session and headers, and stores each outcome.
//! A `NOTIFY` from the action log wakes it; a poll backs it up. A call is never sent twice:
//! one left `processing` by an engine that died is closed as an error once its handler's
//! timeout has passed ([`store::sweep`]). On shutdown the worker stops claiming and waits,
//! within the grace period, for the calls in flight.

mod store;

use crate::actions::{call, Call};
use crate::catalog::actions::ACTIONS_CHANNEL;
use crate::state::AppState;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Notify, Semaphore};
use tokio::task::JoinSet;

/// Runs the worker until `stop` turns true, then drains.
pub async fn run(
    state: AppState,
    pg_config: tokio_postgres::Config,
    mut stop: watch::Receiver<bool>,
) {
    let config = state.config.actions.clone();
    let wake = Arc::new(Notify::new());
    let listener = tokio::spawn(crate::events::listen(
        pg_config,
        ACTIONS_CHANNEL,
        wake.clone(),
    ));
    let permits = Arc::new(Semaphore::new(config.calls_in_flight.max(1)));
    let interval = Duration::from_millis(config.poll_interval_ms.max(10));
    let mut calls = JoinSet::new();
    loop {
        if *stop.borrow() {
            break;
        }
        while calls.try_join_next().is_some() {}
        let snapshot = state.snapshot();
        let resolved = &snapshot.resolution.resolved;
        let timeouts: Map<String, Value> = resolved
            .actions
            .iter()
            .filter(|a| a.is_async())
            .map(|a| (a.name().to_owned(), Value::from(a.timeout.as_secs_f64())))
            .collect();
        let room = permits.available_permits();
        let mut claimed = Vec::new();
        match state.pool.get().await {
            Ok(client) => {
                // Every pass, whatever the metadata holds now: a call left `processing` by a
                // dead engine is closed even if its action was since dropped (its calls
                // kept) or made synchronous. The sweep reads a partial index: cheap when
                // nothing is processing.
                if let Err(e) = store::sweep(&**client).await {
                    tracing::warn!(error = %e, "cannot close interrupted action calls");
                }
                if !timeouts.is_empty() && room > 0 {
                    match store::claim(&**client, &timeouts, room as i64).await {
                        Ok(c) => claimed = c,
                        Err(e) => tracing::warn!(error = %e, "cannot claim action calls"),
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot claim action calls: no connection"),
        }
        let full = !claimed.is_empty() && claimed.len() == room;
        for claim in claimed {
            let Ok(permit) = permits.clone().try_acquire_owned() else {
                break;
            };
            let (state, snapshot) = (state.clone(), snapshot.clone());
            calls.spawn(async move {
                let resolved = &snapshot.resolution.resolved;
                let outcome = match resolved.actions.iter().find(|a| a.name() == claim.action) {
                    Some(action) => {
                        let request = Call {
                            action,
                            input: &claim.input,
                            session: &claim.session,
                            document: &claim.document,
                            forwarded: &claim.headers,
                        };
                        let span = tracing::debug_span!("action.call", action = %claim.action, id = %claim.id);
                        tracing::Instrument::instrument(call(request, &resolved.custom_types), span)
                            .await
                            .map_err(|e| e.to_stored())
                    }
                    None => Err(serde_json::json!({"path": "$", "code": "unexpected",
                        "error": format!("the action \"{}\" no longer exists", claim.action)})),
                };
                store_outcome(&state, &claim.id, &outcome).await;
                drop(permit);
            });
        }
        if !full {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(interval) => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
    }
    // Calls aborted are left `processing`: closed as interrupted once their deadline passes.
    let grace = Duration::from_secs(state.config.events.shutdown_grace_seconds);
    crate::events::drain(&mut calls, grace).await;
    listener.abort();
}

/// Stores an outcome, retrying a few times: a call that was made must not be left looking
/// as if it may not have run.
async fn store_outcome(state: &AppState, id: &str, outcome: &Result<Value, Value>) {
    for wait in [0u64, 200, 1000, 5000] {
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let Ok(client) = state.pool.get().await else {
            continue;
        };
        match store::finish(&**client, id, outcome).await {
            Ok(true) => return,
            Ok(false) => {
                tracing::warn!(%id, "action call was closed as interrupted before it finished");
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, %id, "cannot store an action call's outcome; retrying")
            }
        }
    }
    tracing::error!(%id, "action call outcome not stored");
}
