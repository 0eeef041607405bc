//! Process shutdown: [`shutdown_signal`] resolves on SIGINT or SIGTERM, for `basalt serve`
//! and `basalt controller`. Must not stop anything itself; callers flip their own `watch`
//! channels and drain (see `docs/architecture.md`, "Other notes").

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}
