//! The remote schema operations: bad definitions, unreachable remotes and unknown names
//! refused, clashes with tables, other remotes and actions refused, `replace_metadata`
//! introspecting each remote, and every role's merged schema checked by graphql-js.

use super::*;

#[tokio::test]
async fn every_role_sees_the_merged_schema_and_graphql_js_accepts_it() {
    let (s, _geo) = blog_with_geo().await;
    for role in [None, Some("user"), Some("nobody")] {
        let data = crate::graphql::introspection::full_introspection(&s, role).await;
        let (ok, out, err) = crate::graphql::introspection::node(&[], Some(&data.to_string()));
        assert!(ok, "graphql-js rejects the schema of {role:?}: {err}");
        // The remote's types and the merged roots by name, as every generated type (the
        // remote lists `Country.continent` after `name`, `EUROPE` before `ASIA`, and its
        // root fields come after the tables').
        crate::graphql::introspection::assert_members_sorted(&data);
        assert!(out.contains("\"ok\":true"), "{out}");
        let types = data["__schema"]["types"].as_array().unwrap();
        let names: Vec<&str> = types.iter().filter_map(|t| t["name"].as_str()).collect();
        for expected in [
            "Country",
            "City",
            "Node",
            "SearchResult",
            "Continent",
            "CountryFilter",
        ] {
            assert!(names.contains(&expected), "{role:?} lacks {expected}");
        }
        assert!(
            !names.contains(&"Query") && !names.contains(&"Mutation"),
            "remote roots are not types here"
        );
        let root = types.iter().find(|t| t["name"] == "query_root").unwrap();
        let fields: Vec<&str> = root["fields"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["name"].as_str())
            .collect();
        assert!(
            fields.contains(&"country") && fields.contains(&"search"),
            "{role:?}: {fields:?}"
        );
        let r = s
            .graphql_as(
                json!({"query": "{ country(code: \"JP\") { name } }"}),
                &role
                    .map(|r| vec![("X-Svc-Role", r), ("X-Svc-User-Id", "1")])
                    .unwrap_or_default(),
            )
            .await;
        assert_eq!(
            r,
            json!({"data": {"country": {"name": "Japan"}}}),
            "{role:?}"
        );
    }
}

#[tokio::test]
async fn operations_refuse_bad_definitions_unreachable_remotes_and_unknown_names() {
    let s = TestServer::blog().await;
    let geo = Geo::start().await;
    let both = json!({"type": "add_remote_schema", "args": {"name": "x", "definition": {"url": geo.url, "url_from_env": "X"}}});
    let r = s
        .fails(both, 400, "invalid-params", "$.args.definition")
        .await;
    assert_eq!(r["error"], "both `url` and `url_from_env` can't be present");
    let none = json!({"type": "add_remote_schema", "args": {"name": "x", "definition": {}}});
    let r = s
        .fails(none, 400, "invalid-params", "$.args.definition")
        .await;
    assert_eq!(r["error"], "both `url` and `url_from_env` can't be empty");
    let env = json!({"type": "add_remote_schema", "args": {"name": "x", "definition": {"url_from_env": "BASALT_TEST_NO_SUCH_URL"}}});
    let r = s
        .fails(env, 400, "invalid-params", "$.args.definition")
        .await;
    assert_eq!(
        r["error"],
        "cannot find environment variable BASALT_TEST_NO_SUCH_URL for custom resolver"
    );
    let r = s
        .fails(
            add("x", "not a url"),
            400,
            "invalid-params",
            "$.args.definition",
        )
        .await;
    assert_eq!(r["error"], "not a valid URI: not a url");

    let down = "http://127.0.0.1:9/graphql";
    let r = s
        .fails(add("x", down), 400, "remote-schema-error", "$.args")
        .await;
    assert_eq!(
        r["error"],
        format!("HTTP exception occurred while sending the request to {down}")
    );
    assert_eq!(r["internal"]["type"], "http_exception");
    geo.set(Mode::Status(502));
    let r = s
        .fails(add("x", &geo.url), 400, "remote-schema-error", "$.args")
        .await;
    assert_eq!(
        r["error"],
        format!(
            "introspection query to {} has responded with 502 status code",
            geo.url
        )
    );
    geo.set(Mode::Normal);
    assert_eq!(
        s.export().await.get("remote_schemas"),
        None,
        "nothing stored on failure"
    );

    s.ok(add("geo", &geo.url)).await;
    let r = s
        .fails(add("geo", &geo.url), 400, "already-exists", "$.args.name")
        .await;
    assert_eq!(r["error"], "remote schema with name \"geo\" already exists");
    let r = s
        .fails(
            json!({"type": "remove_remote_schema", "args": {"name": "nope"}}),
            400,
            "not-exists",
            "$.args.name",
        )
        .await;
    assert_eq!(r["error"], "no such remote schema");
    let r = s
        .fails(
            json!({"type": "reload_remote_schema", "args": {"name": "nope"}}),
            400,
            "not-exists",
            "$.args.name",
        )
        .await;
    assert_eq!(
        r["error"],
        "remote schema with name \"nope\" does not exist"
    );
    assert_eq!(
        s.export().await["remote_schemas"],
        json!([{"name": "geo", "definition": {"url": geo.url}}])
    );
    s.ok(json!({"type": "remove_remote_schema", "args": {"name": "geo"}}))
        .await;
    let r = s.gql("{ country(code: \"FR\") { name } }").await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "validation-failed",
        "{r}"
    );
}

#[tokio::test]
async fn clashes_with_tables_and_other_remotes_are_refused() {
    let s = TestServer::blog().await;
    let geo = Geo::start().await;
    s.ok(add("geo", &geo.url)).await;
    // The same service again: every root field clashes.
    let r = s
        .fails(
            add("again", &geo.url),
            400,
            "remote-schema-conflicts",
            "$.args",
        )
        .await;
    let message = r["error"].as_str().unwrap();
    assert!(
        message.starts_with("top-level nodes: [ country, countries, search, node, header, fails, addCountry ] already exist")
            && message.ends_with("HINT: Top-level nodes can't be same."),
        "{message}"
    );
    // A table whose root field would be `country` clashes with the remote.
    s.sql("CREATE TABLE country (code text PRIMARY KEY)").await;
    let r = s
        .fails(
            json!({"type": "track_table", "args": {"table": "country"}}),
            400,
            "remote-schema-conflicts",
            "$.args",
        )
        .await;
    assert!(r["error"].as_str().unwrap().contains("[ country ]"), "{r}");
    // A remote whose types differ from generated ones of the same name.
    let other = Geo::start().await;
    *other.schema.lock().unwrap() = {
        let author = Object::new("author").field(prop("x", TypeRef::named(TypeRef::STRING)));
        let query =
            Object::new("Query").field(Field::new("authors2", TypeRef::named("author"), |_| {
                FieldFuture::new(async move { Ok(None::<FieldValue>) })
            }));
        Schema::build("Query", None, None)
            .register(author)
            .register(query)
            .finish()
            .unwrap()
    };
    let r = s
        .fails(
            add("other", &other.url),
            400,
            "remote-schema-conflicts",
            "$.args",
        )
        .await;
    assert_eq!(
        r["error"],
        "types: [ author ] have mismatch with current graphql schema. HINT: Types must be same."
    );
    assert_eq!(
        s.export().await["remote_schemas"].as_array().unwrap().len(),
        1
    );
}

#[tokio::test]
async fn replace_metadata_introspects_and_reports_unreachable_remotes() {
    let geo = Geo::start().await;
    let s = TestServer::blog().await;
    let mut metadata = s.export().await;
    metadata["remote_schemas"] = json!([
        {"name": "geo", "definition": {"url": geo.url, "timeout_seconds": 5}, "comment": "countries"},
        {"name": "gone", "definition": {"url": "http://127.0.0.1:9/graphql"}}
    ]);
    let r = s
        .fails(
            json!({"type": "replace_metadata", "args": metadata.clone()}),
            400,
            "unexpected",
            "$.args",
        )
        .await;
    assert_eq!(r["error"], "cannot continue due to inconsistent metadata");
    let r = s
        .ok(json!({"type": "replace_metadata", "version": 2,
                   "args": {"allow_inconsistent_metadata": true, "metadata": metadata}}))
        .await;
    assert_eq!(r["is_consistent"], false, "{r}");
    assert_eq!(
        r["inconsistent_objects"].as_array().unwrap().len(),
        1,
        "{r}"
    );
    assert_eq!(r["inconsistent_objects"][0]["definition"]["name"], "gone");
    assert_eq!(
        s.gql("{ country(code: \"JP\") { name } }").await,
        json!({"data": {"country": {"name": "Japan"}}})
    );
    let exported = s.export().await["remote_schemas"].clone();
    assert_eq!(exported[0]["comment"], "countries");
    assert_eq!(exported[0]["definition"]["timeout_seconds"], 5);
    s.ok(json!({"type": "drop_inconsistent_metadata", "args": {}}))
        .await;
    assert_eq!(
        s.export().await["remote_schemas"].as_array().unwrap().len(),
        1
    );
}

/// Actions and remote schemas share the root types: an action named like a remote's root
/// field is refused, and so is a remote whose root field an action already has, each with
/// the spec's conflict error and the metadata left as it was.
#[tokio::test]
async fn actions_and_remote_root_fields_cannot_clash() {
    let types = json!({"type": "set_custom_types", "args": {"objects": [
        {"name": "Greeting", "fields": [{"name": "text", "type": "String"}]}]}});
    let action = |name: &str, kind: &str| {
        json!({"type": "create_action", "args": {"name": name, "definition": {
            "type": kind, "handler": "http://127.0.0.1:9/hook", "output_type": "Greeting"}}})
    };
    // The remote first: a query action `country`, a mutation action `addCountry`.
    let (s, _geo) = blog_with_geo().await;
    s.ok(types.clone()).await;
    for (name, kind) in [("country", "query"), ("addCountry", "mutation")] {
        let r = s
            .fails(action(name, kind), 400, "remote-schema-conflicts", "$.args")
            .await;
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .contains(&format!("[ {name} ]")),
            "{r}"
        );
    }
    assert!(s
        .export()
        .await
        .get("actions")
        .is_none_or(|a| a == &json!([])));
    // The action first: the remote is refused.
    let s = TestServer::blog().await;
    let geo = Geo::start().await;
    s.ok(types).await;
    s.ok(action("country", "query")).await;
    let r = s
        .fails(
            add("geo", &geo.url),
            400,
            "remote-schema-conflicts",
            "$.args",
        )
        .await;
    assert!(r["error"].as_str().unwrap().contains("[ country ]"), "{r}");
    assert!(s
        .export()
        .await
        .get("remote_schemas")
        .is_none_or(|a| a == &json!([])));
}
