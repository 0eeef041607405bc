//! Target 3: permission expressions, created on the fixture and compiled into the role's SQL.

use super::graphql::{compile_for, probes, Compiled, DocumentGen, GraphqlRequest};
use super::metadata_request::{
    apply_request, column, damage, permission_kind, qualified, table_name, Accepted,
};
use super::tape::{json_any, string, Tape};
use super::Fixture;
use basalt::metadata::types::QualifiedTable;
use basalt::metadata::{JsonPath, MetadataError, PermissionKind};
use basalt::resolve::{self, operators};
use serde_json::{json, Map, Value};

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
pub(super) fn permission(
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
