//! Connection pools: [`pool_for`] parses a database URL and builds a `deadpool_postgres` pool
//! (the server's, the controller's, `basalt export`'s). Must not connect or run SQL itself; the
//! pool connects lazily. See `docs/architecture.md`.

use anyhow::{Context as _, Result};
use deadpool_postgres::{Manager, ManagerConfig, Pool, QueueMode, RecyclingMethod};
use std::str::FromStr;
use tokio_postgres::NoTls;

/// A connection pool of `size` on `url`, and the parsed connection settings.
///
/// The pool hands out the connection returned last (LIFO), not the one idle longest
/// (deadpool's default): requests then use as few connections as the load needs, and each
/// finds its Postgres backend awake, in the CPU's caches, with its statements prepared, where
/// FIFO walks every connection in turn and wakes a backend that slept longest. The
/// measurements are in `docs/operations.md`, "The connection pool".
pub fn pool_for(url: &str, size: usize) -> Result<(Pool, tokio_postgres::Config)> {
    let pg = tokio_postgres::Config::from_str(url).context("invalid database URL")?;
    let manager = Manager::from_config(
        pg.clone(),
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(size)
        .queue_mode(QueueMode::Lifo)
        .build()
        .context("cannot build the connection pool")?;
    Ok((pool, pg))
}
