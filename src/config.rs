//! Command line and `BASALT_*` environment variables. Every flag has an env var.

mod reference;
mod scheduled;

pub use reference::reference_markdown;
pub use scheduled::{Clock, ScheduledConfig};

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Basalt: a GraphQL engine over Postgres with its metadata kept in Postgres.
#[derive(Debug, Parser)]
#[command(name = "basalt", version, about)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the metadata API and GraphQL, on an embedded Postgres when no database URL is
    /// given.
    Serve(Box<ServeConfig>),
    /// Run the Kubernetes controller: reconcile `basalt.dev` resources into the catalog.
    Controller(Box<ControllerCommand>),
    /// Export the catalog's metadata: as custom resources (`--format crds`) or the metadata
    /// document (`--format metadata`).
    Export(ExportCommand),
    /// Show what applying resources or a metadata file would change, without changing
    /// anything: exit 0 when nothing would change, 1 when something would, 2 when the change
    /// would be refused, conflict or leave objects inconsistent, or on error.
    Diff(DiffCommand),
    /// Write the CustomResourceDefinitions as YAML, one file per kind.
    Crds {
        /// Directory to write into (created if missing).
        #[arg(long, default_value = "crds")]
        out: PathBuf,
    },
}

/// `basalt controller`.
#[derive(Debug, Clone, clap::Args)]
pub struct ControllerCommand {
    /// Maintenance actions instead of running the controller.
    #[command(subcommand)]
    pub action: Option<ControllerAction>,
    /// Postgres holding `basalt_catalog` (the engine's database).
    #[arg(long, env = "BASALT_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Log format.
    #[arg(long, env = "BASALT_LOG_FORMAT", value_enum, default_value_t = LogFormat::Json)]
    pub log_format: LogFormat,
    /// Controller settings.
    #[command(flatten)]
    pub settings: ControllerConfig,
    /// The change triggers its writes keep in step, as the engines would.
    #[command(flatten)]
    pub detection: ChangeDetectionConfig,
    /// OpenTelemetry traces.
    #[command(flatten)]
    pub otlp: OtlpConfig,
}

/// What `basalt export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// `basalt.dev` resources annotated for adoption, one file each with `--out`.
    Crds,
    /// The metadata document, as `export_metadata` returns it.
    Metadata,
}

/// `basalt export`.
#[derive(Debug, Clone, clap::Args)]
pub struct ExportCommand {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Crds)]
    pub format: ExportFormat,
    /// Namespace of the exported resources (`--format crds`).
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// Directory to write into (one file per resource and a `kustomization.yaml`); without
    /// it, everything goes to stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Postgres holding `basalt_catalog`.
    #[arg(long, env = "BASALT_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
}

/// How `basalt diff` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffOutput {
    /// One line per object, for people and pull-request comments.
    Text,
    /// The full answer, for tools.
    Json,
}

/// `basalt diff`.
#[derive(Debug, Clone, clap::Args)]
pub struct DiffCommand {
    /// A file or a directory (searched recursively for `.yaml`, `.yml` and `.json`) holding
    /// `basalt.dev` resources, or one metadata document as `export_metadata` writes it.
    #[arg(short = 'f', long = "filename")]
    pub path: PathBuf,
    /// A running engine to compare with (its `/v1/query`), e.g. `http://localhost:8080`.
    #[arg(long, env = "BASALT_ENDPOINT")]
    pub endpoint: Option<String>,
    /// The engine's admin secret (with `--endpoint`).
    #[arg(long, env = "BASALT_ADMIN_SECRET", hide_env_values = true)]
    pub admin_secret: Option<String>,
    /// Or the database holding `basalt_catalog`, when no `--endpoint` is given.
    #[arg(long, env = "BASALT_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Namespace of resources that name none (as `kubectl apply -n`).
    #[arg(long, short = 'n', default_value = "default")]
    pub namespace: String,
    /// Also show as removed the objects of resources that are not in the files (as deleting
    /// those resources would do, with the default deletion policy).
    #[arg(long)]
    pub prune: bool,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = DiffOutput::Text)]
    pub output: DiffOutput,
}

/// Maintenance subcommands of `basalt controller`.
#[derive(Debug, Clone, Subcommand)]
pub enum ControllerAction {
    /// Forget which catalog objects Kubernetes resources own (all, or one namespace's); the
    /// objects stay, as if created through `/v1/query`.
    ReleaseOwnership {
        /// Only resources of this namespace.
        #[arg(long)]
        namespace: Option<String>,
    },
}

/// Settings of the Kubernetes controller (`basalt controller`, `basalt serve --controller`).
#[derive(Debug, Clone, clap::Args)]
pub struct ControllerConfig {
    /// Namespaces to watch (comma-separated). Default: `POD_NAMESPACE`, else the kubeconfig's
    /// namespace.
    #[arg(
        long = "watch-namespaces",
        env = "BASALT_WATCH_NAMESPACES",
        value_delimiter = ','
    )]
    pub watch_namespaces: Vec<String>,
    /// Watch every namespace (needs cluster-wide RBAC: a ClusterRole).
    #[arg(long, env = "BASALT_WATCH_ALL_NAMESPACES", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub all_namespaces: bool,
    /// Only reconcile resources matching this label selector (e.g. `basalt.dev/engine=prod`).
    #[arg(long, env = "BASALT_CONTROLLER_LABEL_SELECTOR")]
    pub label_selector: Option<String>,
    /// Re-apply drifted objects (a resource's `basalt.dev/self-heal` annotation overrides).
    #[arg(long, env = "BASALT_SELF_HEAL", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub self_heal: bool,
    /// Seconds between periodic re-reconciles of every resource and scans for orphaned
    /// objects.
    #[arg(long, env = "BASALT_RESYNC_SECONDS", default_value_t = 300)]
    pub resync_seconds: u64,
    /// Remove managed objects whose resource no longer exists (orphans) from the catalog,
    /// instead of only reporting them.
    #[arg(long, env = "BASALT_PRUNE_ORPHANS", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub prune_orphans: bool,
    /// Resources reconciled at once, per kind and watched namespace.
    ///
    /// Their catalog writes are committed in groups.
    #[arg(long, env = "BASALT_CONTROLLER_CONCURRENCY", default_value_t = 8)]
    pub concurrency: u16,
    /// Milliseconds between a standby's attempts to take the leader lock.
    #[arg(long, env = "BASALT_LEADER_RETRY_MS", default_value_t = 5000)]
    pub leader_retry_ms: u64,
    /// Direct Postgres URL for the leader lock and the catalog `LISTEN`; defaults to the
    /// database URL.
    ///
    /// It must be a session-mode connection: not PgBouncer in transaction mode.
    #[arg(long, env = "BASALT_CONTROLLER_DATABASE_URL", hide_env_values = true)]
    pub controller_database_url: Option<String>,
    /// Port of the controller's `/healthz` and `/readyz`.
    #[arg(long, env = "BASALT_CONTROLLER_PROBE_PORT", default_value_t = 8081)]
    pub probe_port: u16,
    /// Change detection's settings, for the triggers its writes keep in step: set from
    /// [`ChangeDetectionConfig`] (the controller's own, or the engine's it runs in).
    #[arg(skip)]
    pub live: crate::resolve::live_change::LivePolicy,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            watch_namespaces: Vec::new(),
            all_namespaces: false,
            label_selector: None,
            self_heal: false,
            resync_seconds: 300,
            prune_orphans: false,
            concurrency: 8,
            leader_retry_ms: 5000,
            controller_database_url: None,
            probe_port: 8081,
            live: Default::default(),
        }
    }
}

/// What `/v1/query` may do to objects Kubernetes resources own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ManagedMetadata {
    /// Allowed; the change shows as drift.
    Allow,
    /// Refused with `400 not-supported`.
    Reject,
}

/// Whether live queries and streams are polled only when a table they read changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChangeDetection {
    /// Statement triggers notify the engine of changes; a cohort runs when its tables changed.
    On,
    /// Every cohort runs every interval, and the engine's change triggers are removed.
    Off,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One JSON object per line.
    Json,
    /// Human-readable.
    Pretty,
}

/// Which tables change detection of live queries watches (`docs/graphql.md`, "When
/// subscriptions run"); read by the engine and, since metadata writes keep the change
/// triggers in step, by the controller.
#[derive(Debug, Clone, clap::Args)]
pub struct ChangeDetectionConfig {
    /// Whether live queries and streams run only when a table they read changed (`on`), or
    /// every interval (`off`).
    #[arg(
        long = "live-queries-change-detection",
        env = "BASALT_LIVE_QUERIES_CHANGE_DETECTION",
        value_enum,
        default_value_t = ChangeDetection::On
    )]
    pub change_detection: ChangeDetection,
    /// Tables (`schema.table`, comma-separated) that get no change trigger: cohorts reading
    /// them run every interval. For tables with very high write rates.
    #[arg(
        long = "live-queries-change-detection-exclude",
        env = "BASALT_LIVE_QUERIES_CHANGE_DETECTION_EXCLUDE",
        value_delimiter = ','
    )]
    pub change_detection_exclude: Vec<String>,
}

impl ChangeDetectionConfig {
    /// The settings as the triggers' installation reads them.
    pub fn policy(&self) -> crate::resolve::live_change::LivePolicy {
        crate::resolve::live_change::LivePolicy {
            on: self.change_detection == ChangeDetection::On,
            exclude: (self.change_detection_exclude.iter())
                .map(|e| e.trim())
                .filter(|e| !e.is_empty())
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// Configuration of `basalt serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeConfig {
    /// Port to listen on.
    #[arg(long, env = "BASALT_PORT", default_value_t = 8080)]
    pub port: u16,
    /// Address to bind.
    #[arg(long, env = "BASALT_HOST", default_value = "0.0.0.0")]
    pub host: String,
    /// Postgres to serve and to hold `basalt_catalog`. Without it Basalt starts an embedded
    /// cluster under `--data-dir`.
    #[arg(long, env = "BASALT_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// The secret that gives full access, sent in `X-Svc-Admin-Secret` (or
    /// `X-Svc-Access-Key`).
    ///
    /// A request with it may pick any role. A request without it is authenticated by the JWT,
    /// webhook or unauthorized-role settings, and refused with `401 access-denied` if none
    /// applies. When unset, both APIs are open (any caller may pick any role, `admin`
    /// included) and a warning is logged at startup. See `docs/auth.md`.
    #[arg(long, env = "BASALT_ADMIN_SECRET", hide_env_values = true)]
    pub admin_secret: Option<String>,
    /// JWT mode: a JSON object with `type` and `key`, or `jwk_url`, plus optional claims
    /// settings.
    ///
    /// Needs `--admin-secret`; not together with `--auth-hook`. See `docs/auth.md#jwt-mode`.
    #[arg(long, env = "BASALT_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,
    /// Webhook mode: the URL that Basalt asks for the role and session variables of each
    /// request without the admin secret.
    ///
    /// Needs `--admin-secret`; not together with `--jwt-secret` or `--unauthorized-role`.
    #[arg(long, env = "BASALT_AUTH_HOOK")]
    pub auth_hook: Option<String>,
    /// Webhook mode: `GET` (the client's headers are forwarded as headers) or `POST` (a JSON
    /// body `{"headers", "request"}`).
    #[arg(long, env = "BASALT_AUTH_HOOK_MODE", default_value = "GET")]
    pub auth_hook_mode: String,
    /// Webhook mode: seconds before a hook call is abandoned (at least 1).
    ///
    /// A call that takes longer fails the request with `500 unexpected`.
    #[arg(long, env = "BASALT_AUTH_HOOK_TIMEOUT_SECONDS", default_value_t = 10)]
    pub auth_hook_timeout_seconds: u64,
    /// Role for requests without credentials: without the admin secret in admin-secret mode,
    /// without a token in JWT mode.
    ///
    /// Needs `--admin-secret`; not together with `--auth-hook`.
    #[arg(long, env = "BASALT_UNAUTHORIZED_ROLE")]
    pub unauthorized_role: Option<String>,
    /// Only allow-listed operations for non-admin roles.
    ///
    /// Roles other than `admin` may then run on `/v1/graphql` only the operations of the query
    /// collections on the allow-list (`docs/auth.md#allow-list`).
    #[arg(long, env = "BASALT_ENABLE_ALLOWLIST", default_value_t = false, action = clap::ArgAction::Set)]
    pub enable_allowlist: bool,
    /// Let roles call query-exposed tracked functions without a function permission.
    ///
    /// A role that may select the table a query-exposed function returns sees the function;
    /// with `false` it also needs `create_function_permission`. Mutation-exposed functions
    /// always need one (`docs/functions.md#who-sees-a-function`).
    #[arg(long, env = "BASALT_INFER_FUNCTION_PERMISSIONS", default_value_t = true, action = clap::ArgAction::Set)]
    pub infer_function_permissions: bool,
    /// Log format.
    #[arg(long, env = "BASALT_LOG_FORMAT", value_enum, default_value_t = LogFormat::Json)]
    pub log_format: LogFormat,
    /// Comma-separated APIs to serve: `metadata`, `graphql`.
    ///
    /// Without `metadata`, `/v1/query` answers 404. Without `graphql`, `/v1/graphql` and
    /// `/console` answer 404.
    #[arg(
        long,
        env = "BASALT_ENABLED_APIS",
        default_value = "metadata,graphql",
        value_delimiter = ','
    )]
    pub enabled_apis: Vec<String>,
    /// Include `internal` details in errors for every role.
    ///
    /// That includes the cause of `500 unexpected` errors, otherwise only logged. On
    /// `/v1/graphql`, admin callers get that detail even without dev mode.
    #[arg(long, env = "BASALT_DEV_MODE", default_value_t = false, action = clap::ArgAction::Set)]
    pub dev_mode: bool,
    /// Largest accepted request body in bytes; larger bodies get `413 payload-too-large`, on
    /// both APIs.
    #[arg(long, env = "BASALT_MAX_BODY_BYTES", default_value_t = 10 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Longest accepted `bulk` list on `/v1/query`, and longest batch (a JSON array of
    /// requests) on `/v1/graphql`.
    ///
    /// A longer `bulk` gets `400 parse-failed`; a longer batch gets one `validation-failed`
    /// error. A role's batch limit can only tighten it (`docs/limits.md`).
    #[arg(long, env = "BASALT_MAX_BATCH_SIZE", default_value_t = 64)]
    pub max_batch_size: usize,
    /// Deepest accepted GraphQL selection nesting.
    ///
    /// Each field with its own sub-selection is one level. Deeper queries get
    /// `validation-failed`, `query depth exceeds <n>`. A role's depth limit can only tighten it
    /// (`docs/limits.md`).
    #[arg(long, env = "BASALT_MAX_QUERY_DEPTH", default_value_t = 64)]
    pub max_query_depth: usize,
    /// Most root fields in one GraphQL operation.
    ///
    /// Root fields are response keys, counted after fragments and `@skip`/`@include`. More get
    /// `validation-failed`.
    #[arg(long, env = "BASALT_MAX_ROOT_FIELDS", default_value_t = 100)]
    pub max_root_fields: usize,
    /// Proxies in front of Basalt that append to `X-Forwarded-For`.
    ///
    /// A rate limit with `unique_params: "IP"` keys on the client address: with `0`, the TCP
    /// peer's; with `n`, the `n`-th address from the right of `X-Forwarded-For` (the
    /// left-most when it has fewer). See `docs/limits.md`.
    #[arg(long, env = "BASALT_TRUSTED_PROXY_HOPS", default_value_t = 0)]
    pub trusted_proxy_hops: usize,
    /// Where the embedded Postgres cluster lives (`<dir>/pg`) when no database URL is given.
    #[arg(long, env = "BASALT_DATA_DIR", default_value = ".basalt")]
    pub data_dir: PathBuf,
    /// Seconds between two checks of the catalog version by each replica, as a backup for
    /// `NOTIFY` (at least 1).
    #[arg(long, env = "BASALT_METADATA_POLL_SECONDS", default_value_t = 5)]
    pub metadata_poll_seconds: u64,
    /// Connections in the database pool, shared by the metadata API and GraphQL.
    ///
    /// A GraphQL query holds one connection while its statement runs, a mutation for its whole
    /// transaction. See `docs/operations.md#the-connection-pool`.
    #[arg(long, env = "BASALT_POOL_SIZE", default_value_t = 16)]
    pub pool_size: usize,
    /// Statements of one query plan that run at once before further requests for the plan
    /// wait and share one statement.
    ///
    /// `0` turns all sharing off, inserts included: every request, read or write, runs its own
    /// statement, and reads never run as the one-row form of their shared statement. See
    /// `docs/operations.md#shared-statements`.
    #[arg(long, env = "BASALT_SHARED_STATEMENTS_IN_FLIGHT", default_value_t = 2)]
    pub shared_statements_in_flight: usize,
    /// The same for one-statement inserts: statements of one insert plan that run at once
    /// before further inserts of the plan (and session) wait and share one statement and its
    /// commit.
    ///
    /// `0`: inserts never share, each commits on its own, while reads still share. One by
    /// default: an insert plan's batches then grow largest, and Postgres writes a row for less.
    #[arg(long, env = "BASALT_SHARED_WRITES_IN_FLIGHT", default_value_t = 1)]
    pub shared_writes_in_flight: usize,
    /// Microseconds a plan's request takes alone (a moving average, in the cheaper of its two
    /// forms) above which its requests never share statements and keep Postgres's parallelism.
    ///
    /// `0`: no such bound; a plan shares while a shared row costs at most four fifths of a
    /// request alone.
    #[arg(long, env = "BASALT_SHARED_STATEMENTS_BELOW_US", default_value_t = 0)]
    pub shared_statements_below_us: u64,
    /// What `/v1/query` may do to objects that Kubernetes resources own. See
    /// `docs/kubernetes.md`.
    #[arg(long, env = "BASALT_MANAGED_METADATA", value_enum, default_value_t = ManagedMetadata::Allow)]
    pub managed_metadata: ManagedMetadata,
    /// Run the Kubernetes controller in this process too.
    #[arg(long, env = "BASALT_CONTROLLER", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub controller: bool,
    /// Controller settings (with `--controller`).
    #[command(flatten)]
    pub controller_settings: ControllerConfig,
    /// Subscriptions and the WebSocket transport.
    #[command(flatten)]
    pub live: LiveConfig,
    /// Serve `/metrics` without the admin secret (for a scraper inside the cluster). See
    /// `docs/operations.md#metrics`.
    #[arg(long, env = "BASALT_METRICS_PUBLIC", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub metrics_public: bool,
    /// OpenTelemetry traces.
    #[command(flatten)]
    pub otlp: OtlpConfig,
    /// Event-trigger delivery.
    #[command(flatten)]
    pub events: EventsConfig,
    /// Asynchronous actions.
    #[command(flatten)]
    pub actions: ActionsConfig,
    /// Cron triggers and one-off scheduled events.
    #[command(flatten)]
    pub scheduled: ScheduledConfig,
}

/// The asynchronous-action workers (`docs/actions.md`).
#[derive(Debug, Clone, clap::Args)]
pub struct ActionsConfig {
    /// Milliseconds between two looks at the action log when no `NOTIFY` woke the worker.
    #[arg(
        long = "async-actions-fetch-interval-ms",
        env = "BASALT_ASYNC_ACTIONS_FETCH_INTERVAL",
        default_value_t = 1000
    )]
    pub poll_interval_ms: u64,
    /// Most asynchronous handler calls in flight at once in this process.
    #[arg(
        long = "async-actions-concurrency",
        env = "BASALT_ASYNC_ACTIONS_CONCURRENCY",
        default_value_t = 50
    )]
    pub calls_in_flight: usize,
}

impl Default for ActionsConfig {
    fn default() -> Self {
        ActionsConfig {
            poll_interval_ms: 1000,
            calls_in_flight: 50,
        }
    }
}

/// Event-trigger delivery (`docs/events.md`).
#[derive(Debug, Clone, clap::Args)]
pub struct EventsConfig {
    /// Most webhook requests in flight at once in this process.
    #[arg(
        long = "events-http-pool-size",
        env = "BASALT_EVENTS_HTTP_POOL_SIZE",
        default_value_t = 100
    )]
    pub http_pool_size: usize,
    /// Milliseconds between two looks at the event log when no `NOTIFY` woke the workers.
    #[arg(
        long = "events-fetch-interval-ms",
        env = "BASALT_EVENTS_FETCH_INTERVAL",
        default_value_t = 1000
    )]
    pub fetch_interval_ms: u64,
    /// Most events claimed by one fetch.
    #[arg(
        long = "events-fetch-batch-size",
        env = "BASALT_EVENTS_FETCH_BATCH_SIZE",
        default_value_t = 100
    )]
    pub fetch_batch_size: usize,
    /// Seconds a claimed event stays with its worker without a renewal; after that (a crashed
    /// process) any worker takes it again.
    #[arg(
        long = "events-lease-seconds",
        env = "BASALT_EVENTS_LEASE_SECONDS",
        default_value_t = 60
    )]
    pub lease_seconds: u64,
    /// Hours delivered and archived events and invocation logs are kept; 0 keeps them
    /// forever.
    #[arg(
        long = "events-retention-hours",
        env = "BASALT_EVENTS_RETENTION_HOURS",
        default_value_t = 168
    )]
    pub retention_hours: u64,
    /// Seconds between two clean-ups of what the retention period no longer keeps (the
    /// first one runs a minute after start, or sooner when this is shorter).
    #[arg(
        long = "events-cleanup-interval-seconds",
        env = "BASALT_EVENTS_CLEANUP_INTERVAL_SECONDS",
        default_value_t = 600
    )]
    pub cleanup_interval_seconds: u64,
    /// Seconds a shutdown waits for deliveries in flight before giving their events back.
    #[arg(
        long = "events-shutdown-grace-seconds",
        env = "BASALT_EVENTS_SHUTDOWN_GRACE_SECONDS",
        default_value_t = 10
    )]
    pub shutdown_grace_seconds: u64,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            http_pool_size: 100,
            fetch_interval_ms: 1000,
            fetch_batch_size: 100,
            lease_seconds: 60,
            retention_hours: 168,
            cleanup_interval_seconds: 600,
            shutdown_grace_seconds: 10,
        }
    }
}

/// The wire format of OTLP over HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OtlpProtocol {
    /// `application/x-protobuf`, what collectors expect by default.
    #[value(name = "http/protobuf")]
    HttpProtobuf,
    /// `application/json`.
    #[value(name = "http/json")]
    HttpJson,
}

/// OpenTelemetry traces over OTLP/HTTP; off unless an endpoint is given.
#[derive(Debug, Clone, clap::Args)]
pub struct OtlpConfig {
    /// Base URL of an OTLP/HTTP collector, e.g. `http://otel-collector:4318` (spans go to
    /// `<url>/v1/traces`).
    ///
    /// Unset: no traces and no cost. Collector headers can be set with
    /// `OTEL_EXPORTER_OTLP_HEADERS`. See `docs/operations.md#traces`.
    #[arg(long = "otlp-endpoint", env = "BASALT_OTLP_ENDPOINT")]
    pub endpoint: Option<String>,
    /// Wire format.
    #[arg(long = "otlp-protocol", env = "BASALT_OTLP_PROTOCOL", value_enum, default_value_t = OtlpProtocol::HttpProtobuf)]
    pub protocol: OtlpProtocol,
    /// `service.name` of the spans (default `basalt`, or `basalt-controller` for
    /// `basalt controller`).
    #[arg(long = "otlp-service-name", env = "BASALT_OTLP_SERVICE_NAME")]
    pub service_name: Option<String>,
    /// Which spans are exported, as a `RUST_LOG`-style filter.
    #[arg(
        long = "otlp-filter",
        env = "BASALT_OTLP_FILTER",
        default_value = "basalt=debug,info"
    )]
    pub filter: String,
}

impl Default for OtlpConfig {
    fn default() -> Self {
        OtlpConfig {
            endpoint: None,
            protocol: OtlpProtocol::HttpProtobuf,
            service_name: None,
            filter: "basalt=debug,info".to_owned(),
        }
    }
}

/// Subscriptions (live queries) and the WebSocket transport on `/v1/graphql`.
#[derive(Debug, Clone, clap::Args)]
pub struct LiveConfig {
    /// Milliseconds between two runs of a live query.
    #[arg(
        long = "live-queries-refetch-interval-ms",
        env = "BASALT_LIVE_QUERIES_MULTIPLEXED_REFETCH_INTERVAL",
        default_value_t = 1000
    )]
    pub refetch_interval_ms: u64,
    /// Most subscribers (cohorts: distinct variable and session values) answered by one
    /// multiplexed statement.
    #[arg(
        long = "live-queries-batch-size",
        env = "BASALT_LIVE_QUERIES_MULTIPLEXED_BATCH_SIZE",
        default_value_t = 100
    )]
    pub batch_size: usize,
    /// Milliseconds between two batches of a streaming subscription (`<t>_stream`): a cohort
    /// is polled at most once per interval, so a backlog drains one batch per interval.
    #[arg(
        long = "streaming-queries-refetch-interval-ms",
        env = "BASALT_STREAMING_QUERIES_MULTIPLEXED_REFETCH_INTERVAL",
        default_value_t = 1000
    )]
    pub stream_refetch_interval_ms: u64,
    /// Most stream cohorts (distinct variables, session values and cursors) answered by one
    /// multiplexed statement.
    #[arg(
        long = "streaming-queries-batch-size",
        env = "BASALT_STREAMING_QUERIES_MULTIPLEXED_BATCH_SIZE",
        default_value_t = 100
    )]
    pub stream_batch_size: usize,
    /// Change detection and the tables it leaves out.
    #[command(flatten)]
    pub detection: ChangeDetectionConfig,
    /// The longest a watched cohort goes without a poll, in milliseconds (`0`: no fallback
    /// poll).
    #[arg(
        long = "live-queries-fallback-refetch-interval-ms",
        env = "BASALT_LIVE_QUERIES_FALLBACK_REFETCH_INTERVAL",
        default_value_t = 30_000
    )]
    pub fallback_refetch_interval_ms: u64,
    /// Most open WebSocket connections; the next upgrade is refused with HTTP 503.
    #[arg(
        long = "websocket-max-connections",
        env = "BASALT_WEBSOCKET_MAX_CONNECTIONS",
        default_value_t = 10_000
    )]
    pub max_connections: usize,
    /// Most running operations on one WebSocket connection; the next gets a `start-failed`
    /// error and the socket stays open.
    #[arg(
        long = "websocket-max-operations",
        env = "BASALT_WEBSOCKET_MAX_OPERATIONS",
        default_value_t = 100
    )]
    pub max_operations: usize,
    /// Seconds between keep-alive messages (`ka`, or `ping` on `graphql-transport-ws`).
    #[arg(
        long = "websocket-keepalive-seconds",
        env = "BASALT_WEBSOCKET_KEEPALIVE",
        default_value_t = 5
    )]
    pub keepalive_seconds: u64,
    /// Seconds a `graphql-transport-ws` client has to send `connection_init` (else the socket
    /// is closed with 4408).
    #[arg(
        long = "websocket-init-timeout-seconds",
        env = "BASALT_WEBSOCKET_CONNECTION_INIT_TIMEOUT",
        default_value_t = 3
    )]
    pub init_timeout_seconds: u64,
    /// Messages queued for one socket before it counts as too slow and is closed (1008,
    /// `client too slow`).
    #[arg(
        long = "websocket-max-queued-messages",
        env = "BASALT_WEBSOCKET_MAX_QUEUED_MESSAGES",
        default_value_t = 1000
    )]
    pub max_queued_messages: usize,
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            refetch_interval_ms: 1000,
            batch_size: 100,
            stream_refetch_interval_ms: 1000,
            stream_batch_size: 100,
            fallback_refetch_interval_ms: 30_000,
            detection: ChangeDetectionConfig {
                change_detection: ChangeDetection::On,
                change_detection_exclude: Vec::new(),
            },
            max_connections: 10_000,
            max_operations: 100,
            keepalive_seconds: 5,
            init_timeout_seconds: 3,
            max_queued_messages: 1000,
        }
    }
}

impl ServeConfig {
    /// Whether an API (`metadata`, `graphql`) is enabled.
    pub fn api_enabled(&self, api: &str) -> bool {
        self.enabled_apis
            .iter()
            .any(|a| a.trim().eq_ignore_ascii_case(api))
    }

    /// A configuration with the documented defaults for a server on `database_url`, bound to
    /// an ephemeral loopback port, ignoring the environment (tests and embedding).
    pub fn for_database(database_url: impl Into<String>) -> Self {
        ServeConfig {
            port: 0,
            host: "127.0.0.1".to_owned(),
            database_url: Some(database_url.into()),
            admin_secret: None,
            jwt_secret: None,
            auth_hook: None,
            auth_hook_mode: "GET".to_owned(),
            auth_hook_timeout_seconds: 10,
            unauthorized_role: None,
            enable_allowlist: false,
            infer_function_permissions: true,
            log_format: LogFormat::Json,
            enabled_apis: vec!["metadata".to_owned(), "graphql".to_owned()],
            dev_mode: false,
            max_body_bytes: 10 * 1024 * 1024,
            max_batch_size: 64,
            max_query_depth: 64,
            max_root_fields: 100,
            trusted_proxy_hops: 0,
            data_dir: PathBuf::from(".basalt"),
            metadata_poll_seconds: 5,
            pool_size: 8,
            shared_statements_in_flight: 2,
            shared_writes_in_flight: 1,
            shared_statements_below_us: 0,
            managed_metadata: ManagedMetadata::Allow,
            controller: false,
            controller_settings: ControllerConfig::default(),
            live: LiveConfig::default(),
            metrics_public: false,
            otlp: OtlpConfig::default(),
            events: EventsConfig::default(),
            actions: ActionsConfig::default(),
            scheduled: ScheduledConfig::default(),
        }
    }
}
