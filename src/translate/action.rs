//! Actions as SQL (`docs/actions.md`): a handler's output, bound as one `jsonb` parameter,
//! shaped into the response by Postgres like any other selection — its fields picked and
//! renamed, nested objects and lists kept in order, relationships to tables joined with the
//! caller's select permissions; an asynchronous action's result read from the action log by
//! id; an asynchronous call logged.

use super::select::{aggregate, json_object, select};
use super::{value, State};
use crate::db_model::PgType;
use crate::graphql::ir::*;
use crate::sql::ast::{
    self, Alias, BinaryOp, Expr, From as FromItem, Ident, Insert, InsertValue, Literal,
    ParamSource, QualifiedName, Select as SqlSelect, SelectItem, Statement, ELEMENT, POSITION,
};
use crate::sql::helpers::json_array_agg;

/// The action log, in the catalog.
fn action_log() -> QualifiedName {
    QualifiedName::new("basalt_catalog", "action_log")
}

/// `jsonb_typeof(json) = kind`.
fn is_json(json: Expr, kind: &str) -> Expr {
    Expr::binary(
        Expr::call("jsonb_typeof", vec![json]),
        BinaryOp::Eq,
        Expr::string(kind),
    )
}

/// `json -> field`.
fn field_of(json: Expr, field: &str) -> Expr {
    Expr::call("jsonb_extract_path", vec![json, Expr::string(field)])
}

/// The JSON of an output (`json`, a `jsonb` expression the handler's answer was validated
/// against the declared type) shaped by `select`: null stays null. `json` appears once in the
/// statement (a handler's answer is bound once, however it is used).
pub(super) fn output(state: &mut State, json: Expr, select: &OutputSelect) -> Expr {
    let holder = state.alias();
    let this = Expr::column(&holder, ELEMENT);
    let body = if select.list {
        list(state, this, &select.object)
    } else {
        single(state, this, &select.object)
    };
    Expr::Subquery(Box::new(SqlSelect {
        from: Some(FromItem::Subquery {
            select: Box::new(SqlSelect {
                list: vec![SelectItem::named(json, ELEMENT)],
                ..SqlSelect::default()
            }),
            alias: holder,
        }),
        ..SqlSelect::expr(body)
    }))
}

/// One output object (or null) from `this`.
fn single(state: &mut State, this: Expr, shape: &OutputObject) -> Expr {
    let alias = state.alias();
    let object = object(state, &alias, shape);
    Expr::Subquery(Box::new(SqlSelect {
        from: Some(FromItem::Subquery {
            select: Box::new(SqlSelect {
                list: row_columns(this, shape),
                ..SqlSelect::default()
            }),
            alias,
        }),
        ..SqlSelect::expr(object)
    }))
}

/// A list of output objects from `this`, in order (null when `this` is not an array).
fn list(state: &mut State, this: Expr, shape: &OutputObject) -> Expr {
    let elements = state.alias();
    let alias = state.alias();
    let object = object(state, &alias, shape);
    let mut columns = vec![SelectItem::named(
        Expr::column(&elements, POSITION),
        POSITION,
    )];
    columns.extend(row_columns(Expr::column(&elements, ELEMENT), shape));
    let rows = FromItem::Subquery {
        select: Box::new(SqlSelect {
            list: columns,
            from: Some(FromItem::JsonElements {
                json: Box::new(this.clone()),
                alias: elements,
            }),
            ..SqlSelect::default()
        }),
        alias: alias.clone(),
    };
    let array = Expr::Subquery(Box::new(SqlSelect {
        from: Some(rows),
        ..SqlSelect::expr(json_array_agg(
            object,
            vec![ast::OrderBy {
                expr: Expr::column(&alias, POSITION),
                order: None,
            }],
        ))
    }));
    Expr::Case {
        when: Box::new(is_json(this, "array")),
        then: Box::new(array),
        otherwise: Box::new(Expr::null().cast(PgType::Json)),
    }
}

/// The columns of an output object's row: the object itself (`"$v"`), and each join key as
/// the type of the column it is compared with.
fn row_columns(json: Expr, object: &OutputObject) -> Vec<SelectItem> {
    let mut list = vec![SelectItem::named(json.clone(), ELEMENT)];
    for (field, ty) in &object.keys {
        let text = Expr::call(
            "jsonb_extract_path_text",
            vec![json.clone(), Expr::string(field)],
        );
        list.push(SelectItem::named(text.cast(ty.clone()), field));
    }
    list
}

/// The JSON object of the output object in row `alias`, or null when it is not an object.
fn object(state: &mut State, alias: &Alias, object: &OutputObject) -> Expr {
    let this = Expr::column(alias, ELEMENT);
    let pairs: Vec<(&str, Expr)> = object
        .fields
        .iter()
        .map(|(key, field)| {
            let value = match field {
                OutputField::Constant(name) => Expr::string(name).cast(PgType::Text),
                OutputField::Value(name) => field_of(this.clone(), name),
                OutputField::Object { field, select } => {
                    output(state, field_of(this.clone(), field), select)
                }
                OutputField::Relationship(rows) => select(state, rows, Some(alias)),
                OutputField::Aggregate(rows) => aggregate(state, rows, Some(alias)),
            };
            (key.as_str(), value)
        })
        .collect();
    Expr::Case {
        when: Box::new(is_json(this, "object")),
        then: Box::new(json_object(pairs)),
        otherwise: Box::new(Expr::null().cast(PgType::Json)),
    }
}

/// A synchronous action's answer: its output, bound when the handler has answered.
pub(super) fn action_field(state: &mut State, key: &str, field: &ActionField) -> Expr {
    let json = Expr::value(
        ParamSource::Provided(ActionPart::Output.name(key)),
        PgType::Jsonb,
    );
    output(state, json, &field.output)
}

/// An asynchronous action's result: the logged call with that id (and, for every role but
/// admin, that exact session), or null.
pub(super) fn action_result(state: &mut State, result: &ActionResult) -> Expr {
    let log = state.alias();
    let column = |c: &str| Expr::column(&log, c);
    let pairs: Vec<(&str, Expr)> = result
        .fields
        .iter()
        .map(|(key, field)| {
            let value = match field {
                ResultField::Constant(name) => Expr::string(name).cast(PgType::Text),
                ResultField::Id => column("id"),
                ResultField::CreatedAt => column("created_at"),
                ResultField::Errors => column("errors"),
                ResultField::Output(select) => output(state, column("response_payload"), select),
            };
            (key.as_str(), value)
        })
        .collect();
    let mut conditions = vec![
        Expr::binary(column("id"), BinaryOp::Eq, value(&result.id)),
        Expr::binary(
            column("action_name"),
            BinaryOp::Eq,
            Expr::value(
                ParamSource::Literal(serde_json::Value::String(result.action.clone())),
                PgType::Text,
            ),
        ),
    ];
    if result.same_session {
        conditions.push(Expr::binary(
            column("session_variables"),
            BinaryOp::Eq,
            Expr::value(ParamSource::SessionObject, PgType::Jsonb),
        ));
    }
    Expr::Subquery(Box::new(SqlSelect {
        from: Some(FromItem::Table {
            name: action_log(),
            alias: log,
        }),
        where_: conditions,
        ..SqlSelect::expr(json_object(pairs))
    }))
}

/// `SELECT <output JSON>`: the statement a synchronous mutation action's field runs once its
/// handler has answered.
pub(super) fn answer(key: &str, field: &ActionField, cells: &CellRules) -> Statement {
    let mut state = State::new(cells);
    let json = action_field(&mut state, key, field);
    Statement::Select(Box::new(SqlSelect::expr(json)))
}

/// `INSERT INTO basalt_catalog.action_log … RETURNING to_json(id)`: an asynchronous call
/// accepted, its id the field's answer.
pub(super) fn log_call(key: &str, call: &ActionCall) -> Statement {
    let alias = Alias::fixed("_log");
    let part = |p: ActionPart| {
        InsertValue::Expr(Expr::value(
            ParamSource::Provided(p.name(key)),
            if p == ActionPart::Document {
                PgType::Text
            } else {
                PgType::Jsonb
            },
        ))
    };
    let columns = [
        "action_name",
        "input_payload",
        "request_headers",
        "session_variables",
        "request_query",
        "status",
    ];
    Statement::Insert(Box::new(Insert {
        table: action_log(),
        alias: alias.clone(),
        columns: columns.iter().map(|c| Ident::new(*c)).collect(),
        rows: vec![vec![
            InsertValue::Expr(Expr::value(
                ParamSource::Literal(serde_json::Value::String(call.action.clone())),
                PgType::Text,
            )),
            part(ActionPart::Input),
            part(ActionPart::Headers),
            InsertValue::Expr(Expr::value(ParamSource::SessionObject, PgType::Jsonb)),
            part(ActionPart::Document),
            InsertValue::Expr(Expr::Literal(Literal::Str("created".to_owned()))),
        ]],
        gate: None,
        on_conflict: None,
        returning: vec![SelectItem::new(Expr::call(
            "to_json",
            vec![Expr::column(&alias, "id")],
        ))],
    }))
}
