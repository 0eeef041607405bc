//! Resources mapped to the metadata API's arguments, field by field, for every kind.

use super::*;

#[test]
fn resources_map_to_metadata_field_by_field() {
    let spec: TrackedTableSpec = serde_json::from_value(json!({
        "table": {"name": "article"}, "isEnum": false,
        "configuration": {"customRootFields": {"select": "articles", "selectByPk": "articleById", "selectStream": "articleFeed", "updateMany": "editArticles"}, "customColumnNames": {"author_id": "authorId"}},
        "objectRelationships": [{"name": "author", "using": {"foreignKeyConstraintOn": "author_id"}, "comment": "who"}],
        "arrayRelationships": [{"name": "comments", "using": {"manualConfiguration": {"remoteTable": {"schema": "public", "name": "comment"}, "columnMapping": {"id": "article_id"}}}}]
    }))
    .unwrap();
    let entry = spec.entry().unwrap();
    assert_eq!(
        serde_json::to_value(&entry).unwrap(),
        json!({
            "table": {"schema": "public", "name": "article"},
            "configuration": {"custom_root_fields": {"select": "articles", "select_by_pk": "articleById", "select_stream": "articleFeed", "update_many": "editArticles"}, "custom_column_names": {"author_id": "authorId"}},
            "object_relationships": [{"name": "author", "using": {"foreign_key_constraint_on": "author_id"}, "comment": "who"}],
            "array_relationships": [{"name": "comments", "using": {"manual_configuration": {"remote_table": {"schema": "public", "name": "comment"}, "column_mapping": {"id": "article_id"}}}}]
        })
    );

    // BoolExps and presets pass through byte for byte, whatever their spelling.
    let filter =
        json!({"$or": [{"author_id": {"_eq": "X-SVC-USER-ID"}}, {"status": {"$eq": "published"}}]});
    let spec: PermissionSpec = serde_json::from_value(json!({"table": {"name": "article"}, "role": "user", "operation": "update",
        "permission": {"columns": ["title"], "filter": filter, "set": {"edited_at": "now()"}, "check": null}})).unwrap();
    let (table, kind, entry) = spec.entry().unwrap();
    assert_eq!(table.name, "article");
    assert_eq!(kind, basalt::metadata::PermissionKind::Update);
    // The rules come back in the catalog's typed form (an absent update `check` is null).
    assert_eq!(
        entry.permission,
        json!({"columns": ["title"], "filter": filter, "check": null, "set": {"edited_at": "now()"}})
    );
    assert_eq!(
        serde_json::to_string(&entry.permission["filter"]).unwrap(),
        serde_json::to_string(&filter).unwrap()
    );
    let spec: PermissionSpec = serde_json::from_value(json!({"table": {"name": "article"}, "role": "user", "operation": "select", "permission": {"columns": "all", "filter": {}}})).unwrap();
    let err = spec.entry().unwrap_err();
    assert_eq!(err.path.as_str(), "$.spec.permission.columns", "{err:?}");

    // Root-field lists: `[]` stays `[]`, absent stays absent; `select_aggregate` needs
    // `allowAggregations`, as create_select_permission says.
    let select = |rules: Value| -> PermissionSpec {
        serde_json::from_value(
            json!({"table": {"schema": "hr", "name": "message"}, "role": "member",
            "operation": "select", "permission": rules}),
        )
        .unwrap()
    };
    let (_, _, entry) = select(json!({"columns": "*", "filter": {}, "queryRootFields": [],
        "subscriptionRootFields": ["select", "select_stream"]}))
    .entry()
    .unwrap();
    assert_eq!(
        entry.permission,
        json!({"columns": "*", "filter": {}, "query_root_fields": [],
            "subscription_root_fields": ["select", "select_stream"]})
    );
    let err = select(
        json!({"columns": "*", "filter": {}, "allowAggregations": false,
        "queryRootFields": ["select_aggregate"]}),
    )
    .entry()
    .unwrap_err();
    assert_eq!(err.path.as_str(), "$.spec", "{err:?}");
    assert_eq!(err.code.as_str(), "invalid-params");
    assert_eq!(
        err.message,
        "in table \"hr.message\": in permission for role \"member\": \"select_aggregate\" can only be listed when \"allow_aggregations\" is true"
    );

    let spec: ComputedFieldSpec =
        serde_json::from_value(json!({"table": {"name": "author"}, "name": "fullName",
        "definition": {"function": {"name": "author_full_name"}, "sessionArgument": "s"}}))
        .unwrap();
    let (_, cf) = spec.entry().unwrap();
    assert_eq!(
        serde_json::to_value(&cf).unwrap(),
        json!({"name": "fullName", "definition": {"function": {"schema": "public", "name": "author_full_name"}, "session_argument": "s"}})
    );

    let spec: CustomTypeSetSpec = serde_json::from_value(json!({
        "objects": [{"name": "Result", "fields": [{"name": "id", "type": "Int!"}], "relationships": [{"name": "author", "type": "object", "remoteTable": {"name": "author"}, "fieldMapping": {"id": "id"}}]}],
        "enums": [{"name": "Level", "values": [{"value": "LOW", "isDeprecated": true}]}]})).unwrap();
    let types = spec.entry().unwrap();
    assert_eq!(
        types.objects[0].relationships[0].remote_table.name,
        "author"
    );
    assert_eq!(types.enums[0].values[0].is_deprecated, Some(true));

    let spec: QueryCollectionSpec = serde_json::from_value(json!({"name": "app", "definition": {"queries": [{"name": "q", "query": "{ author { id } }"}]}})).unwrap();
    assert_eq!(spec.entry().unwrap().definition.queries.len(), 1);
    let bad: QueryCollectionSpec = serde_json::from_value(
        json!({"name": "app", "definition": {"queries": [{"name": "q", "query": "{"}]}}),
    )
    .unwrap();
    assert_eq!(bad.entry().unwrap_err().code.as_str(), "parse-failed");
    let spec: AllowListEntrySpec = serde_json::from_value(json!({"collection": "app"})).unwrap();
    assert_eq!(spec.entry().unwrap().collection.0, "app");

    // EventTrigger: flat `create_event_trigger` fields, nested the way the catalog stores them;
    // payload column lists and header names are user data, kept as written.
    let spec: EventTriggerSpec = serde_json::from_value(json!({
        "name": "article_published", "table": {"schema": "blog", "name": "article"},
        "webhookFromEnv": "ARTICLE_WEBHOOK_URL",
        "insert": {"columns": "*"},
        "update": {"columns": ["published", "Title"], "payload": ["id", "published"]},
        "delete": {"columns": "*", "payload": "*"},
        "headers": [{"name": "X-Token", "valueFromEnv": "HOOK_TOKEN"}, {"name": "X-Source", "value": "basalt"}],
        "retryConf": {"numRetries": 3, "intervalSec": 5},
        "enableManual": true
    }))
    .unwrap();
    let (table, trigger) = spec.entry().unwrap();
    assert_eq!(
        (table.schema.as_str(), table.name.as_str()),
        ("blog", "article")
    );
    assert_eq!(
        serde_json::to_value(&trigger).unwrap(),
        json!({
            "name": "article_published",
            "definition": {
                "enable_manual": true,
                "insert": {"columns": "*"},
                "update": {"columns": ["published", "Title"], "payload": ["id", "published"]},
                "delete": {"columns": "*", "payload": "*"}
            },
            "retry_conf": {"num_retries": 3, "interval_sec": 5, "timeout_sec": 60},
            "webhook_from_env": "ARTICLE_WEBHOOK_URL",
            "headers": [{"name": "X-Token", "value_from_env": "HOOK_TOKEN"}, {"name": "X-Source", "value": "basalt"}]
        })
    );
    // It is the same entry the metadata API builds from the equivalent request.
    assert_eq!(
        spec.to_json(),
        json!({"name": "article_published", "table": {"schema": "blog", "name": "article"},
            "webhook_from_env": "ARTICLE_WEBHOOK_URL",
            "insert": {"columns": "*"},
            "update": {"columns": ["published", "Title"], "payload": ["id", "published"]},
            "delete": {"columns": "*", "payload": "*"},
            "enable_manual": true,
            "retry_conf": {"num_retries": 3, "interval_sec": 5},
            "headers": [{"name": "X-Token", "value_from_env": "HOOK_TOKEN"}, {"name": "X-Source", "value": "basalt"}]})
    );
    let objects = spec.objects().unwrap();
    assert_eq!(objects.len(), 1);
    assert_eq!(objects[0].key(), "event_trigger:article_published");
    // The operation's own checks decide validity, with the path of the field.
    let invalid = [
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h", "insert": {"columns": "all"}}),
            "$.spec.insert.columns",
        ),
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h", "update": {"columns": [1]}}),
            "$.spec.update.columns",
        ),
        (
            json!({"name": "has space", "table": {"name": "a"}, "webhook": "http://h", "insert": {"columns": "*"}}),
            "$.spec.name",
        ),
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h", "insert": {"columns": "*"}, "retryConf": {"timeoutSec": 0}}),
            "$.spec.retry_conf.timeout_sec",
        ),
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h", "webhookFromEnv": "H", "insert": {"columns": "*"}}),
            "$.spec",
        ),
        (
            json!({"name": "t", "table": {"name": "a"}, "webhook": "http://h"}),
            "$.spec",
        ),
    ];
    for (spec, path) in invalid {
        let typed: EventTriggerSpec = serde_json::from_value(spec.clone()).unwrap();
        let err = typed.entry().unwrap_err();
        assert_eq!(err.code.as_str(), "parse-failed", "{spec}: {err:?}");
        assert_eq!(err.path.as_str(), path, "{spec}: {err:?}");
    }

    // RemoteSchema: the `add_remote_schema` arguments, nested as the catalog stores them;
    // secrets stay the names of environment variables.
    let spec: RemoteSchemaSpec = serde_json::from_value(json!({
        "name": "newsletter",
        "definition": {
            "urlFromEnv": "NEWSLETTER_GRAPHQL_URL",
            "headers": [{"name": "Authorization", "valueFromEnv": "NEWSLETTER_API_TOKEN"}, {"name": "X-Source", "value": "basalt"}],
            "forwardClientHeaders": true,
            "timeoutSeconds": 10
        },
        "comment": "subscribers"
    }))
    .unwrap();
    let args = json!({"name": "newsletter",
        "definition": {"url_from_env": "NEWSLETTER_GRAPHQL_URL",
            "headers": [{"name": "Authorization", "value_from_env": "NEWSLETTER_API_TOKEN"}, {"name": "X-Source", "value": "basalt"}],
            "forward_client_headers": true, "timeout_seconds": 10},
        "comment": "subscribers"});
    assert_eq!(spec.to_json(), args);
    let entry = spec.entry().unwrap();
    // The entry is what the catalog keeps, and the request the controller sends for it.
    assert_eq!(serde_json::to_value(&entry).unwrap(), args);
    let objects = spec.objects().unwrap();
    assert_eq!(objects.len(), 1);
    assert_eq!(objects[0].key(), "remote_schema:newsletter");
    assert_eq!(objects[0].canonical(), args);
    // Defaults stay absent: no forwarding, the API's timeout.
    let spec: RemoteSchemaSpec =
        serde_json::from_value(json!({"name": "geo", "definition": {"url": "http://geo/graphql"}}))
            .unwrap();
    assert_eq!(
        spec.to_json(),
        json!({"name": "geo", "definition": {"url": "http://geo/graphql", "forward_client_headers": false}})
    );
    assert_eq!(
        serde_json::to_value(spec.entry().unwrap()).unwrap(),
        json!({"name": "geo", "definition": {"url": "http://geo/graphql"}})
    );
    let invalid = [
        (
            json!({"name": "", "definition": {"url": "http://h"}}),
            "parse-failed",
            "$.spec.name",
        ),
        (
            json!({"name": "r", "definition": {"url": "http://h", "timeoutSeconds": 4294967296_i64}}),
            "parse-failed",
            "$.spec.definition.timeout_seconds",
        ),
        (
            json!({"name": "r", "definition": {"url": "http://h", "urlFromEnv": "H"}}),
            "invalid-params",
            "$.spec.definition",
        ),
        (
            json!({"name": "r", "definition": {}}),
            "invalid-params",
            "$.spec.definition",
        ),
    ];
    for (spec, code, path) in invalid {
        let typed: RemoteSchemaSpec = serde_json::from_value(spec.clone()).unwrap();
        let err = typed.entry().unwrap_err();
        assert_eq!(err.code.as_str(), code, "{spec}: {err:?}");
        assert_eq!(err.path.as_str(), path, "{spec}: {err:?}");
    }
}
