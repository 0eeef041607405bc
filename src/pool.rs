//! Connection pools: [`pool_for`] parses a database URL and builds a `deadpool_postgres` pool
//! (the server's, the controller's, `basalt export`'s). Must not connect or run SQL itself; the
//! pool connects lazily. See `docs/architecture.md`.

use anyhow::{Context as _, Result};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::str::FromStr;
use tokio_postgres::NoTls;

/// A connection pool of `size` on `url`, and the parsed connection settings.
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
        .build()
        .context("cannot build the connection pool")?;
    Ok((pool, pg))
}
