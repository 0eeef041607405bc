//! Runs printed SQL: binds parameters (sent as text, cast in SQL) from the request's variables,
//! its session and earlier steps, runs prepared statements, and returns the raw JSON bytes
//! Postgres built — never parsed or re-serialized. Postgres errors become [`ExecuteError`]s.
//! Holds no SQL of its own. See `docs/architecture.md`.

mod bind;
mod cost;
mod error;
mod program;
mod shared;

pub use bind::{bind, Binding, Provided};
pub use error::{ExecuteError, Refusal, CHECK_FAILED};
pub use program::run as run_program;
pub use shared::{BuildCopies, SharedStatement, Sharing, MAX_SHARED_REQUESTS};

use crate::sql::print::MultiplexedSql;
use crate::sql::SqlText;
use bytes::Bytes;
use futures_util::TryStreamExt;
use tokio_postgres::types::{FromSql, ToSql, Type};

/// The bytes of a `json`/`jsonb` result cell, untouched.
#[derive(Debug)]
pub struct RawJson(pub Bytes);

impl<'a> FromSql<'a> for RawJson {
    fn from_sql(
        ty: &Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let text = crate::sql::types::JsonText::from_sql(ty, raw)?;
        Ok(RawJson(Bytes::copy_from_slice(text.0)))
    }

    fn accepts(ty: &Type) -> bool {
        <crate::sql::types::JsonText<'_> as FromSql<'_>>::accepts(ty)
    }
}

/// Most prepared statements kept per connection; past it the cache starts over.
const STATEMENT_CACHE_SIZE: usize = 500;

/// A pooled connection (or a transaction on one) with its prepared-statement cache.
pub struct Connection<'a, C> {
    /// The client or transaction.
    pub client: &'a C,
    pub cache: &'a deadpool_postgres::StatementCache,
    /// Work counters (statements prepared).
    pub counters: &'a crate::stats::Counters,
}

impl<C> Clone for Connection<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Connection<'_, C> {}

impl<'a> Connection<'a, deadpool_postgres::Client> {
    /// A pooled client, with its own statement cache.
    pub fn of(client: &'a deadpool_postgres::Client, counters: &'a crate::stats::Counters) -> Self {
        Connection {
            client,
            cache: &client.statement_cache,
            counters,
        }
    }
}

impl<'a, 't> Connection<'a, deadpool_postgres::Transaction<'t>> {
    /// A transaction, with its connection's statement cache.
    pub fn of_transaction(
        tx: &'a deadpool_postgres::Transaction<'t>,
        counters: &'a crate::stats::Counters,
    ) -> Self {
        Connection {
            client: tx,
            cache: &tx.statement_cache,
            counters,
        }
    }
}

/// Parameter types of statements with up to this many parameters come from [`TEXT_TYPES`]
/// rather than a fresh vector.
const TEXT_TYPES_LEN: usize = 32;

/// `text`, once per parameter (every parameter is sent as text and cast in SQL).
const TEXT_TYPES: [Type; TEXT_TYPES_LEN] = [Type::TEXT; TEXT_TYPES_LEN];

/// Prepares `sql` (every parameter `text`) through the connection's statement cache, keeping
/// the cache bounded; counts new preparations.
///
/// A statement the cache holds is answered on the first poll (a hash lookup under a read
/// lock); one it does not hold waits for Postgres's reply to `PREPARE`. So a first poll that
/// is not ready marks a preparation (a task that waits on another's preparation of the same
/// statement counts as one too), and only then is the cache's size read: its `size()` walks
/// every entry, which on every request would cost in proportion to the cache.
async fn prepare<C: deadpool_postgres::GenericClient>(
    conn: Connection<'_, C>,
    sql: &str,
    params: usize,
) -> Result<tokio_postgres::Statement, ExecuteError> {
    let many;
    let types: &[Type] = match TEXT_TYPES.get(..params) {
        Some(types) => types,
        None => {
            many = vec![Type::TEXT; params];
            &many
        }
    };
    let mut preparing = std::pin::pin!(conn.client.prepare_typed_cached(sql, types));
    if let std::task::Poll::Ready(cached) = futures_util::poll!(preparing.as_mut()) {
        return Ok(cached?);
    }
    let statement = preparing.await?;
    crate::stats::Counters::bump(&conn.counters.statements_prepared);
    if conn.cache.size() > STATEMENT_CACHE_SIZE {
        conn.cache.clear();
    }
    Ok(statement)
}

/// Prepares and starts one statement with its bound values, one per parameter (counted as
/// run, and timed from `started` if Postgres refuses it): its rows as they arrive. The values
/// are passed as they are, without a slice of references built for them.
async fn start<C: deadpool_postgres::GenericClient>(
    conn: Connection<'_, C>,
    sql: &str,
    values: &[Option<String>],
    started: std::time::Instant,
) -> Result<tokio_postgres::RowStream, ExecuteError> {
    tracing::debug!(sql = %sql, "execute");
    let statement = prepare(conn, sql, values.len()).await?;
    crate::stats::Counters::bump(&conn.counters.statements_run);
    let rows = conn.client.query_raw(&statement, values.iter()).await;
    if rows.is_err() {
        timed(conn, started);
    }
    Ok(rows?)
}

/// Records how long a statement took, from before its preparation to its last row.
fn timed<C>(conn: Connection<'_, C>, started: std::time::Instant) {
    conn.counters
        .sql_seconds
        .observe(started.elapsed().as_secs_f64());
}

/// Runs one statement with bound values and returns its rows.
async fn rows<C: deadpool_postgres::GenericClient>(
    conn: Connection<'_, C>,
    sql: &str,
    values: &[Option<String>],
) -> Result<Vec<tokio_postgres::Row>, ExecuteError> {
    let started = std::time::Instant::now();
    let rows = start(conn, sql, values, started).await?.try_collect().await;
    timed(conn, started);
    Ok(rows?)
}

/// Runs one statement of a transaction planned for the values it is given: sent unnamed, so
/// Postgres parses and plans it with the values and runs it in one round trip, and nothing is
/// kept. For statements whose best plan depends on their values (see
/// [`crate::sql::program::Step::plan_each_run`]).
async fn rows_planned_each_run(
    conn: Connection<'_, deadpool_postgres::Transaction<'_>>,
    sql: &str,
    values: &[Option<String>],
) -> Result<Vec<tokio_postgres::Row>, ExecuteError> {
    let started = std::time::Instant::now();
    tracing::debug!(sql = %sql, "execute");
    crate::stats::Counters::bump(&conn.counters.statements_run);
    let params = values
        .iter()
        .map(|v| (v as &(dyn tokio_postgres::types::ToSql + Sync), Type::TEXT));
    let rows = async {
        conn.client
            .query_typed_raw(sql, params)
            .await?
            .try_collect()
            .await
    }
    .await;
    timed(conn, started);
    Ok(rows?)
}

/// Runs one statement with bound values and returns its first row, if it returned any. The
/// rest are read (not kept) to the end: an error can follow the rows, such as a deferred
/// constraint failing at the statement's commit.
async fn first_row<C: deadpool_postgres::GenericClient>(
    conn: Connection<'_, C>,
    sql: &str,
    values: &[Option<String>],
) -> Result<Option<tokio_postgres::Row>, ExecuteError> {
    let started = std::time::Instant::now();
    let mut rows = std::pin::pin!(start(conn, sql, values, started).await?);
    let first = async {
        let first = rows.try_next().await?;
        while rows.try_next().await?.is_some() {}
        Ok::<_, tokio_postgres::Error>(first)
    }
    .await;
    timed(conn, started);
    Ok(first?)
}

/// Runs a statement that needs no results (the session setting of a transaction).
pub async fn statement<C: deadpool_postgres::GenericClient>(
    conn: Connection<'_, C>,
    sql: &SqlText,
    binding: &Binding<'_>,
) -> Result<(), ExecuteError> {
    let values = bind(&sql.params, binding, None)?;
    first_row(conn, &sql.sql, &values).await.map(|_| ())
}

/// Records the current trace context for the rest of the transaction (`basalt.tracecontext`),
/// so event triggers capture it with the rows the transaction changes.
pub async fn set_trace_context<C: deadpool_postgres::GenericClient>(
    conn: Connection<'_, C>,
    context: &str,
) -> Result<(), ExecuteError> {
    conn.client
        .execute(
            "SELECT set_config('basalt.tracecontext', $1, true)",
            &[&context],
        )
        .await?;
    Ok(())
}

/// Runs a compiled query (or a one-statement mutation) and returns its answer's JSON bytes.
pub async fn run<C: deadpool_postgres::GenericClient>(
    conn: Connection<'_, C>,
    sql: &SqlText,
    binding: &Binding<'_>,
) -> Result<Bytes, ExecuteError> {
    let values = bind(&sql.params, binding, None)?;
    run_values(conn, sql, &values).await
}

/// [`run`] with the parameter values already bound.
pub async fn run_values<C: deadpool_postgres::GenericClient>(
    conn: Connection<'_, C>,
    sql: &SqlText,
    values: &[Option<String>],
) -> Result<Bytes, ExecuteError> {
    let row = first_row(conn, &sql.sql, values)
        .await?
        .ok_or_else(|| ExecuteError::Unexpected("the query returned no row".into()))?;
    // A one-statement mutation answers SQL NULL when it wrote no row (`_by_pk`, `_one`).
    let cell: Option<RawJson> = row.try_get(0)?;
    Ok(cell.map_or(Bytes::from_static(b"null"), |RawJson(bytes)| bytes))
}

/// Runs a statement with one `json` column per field (see [`crate::translate::query_fields`])
/// and returns each column's bytes, in order (`null` for SQL NULL).
pub async fn run_fields<C: deadpool_postgres::GenericClient>(
    conn: Connection<'_, C>,
    sql: &SqlText,
    binding: &Binding<'_>,
) -> Result<Vec<Bytes>, ExecuteError> {
    let values = bind(&sql.params, binding, None)?;
    let row = first_row(conn, &sql.sql, &values)
        .await?
        .ok_or_else(|| ExecuteError::Unexpected("the query returned no row".into()))?;
    (0..row.len())
        .map(|column| {
            let cell: Option<RawJson> = row.try_get(column)?;
            Ok(cell.map_or(Bytes::from_static(b"null"), |RawJson(bytes)| bytes))
        })
        .collect()
}

/// Postgres's `EXPLAIN` of a compiled statement with its bound values, one line per row.
pub async fn explain(
    client: &deadpool_postgres::Client,
    sql: &SqlText,
    values: &[Option<String>],
) -> Result<Vec<String>, ExecuteError> {
    let explain = crate::sql::print::explain(sql);
    let types = vec![Type::TEXT; values.len()];
    let statement = client.prepare_typed(&explain.sql, &types).await?;
    let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v as &(dyn ToSql + Sync)).collect();
    let rows = client.query(&statement, &refs).await?;
    rows.iter()
        .map(|r| r.try_get::<_, String>(0).map_err(ExecuteError::from))
        .collect()
}

/// Runs a statement that answers several requests at once, with their values bound in turn
/// (see [`SharedStatement::writes`]): each row is a request's index and its answer (`null`
/// for SQL NULL).
async fn run_copies(
    conn: Connection<'_, deadpool_postgres::Client>,
    sql: &SqlText,
    values: &[Option<String>],
) -> Result<Vec<(usize, Bytes)>, ExecuteError> {
    let rows = rows(conn, &sql.sql, values).await?;
    rows.iter()
        .map(|row| {
            let cell: Option<RawJson> = row.try_get(1)?;
            let bytes = cell.map_or(Bytes::from_static(b"null"), |RawJson(bytes)| bytes);
            Ok((cohort(row)?, bytes))
        })
        .collect()
}

/// The request (or cohort) index in the first column of a row answering several.
fn cohort(row: &tokio_postgres::Row) -> Result<usize, ExecuteError> {
    let cohort: i32 = row.try_get(0)?;
    usize::try_from(cohort)
        .map_err(|_| ExecuteError::Unexpected(format!("cohort {cohort} out of range")))
}

/// Runs a live query for many cohorts in one statement. `cohorts[i]` are cohort `i`'s bound
/// parameter values (see [`bind`]); the answer pairs each cohort's index with its `data` bytes.
pub async fn run_multiplexed<C: deadpool_postgres::GenericClient>(
    conn: Connection<'_, C>,
    sql: &MultiplexedSql,
    cohorts: &[&[Option<String>]],
) -> Result<Vec<(usize, Bytes)>, ExecuteError> {
    let mut answers = Vec::with_capacity(cohorts.len());
    stream_multiplexed(conn, sql, cohorts, |cohort, bytes| {
        answers.push((cohort, bytes))
    })
    .await?;
    Ok(answers)
}

/// One cohort's answer of a stream statement: its index, its `data` bytes, the text of the
/// cursor its batch ended at (`None`: no rows), and whether the batch was full.
pub type StreamAnswer = (usize, Bytes, Option<String>, bool);

/// Runs a stream for many cohorts in one statement, as [`run_multiplexed`].
pub async fn run_multiplexed_stream(
    conn: Connection<'_, deadpool_postgres::Client>,
    sql: &MultiplexedSql,
    cohorts: &[&[Option<String>]],
) -> Result<Vec<StreamAnswer>, ExecuteError> {
    let mut answers = Vec::with_capacity(cohorts.len());
    let mut failed = None;
    stream_rows(conn, sql, cohorts, |row| {
        let answer = (|| {
            let RawJson(bytes) = row.try_get(1)?;
            let cursor: Option<String> = row.try_get(2)?;
            let full: Option<bool> = row.try_get(3)?;
            Ok::<_, ExecuteError>((cohort(row)?, bytes, cursor, full.unwrap_or(false)))
        })();
        match answer {
            Ok(answer) => answers.push(answer),
            Err(err) => failed = Some(err),
        }
    })
    .await?;
    match failed {
        Some(err) => Err(err),
        None => Ok(answers),
    }
}

/// Runs one statement for many cohorts, as [`run_multiplexed`], handing each cohort's index
/// and `data` bytes to `each` as soon as its row arrives rather than after the last one: a
/// statement answering many requests lets the first ones go while Postgres computes the rest.
/// On an error, the rows handed on before it stay valid answers (a read's row is complete
/// when Postgres sends it); the cohorts not handed on got none.
async fn stream_multiplexed<C: deadpool_postgres::GenericClient>(
    conn: Connection<'_, C>,
    sql: &MultiplexedSql,
    cohorts: &[&[Option<String>]],
    mut each: impl FnMut(usize, Bytes),
) -> Result<(), ExecuteError> {
    let mut failed = None;
    stream_rows(conn, sql, cohorts, |row| {
        let answer = (|| {
            let RawJson(bytes) = row.try_get(1)?;
            Ok::<_, ExecuteError>((cohort(row)?, bytes))
        })();
        match answer {
            Ok((index, bytes)) => each(index, bytes),
            Err(err) => failed = Some(err),
        }
    })
    .await?;
    failed.map_or(Ok(()), Err)
}

/// Runs one multiplexed statement, handing each row to `each` as it arrives.
async fn stream_rows<C: deadpool_postgres::GenericClient>(
    conn: Connection<'_, C>,
    sql: &MultiplexedSql,
    cohorts: &[&[Option<String>]],
    mut each: impl FnMut(&tokio_postgres::Row),
) -> Result<(), ExecuteError> {
    let ids: Vec<Option<String>> = (0..cohorts.len()).map(|i| Some(i.to_string())).collect();
    let mut arrays = vec![Some(bind::text_array(&ids))];
    for param in 0..sql.params.len() {
        let column: Vec<Option<String>> = cohorts
            .iter()
            .map(|values| values.get(param).cloned().flatten())
            .collect();
        arrays.push(Some(bind::text_array(&column)));
    }
    tracing::debug!(cohorts = cohorts.len(), "execute multiplexed");
    let started = std::time::Instant::now();
    let mut rows = std::pin::pin!(start(conn, &sql.sql, &arrays, started).await?);
    let streamed = async {
        while let Some(row) = rows.try_next().await? {
            each(&row);
        }
        Ok(())
    }
    .await;
    timed(conn, started);
    streamed
}
