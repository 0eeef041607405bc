//! Leader election by a Postgres session advisory lock on the catalog database
//! (`docs/kubernetes.md`): the lock lives next to what it protects, needs no Kubernetes RBAC,
//! and is released by Postgres when the holder's session ends. The session must be direct: a
//! transaction-pooling proxy (PgBouncer in transaction mode) would hand the lock to whichever
//! client runs next.

use std::time::Duration;
use tokio::sync::watch;
use tokio_postgres::NoTls;

/// Lock key: "basalt" in ASCII with a `c` (controller) suffix; distinct from the migration lock.
pub const LEADER_LOCK: i64 = 0x0062_6173_616c_7463;

/// Held leadership. Dropping it closes the session, which releases the lock.
#[derive(Debug)]
pub struct Leadership {
    /// The session holding the lock; the lock lives exactly as long as it.
    _session: tokio_postgres::Client,
    lost: watch::Receiver<bool>,
    driver: tokio::task::JoinHandle<()>,
}

impl Leadership {
    /// Resolves when the lock session ends (the lock is then no longer ours).
    pub async fn lost(&mut self) {
        let _ = self.lost.wait_for(|lost| *lost).await;
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// Connects and tries the lock every `retry` until it is ours. A connection failure is
/// retried too (after `retry`): a standby waits out database restarts.
pub async fn acquire(config: &tokio_postgres::Config, retry: Duration) -> Leadership {
    let mut config = config.clone();
    // Notice a dead peer within about half a minute, so a standby takes over.
    config.keepalives(true);
    config.keepalives_idle(Duration::from_secs(15));
    config.keepalives_interval(Duration::from_secs(5));
    config.keepalives_retries(3);
    // The lock is released when the *server* drops the session: make it notice a dead
    // leader within about half a minute too, not after the OS default of two hours.
    config.options(
        "-c tcp_keepalives_idle=15 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3",
    );
    config.application_name("basalt-controller-leader");
    let mut waiting_logged = false;
    loop {
        match config.connect(NoTls).await {
            Ok((client, connection)) => {
                let (tx, lost) = watch::channel(false);
                let driver = tokio::spawn(async move {
                    if let Err(err) = connection.await {
                        tracing::warn!(%err, "leader lock connection lost");
                    }
                    let _ = tx.send(true);
                });
                loop {
                    match client
                        .query_one("SELECT pg_try_advisory_lock($1)", &[&LEADER_LOCK])
                        .await
                        .and_then(|r| r.try_get::<_, bool>(0))
                    {
                        Ok(true) => {
                            tracing::info!("controller leadership acquired");
                            return Leadership {
                                _session: client,
                                lost,
                                driver,
                            };
                        }
                        Ok(false) => {
                            if !waiting_logged {
                                tracing::info!(
                                    "another controller holds the leader lock; standing by"
                                );
                                waiting_logged = true;
                            }
                            tokio::time::sleep(retry).await;
                        }
                        Err(err) => {
                            tracing::warn!(%err, "leader lock query failed");
                            break;
                        }
                    }
                }
                driver.abort();
            }
            Err(err) => tracing::warn!(%err, "cannot connect for the leader lock"),
        }
        tokio::time::sleep(retry).await;
    }
}
