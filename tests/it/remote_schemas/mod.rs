//! Remote schemas through the HTTP API (`docs/remote-schemas.md`), against real local GraphQL
//! servers (async-graphql dynamic schemas served by axum): the operations and their errors,
//! the merged schema (introspection checked by graphql-js), execution, headers, remote errors
//! and failures, timeouts, reloads, and a replica starting while the remote is down. The
//! geography service [`Geo`] is here; `remote_server.rs` is the live server other areas use
//! (the blog example's newsletter service among them).

mod availability;
mod execution;
mod operations;
pub(crate) mod relationships;
pub(crate) mod remote_server;
mod to_tables;

use crate::auth::serve;
use crate::harness::TestServer;
use crate::http::front::Front;
use async_graphql::dynamic::{
    Enum, Field, FieldFuture, FieldValue, InputObject, InputValue, Interface, InterfaceField,
    Object, Schema, TypeRef, Union,
};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How a [`Geo`] server answers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// As a GraphQL server does.
    Normal,
    /// After this long.
    Slow(Duration),
    /// With this status and a non-GraphQL body.
    Status(u16),
}

/// A geography GraphQL service: countries and cities, an interface, a union, an enum, an
/// input object, a mutation, a field that fails, and one that echoes a request header.
#[derive(Clone)]
struct Geo {
    schema: Arc<Mutex<Schema>>,
    mode: Arc<Mutex<Mode>>,
    /// `(headers, body)` of every request, in arrival order.
    received: Arc<Mutex<Vec<(HeaderMap, Value)>>>,
    url: String,
}

fn countries() -> Vec<Value> {
    vec![
        json!({"code": "FR", "name": "France", "continent": "EUROPE"}),
        json!({"code": "JP", "name": "Japan", "continent": "ASIA"}),
    ]
}

/// The country with this code.
fn country_by_code(code: &str) -> Option<Value> {
    countries().into_iter().find(|c| c["code"] == code)
}

/// A field reading `key` of its parent JSON object.
fn prop(name: &str, ty: TypeRef) -> Field {
    let key = name.to_owned();
    Field::new(name, ty, move |ctx| {
        let key = key.clone();
        FieldFuture::new(async move {
            let parent = ctx.parent_value.try_downcast_ref::<Value>()?;
            Ok(parent.get(&key).cloned().and_then(|v| {
                async_graphql::Value::from_json(v)
                    .ok()
                    .map(FieldValue::value)
            }))
        })
    })
}

fn continent_prop() -> Field {
    Field::new("continent", TypeRef::named_nn("Continent"), |ctx| {
        FieldFuture::new(async move {
            let parent = ctx.parent_value.try_downcast_ref::<Value>()?;
            let name = parent["continent"].as_str().unwrap_or_default().to_owned();
            Ok(Some(FieldValue::value(async_graphql::Value::Enum(
                async_graphql::Name::new(name),
            ))))
        })
    })
}

/// The service's schema; `v2` adds `capital` to the query root.
fn geo_schema(v2: bool) -> Schema {
    let node =
        Interface::new("Node").field(InterfaceField::new("code", TypeRef::named_nn(TypeRef::ID)));
    let country = Object::new("Country")
        .implement("Node")
        .field(prop("code", TypeRef::named_nn(TypeRef::ID)))
        .field(prop("name", TypeRef::named_nn(TypeRef::STRING)))
        .field(continent_prop());
    let city = Object::new("City")
        .implement("Node")
        .field(prop("code", TypeRef::named_nn(TypeRef::ID)))
        .field(prop("name", TypeRef::named_nn(TypeRef::STRING)))
        .field(prop("population", TypeRef::named(TypeRef::INT)));
    let search = Union::new("SearchResult")
        .possible_type("Country")
        .possible_type("City");
    let continent = Enum::new("Continent").item("EUROPE").item("ASIA");
    let filter = InputObject::new("CountryFilter")
        .field(InputValue::new("continent", TypeRef::named("Continent")));
    let mut query = Object::new("Query")
        .field(
            Field::new("country", TypeRef::named("Country"), |ctx| {
                FieldFuture::new(async move {
                    let code = ctx.args.try_get("code")?.string()?;
                    Ok(country_by_code(code).map(FieldValue::owned_any))
                })
            })
            .argument(InputValue::new("code", TypeRef::named_nn(TypeRef::ID))),
        )
        .field(
            Field::new("countries", TypeRef::named_nn_list_nn("Country"), |ctx| {
                FieldFuture::new(async move {
                    let continent = match ctx.args.get("filter") {
                        Some(f) => f
                            .object()?
                            .get("continent")
                            .map(|c| c.enum_name().map(str::to_owned))
                            .transpose()?,
                        None => None,
                    };
                    let first = ctx
                        .args
                        .get("first")
                        .map(|f| f.i64())
                        .transpose()?
                        .unwrap_or(10);
                    let list: Vec<FieldValue> = countries()
                        .into_iter()
                        .filter(|c| continent.as_deref().is_none_or(|k| c["continent"] == k))
                        .take(first as usize)
                        .map(FieldValue::owned_any)
                        .collect();
                    Ok(Some(FieldValue::list(list)))
                })
            })
            .argument(InputValue::new("filter", TypeRef::named("CountryFilter")))
            .argument(
                InputValue::new("first", TypeRef::named(TypeRef::INT))
                    .default_value(async_graphql::Value::from(10)),
            ),
        )
        .field(Field::new(
            "search",
            TypeRef::named_nn_list_nn("SearchResult"),
            |_| {
                FieldFuture::new(async move {
                    Ok(Some(FieldValue::list([
                        FieldValue::owned_any(countries()[0].clone()).with_type("Country"),
                        FieldValue::owned_any(
                            json!({"code": "OSA", "name": "Osaka", "population": 2_700_000}),
                        )
                        .with_type("City"),
                    ])))
                })
            },
        ))
        .field(
            Field::new("node", TypeRef::named("Node"), |ctx| {
                FieldFuture::new(async move {
                    let code = ctx.args.try_get("code")?.string()?;
                    Ok(
                        country_by_code(code)
                            .map(|c| FieldValue::owned_any(c).with_type("Country")),
                    )
                })
            })
            .argument(InputValue::new("code", TypeRef::named_nn(TypeRef::ID))),
        )
        .field(
            Field::new("header", TypeRef::named(TypeRef::STRING), |ctx| {
                FieldFuture::new(async move {
                    let name = ctx.args.try_get("name")?.string()?.to_owned();
                    let headers = ctx.data::<HeaderMap>()?;
                    Ok(headers
                        .get(name.as_str())
                        .and_then(|v| v.to_str().ok())
                        .map(|v| FieldValue::value(v.to_owned())))
                })
            })
            .argument(InputValue::new("name", TypeRef::named_nn(TypeRef::STRING))),
        )
        .field(Field::new("fails", TypeRef::named(TypeRef::STRING), |_| {
            FieldFuture::new(async move {
                Err::<Option<FieldValue>, _>(async_graphql::Error::new("the geo service is sad"))
            })
        }));
    if v2 {
        query = query.field(Field::new(
            "capital",
            TypeRef::named(TypeRef::STRING),
            |_| FieldFuture::new(async move { Ok(Some(FieldValue::value("Paris"))) }),
        ));
    }
    let mutation = Object::new("Mutation").field(
        Field::new("addCountry", TypeRef::named_nn("Country"), |ctx| {
            FieldFuture::new(async move {
                let code = ctx.args.try_get("code")?.string()?.to_owned();
                let name = ctx.args.try_get("name")?.string()?.to_owned();
                Ok(Some(FieldValue::owned_any(
                    json!({"code": code, "name": name, "continent": "EUROPE"}),
                )))
            })
        })
        .argument(InputValue::new("code", TypeRef::named_nn(TypeRef::ID)))
        .argument(InputValue::new("name", TypeRef::named_nn(TypeRef::STRING))),
    );
    Schema::build("Query", Some("Mutation"), None)
        .register(node)
        .register(country)
        .register(city)
        .register(search)
        .register(continent)
        .register(filter)
        .register(query)
        .register(mutation)
        .finish()
        .expect("geo schema")
}

async fn answer(State(geo): State<Geo>, headers: HeaderMap, body: Bytes) -> Response {
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    geo.received.lock().unwrap().push((headers.clone(), value));
    let mode = *geo.mode.lock().unwrap();
    match mode {
        Mode::Status(status) => {
            return (StatusCode::from_u16(status).unwrap(), "not today").into_response()
        }
        Mode::Slow(delay) => tokio::time::sleep(delay).await,
        Mode::Normal => {}
    }
    let request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let schema = geo.schema.lock().unwrap().clone();
    let response = schema.execute(request.data(headers)).await;
    let mut response = axum::Json(response).into_response();
    response
        .headers_mut()
        .append("set-cookie", "geo=visited; Path=/".parse().unwrap());
    response
}

impl Geo {
    async fn start() -> Geo {
        let mut geo = Geo {
            schema: Arc::new(Mutex::new(geo_schema(false))),
            mode: Arc::new(Mutex::new(Mode::Normal)),
            received: Arc::default(),
            url: String::new(),
        };
        let router = Router::new()
            .route("/graphql", post(answer))
            .with_state(geo.clone());
        geo.url = format!("{}/graphql", serve(router).await);
        geo
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    /// Requests other than introspection, in order.
    fn calls(&self) -> Vec<(HeaderMap, Value)> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, b)| !b["query"].as_str().unwrap_or_default().contains("__schema"))
            .cloned()
            .collect()
    }
}

fn add(name: &str, url: &str) -> Value {
    json!({"type": "add_remote_schema", "args": {"name": name, "definition": {"url": url}}})
}

/// A blog server with the geo service added as `geo`.
async fn blog_with_geo() -> (TestServer, Geo) {
    let geo = Geo::start().await;
    let s = TestServer::blog().await;
    s.ok(add("geo", &geo.url)).await;
    (s, geo)
}
