//! The three untrusted-input parsers as pure targets, and generators for their inputs.
//!
//! Shared by the property tests (`tests/it/properties.rs`) and the cargo-fuzz targets
//! (`fuzz/fuzz_targets/*.rs` include this file with `#[path]`), so both drive the same code
//! with the same oracles. Everything here runs without a database: a fixed database model
//! (`tests/goldenfiles/blog/db.json`, the blog fixture introspected) and fixed metadata (the
//! blog metadata plus the `editor` role's rules, `tests/goldenfiles/blog/permissions/rules/`).
//!
//! - [`compile_graphql`]: a GraphQL request, as a role, through prepare → plan → translate →
//!   print, as a plan-cache miss in `engine.rs` does.
//! - [`apply_request`]: a `/v1/query` body through `Op::parse` and `ops::apply`, as the catalog
//!   runs it between loading and storing (`run_sql` and the event log need a database and only
//!   parse here).
//! - [`check_permission_case`]: a permission (its BoolExps above all) through
//!   `resolve::check_bool_exp`, `resolve::check_permission` and `create_<kind>_permission`, and,
//!   when accepted, the SQL of the role's root fields.
//!
//! A target returns `Err` for input it rejects and panics on a defect: a panic anywhere, or an
//! oracle failing (an accepted document whose variables fail the plan cache's re-check, an
//! accepted metadata document that does not reload from its stored JSON, a role schema whose
//! introspection cannot be built).
//!
//! Generators read their choices from a byte string ([`Tape`]): the fuzzer's input, or bytes
//! proptest draws and shrinks. A byte of 0 (or a tape run out) is always the plainest choice,
//! so shrinking towards zeros and shorter tapes gives small documents.

#![allow(dead_code)]

use basalt::catalog::CatalogVersion;
use basalt::db_model::{DbModel, DbTable};
use basalt::engine::{ApiVersion, RoleApi};
use basalt::graphql::ir::RootField;
use basalt::graphql::plan::{self, PlanError};
use basalt::graphql::schemas::RoleSchema;
use basalt::graphql::types::{FieldDef, TypeDef, TypeRef, TypeSystem};
use basalt::metadata::types::QualifiedTable;
use basalt::metadata::{JsonPath, Metadata, MetadataError, PermissionKind};
use basalt::ops::{self, Op};
use basalt::resolve::{self, operators, Resolution};
use basalt::sql::print::MultiplexedSql;
use basalt::sql::program::{FieldProgram, MutationProgram};
use basalt::sql::SqlText;
use serde_json::{json, Map, Value};
use std::fmt::Write;
use std::sync::{Arc, OnceLock};

/// The blog fixture as introspected (no OIDs).
const DB_JSON: &str = include_str!("../../goldenfiles/blog/db.json");
/// The blog metadata with the `editor` role's rules.
pub const METADATA_JSON: &str =
    include_str!("../../goldenfiles/blog/permissions/rules/metadata.json");

/// Planning limits, as the server's defaults.
const LIMITS: plan::Limits = plan::Limits {
    max_depth: 64,
    max_root_fields: 100,
};

/// Parsing limits of `/v1/query`.
const OP_LIMITS: ops::Limits = ops::Limits { max_batch_size: 8 };

// ---- choices ------------------------------------------------------------------------------

/// A source of choices: one byte per choice, zero once the bytes run out.
#[derive(Debug)]
pub struct Tape<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Tape<'a> {
    /// Choices read from `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Tape { bytes, at: 0 }
    }

    fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at = self.at.saturating_add(1);
        b
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        match n {
            0 | 1 => 0,
            2..=256 => self.byte() as usize % n,
            _ => (usize::from(self.byte()) << 8 | usize::from(self.byte())) % n,
        }
    }

    /// True with about `percent` % probability; false when the tape has run out.
    pub fn chance(&mut self, percent: u32) -> bool {
        u32::from(self.byte()) * 100 >= (100 - percent.min(100)) * 256
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'i, T>(&mut self, items: &'i [T]) -> &'i T {
        &items[self.below(items.len())]
    }

    /// Whether every byte has been read.
    pub fn exhausted(&self) -> bool {
        self.at >= self.bytes.len()
    }

    /// The bytes not read yet (consumed).
    pub fn rest(&mut self) -> &'a [u8] {
        let rest = self.bytes.get(self.at..).unwrap_or_default();
        self.at = self.bytes.len();
        rest
    }
}

/// Strings that mean something to some parser or rule, and some that mean trouble.
const STRINGS: &[&str] = &[
    "",
    "Ann",
    "Bo",
    "%o%",
    "_",
    "published",
    "draft",
    "Rust in practice",
    "x-svc-user-id",
    "X-Svc-User-Id",
    "X-Svc-Allowed-Ids",
    "x-svc-",
    "x-svc\u{e9}-id",
    "a\u{e9}\u{e9}\u{e9}\u{e9}",
    "\u{65e5}\u{672c}\u{8a9e}",
    "it's",
    "say \"hi\"",
    "back\\slash",
    "nul\u{0}byte",
    "line\nbreak",
    "{1,2}",
    "{\"a\",NULL}",
    "{\"a\": 1}",
    "$.city",
    "langs[1]",
    "$['x y']",
    "$[",
    "$.a[99999999999999999999]",
    "1",
    "-1.5",
    "1e400",
    "2020-01-01",
    "now()",
    "NaN",
    "[a-",
    "(",
    "'; SELECT 1; --",
    "\u{1F600}",
];

/// Characters random strings are made of.
const CHARS: &[char] = &[
    'a',
    'b',
    'z',
    'A',
    '0',
    '9',
    ' ',
    '_',
    '-',
    '.',
    '$',
    '%',
    '\'',
    '"',
    '\\',
    '{',
    '}',
    '[',
    ']',
    '(',
    ')',
    ',',
    ':',
    '\n',
    '\t',
    '\u{0}',
    '\u{7f}',
    '\u{e9}',
    '\u{65e5}',
    '\u{1F600}',
];

/// GraphQL names for keys of JSON values written as GraphQL literals.
const NAMES: &[&str] = &["a", "city", "langs", "x", "_y", "Z9"];

fn string(tape: &mut Tape) -> String {
    if tape.below(3) < 2 {
        return (*tape.pick(STRINGS)).to_owned();
    }
    let len = tape.below(12);
    (0..len).map(|_| *tape.pick(CHARS)).collect()
}

/// Any JSON value.
fn json_any(tape: &mut Tape, depth: usize) -> Value {
    let kinds = if depth >= 3 { 6 } else { 8 };
    match tape.below(kinds) {
        0 => Value::Null,
        1 => Value::Bool(tape.chance(50)),
        2 => json!(tape.below(2000) as i64 - 1000),
        3 => json!(*tape.pick(&[0.5, -1.25, 1e300, 3.0, 2147483648.0, -9.2e18])),
        4 | 5 => Value::String(string(tape)),
        6 => Value::Array(
            (0..tape.below(4))
                .map(|_| json_any(tape, depth + 1))
                .collect(),
        ),
        _ => Value::Object(
            (0..tape.below(4))
                .map(|_| {
                    let key = if tape.chance(70) {
                        (*tape.pick(NAMES)).to_owned()
                    } else {
                        string(tape)
                    };
                    (key, json_any(tape, depth + 1))
                })
                .collect(),
        ),
    }
}

// ---- the fixture --------------------------------------------------------------------------

/// A role and whether requests are backend-flagged.
#[derive(Debug, Clone, Copy)]
pub struct Session {
    /// The role.
    pub role: &'static str,
    /// `X-Svc-Use-Backend-Only-Permissions: true`.
    pub backend_only: bool,
}

/// The sessions GraphQL requests run as: admin, every role of the metadata (backend once
/// flagged), and a role without permissions.
pub const SESSIONS: &[Session] = &[
    Session {
        role: "admin",
        backend_only: false,
    },
    Session {
        role: "user",
        backend_only: false,
    },
    Session {
        role: "editor",
        backend_only: false,
    },
    Session {
        role: "guest",
        backend_only: false,
    },
    Session {
        role: "backend",
        backend_only: false,
    },
    Session {
        role: "backend",
        backend_only: true,
    },
    Session {
        role: "nobody",
        backend_only: false,
    },
];

/// The fixed database model and metadata, resolved, with every role's schema.
pub struct Fixture {
    /// The blog database.
    pub db: DbModel,
    /// The metadata.
    pub metadata: Metadata,
    /// The metadata resolved against the database.
    pub cache: Resolution,
    /// Every role's schema, as the server builds them.
    pub schemas: ApiVersion,
}

/// What the engine serves for a document resolved as `cache`: every role's schema, built as
/// the server builds them.
fn api_version(cache: &Resolution, metadata: &Metadata) -> ApiVersion {
    ApiVersion::new(Arc::new(CatalogVersion {
        version: 1,
        metadata: metadata.clone(),
        resolution: cache.clone(),
    }))
}

impl Fixture {
    /// The schema requests of `session` are planned against.
    pub fn role(&self, session: Session) -> Arc<RoleApi> {
        let counters = basalt::stats::Counters::default();
        self.schemas
            .role(session.role, session.backend_only, &counters)
    }

    /// Tracked tables.
    fn tables(&self) -> Vec<&QualifiedTable> {
        self.cache.resolved.tables.keys().collect()
    }

    fn db_table(&self, table: &QualifiedTable) -> Option<&DbTable> {
        self.cache.resolved.tables.get(table).map(|t| &*t.db)
    }
}

/// The fixture, built once per process.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let db = DbModel::from_json(serde_json::from_str(DB_JSON).expect("db.json"))
            .expect("db.json is a database model");
        let metadata: Metadata = serde_json::from_str(METADATA_JSON).expect("metadata.json");
        let cache = resolve::resolve(&metadata, &db);
        assert!(
            cache.inconsistencies.is_empty(),
            "{:?}",
            cache.inconsistencies
        );
        let schemas = api_version(&cache, &metadata);
        Fixture {
            db,
            metadata,
            cache,
            schemas,
        }
    })
}

// ---- target 1: GraphQL documents ----------------------------------------------------------

/// A GraphQL request as some session.
#[derive(Clone)]
pub struct GraphqlRequest {
    /// Index into [`SESSIONS`].
    pub session: usize,
    /// The document.
    pub query: String,
    /// Variable values.
    pub variables: Map<String, Value>,
    /// `operationName`.
    pub operation_name: Option<String>,
}

impl std::fmt::Debug for GraphqlRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "\n  session: {:?}\n  query: {}\n  variables: {}\n  operationName: {:?}\n",
            SESSIONS[self.session % SESSIONS.len()],
            self.query,
            Value::Object(self.variables.clone()),
            self.operation_name
        )
    }
}

impl GraphqlRequest {
    /// The session it runs as.
    pub fn session(&self) -> Session {
        SESSIONS[self.session % SESSIONS.len()]
    }

    /// The HTTP body of the request.
    pub fn body(&self) -> Value {
        let mut body = json!({"query": self.query, "variables": self.variables});
        if let Some(name) = &self.operation_name {
            body["operationName"] = Value::String(name.clone());
        }
        body
    }

    /// A request written as JSON (`{"role", "backend_only", "query", "variables",
    /// "operationName"}`), as the seed corpus has them.
    pub fn from_json(value: &Value) -> Option<Self> {
        let query = value.get("query")?.as_str()?.to_owned();
        let role = value.get("role").and_then(Value::as_str).unwrap_or("admin");
        let flagged = value.get("backend_only").and_then(Value::as_bool) == Some(true);
        let session = SESSIONS
            .iter()
            .position(|s| s.role == role && s.backend_only == flagged)
            .unwrap_or(SESSIONS.len() - 1);
        Some(GraphqlRequest {
            session,
            query,
            variables: value
                .get("variables")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            operation_name: value
                .get("operationName")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }
}

/// What a request compiles to, as `engine.rs` would run it.
#[derive(Debug)]
pub enum Compiled {
    /// A query (no statement when it reads no data, `__typename` only), and the statement
    /// concurrent requests for it may share.
    Query(Option<(SqlText, MultiplexedSql)>),
    /// A mutation's programs.
    Mutation(MutationProgram),
    /// A subscription's multiplexed statement; none when it reads no data.
    Live(Option<MultiplexedSql>),
}

/// A statement to prepare, and how many `text` parameters it is prepared with.
#[derive(Debug, Clone)]
pub struct Statement {
    /// The SQL.
    pub sql: String,
    /// Parameter count; every parameter is sent as `text`, as `execute` does.
    pub params: usize,
}

impl Compiled {
    /// Every statement the request would prepare.
    pub fn statements(&self) -> Vec<Statement> {
        let one = |sql: &SqlText| Statement {
            sql: sql.sql.clone(),
            params: sql.params.len(),
        };
        match self {
            Compiled::Query(sql) => sql
                .iter()
                .flat_map(|(alone, shared)| [one(alone), multiplexed(shared)])
                .collect(),
            Compiled::Mutation(program) => {
                let mut out = vec![one(&program.session)];
                for (_, field) in &program.fields {
                    if let FieldProgram::Write(write) = field {
                        out.extend(write.steps.iter().map(|step| one(&step.sql)));
                    }
                }
                out.extend(program.single.iter().map(one));
                out
            }
            Compiled::Live(live) => live.iter().map(multiplexed).collect(),
        }
    }
}

/// A multiplexed statement: `$1` holds the cohort ids, then one array per parameter
/// (`run_multiplexed`).
fn multiplexed(sql: &MultiplexedSql) -> Statement {
    Statement {
        sql: sql.sql.clone(),
        params: sql.params.len() + 1,
    }
}

/// Prepares, plans and translates a request as a plan-cache miss does.
pub fn compile_graphql(fx: &Fixture, request: &GraphqlRequest) -> Result<Compiled, PlanError> {
    let role = fx.role(request.session());
    compile_for(&role.schema, &fx.cache.resolved, request)
}

fn compile_for(
    role: &RoleSchema,
    resolved: &basalt::resolve::Resolved,
    request: &GraphqlRequest,
) -> Result<Compiled, PlanError> {
    let prepared = plan::prepare(&request.query, request.operation_name.as_deref())?;
    let planned = plan::plan(
        &role.model,
        &role.types,
        resolved,
        &prepared,
        &request.variables,
        LIMITS,
    )?;
    // A cached plan is reused after `check_variables`: the variables it was planned with
    // must pass.
    if let Err(e) = plan::check_variables(
        &role.model,
        &role.types,
        resolved,
        &prepared,
        &request.variables,
    ) {
        panic!("planned, but the plan cache's variable check fails: {e:?}\n{request:?}");
    }
    if let Some(mutation) = &planned.mutation {
        return Ok(Compiled::Mutation(basalt::translate::mutation(mutation)));
    }
    let reads = planned
        .data
        .fields
        .iter()
        .any(|(_, f)| !matches!(f, RootField::Constant(_)));
    if planned.subscription {
        return Ok(Compiled::Live(
            reads.then(|| basalt::translate::live_query(&planned.data)),
        ));
    }
    Ok(Compiled::Query(reads.then(|| {
        let shared = basalt::translate::shared_query(&planned.data);
        // A request's values are bound for the statement it runs alone and handed to the
        // shared one as they are: both must number the same parameters alike.
        assert_eq!(
            basalt::translate::query_for(&planned.data, false).params,
            shared.params,
            "a shared statement's parameters differ from the statement's alone"
        );
        (basalt::translate::query(&planned.data), shared)
    })))
}

/// A request from fuzzer bytes: a JSON request when they are one, else generated.
pub fn graphql_from_bytes(fx: &Fixture, bytes: &[u8]) -> GraphqlRequest {
    serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|v| GraphqlRequest::from_json(&v))
        .unwrap_or_else(|| graphql_request(fx, bytes))
}

/// A request generated from `bytes`: mostly a document built against the session's schema,
/// sometimes damaged, sometimes raw text.
pub fn graphql_request(fx: &Fixture, bytes: &[u8]) -> GraphqlRequest {
    let mut tape = Tape::new(bytes);
    let session = tape.below(SESSIONS.len());
    let role = fx.role(SESSIONS[session]);
    let mode = tape.below(32);
    if mode == 31 {
        let variables = match json_any(&mut tape, 0) {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        return GraphqlRequest {
            session,
            query: String::from_utf8_lossy(tape.rest()).into_owned(),
            variables,
            operation_name: None,
        };
    }
    let mut generator = DocumentGen::new(&role.schema.types, &mut tape);
    let (mut query, variables, operation_name) = generator.document();
    match mode {
        // Cut short, or a character spliced in somewhere.
        29 => {
            let at = tape.below(query.len() + 1);
            query = query.chars().take(at).collect();
        }
        30 => {
            let at = tape.below(query.chars().count() + 1);
            let c = *tape.pick(&[
                '{', '}', '(', ')', '$', '"', ':', '!', '@', '.', '#', '\u{e9}',
            ]);
            query = query
                .chars()
                .take(at)
                .chain(std::iter::once(c))
                .chain(query.chars().skip(at))
                .collect();
        }
        _ => {}
    }
    GraphqlRequest {
        session,
        query,
        variables,
        operation_name,
    }
}

/// Deepest selection the generator writes.
const MAX_DEPTH: usize = 4;
/// Most fields a generated document selects.
const MAX_FIELDS: usize = 40;

/// Writes documents that fit a type system, mostly.
struct DocumentGen<'g, 't> {
    types: &'g TypeSystem,
    tape: &'g mut Tape<'t>,
    /// Variable definitions, written.
    definitions: Vec<String>,
    /// Variable values.
    values: Map<String, Value>,
    /// Fragment definitions, written.
    fragments: Vec<String>,
    /// Fields selected so far.
    fields: usize,
    /// Writing a probe: include optional arguments more often, and nothing invalid on purpose.
    probing: bool,
}

impl<'g, 't> DocumentGen<'g, 't> {
    fn new(types: &'g TypeSystem, tape: &'g mut Tape<'t>) -> Self {
        DocumentGen {
            types,
            tape,
            definitions: Vec::new(),
            values: Map::new(),
            fragments: Vec::new(),
            fields: 0,
            probing: false,
        }
    }

    /// (document, variables, operation name).
    fn document(&mut self) -> (String, Map<String, Value>, Option<String>) {
        let (keyword, root) = match self.tape.below(10) {
            6 | 7 if self.types.mutation_root.is_some() => {
                ("mutation", self.types.mutation_root.clone())
            }
            8 if self.types.subscription_root.is_some() => {
                ("subscription", self.types.subscription_root.clone())
            }
            9 => (*self.tape.pick(&["mutation", "subscription"]), None),
            _ => ("query", Some(self.types.query_root.clone())),
        };
        let root = root.unwrap_or_else(|| self.types.query_root.clone());
        let selection = self.selection_set(&root, 0);
        self.finish(keyword, selection)
    }

    /// The simplest document selecting the root field `field` of `root` (`query` or
    /// `mutation`), for probing a role's schema.
    fn probe(&mut self, keyword: &str, root: &str, field: &str) -> String {
        let Some(def) = self.types.object_fields(root).and_then(|f| f.get(field)) else {
            return String::new();
        };
        self.probing = true;
        let selection = format!("{{ {} }}", self.field(def, 0));
        self.finish(keyword, selection).0
    }

    fn finish(
        &mut self,
        keyword: &str,
        selection: String,
    ) -> (String, Map<String, Value>, Option<String>) {
        let name = self
            .tape
            .chance(25)
            .then(|| format!("Op{}", self.tape.below(3)));
        let mut doc = String::new();
        if keyword == "query" && name.is_none() && self.definitions.is_empty() {
            doc.push_str(&selection);
        } else {
            doc.push_str(keyword);
            if let Some(name) = &name {
                let _ = write!(doc, " {name}");
            }
            if !self.definitions.is_empty() {
                let _ = write!(doc, "({})", self.definitions.join(", "));
            }
            let _ = write!(doc, " {selection}");
        }
        for fragment in &self.fragments {
            let _ = write!(doc, "\n{fragment}");
        }
        let mut operation_name = name.clone();
        if self.tape.chance(8) {
            doc.push_str("\nquery Other { __typename }");
            operation_name = match self.tape.below(4) {
                0 => name,
                1 => Some("Other".to_owned()),
                2 => None,
                _ => Some("Missing".to_owned()),
            };
        } else if self.tape.chance(3) {
            operation_name = Some("Missing".to_owned());
        }
        (doc, std::mem::take(&mut self.values), operation_name)
    }

    fn selection_set(&mut self, type_name: &str, depth: usize) -> String {
        if self.types.object_fields(type_name).is_none() {
            return "{ __typename }".to_owned();
        }
        let count = if depth >= MAX_DEPTH || self.fields >= MAX_FIELDS {
            1
        } else {
            1 + self.tape.below(3)
        };
        let items: Vec<String> = (0..count)
            .map(|_| self.selection(type_name, depth))
            .collect();
        format!("{{ {} }}", items.join(" "))
    }

    fn selection(&mut self, type_name: &str, depth: usize) -> String {
        let types: &'g TypeSystem = self.types;
        let Some(fields) = types.object_fields(type_name) else {
            return "__typename".to_owned();
        };
        self.fields += 1;
        let plain = depth >= MAX_DEPTH || self.fields >= MAX_FIELDS || self.tape.exhausted();
        match self.tape.below(20) {
            0..=13 => {
                let candidates: Vec<_> = fields
                    .values()
                    .filter(|f| !plain || self.types.is_leaf(f.ty.base()))
                    .collect();
                if candidates.is_empty() {
                    return "__typename".to_owned();
                }
                let def = *self.tape.pick(&candidates);
                self.field(def, depth)
            }
            14 => format!("{}__typename", self.alias()),
            15 if !plain => {
                let inner = self.selection_set(type_name, depth + 1);
                match self.tape.below(4) {
                    0 => format!("... on {type_name} {inner}"),
                    1 => format!("... {inner}"),
                    2 => format!("... @include(if: {}) {inner}", self.condition()),
                    _ => format!("... on {} {inner}", self.type_name()),
                }
            }
            16 if !plain => {
                let index = self.fragments.len();
                let on = if self.tape.chance(90) {
                    type_name.to_owned()
                } else {
                    self.type_name()
                };
                // Placeholder first, so fragments spread inside get later indexes.
                self.fragments.push(String::new());
                let inner = self.selection_set(type_name, depth + 1);
                self.fragments[index] = format!("fragment F{index} on {on} {inner}");
                match self.tape.below(8) {
                    0 => format!("...F{}", self.tape.below(index + 2)),
                    1 => format!("...F{index} @skip(if: {})", self.condition()),
                    _ => format!("...F{index}"),
                }
            }
            17 => match self.tape.below(4) {
                0 => "__schema { queryType { name } types { name kind } }".to_owned(),
                1 => format!(
                    "__type(name: {}) {{ name kind fields {{ name args {{ name }} }} }}",
                    gql_string(&self.type_name())
                ),
                2 => "nope".to_owned(),
                _ => format!("{}: __typename", *self.tape.pick(&["a", "__typename", "x"])),
            },
            _ => {
                let all: Vec<&FieldDef> = fields.values().collect();
                let def = *self.tape.pick(&all);
                if plain && !self.types.is_leaf(def.ty.base()) {
                    return "__typename".to_owned();
                }
                self.field(def, depth)
            }
        }
    }

    /// A type name of the schema, or not.
    fn type_name(&mut self) -> String {
        if self.tape.chance(10) {
            return "Nope".to_owned();
        }
        let names: Vec<&basalt::graphql::types::Name> = self.types.types.keys().collect();
        if names.is_empty() {
            return "query_root".to_owned();
        }
        (*self.tape.pick(&names)).to_string()
    }

    fn alias(&mut self) -> String {
        match self.tape.below(12) {
            10 => format!("a{}: ", self.tape.below(4)),
            11 => "x: ".to_owned(),
            _ => String::new(),
        }
    }

    fn condition(&mut self) -> String {
        match self.tape.below(3) {
            0 => "true".to_owned(),
            1 => "false".to_owned(),
            _ => self.variable(&TypeRef::non_null("Boolean")),
        }
    }

    /// A deliberate mistake, `percent` % of the time (never in a probe).
    fn mistake(&mut self, percent: u32) -> bool {
        !self.probing && self.tape.chance(percent)
    }

    /// Whether to give an optional argument or input field.
    fn optional(&mut self, percent: u32) -> bool {
        self.tape.chance(if self.probing { 50 } else { percent })
    }

    fn field(&mut self, def: &FieldDef, depth: usize) -> String {
        let mut out = self.alias();
        out.push_str(&def.name);
        let mut args = Vec::new();
        for arg in def.args.iter() {
            let required = arg.ty.is_non_null() && arg.default.is_none();
            let include = if required {
                !self.mistake(2)
            } else {
                self.optional(30)
            };
            if include {
                let value = self.input(&arg.ty, 0);
                args.push(format!("{}: {value}", arg.name));
            }
        }
        if self.mistake(2) {
            args.push("nope: 1".to_owned());
        }
        if !args.is_empty() {
            let _ = write!(out, "({})", args.join(", "));
        }
        if self.mistake(4) {
            let name = *self.tape.pick(&["include", "skip", "deprecated"]);
            let condition = self.condition();
            let _ = write!(out, " @{name}(if: {condition})");
        }
        if self.types.is_leaf(def.ty.base()) {
            if self.mistake(2) {
                out.push_str(" { id }");
            }
        } else if !self.mistake(2) {
            let inner = self.selection_set(def.ty.base(), depth + 1);
            let _ = write!(out, " {inner}");
        }
        out
    }

    /// An argument value of type `ty`: a literal, or a variable.
    fn input(&mut self, ty: &TypeRef, depth: usize) -> String {
        if depth < 4 && self.tape.chance(12) {
            return self.variable(ty);
        }
        match ty {
            TypeRef::NonNull(inner) => {
                if self.mistake(2) {
                    "null".to_owned()
                } else {
                    self.input(inner, depth)
                }
            }
            TypeRef::List(inner) => match self.tape.below(4) {
                0 => self.input(inner, depth + 1),
                1 => "[]".to_owned(),
                _ => {
                    let items: Vec<String> = (0..1 + self.tape.below(3))
                        .map(|_| self.input(inner, depth + 1))
                        .collect();
                    format!("[{}]", items.join(", "))
                }
            },
            TypeRef::Named(name) => match self.types.get(name) {
                Some(TypeDef::Input { fields, .. }) => {
                    if depth >= 4 {
                        return "{}".to_owned();
                    }
                    let mut parts = Vec::new();
                    for field in fields.values() {
                        let include = if field.ty.is_non_null() {
                            !self.mistake(2)
                        } else {
                            parts.len() < 3 && self.optional(25)
                        };
                        if include {
                            let value = self.input(&field.ty, depth + 1);
                            parts.push(format!("{}: {value}", field.name));
                        }
                    }
                    if self.mistake(3) {
                        parts.push("nope: 1".to_owned());
                    }
                    format!("{{{}}}", parts.join(", "))
                }
                _ => {
                    let value = value_for(self.types, self.tape, ty, depth);
                    literal(self.types, &value, ty)
                }
            },
        }
    }

    /// Declares a variable of (about) type `ty` and gives it a value; returns `$name`.
    fn variable(&mut self, ty: &TypeRef) -> String {
        let name = format!("v{}", self.definitions.len());
        let declared = match self.tape.below(16) {
            13 => match ty {
                TypeRef::NonNull(inner) => inner.to_string(),
                other => format!("{other}!"),
            },
            14 => (*self
                .tape
                .pick(&["String", "Int!", "[Int]", "Boolean", "Nope", "jsonb"]))
            .to_owned(),
            _ => ty.to_string(),
        };
        let mut definition = format!("${name}: {declared}");
        if self.tape.chance(6) {
            let default = value_for(self.types, self.tape, ty, 2);
            let _ = write!(definition, " = {}", literal(self.types, &default, ty));
        }
        self.definitions.push(definition);
        match self.tape.below(12) {
            10 => {}
            11 => {
                let value = json_any(self.tape, 0);
                self.values.insert(name.clone(), value);
            }
            _ => {
                let value = value_for(self.types, self.tape, ty, 0);
                self.values.insert(name.clone(), value);
            }
        }
        format!("${name}")
    }
}

/// A JSON value for an input of type `ty` (usually of that type).
fn value_for(types: &TypeSystem, tape: &mut Tape, ty: &TypeRef, depth: usize) -> Value {
    if tape.chance(3) {
        return json_any(tape, depth);
    }
    match ty {
        TypeRef::NonNull(inner) => value_for(types, tape, inner, depth),
        TypeRef::List(inner) => match tape.below(4) {
            0 => value_for(types, tape, inner, depth + 1),
            1 => json!([]),
            _ => Value::Array(
                (0..1 + tape.below(3))
                    .map(|_| value_for(types, tape, inner, depth + 1))
                    .collect(),
            ),
        },
        TypeRef::Named(name) => match name.as_str() {
            "Int" => json!(*tape.pick(&[
                0i64,
                1,
                2,
                3,
                -1,
                10,
                100,
                2147483647,
                -2147483648,
                2147483648,
                i64::MAX
            ])),
            "Float" => json!(*tape.pick(&[0.0, 1.5, -2.25, 1e300, 100.0])),
            "Boolean" => Value::Bool(tape.chance(50)),
            "String" | "ID" => Value::String(string(tape)),
            _ => match types.get(name) {
                Some(TypeDef::Enum { values, .. }) if !values.is_empty() && !tape.chance(5) => {
                    Value::String(tape.pick(values).name.to_string())
                }
                Some(TypeDef::Input { fields, .. }) => {
                    let mut map = Map::new();
                    if depth < 4 {
                        for field in fields.values() {
                            let include = if field.ty.is_non_null() {
                                !tape.chance(2)
                            } else {
                                map.len() < 3 && tape.chance(25)
                            };
                            if include {
                                let value = value_for(types, tape, &field.ty, depth + 1);
                                map.insert(field.name.to_string(), value);
                            }
                        }
                    }
                    Value::Object(map)
                }
                _ => scalar_value(tape, name, depth),
            },
        },
    }
}

/// A value for a custom scalar (`numeric`, `bigint`, `jsonb`, `date`, `_text`, …).
fn scalar_value(tape: &mut Tape, name: &str, depth: usize) -> Value {
    match name {
        "numeric" | "bigint" | "smallint" | "float8" | "money" => match tape.below(5) {
            0 => json!(*tape.pick(&[0, 1, 3, 100, -5])),
            1 => json!(*tape.pick(&[4.5, 1e20, -0.5])),
            2 => json!(*tape.pick(&["9223372036854775808", "1.5", "abc", ""])),
            _ => json!(tape.below(400)),
        },
        "date" | "timestamptz" | "timestamp" | "time" => {
            json!(*tape.pick(&["2020-01-01", "2019-05-01", "yesterday", "", "2020-13-45"]))
        }
        "json" | "jsonb" => json_any(tape, depth),
        n if n.starts_with('_') => match tape.below(3) {
            0 => json!(*tape.pick(&["{}", "{Annie}", "{\"A. N.\",NULL}", "{", "x"])),
            _ => Value::Array(
                (0..tape.below(3))
                    .map(|_| Value::String(string(tape)))
                    .collect(),
            ),
        },
        _ => Value::String(string(tape)),
    }
}

/// A GraphQL string literal.
fn gql_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// `value` written as a GraphQL literal where `ty` is expected (enum values bare).
fn literal(types: &TypeSystem, value: &Value, ty: &TypeRef) -> String {
    let inner = match ty {
        TypeRef::NonNull(inner) | TypeRef::List(inner) => inner.as_ref(),
        named => named,
    };
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            let is_enum = matches!(types.get(ty.base()), Some(TypeDef::Enum { .. }));
            if is_enum && is_name(s) && !matches!(s.as_str(), "true" | "false" | "null") {
                s.clone()
            } else {
                gql_string(s)
            }
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|v| literal(types, v, inner)).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let fields = match types.get(ty.base()) {
                Some(TypeDef::Input { fields, .. }) => Some(fields),
                _ => None,
            };
            let parts: Vec<String> = map
                .iter()
                .filter(|(k, _)| is_name(k))
                .map(|(k, v)| {
                    let field_ty = fields
                        .and_then(|f| f.get(k.as_str()))
                        .map(|f| f.ty.clone())
                        .unwrap_or_else(|| TypeRef::named("jsonb"));
                    format!("{k}: {}", literal(types, v, &field_ty))
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// Repeatable pseudo-random bytes (xorshift), for choices that must not vary between runs.
pub fn pseudo_random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// A root field of a role and, when one of a few simple documents selecting it (the
/// simplest first) plans, that document compiled.
pub type Probe = (String, Option<(GraphqlRequest, Compiled)>);

/// Probes every root field of a role (queries and mutations), as `session`.
pub fn probes(
    role: &RoleSchema,
    resolved: &basalt::resolve::Resolved,
    session: usize,
) -> Vec<Probe> {
    let mut out = Vec::new();
    let roots = [
        ("query", Some(role.types.query_root.clone())),
        ("mutation", role.types.mutation_root.clone()),
    ];
    for (keyword, root) in roots {
        let Some(root) = root else { continue };
        let Some(fields) = role.types.object_fields(&root) else {
            continue;
        };
        for name in fields.keys() {
            let found = (0..256u64).find_map(|attempt| {
                let bytes = match attempt {
                    0 => Vec::new(),
                    n => pseudo_random_bytes(n, 96),
                };
                let mut tape = Tape::new(&bytes);
                let mut generator = DocumentGen::new(&role.types, &mut tape);
                let query = generator.probe(keyword, &root, name);
                let request = GraphqlRequest {
                    session,
                    query,
                    variables: std::mem::take(&mut generator.values),
                    operation_name: None,
                };
                let compiled = compile_for(role, resolved, &request).ok()?;
                Some((request, compiled))
            });
            out.push((format!("{keyword} {name}"), found));
        }
    }
    out
}

// ---- target 2: /v1/query bodies -----------------------------------------------------------

/// Every operation type the metadata API knows, and some it does not.
pub const OP_TYPES: &[&str] = &[
    "track_table",
    "untrack_table",
    "set_table_is_enum",
    "set_table_custom_fields",
    "create_object_relationship",
    "create_array_relationship",
    "drop_relationship",
    "set_relationship_comment",
    "rename_relationship",
    "create_select_permission",
    "create_insert_permission",
    "create_update_permission",
    "create_delete_permission",
    "drop_select_permission",
    "drop_insert_permission",
    "drop_update_permission",
    "drop_delete_permission",
    "set_permission_comment",
    "add_computed_field",
    "drop_computed_field",
    "set_custom_types",
    "create_query_collection",
    "drop_query_collection",
    "add_query_to_collection",
    "drop_query_from_collection",
    "add_collection_to_allowlist",
    "drop_collection_from_allowlist",
    "export_metadata",
    "replace_metadata",
    "reload_metadata",
    "clear_metadata",
    "get_inconsistent_metadata",
    "drop_inconsistent_metadata",
    "create_event_trigger",
    "delete_event_trigger",
    "invoke_event_trigger",
    "redeliver_event",
    "run_sql",
    "bulk",
    "create_action",
    "add_remote_schema",
    "no_such_operation",
];

/// SQL for `run_sql`: harmless to the fixture, or refused by Postgres.
pub const SQL: &[&str] = &[
    "SELECT 1",
    "SELECT id, name FROM author ORDER BY id",
    "CREATE TABLE IF NOT EXISTS fuzz_t (id integer PRIMARY KEY, note text)",
    "ALTER TABLE IF EXISTS fuzz_t ADD COLUMN IF NOT EXISTS extra jsonb",
    "DROP TABLE IF EXISTS fuzz_t",
    "CREATE OR REPLACE VIEW fuzz_v AS SELECT id FROM author",
    "DROP VIEW IF EXISTS fuzz_v",
    "SELEC 1",
    "SELECT 1/0",
    "SELECT $1",
    "",
    ";",
    "SELECT 'unterminated",
    "INSERT INTO author (id, name) VALUES (1, 'dup')",
];

/// A `/v1/query` body from fuzzer bytes: a JSON body when they are one, else generated.
pub fn request_from_bytes(fx: &Fixture, bytes: &[u8]) -> Value {
    serde_json::from_slice::<Value>(bytes).unwrap_or_else(|_| metadata_request(fx, bytes))
}

/// A `/v1/query` body generated from `bytes`.
pub fn metadata_request(fx: &Fixture, bytes: &[u8]) -> Value {
    let mut tape = Tape::new(bytes);
    if tape.below(24) == 23 {
        return json_any(&mut tape, 0);
    }
    let mut request = operation(fx, &mut tape, 0);
    if let Value::Object(map) = &mut request {
        if tape.chance(8) {
            map.insert(
                "version".into(),
                tape.pick(&[json!(1), json!(2), json!(3), json!("2"), Value::Null])
                    .clone(),
            );
        }
        if tape.chance(6) {
            map.insert(
                "resource_version".into(),
                tape.pick(&[json!(1), json!(-1), json!("1"), json!(1.5), json!(99999)])
                    .clone(),
            );
        }
        if tape.chance(8) {
            map.insert(
                "dry_run".into(),
                tape.pick(&[json!(true), json!(false), json!("yes"), Value::Null])
                    .clone(),
            );
        }
    }
    request
}

/// One operation `{type, args}`.
fn operation(fx: &Fixture, tape: &mut Tape, depth: usize) -> Value {
    let op_type = *tape.pick(OP_TYPES);
    let mut args = if op_type == "bulk" {
        if depth >= 2 {
            json!([])
        } else {
            Value::Array(
                (0..tape.below(4))
                    .map(|_| operation(fx, tape, depth + 1))
                    .collect(),
            )
        }
    } else {
        op_args(fx, tape, op_type)
    };
    damage(tape, &mut args);
    let mut request = json!({"type": op_type, "args": args});
    if let (true, Some(map)) = (tape.chance(3), request.as_object_mut()) {
        map.remove("args");
    }
    request
}

/// Sometimes drops a key of `args` or replaces a value with any JSON.
fn damage(tape: &mut Tape, args: &mut Value) {
    match tape.below(16) {
        14 => {
            if let Value::Object(map) = args {
                let keys: Vec<String> = map.keys().cloned().collect();
                if !keys.is_empty() {
                    let key = tape.pick(&keys).clone();
                    map.remove(&key);
                }
            }
        }
        15 => {
            if let Value::Object(map) = args {
                let keys: Vec<String> = map.keys().cloned().collect();
                if !keys.is_empty() {
                    let key = tape.pick(&keys).clone();
                    map.insert(key, json_any(tape, 1));
                }
            } else {
                *args = json_any(tape, 0);
            }
        }
        _ => {}
    }
}

/// A table name: tracked, known to Postgres only, or not at all, in its several forms.
fn table_name(fx: &Fixture, tape: &mut Tape) -> Value {
    let names: Vec<String> = fx
        .db
        .tables
        .keys()
        .map(|r| r.name.clone())
        .chain(["nope".to_owned()])
        .collect();
    let name = tape.pick(&names).clone();
    match tape.below(8) {
        5 => json!({"schema": "public", "name": name}),
        6 => json!({"name": name}),
        7 => tape
            .pick(&[
                json!({"schema": "other", "name": name}),
                json!(42),
                json!({}),
            ])
            .clone(),
        _ => Value::String(name),
    }
}

fn qualified(value: &Value) -> QualifiedTable {
    match value {
        Value::String(s) => QualifiedTable::new("public", s.as_str()),
        Value::Object(map) => QualifiedTable::new(
            map.get("schema")
                .and_then(Value::as_str)
                .unwrap_or("public"),
            map.get("name").and_then(Value::as_str).unwrap_or_default(),
        ),
        _ => QualifiedTable::new("public", ""),
    }
}

/// Column names of `table` (any table when it is unknown), or sometimes a wrong one.
fn column(fx: &Fixture, tape: &mut Tape, table: &QualifiedTable) -> String {
    let columns: Vec<&str> = match fx.db.tables.get(table) {
        Some(t) => t.columns.iter().map(|c| c.name.as_str()).collect(),
        None => vec!["id", "name"],
    };
    if tape.chance(5) {
        return (*tape.pick(&["nope", "", "full_name", "articles"])).to_owned();
    }
    (*tape.pick(&columns)).to_owned()
}

fn role(tape: &mut Tape) -> Value {
    json!(*tape.pick(&["fuzz", "user", "editor", "guest", "backend", "admin", ""]))
}

fn graphql_name(tape: &mut Tape) -> Value {
    json!(*tape.pick(&[
        "fuzzed",
        "articles",
        "author",
        "id",
        "full_name",
        "comments",
        "9bad",
        "_x",
        // The reserved `__` prefix: refused where a name is created (it once broke every
        // role's introspection schema; see fuzz/README.md).
        "__x",
        "",
        "query_root",
        "author_by_pk",
    ]))
}

fn relationship_name(fx: &Fixture, tape: &mut Tape, table: &QualifiedTable) -> Value {
    let mut names: Vec<String> = fx
        .cache
        .resolved
        .tables
        .get(table)
        .map(|t| t.relationships.keys().cloned().collect())
        .unwrap_or_default();
    names.push("nope".into());
    json!(tape.pick(&names).clone())
}

fn permission_kind(tape: &mut Tape) -> PermissionKind {
    *tape.pick(&[
        PermissionKind::Select,
        PermissionKind::Insert,
        PermissionKind::Update,
        PermissionKind::Delete,
    ])
}

fn op_args(fx: &Fixture, tape: &mut Tape, op_type: &str) -> Value {
    let table_value = table_name(fx, tape);
    let table = qualified(&table_value);
    let mut args = Map::new();
    let mut set = |key: &str, value: Value| {
        args.insert(key.to_owned(), value);
    };
    match op_type {
        "track_table" | "set_table_is_enum" | "set_table_custom_fields" | "untrack_table" => {
            set("table", table_value);
            if tape.chance(40) {
                set("is_enum", json!(tape.chance(50)));
            }
            if op_type == "untrack_table" {
                set("cascade", json!(tape.chance(50)));
            }
            if tape.chance(40) {
                let root_fields: Map<String, Value> = (0..tape.below(3))
                    .map(|_| {
                        let key = *tape.pick(&[
                            "select",
                            "select_by_pk",
                            "select_aggregate",
                            "insert",
                            "insert_one",
                            "update",
                            "delete_by_pk",
                            "nope",
                        ]);
                        (key.to_owned(), graphql_name(tape))
                    })
                    .collect();
                let columns: Map<String, Value> = (0..tape.below(3))
                    .map(|_| (column(fx, tape, &table), graphql_name(tape)))
                    .collect();
                let configuration =
                    json!({"custom_root_fields": root_fields, "custom_column_names": columns});
                if op_type == "set_table_custom_fields" {
                    set(
                        "custom_root_fields",
                        configuration["custom_root_fields"].clone(),
                    );
                    set(
                        "custom_column_names",
                        configuration["custom_column_names"].clone(),
                    );
                } else {
                    set("configuration", configuration);
                }
            }
        }
        "create_object_relationship" | "create_array_relationship" => {
            set("table", table_value);
            set("name", graphql_name(tape));
            let other_value = table_name(fx, tape);
            let other = qualified(&other_value);
            let using = match tape.below(3) {
                0 if op_type == "create_object_relationship" => {
                    json!({"foreign_key_constraint_on": column(fx, tape, &table)})
                }
                0 | 1 => json!({"foreign_key_constraint_on": {
                    "table": other_value, "column": column(fx, tape, &other)}}),
                _ => {
                    let mapping: Map<String, Value> = (0..tape.below(3))
                        .map(|_| (column(fx, tape, &table), json!(column(fx, tape, &other))))
                        .collect();
                    json!({"manual_configuration": {
                        "remote_table": other_value, "column_mapping": mapping}})
                }
            };
            set("using", using);
            if tape.chance(20) {
                set("comment", json!(string(tape)));
            }
        }
        "drop_relationship" | "set_relationship_comment" | "rename_relationship" => {
            set("table", table_value);
            let name = relationship_name(fx, tape, &table);
            if op_type == "rename_relationship" {
                set("name", name);
                set("new_name", graphql_name(tape));
            } else {
                set("relationship", name);
                set("cascade", json!(tape.chance(50)));
                set("comment", json!(string(tape)));
            }
        }
        t if t.starts_with("create_") && t.ends_with("_permission") => {
            let kind = match t {
                "create_select_permission" => PermissionKind::Select,
                "create_insert_permission" => PermissionKind::Insert,
                "create_update_permission" => PermissionKind::Update,
                _ => PermissionKind::Delete,
            };
            set("table", table_value);
            set("role", role(tape));
            set("permission", permission(fx, tape, kind, &table));
            if tape.chance(10) {
                set("comment", json!(string(tape)));
            }
        }
        t if t.starts_with("drop_") && t.ends_with("_permission") => {
            set("table", table_value);
            set("role", role(tape));
        }
        "set_permission_comment" => {
            set("table", table_value);
            set("role", role(tape));
            set("type", json!(permission_kind(tape).as_str()));
            set("comment", json!(string(tape)));
        }
        "add_computed_field" | "drop_computed_field" => {
            set("table", table_value);
            set(
                "name",
                json!(*tape.pick(&["full_name", "fuzz_cf", "search_articles", "id", ""])),
            );
            set("cascade", json!(tape.chance(50)));
            let function = *tape.pick(&[
                "author_full_name",
                "author_title_search",
                "author_is_me",
                "nope",
            ]);
            let mut definition = json!({"function": function});
            if tape.chance(30) {
                definition["table_argument"] = json!(*tape.pick(&["a", "term", "nope"]));
            }
            if tape.chance(30) {
                definition["session_argument"] = json!(*tape.pick(&["session", "a", "nope"]));
            }
            set("definition", definition);
        }
        "set_custom_types" => {
            let scalar = *tape.pick(&["Int", "String", "Nope", "[Int!]!", "author", "MyInput"]);
            set(
                "input_objects",
                json!([{"name": "MyInput", "fields": [{"name": "a", "type": scalar}]}]),
            );
            let mut object = json!({"name": "MyObject", "fields": [
                {"name": "id", "type": *tape.pick(&["Int", "[Int]", "MyInput", "Int!"])}]});
            if tape.chance(50) {
                object["relationships"] = json!([{
                    "name": "author", "type": *tape.pick(&["object", "array", "nope"]),
                    "remote_table": table_value,
                    "field_mapping": {"id": column(fx, tape, &table)}}]);
            }
            set("objects", json!([object]));
            if tape.chance(30) {
                set(
                    "enums",
                    json!([{"name": "Mood", "values": [{"value": "happy"}]}]),
                );
            }
            if tape.chance(30) {
                set(
                    "scalars",
                    json!([{"name": *tape.pick(&["Date", "Int", ""])}]),
                );
            }
        }
        "create_query_collection"
        | "drop_query_collection"
        | "add_query_to_collection"
        | "drop_query_from_collection"
        | "add_collection_to_allowlist"
        | "drop_collection_from_allowlist" => {
            let collection = json!(*tape.pick(&["fuzz", "allowed", ""]));
            let admin = fx.role(SESSIONS[0]);
            let query = DocumentGen::new(&admin.schema.types, tape).document().0;
            set("name", collection.clone());
            set("collection", collection.clone());
            set("collection_name", collection);
            set("query_name", json!(*tape.pick(&["q", "r", ""])));
            set("query", json!(query.clone()));
            set("cascade", json!(tape.chance(50)));
            set(
                "definition",
                json!({"queries": [{"name": "q", "query": query}]}),
            );
        }
        "export_metadata" => {
            if tape.chance(30) {
                set("include_owners", json!(tape.chance(50)));
            }
        }
        "replace_metadata" => {
            let mut document = serde_json::to_value(&fx.metadata).unwrap_or_default();
            edit_document(fx, tape, &mut document);
            if tape.chance(40) {
                set("metadata", document);
                set("allow_inconsistent_metadata", json!(tape.chance(50)));
            } else {
                return document;
            }
        }
        "reload_metadata" => set("reload_remote_schemas", json!(tape.chance(50))),
        "create_event_trigger" | "delete_event_trigger" | "invoke_event_trigger" => {
            set("name", json!(*tape.pick(&["fuzz_trigger", "", "bad name"])));
            set("table", table_value);
            set(
                "webhook",
                json!(*tape.pick(&["http://127.0.0.1:9/hook", "", "nope"])),
            );
            let spec = json!({"columns": *tape.pick(&[json!("*"), json!(["id"]), json!([])])});
            for key in ["insert", "update", "delete"] {
                if tape.chance(40) {
                    set(key, spec.clone());
                }
            }
            if tape.chance(30) {
                set(
                    "retry_conf",
                    json!({"num_retries": tape.below(3), "interval_sec": tape.below(3)}),
                );
            }
            set("replace", json!(tape.chance(30)));
            set("payload", json_any(tape, 1));
        }
        "redeliver_event" => set(
            "event_id",
            tape.pick(&[
                json!("00000000-0000-0000-0000-000000000000"),
                json!("x"),
                json!(1),
            ])
            .clone(),
        ),
        "run_sql" => {
            set("sql", json!(*tape.pick(SQL)));
            for key in ["cascade", "check_metadata_consistency", "read_only"] {
                if tape.chance(30) {
                    set(key, json!(tape.chance(50)));
                }
            }
        }
        _ => {
            set("table", table_value);
        }
    }
    Value::Object(args)
}

/// Edits a metadata document a little: removes or replaces something somewhere.
fn edit_document(fx: &Fixture, tape: &mut Tape, document: &mut Value) {
    for _ in 0..tape.below(3) {
        let mut pointer = String::new();
        let mut at: &Value = document;
        for _ in 0..tape.below(6) {
            match at {
                Value::Object(map) if !map.is_empty() => {
                    let keys: Vec<&String> = map.keys().collect();
                    let key = *tape.pick(&keys);
                    pointer.push('/');
                    pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    at = &map[key];
                }
                Value::Array(items) if !items.is_empty() => {
                    let i = tape.below(items.len());
                    let _ = write!(pointer, "/{i}");
                    at = &items[i];
                }
                _ => break,
            }
        }
        let replacement = match tape.below(4) {
            0 => Value::Null,
            1 => json_any(tape, 1),
            2 => bool_exp(fx, tape, &QualifiedTable::new("public", "article"), 1),
            _ => Value::Object(Map::new()),
        };
        if let Some(target) = document.pointer_mut(&pointer) {
            *target = replacement;
        }
    }
}

/// Runs a `/v1/query` body the way the catalog does, without a database: parse, apply each
/// operation in order, refuse new inconsistency. `Ok(None)` when it changes nothing.
///
/// Panics when an accepted change leaves a document that does not reload from its stored
/// JSON, or a role whose schema or introspection cannot be built.
pub fn apply_request(fx: &Fixture, request: &Value) -> Result<Option<Accepted>, MetadataError> {
    let op = Op::parse(request, OP_LIMITS)?;
    let mut metadata = fx.metadata.clone();
    let mut own_rules = false;
    run(fx, &mut metadata, &mut own_rules, &op)?;
    if metadata == fx.metadata {
        return Ok(None);
    }
    let after = resolve::resolve(&metadata, &fx.db);
    if !own_rules {
        ops::check_no_new_inconsistency(&fx.cache, &after)?;
    }
    assert_stored_document_reloads(&metadata, request);
    let schemas = assert_schemas_build(&after, &metadata, request);
    Ok(Some(Accepted {
        metadata,
        cache: after,
        schemas,
    }))
}

/// A change [`apply_request`] accepted: the document after it, resolved, with every role's
/// schema.
#[derive(Debug)]
pub struct Accepted {
    /// The document.
    pub metadata: Metadata,
    /// The document resolved against the fixture's database.
    pub cache: Resolution,
    /// Every role's schema.
    pub schemas: ApiVersion,
}

fn run(
    fx: &Fixture,
    metadata: &mut Metadata,
    own_rules: &mut bool,
    op: &Op,
) -> Result<(), MetadataError> {
    match op {
        Op::Metadata(op) => {
            let outcome = ops::apply(
                metadata,
                op,
                ops::Context {
                    db: &fx.db,
                    remotes: &Default::default(),
                    resolved: None,
                },
            )?;
            *metadata = outcome.metadata;
            *own_rules |= outcome.own_consistency_rules;
        }
        Op::Bulk(ops) => {
            for (i, op) in ops.iter().enumerate() {
                run(fx, metadata, own_rules, op)
                    .map_err(|e| e.under(&JsonPath::args().index(i)))?;
            }
        }
        // They need the database; parsing them is what is fuzzed here.
        Op::RunSql(_) | Op::EventLog(_) => {}
    }
    Ok(())
}

/// The catalog stores `serde_json::to_value(&metadata)` and loads it back on every request:
/// an accepted document must survive that, or the catalog is unreadable from then on.
fn assert_stored_document_reloads(metadata: &Metadata, request: &Value) {
    let stored = match serde_json::to_value(metadata) {
        Ok(v) => v,
        Err(e) => panic!("accepted metadata does not serialize: {e}\nrequest: {request}"),
    };
    match serde_json::from_value::<Metadata>(stored.clone()) {
        Ok(reloaded) => assert!(
            reloaded == *metadata,
            "accepted metadata reloads differently\nrequest: {request}\nstored: {stored}"
        ),
        Err(e) => {
            panic!("accepted metadata does not reload: {e}\nrequest: {request}\nstored: {stored}")
        }
    }
}

/// Every role's schema builds as the server builds them when it installs a version, and is a
/// valid GraphQL schema.
fn assert_schemas_build(cache: &Resolution, metadata: &Metadata, context: &Value) -> ApiVersion {
    let schemas = api_version(cache, metadata);
    let counters = basalt::stats::Counters::default();
    let roles = cache.resolved.roles.iter().map(String::as_str);
    for role in roles.chain(["admin", "nobody"]) {
        for flagged in [false, true] {
            let schema = schemas.role(role, flagged, &counters);
            if let Err(error) = basalt::graphql::checked::check(&schema.schema.types) {
                panic!(
                    "the schema of role {role} (flagged: {flagged}) is not a valid GraphQL \
                     schema: {error:?}\n{context}"
                );
            }
        }
    }
    schemas
}

// ---- target 3: permission expressions -----------------------------------------------------

/// A permission to create.
#[derive(Clone)]
pub struct PermissionCase {
    /// Its kind.
    pub kind: PermissionKind,
    /// The table.
    pub table: Value,
    /// The role.
    pub role: String,
    /// The permission object.
    pub permission: Value,
    /// Choices for GraphQL documents run as the role once the permission is in.
    pub documents: Vec<u8>,
}

impl std::fmt::Debug for PermissionCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "\n  request: {}\n", self.request())
    }
}

impl PermissionCase {
    /// The `create_<kind>_permission` body.
    pub fn request(&self) -> Value {
        json!({
            "type": format!("create_{}_permission", self.kind.as_str()),
            "args": {"table": self.table, "role": self.role, "permission": self.permission},
        })
    }

    /// A case written as the seed corpus has them: a `create_<kind>_permission` body.
    pub fn from_json(value: &Value) -> Option<Self> {
        let op_type = value.get("type")?.as_str()?;
        let kind = op_type
            .strip_prefix("create_")?
            .strip_suffix("_permission")
            .and_then(|k| PermissionKind::ALL.into_iter().find(|p| p.as_str() == k))?;
        let args = value.get("args")?;
        Some(PermissionCase {
            kind,
            table: args.get("table").cloned().unwrap_or(Value::Null),
            role: args.get("role")?.as_str()?.to_owned(),
            permission: args.get("permission")?.clone(),
            documents: Vec::new(),
        })
    }
}

/// A permission case from fuzzer bytes: a JSON body when they are one, else generated.
pub fn permission_from_bytes(fx: &Fixture, bytes: &[u8]) -> PermissionCase {
    serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|v| PermissionCase::from_json(&v))
        .unwrap_or_else(|| permission_case(fx, bytes))
}

/// A permission generated from `bytes`, for a role (usually a new one) on a tracked table.
pub fn permission_case(fx: &Fixture, bytes: &[u8]) -> PermissionCase {
    let mut tape = Tape::new(bytes);
    let kind = permission_kind(&mut tape);
    let tables = fx.tables();
    let table = if tape.chance(5) {
        table_name(fx, &mut tape)
    } else {
        Value::String(tape.pick(&tables).name.clone())
    };
    let name = qualified(&table);
    let role = (*tape.pick(&["fuzz", "fuzz", "fuzz", "guest", "user", "admin", ""])).to_owned();
    let mut permission = permission(fx, &mut tape, kind, &name);
    damage(&mut tape, &mut permission);
    PermissionCase {
        kind,
        table,
        role,
        permission,
        documents: tape.rest().to_vec(),
    }
}

/// A permission object of `kind` on `table`.
fn permission(
    fx: &Fixture,
    tape: &mut Tape,
    kind: PermissionKind,
    table: &QualifiedTable,
) -> Value {
    let columns = |tape: &mut Tape| -> Value {
        if tape.chance(30) {
            return json!("*");
        }
        let mut list: Vec<String> = Vec::new();
        for _ in 0..1 + tape.below(4) {
            let c = column(fx, tape, table);
            if !list.contains(&c) {
                list.push(c);
            }
        }
        json!(list)
    };
    let mut permission = Map::new();
    match kind {
        PermissionKind::Select => {
            permission.insert("columns".into(), columns(tape));
            permission.insert("filter".into(), bool_exp(fx, tape, table, 0));
            if tape.chance(25) {
                permission.insert(
                    "limit".into(),
                    tape.pick(&[json!(0), json!(1), json!(-1), json!(1.5), json!(1u64 << 40)])
                        .clone(),
                );
            }
            if tape.chance(40) {
                permission.insert("allow_aggregations".into(), json!(tape.chance(70)));
            }
            if tape.chance(20) {
                let computed: Vec<&str> = (0..tape.below(3))
                    .map(|_| *tape.pick(&["full_name", "is_me", "search_articles", "nope"]))
                    .collect();
                permission.insert("computed_fields".into(), json!(computed));
            }
        }
        PermissionKind::Insert => {
            permission.insert("check".into(), bool_exp(fx, tape, table, 0));
            if tape.chance(50) {
                permission.insert("columns".into(), columns(tape));
            }
            if tape.chance(30) {
                permission.insert("set".into(), presets(fx, tape, table));
            }
            if tape.chance(20) {
                permission.insert("backend_only".into(), json!(tape.chance(50)));
            }
        }
        PermissionKind::Update => {
            permission.insert("columns".into(), columns(tape));
            permission.insert("filter".into(), bool_exp(fx, tape, table, 0));
            if tape.chance(50) {
                let check = if tape.chance(20) {
                    Value::Null
                } else {
                    bool_exp(fx, tape, table, 0)
                };
                permission.insert("check".into(), check);
            }
            if tape.chance(30) {
                permission.insert("set".into(), presets(fx, tape, table));
            }
        }
        PermissionKind::Delete => {
            permission.insert("filter".into(), bool_exp(fx, tape, table, 0));
        }
    }
    Value::Object(permission)
}

fn presets(fx: &Fixture, tape: &mut Tape, table: &QualifiedTable) -> Value {
    Value::Object(
        (0..1 + tape.below(2))
            .map(|_| {
                let c = column(fx, tape, table);
                let value = match tape.below(3) {
                    0 => json!(*tape.pick(&["X-Svc-User-Id", "x-svc-role", "now()"])),
                    1 => column_value(fx, tape, table, &c),
                    _ => json_any(tape, 1),
                };
                (c, value)
            })
            .collect(),
    )
}

/// A permission BoolExp over `table`: columns with operators, relationships, connectives,
/// `_exists`, and some keys that are none of these.
pub fn bool_exp(fx: &Fixture, tape: &mut Tape, table: &QualifiedTable, depth: usize) -> Value {
    if tape.chance(2) {
        return json_any(tape, 1);
    }
    let mut map = Map::new();
    let keys = if depth >= 4 { 0 } else { tape.below(3) };
    for _ in 0..keys {
        let (key, value) = bool_exp_entry(fx, tape, table, depth);
        map.insert(key, value);
    }
    Value::Object(map)
}

fn bool_exp_entry(
    fx: &Fixture,
    tape: &mut Tape,
    table: &QualifiedTable,
    depth: usize,
) -> (String, Value) {
    let resolved = fx.cache.resolved.tables.get(table);
    match tape.below(12) {
        0..=4 => {
            let c = column(fx, tape, table);
            let value = column_condition(fx, tape, table, &c);
            (c, value)
        }
        5 | 6 => {
            let rels: Vec<_> = resolved
                .map(|t| t.relationships.values().collect())
                .unwrap_or_default();
            if rels.is_empty() {
                return ("_not".into(), bool_exp(fx, tape, table, depth + 1));
            }
            let rel = *tape.pick(&rels);
            let target = rel.target.clone();
            (rel.name.clone(), bool_exp(fx, tape, &target, depth + 1))
        }
        7 | 8 => {
            let key = *tape.pick(&["_and", "_or", "$and", "$or"]);
            let items = (0..tape.below(3))
                .map(|_| bool_exp(fx, tape, table, depth + 1))
                .collect();
            (key.to_owned(), Value::Array(items))
        }
        9 => {
            let key = *tape.pick(&["_not", "$not"]);
            (key.to_owned(), bool_exp(fx, tape, table, depth + 1))
        }
        10 => {
            let target_value = table_name(fx, tape);
            let target = qualified(&target_value);
            let mut exists =
                json!({"_table": target_value, "_where": bool_exp(fx, tape, &target, depth + 1)});
            damage(tape, &mut exists);
            ("_exists".to_owned(), exists)
        }
        _ => {
            let key = *tape.pick(&["full_name", "is_me", "nope", "_nope", "$eq", "", "_exists"]);
            (key.to_owned(), bool_exp(fx, tape, table, depth + 1))
        }
    }
}

/// What a BoolExp says about one column: a shorthand value or an object of operators.
fn column_condition(fx: &Fixture, tape: &mut Tape, table: &QualifiedTable, column: &str) -> Value {
    if tape.chance(15) {
        return column_value(fx, tape, table, column);
    }
    let mut ops = Map::new();
    for _ in 0..1 + tape.below(2) {
        let (name, operand) = if tape.chance(5) {
            ("nope", operators::Operand::Same)
        } else {
            let op = tape.pick(operators::OPERATORS);
            (op.name, op.operand)
        };
        let prefix = if tape.chance(30) { "$" } else { "_" };
        let value = match operand {
            _ if tape.chance(4) => json_any(tape, 1),
            operators::Operand::Same => column_value(fx, tape, table, column),
            operators::Operand::ListOfSame => {
                if tape.chance(15) {
                    json!(*tape.pick(&["X-Svc-Allowed-Ids", "x-svc-user-id"]))
                } else {
                    Value::Array(
                        (0..tape.below(3))
                            .map(|_| column_value(fx, tape, table, column))
                            .collect(),
                    )
                }
            }
            operators::Operand::Text => Value::String(string(tape)),
            operators::Operand::ListOfText => Value::Array(
                (0..tape.below(3))
                    .map(|_| Value::String(string(tape)))
                    .collect(),
            ),
            operators::Operand::Jsonb => json_any(tape, 1),
            operators::Operand::Boolean => Value::Bool(tape.chance(50)),
            operators::Operand::Column => {
                let other = self::column(fx, tape, table);
                match tape.below(3) {
                    0 => json!(["$", other]),
                    1 => json!(["$", other, "extra"]),
                    _ => json!(other),
                }
            }
            operators::Operand::Comparisons => json!({"String": {"_eq": string(tape)}}),
        };
        ops.insert(format!("{prefix}{name}"), value);
    }
    Value::Object(ops)
}

/// A value for `column` of `table`: of its type mostly, a session variable sometimes.
fn column_value(fx: &Fixture, tape: &mut Tape, table: &QualifiedTable, column: &str) -> Value {
    let type_name = fx
        .db_table(table)
        .and_then(|t| t.columns.iter().find(|c| c.name == column))
        .map(|c| c.type_name.clone())
        .unwrap_or_default();
    if tape.chance(15) {
        return json!(*tape.pick(&[
            "X-Svc-User-Id",
            "x-svc-role",
            "x-svc-missing",
            "X-SVC-USER-ID"
        ]));
    }
    match type_name.as_str() {
        "int4" | "int8" | "numeric" => match tape.below(4) {
            0 => json!(tape.below(6)),
            1 => json!(*tape.pick(&["1", "2.5", "abc"])),
            2 => json!(*tape.pick(&[2147483648i64, -1, i64::MAX])),
            _ => json!(1.5),
        },
        "jsonb" | "json" => json_any(tape, 1),
        "date" => json!(*tape.pick(&["2020-01-01", "today", "bad"])),
        "_text" => match tape.below(2) {
            0 => json!(["Annie", "A. N."]),
            _ => json!(*tape.pick(&["{}", "{Annie}", "{"])),
        },
        _ => Value::String(string(tape)),
    }
}

/// Checks a permission case everywhere permissions are checked: the BoolExp checker on each
/// expression, `check_permission`, and `create_<kind>_permission` applied to the fixture. When
/// accepted, returns the role's probe documents (every root field) and generated documents,
/// compiled (those the planner accepts).
///
/// Panics on the same oracles as [`apply_request`].
pub fn check_permission_case(
    fx: &Fixture,
    case: &PermissionCase,
) -> Result<Vec<(GraphqlRequest, Compiled)>, MetadataError> {
    let table = qualified(&case.table);
    let resolved = &fx.cache.resolved;
    for key in ["filter", "check"] {
        if let Some(exp) = case.permission.get(key) {
            let mut refs = Vec::new();
            let _ = resolve::check_bool_exp(
                resolved,
                &table,
                &table,
                exp,
                &JsonPath::root().key(key),
                &mut refs,
            );
        }
    }
    let _ = resolve::check_permission(resolved, &table, &case.role, case.kind, &case.permission);
    let request = case.request();
    let Some(Accepted {
        cache: after,
        schemas,
        ..
    }) = apply_request(fx, &request)?
    else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for flagged in [false, true] {
        let role = schemas.role(&case.role, flagged, &basalt::stats::Counters::default());
        out.extend(
            probes(&role.schema, &after.resolved, 0)
                .into_iter()
                .filter_map(|(_, found)| found),
        );
        let mut tape = Tape::new(&case.documents);
        for _ in 0..2 {
            let mut generator = DocumentGen::new(&role.schema.types, &mut tape);
            let (query, variables, operation_name) = generator.document();
            let request = GraphqlRequest {
                session: 0,
                query,
                variables,
                operation_name,
            };
            if let Ok(compiled) = compile_for(&role.schema, &after.resolved, &request) {
                out.push((request, compiled));
            }
        }
    }
    Ok(out)
}

/// The role and session variables a request for `session` runs with over HTTP.
pub fn headers(session: Session) -> Vec<(&'static str, &'static str)> {
    let mut headers = vec![
        ("x-svc-role", session.role),
        ("x-svc-user-id", "1"),
        ("x-svc-allowed-ids", "{1,2,3}"),
    ];
    if session.backend_only {
        headers.push(("x-svc-use-backend-only-permissions", "true"));
    }
    headers
}
