//! The benchmark's HTTP floor: the least work any HTTP GraphQL front must do per request, as a
//! reference for Basalt's own (see `bench/README.md`, "The HTTP floor").
//!
//! Per request it parses HTTP, parses the JSON body (`query`, `variables`), finds the
//! hand-written statement registered for that exact query text, binds the variables (or a
//! session header) to it, prepared once per pooled connection, and answers `{"data": …}` around
//! the JSON bytes Postgres built. No GraphQL parsing, no validation, no permissions, no log line:
//! what is left is what every front pays.
//!
//! Usage: `http-floor <database-url> <port> <routes.json> [pool-size]`, where `routes.json` is
//! a list of `{"query": "<GraphQL text>", "sql": "<statement>", "params": [{"variable": "id"}
//! | {"header": "x-svc-user-id"}]}`, parameter `$n` being the n-th entry of `params`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio_postgres::types::{FromSql, ToSql, Type};

/// Where a statement parameter comes from.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Param {
    /// A GraphQL variable of the request.
    Variable(String),
    /// A request header (a session value).
    Header(String),
}

/// One registered query: its GraphQL text and the statement answering it.
#[derive(Deserialize)]
struct Route {
    query: String,
    sql: String,
    params: Vec<Param>,
}

/// The request body every GraphQL front parses.
#[derive(Deserialize)]
struct GraphqlRequest {
    query: String,
    #[serde(default)]
    variables: Option<Map<String, Value>>,
}

struct Floor {
    pool: Pool,
    routes: HashMap<String, Route>,
}

/// A `json` result cell's bytes, untouched.
struct RawJson<'a>(&'a [u8]);

impl<'a> FromSql<'a> for RawJson<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawJson(raw))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSON
    }
}

fn refuse(status: StatusCode, message: impl std::fmt::Display) -> Response {
    (
        status,
        format!("{{\"errors\":[{{\"message\":{:?}}}]}}", message.to_string()),
    )
        .into_response()
}

/// One parameter as the prepared statement's type wants it.
fn bind(ty: &Type, value: Option<&Value>) -> Result<Box<dyn ToSql + Sync + Send>, String> {
    let Some(value) = value else {
        return Err("a parameter is missing".into());
    };
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let parsed: Box<dyn ToSql + Sync + Send> = match *ty {
        Type::INT4 => Box::new(text.parse::<i32>().map_err(|e| e.to_string())?),
        Type::INT8 => Box::new(text.parse::<i64>().map_err(|e| e.to_string())?),
        Type::TEXT | Type::VARCHAR => Box::new(text),
        _ => return Err(format!("parameter type {ty} is not supported")),
    };
    Ok(parsed)
}

async fn graphql(State(floor): State<Arc<Floor>>, headers: HeaderMap, body: Bytes) -> Response {
    let request: GraphqlRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, e),
    };
    let Some(route) = floor.routes.get(&request.query) else {
        return refuse(StatusCode::BAD_REQUEST, "query not registered");
    };
    let client = match floor.pool.get().await {
        Ok(c) => c,
        Err(e) => return refuse(StatusCode::SERVICE_UNAVAILABLE, e),
    };
    let statement = match client.prepare_cached(&route.sql).await {
        Ok(s) => s,
        Err(e) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    let variables = request.variables.unwrap_or_default();
    let mut params = Vec::with_capacity(route.params.len());
    for (param, ty) in route.params.iter().zip(statement.params()) {
        let header_value;
        let value = match param {
            Param::Variable(name) => variables.get(name),
            Param::Header(name) => {
                header_value = headers
                    .get(name.as_str())
                    .and_then(|v| v.to_str().ok())
                    .map(|v| Value::String(v.to_owned()));
                header_value.as_ref()
            }
        };
        match bind(ty, value) {
            Ok(p) => params.push(p),
            Err(e) => return refuse(StatusCode::BAD_REQUEST, e),
        }
    }
    let refs: Vec<&(dyn ToSql + Sync)> =
        params.iter().map(|p| &**p as &(dyn ToSql + Sync)).collect();
    let row = match client.query_one(&statement, &refs).await {
        Ok(row) => row,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, e),
    };
    let data: RawJson<'_> = match row.try_get(0) {
        Ok(d) => d,
        Err(e) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    let mut out = Vec::with_capacity(data.0.len() + 10);
    out.extend_from_slice(b"{\"data\":");
    out.extend_from_slice(data.0);
    out.push(b'}');
    ([(header::CONTENT_TYPE, "application/json")], out).into_response()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, port, routes, rest @ ..] = args.as_slice() else {
        return Err("usage: http-floor <database-url> <port> <routes.json> [pool-size]".into());
    };
    let pool_size = rest.first().map(|s| s.parse()).transpose()?.unwrap_or(16);
    let routes: Vec<Route> = serde_json::from_slice(&std::fs::read(routes)?)?;
    let manager = Manager::from_config(
        url.parse::<tokio_postgres::Config>()?,
        tokio_postgres::NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager).max_size(pool_size).build()?;
    let floor = Arc::new(Floor {
        pool,
        routes: routes.into_iter().map(|r| (r.query.clone(), r)).collect(),
    });
    let app = Router::new()
        .route("/v1/graphql", post(graphql))
        .route("/healthz", axum::routing::get(|| async { "OK" }))
        .with_state(floor);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port.parse::<u16>()?)).await?;
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
