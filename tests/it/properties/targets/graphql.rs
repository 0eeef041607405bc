//! Target 1: GraphQL documents, written against a role's schema and compiled as that role.

use super::tape::{json_any, string, Tape};
use super::{Fixture, Session, LIMITS, SESSIONS};
use basalt::graphql::ir::RootField;
use basalt::graphql::plan::{self, PlanError};
use basalt::graphql::schemas::RoleSchema;
use basalt::graphql::types::{FieldDef, TypeDef, TypeRef, TypeSystem};
use basalt::sql::print::MultiplexedSql;
use basalt::sql::program::{FieldProgram, MutationProgram};
use basalt::sql::SqlText;
use serde_json::{json, Map, Value};
use std::fmt::Write;

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

/// What a request compiles to, as the engine would run it.
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

pub(super) fn compile_for(
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
pub(super) struct DocumentGen<'g, 't> {
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
    pub(super) fn new(types: &'g TypeSystem, tape: &'g mut Tape<'t>) -> Self {
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
    pub(super) fn document(&mut self) -> (String, Map<String, Value>, Option<String>) {
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
