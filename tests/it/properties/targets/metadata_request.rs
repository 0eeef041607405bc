//! Target 2: `/v1/query` bodies, generated from the fixture's tables and applied to its metadata.

use super::graphql::DocumentGen;
use super::permission::{bool_exp, permission};
use super::tape::{json_any, string, Tape};
use super::{api_version, Fixture, OP_LIMITS, SESSIONS};
use basalt::engine::ApiVersion;
use basalt::metadata::types::QualifiedTable;
use basalt::metadata::{JsonPath, Metadata, MetadataError, PermissionKind};
use basalt::ops::{self, Op};
use basalt::resolve::{self, Resolution};
use serde_json::{json, Map, Value};
use std::fmt::Write;

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
pub(super) fn damage(tape: &mut Tape, args: &mut Value) {
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
pub(super) fn table_name(fx: &Fixture, tape: &mut Tape) -> Value {
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

pub(super) fn qualified(value: &Value) -> QualifiedTable {
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
pub(super) fn column(fx: &Fixture, tape: &mut Tape, table: &QualifiedTable) -> String {
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

pub(super) fn permission_kind(tape: &mut Tape) -> PermissionKind {
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
        Op::RunSql(_) | Op::EventLog(_) | Op::Scheduled(_) => {}
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
