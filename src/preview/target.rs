//! What `basalt diff` compares with: a running engine (through `/v1/query`, as any admin
//! client) or the catalog's database directly. Both answer the same two questions: what the
//! catalog holds now (with who owns each object), and what a request would change (a
//! `dry_run`, rolled back).

use super::PreviewError;
use crate::catalog::{self, managed};
use crate::metadata::Metadata;
use crate::ops::{Limits, Op};
use crate::transaction::{self, TransactionError, Writer};
use serde_json::{json, Map, Value};

/// Where the catalog is.
pub enum Target {
    /// A running engine.
    Engine(Engine),
    /// The database holding `basalt_catalog`.
    Database(deadpool_postgres::Pool),
}

/// A running engine, reached as an admin client.
pub struct Engine {
    /// Its base URL, without a trailing slash.
    base: String,
    /// Sent as `X-Svc-Admin-Secret`.
    admin_secret: Option<String>,
    http: reqwest::Client,
}

/// What a dry run answered.
#[derive(Debug)]
pub enum DryRun {
    /// The `dry_run` answer: `added`, `changed`, `removed`, `inconsistent_objects`.
    Answer(Value),
    /// The request would be refused: the metadata API's error body (`path`, `error`, `code`).
    Refused(Value),
}

impl Target {
    /// An engine at `endpoint`, or else the database at `database_url`.
    pub fn new(
        endpoint: Option<&str>,
        admin_secret: Option<&str>,
        database_url: Option<&str>,
    ) -> Result<Self, PreviewError> {
        if let Some(endpoint) = endpoint {
            let http = reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(60))
                .build()
                .map_err(|e| PreviewError::Target(e.to_string()))?;
            return Ok(Target::Engine(Engine {
                base: endpoint.trim_end_matches('/').to_owned(),
                admin_secret: admin_secret.map(str::to_owned),
                http,
            }));
        }
        let url = database_url.ok_or_else(|| {
            PreviewError::Target(
                "give --endpoint (a running engine) or --database-url (its database)".into(),
            )
        })?;
        let (pool, _) =
            crate::pool::pool_for(url, 1).map_err(|e| PreviewError::Target(format!("{e:#}")))?;
        Ok(Target::Database(pool))
    }

    /// For messages: the engine's URL, or "the database".
    pub fn describe(&self) -> String {
        match self {
            Target::Engine(engine) => engine.base.clone(),
            Target::Database(_) => "the catalog database".to_owned(),
        }
    }

    /// The catalog's document, and who owns each of its objects (`owners` of
    /// `export_metadata` with `include_owners`).
    pub async fn current(&self) -> Result<(Metadata, Map<String, Value>), PreviewError> {
        match self {
            Target::Engine(engine) => {
                let request = json!({"type": "export_metadata", "args": {"include_owners": true}});
                let mut document = match engine.post(&request).await? {
                    DryRun::Answer(document) => document,
                    DryRun::Refused(body) => {
                        return Err(PreviewError::Target(format!("export_metadata: {body}")))
                    }
                };
                let owners = match document.as_object_mut().and_then(|d| d.remove("owners")) {
                    Some(Value::Object(owners)) => owners,
                    _ => Map::new(),
                };
                let metadata = serde_json::from_value(document)
                    .map_err(|e| PreviewError::Target(format!("export_metadata: {e}")))?;
                Ok((metadata, owners))
            }
            Target::Database(pool) => {
                let client = pool.get().await.map_err(catalog_error)?;
                let (metadata, _) = catalog::load(&**client, false)
                    .await
                    .map_err(catalog_error)?;
                let rows = managed::load(&**client).await.map_err(catalog_error)?;
                let owners = crate::metadata::objects::owners(&metadata, &rows);
                Ok((metadata, owners))
            }
        }
    }

    /// Runs `request` (a `/v1/query` body) as a dry run: nothing is stored, nothing notified.
    pub async fn dry_run(&self, mut request: Value) -> Result<DryRun, PreviewError> {
        request["dry_run"] = Value::Bool(true);
        match self {
            Target::Engine(engine) => engine.post(&request).await,
            Target::Database(pool) => {
                let op = match Op::parse(
                    &request,
                    Limits {
                        max_batch_size: usize::MAX,
                    },
                ) {
                    Ok(op) => op,
                    Err(e) => return Ok(DryRun::Refused(refusal(&e))),
                };
                let mut client = pool.get().await.map_err(catalog_error)?;
                let writer = Writer::Api {
                    reject_managed: false,
                    session: None,
                    last_write: None,
                    live: None,
                };
                match transaction::dry_run(&mut client, &op, None, writer).await {
                    Ok(answer) => Ok(DryRun::Answer(
                        serde_json::to_value(answer).unwrap_or_default(),
                    )),
                    Err(TransactionError::Metadata(e)) => Ok(DryRun::Refused(refusal(&e))),
                    Err(e) => Err(catalog_error(e)),
                }
            }
        }
    }
}

impl Engine {
    /// POSTs to the engine's `/v1/query`: 200 is an answer, 400 and 409 a refusal.
    async fn post(&self, request: &Value) -> Result<DryRun, PreviewError> {
        let base = &self.base;
        let mut call = self.http.post(format!("{base}/v1/query")).json(request);
        if let Some(secret) = &self.admin_secret {
            call = call.header("X-Svc-Admin-Secret", secret);
        }
        let response = call
            .send()
            .await
            .map_err(|e| PreviewError::Target(format!("{base}: {e}")))?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .map_err(|e| PreviewError::Target(format!("{base}: HTTP {status}: {e}")))?;
        match status.as_u16() {
            200 => Ok(DryRun::Answer(body)),
            400 | 409 => Ok(DryRun::Refused(body)),
            _ => Err(PreviewError::Target(format!(
                "{base}: HTTP {status}: {body}"
            ))),
        }
    }
}

fn refusal(e: &crate::metadata::MetadataError) -> Value {
    json!({"path": e.path.to_string(), "error": e.message, "code": e.code.as_str()})
}

fn catalog_error(e: impl std::fmt::Display) -> PreviewError {
    PreviewError::Target(format!("cannot read the catalog: {e}"))
}
