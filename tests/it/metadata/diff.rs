//! `basalt diff`: resources and metadata files compared with a running engine or its
//! database, through the real binary; nothing in the catalog changes.

use crate::controller::{applied_blog_example, NS};
use crate::harness::TestServer;
use crate::remote_schemas::remote_server::{newsletter_schema, RemoteServer};
use serde_json::{json, Value};
use std::path::Path;

/// Runs `basalt diff` with `args`; returns the exit code and stdout (stderr on failure to
/// answer).
async fn diff(args: &[&str]) -> (i32, String) {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
        .arg("diff")
        .args(args)
        .env_remove("BASALT_DATABASE_URL")
        .env_remove("BASALT_ENDPOINT")
        .env_remove("BASALT_ADMIN_SECRET")
        .output()
        .await
        .unwrap();
    let code = output.status.code().unwrap();
    let text = if code == 2 && output.stdout.is_empty() {
        String::from_utf8_lossy(&output.stderr).into_owned()
    } else {
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    (code, text)
}

fn example_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blog");
    for entry in std::fs::read_dir(example).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    dir
}

fn edit_yaml(file: &Path, edit: impl FnOnce(&mut Value)) {
    let mut value: Value = serde_yaml::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    edit(&mut value);
    std::fs::write(file, serde_yaml::to_string(&value).unwrap()).unwrap();
}

/// The catalog's resource version, from the header every `/v1/query` answer carries.
async fn version(s: &TestServer) -> String {
    let mut request = s
        .http
        .post(format!("{}/v1/query", s.base))
        .json(&json!({"type": "get_inconsistent_metadata", "args": {}}));
    if let Some(secret) = &s.admin_secret {
        request = request.header("X-Svc-Admin-Secret", secret);
    }
    let response = request.send().await.unwrap();
    response.headers()["x-basalt-resource-version"]
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn resources_in_sync_then_edited_added_and_removed() {
    let s = applied_blog_example().await;
    let server = &s.server;
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/blog");
    let before = (server.export().await, version(server).await);

    // What the controller applied: nothing to do. kustomization.yaml is not a resource.
    let (code, text) = diff(&["-f", example, "-n", NS, "--endpoint", &server.base]).await;
    assert_eq!(code, 0, "{text}");
    assert!(
        text.ends_with(
            "0 added, 0 changed, 0 removed, 0 newly inconsistent (1 other documents skipped)\n"
        ),
        "{text}"
    );

    // An edited permission, a new one, and (with --prune) a deleted one.
    let dir = example_copy();
    edit_yaml(
        &dir.path().join("permission-author-user-select.yaml"),
        |p| {
            p["spec"]["permission"]["columns"] = json!(["id", "name"]);
        },
    );
    edit_yaml(
        &dir.path().join("permission-article-user-insert.yaml"),
        |p| {
            p["metadata"]["name"] = json!("article-guest-select");
            p["spec"]["role"] = json!("guest");
            p["spec"]["operation"] = json!("select");
            p["spec"]["permission"] = json!({"columns": ["id", "title"], "filter": {}});
        },
    );
    std::fs::remove_file(dir.path().join("permission-comment-user-select.yaml")).unwrap();
    let path = dir.path().to_str().unwrap();

    let (code, text) = diff(&["-f", path, "-n", NS, "--endpoint", &server.base]).await;
    assert_eq!(code, 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1..lines.len() - 1],
        [
            format!("+ permission:public.article.guest.select    (Permission {NS}/article-guest-select)"),
            format!("~ permission:public.author.user.select [permission.columns]    (Permission {NS}/author-user-select)"),
        ],
        "{text}"
    );

    let (code, text) = diff(&[
        "-f",
        path,
        "-n",
        NS,
        "--endpoint",
        &server.base,
        "--prune",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(code, 1, "{text}");
    let report: Value = serde_json::from_str(&text).unwrap();
    let removed: Vec<(&str, &str)> = report["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["type"].as_str().unwrap(), i["resource"].as_str().unwrap()))
        .collect();
    assert_eq!(
        removed,
        [
            (
                "insert_permission",
                &*format!("Permission {NS}/article-user-insert (not in the files)")
            ),
            (
                "select_permission",
                &*format!("Permission {NS}/comment-user-select (not in the files)")
            ),
        ]
    );
    assert_eq!(
        report["changed"][0]["previous"]["permission"]["columns"],
        json!(["id", "name", "bio"])
    );
    assert_eq!(report["inconsistent_objects"], json!([]));

    // The same answer from the database directly.
    let (code, direct) = diff(&[
        "-f",
        path,
        "-n",
        NS,
        "--database-url",
        &server.db_url,
        "--prune",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(code, 1, "{direct}");
    let mut direct: Value = serde_json::from_str(&direct).unwrap();
    direct["target"] = report["target"].clone();
    assert_eq!(direct, report);

    // Nothing was written.
    assert_eq!((server.export().await, version(server).await), before);
}

#[tokio::test]
async fn event_trigger_edits_and_removal_are_previewed() {
    let s = applied_blog_example().await;
    let server = &s.server;
    let before = (server.export().await, version(server).await);
    let dir = example_copy();
    let file = dir.path().join("event-trigger-article-published.yaml");
    edit_yaml(&file, |t| {
        t["spec"]["webhook"] = json!("http://article-hooks.blog.svc:8080/v2");
        t["spec"]["insert"] = json!({"columns": "*"});
    });
    let path = dir.path().to_str().unwrap();
    let (code, text) = diff(&["-f", path, "-n", NS, "--endpoint", &server.base]).await;
    assert_eq!(code, 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1..lines.len() - 1],
        [format!(
            "~ event_trigger:article_published [configuration.definition, configuration.webhook]    (EventTrigger {NS}/article-published)"
        )],
        "{text}"
    );

    // Without its file, and with --prune, the trigger would be deleted.
    std::fs::remove_file(&file).unwrap();
    let (code, text) = diff(&[
        "-f",
        path,
        "-n",
        NS,
        "--database-url",
        &server.db_url,
        "--prune",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(code, 1, "{text}");
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["removed"].as_array().unwrap().len(), 1, "{text}");
    assert_eq!(report["removed"][0]["type"], "event_trigger");
    assert_eq!(
        report["removed"][0]["definition"]["configuration"]["name"],
        "article_published"
    );
    assert_eq!(
        report["removed"][0]["resource"],
        format!("EventTrigger {NS}/article-published (not in the files)")
    );
    assert_eq!((server.export().await, version(server).await), before);
}

/// A TrackedTable's `updateMany`: a new name is a change of the table's configuration, and a
/// name another table's root field already has leaves one of the two tables inconsistent (the
/// resulting document is checked as `replace_metadata` checks it: the first table in it keeps
/// the name).
#[tokio::test]
async fn an_update_many_name_is_previewed_and_its_clash_reported() {
    let s = applied_blog_example().await;
    let server = &s.server;
    let before = (server.export().await, version(server).await);
    let dir = example_copy();
    let file = dir.path().join("tracked-table-author.yaml");
    let path = dir.path().to_str().unwrap();
    edit_yaml(&file, |t| {
        t["spec"]["configuration"]["customRootFields"]["updateMany"] = json!("editAuthors");
    });
    let (code, text) = diff(&["-f", path, "-n", NS, "--endpoint", &server.base]).await;
    assert_eq!(code, 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1..lines.len() - 1],
        [format!(
            "~ table:public.author [configuration.custom_root_fields]    (TrackedTable {NS}/author)"
        )],
        "{text}"
    );

    // article's own `update_article_many`.
    edit_yaml(&file, |t| {
        t["spec"]["configuration"]["customRootFields"]["updateMany"] = json!("update_article_many");
    });
    let (code, text) = diff(&["-f", path, "-n", NS, "--database-url", &server.db_url]).await;
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("! inconsistent table:public.article: the root field \"update_article_many\" of table \"article\" conflicts with a root field of table \"author\""),
        "{text}"
    );
    assert_eq!((server.export().await, version(server).await), before);
}

/// A select Permission's root-field lists and a TrackedTable's `selectStream`: each edit is a
/// change of its object, and `select_aggregate` without `allowAggregations` is refused as the
/// controller refuses it.
#[tokio::test]
async fn root_field_lists_and_stream_names_are_previewed() {
    let s = applied_blog_example().await;
    let server = &s.server;
    let before = (server.export().await, version(server).await);
    let dir = example_copy();
    let path = dir.path().to_str().unwrap();
    let permission = dir.path().join("permission-article-user-select.yaml");
    edit_yaml(&permission, |p| {
        p["spec"]["permission"]["subscriptionRootFields"] = json!(["select_stream"]);
        p["spec"]["permission"]["queryRootFields"] = json!([]);
    });
    edit_yaml(&dir.path().join("tracked-table-article.yaml"), |t| {
        t["spec"]["configuration"] = json!({"customRootFields": {"selectStream": "articleFeed"}});
    });
    let (code, text) = diff(&["-f", path, "-n", NS, "--endpoint", &server.base]).await;
    assert_eq!(code, 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1..lines.len() - 1],
        [
            format!("~ permission:public.article.user.select [permission.query_root_fields, permission.subscription_root_fields]    (Permission {NS}/article-user-select)"),
            format!("~ table:public.article [configuration.custom_root_fields]    (TrackedTable {NS}/article)"),
        ],
        "{text}"
    );

    edit_yaml(&permission, |p| {
        p["spec"]["permission"]["queryRootFields"] = json!(["select", "select_aggregate"]);
    });
    let (code, text) = diff(&["-f", path, "-n", NS, "--database-url", &server.db_url]).await;
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&format!("Permission {NS}/article-user-select")),
        "{text}"
    );
    assert!(
        text.contains("in table \"article\": in permission for role \"user\": \"select_aggregate\" can only be listed when \"allow_aggregations\" is true"),
        "{text}"
    );
    assert_eq!((server.export().await, version(server).await), before);
}

/// Needs `add_remote_schema` (the metadata half of remote schemas): the blog example's
/// RemoteSchema is applied first.
#[tokio::test]
async fn remote_schema_edits_and_removal_are_previewed() {
    let s = applied_blog_example().await;
    let server = &s.server;
    let before = (server.export().await, version(server).await);
    let dir = example_copy();
    let file = dir.path().join("remote-schema-newsletter.yaml");
    edit_yaml(&file, |r| {
        r["spec"]["definition"]["timeoutSeconds"] = json!(20);
        r["spec"]["comment"] = json!("the newsletter, slower");
    });
    let path = dir.path().to_str().unwrap();
    let (code, text) = diff(&["-f", path, "-n", NS, "--endpoint", &server.base]).await;
    assert_eq!(code, 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1..lines.len() - 1],
        [format!(
            "~ remote_schema:newsletter [comment, definition.timeout_seconds]    (RemoteSchema {NS}/newsletter)"
        )],
        "{text}"
    );

    // Without its file, and with --prune, the remote schema would be removed.
    std::fs::remove_file(&file).unwrap();
    let (code, text) = diff(&[
        "-f",
        path,
        "-n",
        NS,
        "--database-url",
        &server.db_url,
        "--prune",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(code, 1, "{text}");
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["removed"].as_array().unwrap().len(), 1, "{text}");
    assert_eq!(report["removed"][0]["type"], "remote_schema");
    assert_eq!(report["removed"][0]["definition"]["name"], "newsletter");
    assert_eq!(
        report["removed"][0]["resource"],
        format!("RemoteSchema {NS}/newsletter (not in the files)")
    );
    assert_eq!((server.export().await, version(server).await), before);
}

/// A RemoteSchema file against a catalog without it: one remote schema added; against one
/// holding it from `/v1/query`: a conflict, unless the resource adopts it.
#[tokio::test]
async fn a_new_remote_schema_is_previewed() {
    let remote = RemoteServer::start(newsletter_schema()).await;
    let server = TestServer::blog().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("remote-schema.yaml");
    let manifest = json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "RemoteSchema",
        "metadata": {"name": "newsletter", "namespace": NS},
        "spec": {"name": "newsletter", "definition": {"url": remote.url, "timeoutSeconds": 10}}});
    std::fs::write(&file, serde_yaml::to_string(&manifest).unwrap()).unwrap();
    let path = file.to_str().unwrap();
    let (code, text) = diff(&["-f", path, "--endpoint", &server.base]).await;
    assert_eq!(code, 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1..lines.len() - 1],
        [format!(
            "+ remote_schema:newsletter    (RemoteSchema {NS}/newsletter)"
        )],
        "{text}"
    );

    // The same remote schema made through /v1/query.
    let mut document = server.export().await;
    document["remote_schemas"] = json!([{"name": "newsletter",
        "definition": {"url": remote.url, "timeout_seconds": 10}}]);
    server
        .ok(json!({"type": "replace_metadata", "args": document}))
        .await;
    let before = (server.export().await, version(&server).await);
    let (code, text) = diff(&["-f", path, "--database-url", &server.db_url]).await;
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("! conflict remote_schema:newsletter: exists, created through the metadata API; annotate the resource basalt.dev/adopt: \"true\" to take it over"), "{text}");
    edit_yaml(&file, |r| {
        r["metadata"]["annotations"] = json!({"basalt.dev/adopt": "true"});
    });
    let (code, text) = diff(&["-f", path, "--endpoint", &server.base]).await;
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!(
            "= adopt remote_schema:newsletter: created through the metadata API    (RemoteSchema {NS}/newsletter)"
        )),
        "{text}"
    );
    // A spec the CRD refuses is refused here too.
    edit_yaml(&file, |r| {
        r["spec"]["definition"]["urlFromEnv"] = json!("NEWSLETTER_GRAPHQL_URL");
    });
    let (code, text) = diff(&["-f", path, "--endpoint", &server.base]).await;
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("exactly one of url and urlFromEnv"), "{text}");
    assert_eq!((server.export().await, version(&server).await), before);
}

#[tokio::test]
async fn conflicts_duplicates_and_waiting_objects_exit_2() {
    let s = applied_blog_example().await;
    let server = &s.server;
    let dir = tempfile::tempdir().unwrap();
    // Another resource claiming an object the example's Permission owns.
    let claim = format!(
        "apiVersion: basalt.dev/v1alpha1\nkind: Permission\nmetadata: {{name: thief, namespace: {NS}}}\n\
         spec:\n  table: {{schema: public, name: author}}\n  role: user\n  operation: select\n  permission: {{columns: [id], filter: {{}}}}\n"
    );
    std::fs::write(dir.path().join("thief.yaml"), &claim).unwrap();
    // A permission on a table nobody tracks.
    std::fs::write(
        dir.path().join("waiting.yaml"),
        "apiVersion: basalt.dev/v1alpha1\nkind: Permission\nmetadata: {name: later}\n\
         spec:\n  table: {schema: public, name: invoice}\n  role: user\n  operation: select\n  permission: {columns: [id], filter: {}}\n",
    )
    .unwrap();
    let path = dir.path().to_str().unwrap();
    let (code, text) = diff(&["-f", path, "--database-url", &server.db_url]).await;
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&format!(
            "! conflict permission:public.author.user.select: owned by Permission {NS}/author-user-select    (Permission {NS}/thief)"
        )),
        "{text}"
    );
    assert!(
        text.contains("? waiting permission:public.invoice.user.select: table invoice is not tracked    (Permission default/later)"),
        "{text}"
    );

    // Two resources declaring one object: an error naming both.
    std::fs::write(
        dir.path().join("twin.yaml"),
        claim.replace("name: thief", "name: twin"),
    )
    .unwrap();
    let (code, text) = diff(&["-f", path, "--database-url", &server.db_url]).await;
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&format!("is also declared by Permission {NS}/thief")),
        "{text}"
    );

    // An API-created object: a conflict unless the resource adopts it.
    let plain = TestServer::blog().await;
    let exported = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["export", "--format", "crds", "--out"])
        .arg(exported.path())
        .env("BASALT_DATABASE_URL", &plain.db_url)
        .output()
        .await
        .unwrap();
    assert!(output.status.success());
    let exported_path = exported.path().to_str().unwrap();
    let (code, text) = diff(&["-f", exported_path, "--endpoint", &plain.base]).await;
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("= adopt table:public.author: created through the metadata API"),
        "{text}"
    );
    edit_yaml(&exported.path().join("trackedtable-author.yaml"), |t| {
        t["metadata"]["annotations"] = json!({});
    });
    let (code, text) = diff(&["-f", exported_path, "--endpoint", &plain.base]).await;
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("! conflict table:public.author: exists, created through the metadata API; annotate the resource basalt.dev/adopt: \"true\" to take it over"), "{text}");
}

#[tokio::test]
async fn a_metadata_file_is_a_replace_metadata_dry_run() {
    let s = crate::harness::TestServer::blog().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("metadata.json");
    let mut metadata = s.export().await;
    std::fs::write(&file, metadata.to_string()).unwrap();
    let path = file.to_str().unwrap();
    let (code, text) = diff(&["-f", path, "--database-url", &s.db_url]).await;
    assert_eq!(code, 0, "{text}");

    // Drop every permission of the first table that has some.
    let table = metadata["tables"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t.get("select_permissions").is_some())
        .unwrap();
    let dropped = table["select_permissions"].as_array().unwrap().len();
    table.as_object_mut().unwrap().remove("select_permissions");
    std::fs::write(&file, metadata.to_string()).unwrap();
    let (code, text) = diff(&["-f", path, "--endpoint", &s.base, "-o", "json"]).await;
    assert_eq!(code, 1, "{text}");
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["removed"].as_array().unwrap().len(), dropped);
    assert_eq!(report["added"], json!([]));

    // A change that would leave an object inconsistent: exit 2, naming it.
    metadata["tables"][0]["select_permissions"] =
        json!([{"role": "x", "permission": {"columns": ["no_such_column"], "filter": {}}}]);
    std::fs::write(&file, metadata.to_string()).unwrap();
    let (code, text) = diff(&["-f", path, "--endpoint", &s.base]).await;
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("! inconsistent permission:"), "{text}");
    assert!(text.contains("no_such_column"), "{text}");

    // A document the catalog refuses: exit 2 with its error.
    metadata["tables"][0]["table"] = json!(5);
    std::fs::write(&file, metadata.to_string()).unwrap();
    let (code, text) = diff(&["-f", path, "--endpoint", &s.base]).await;
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("refused: "), "{text}");
    assert!(
        text.contains("(parse-failed at $.args.metadata.tables[0].table)"),
        "{text}"
    );

    // Nothing to compare with: exit 2.
    let (code, text) = diff(&["-f", path]).await;
    assert_eq!(code, 2);
    assert!(text.contains("--endpoint"), "{text}");
}

/// The blog example's Action: a new timeout and one more role allowed are a change of the
/// action and a new permission; without its file (and with `--prune`) both would go.
#[tokio::test]
async fn action_edits_and_removal_are_previewed() {
    let s = applied_blog_example().await;
    let server = &s.server;
    let before = (server.export().await, version(server).await);
    let dir = example_copy();
    let file = dir.path().join("action-archive-article.yaml");
    edit_yaml(&file, |a| {
        a["spec"]["definition"]["timeout"] = json!(20);
        a["spec"]["permissions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "editor"}));
    });
    let path = dir.path().to_str().unwrap();
    let (code, text) = diff(&["-f", path, "-n", NS, "--endpoint", &server.base]).await;
    assert_eq!(code, 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1..lines.len() - 1],
        [
            format!("+ action_permission:archiveArticle.editor    (Action {NS}/archive-article)"),
            format!(
                "~ action:archiveArticle [definition.timeout]    (Action {NS}/archive-article)"
            ),
        ],
        "{text}"
    );

    // Without its file, and with --prune, the action and its permission would be removed.
    std::fs::remove_file(&file).unwrap();
    let (code, text) = diff(&[
        "-f",
        path,
        "-n",
        NS,
        "--database-url",
        &server.db_url,
        "--prune",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(code, 1, "{text}");
    let report: Value = serde_json::from_str(&text).unwrap();
    let removed: Vec<(&str, &str)> = report["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["type"].as_str().unwrap(), i["resource"].as_str().unwrap()))
        .collect();
    let resource = format!("Action {NS}/archive-article (not in the files)");
    assert_eq!(
        removed,
        [
            ("action", resource.as_str()),
            ("action_permission", resource.as_str())
        ],
        "{text}"
    );
    assert_eq!(report["removed"][0]["definition"]["name"], "archiveArticle");
    assert_eq!(
        report["removed"][1]["definition"],
        json!({"action": "archiveArticle", "role": "user", "comment": "authors archive their own articles"})
    );
    assert_eq!((server.export().await, version(server).await), before);
}

/// An Action file against a catalog without its types: added, but inconsistent (exit 2);
/// with its CustomTypeSet beside it, a clean addition. Against an action made through
/// `/v1/query`: a conflict unless the resource adopts it.
#[tokio::test]
async fn a_new_action_is_previewed_with_its_types() {
    let server = TestServer::blog().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("action.yaml");
    let manifest = json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "Action",
        "metadata": {"name": "archive-article", "namespace": NS},
        "spec": {"name": "archiveArticle", "definition": {"outputType": "ArchiveResult",
            "arguments": [{"name": "id", "type": "Int!"}], "handler": "http://127.0.0.1:9/archive"},
            "permissions": [{"role": "user"}]}});
    std::fs::write(&file, serde_yaml::to_string(&manifest).unwrap()).unwrap();
    let path = dir.path().to_str().unwrap();
    let (code, text) = diff(&["-f", path, "--endpoint", &server.base]).await;
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&format!(
            "+ action:archiveArticle    (Action {NS}/archive-article)"
        )) && text.contains(&format!(
            "+ action_permission:archiveArticle.user    (Action {NS}/archive-article)"
        )),
        "{text}"
    );
    assert!(
        text.contains("! inconsistent action:archiveArticle: the type: \"ArchiveResult\" is not an object type defined in custom types"),
        "{text}"
    );

    let types = json!({"apiVersion": "basalt.dev/v1alpha1", "kind": "CustomTypeSet",
        "metadata": {"name": "archive-types", "namespace": NS},
        "spec": {"objects": [{"name": "ArchiveResult", "fields": [{"name": "article_id", "type": "Int!"}]}]}});
    std::fs::write(
        dir.path().join("types.yaml"),
        serde_yaml::to_string(&types).unwrap(),
    )
    .unwrap();
    let (code, text) = diff(&["-f", path, "--endpoint", &server.base, "-o", "json"]).await;
    assert_eq!(code, 1, "{text}");
    let report: Value = serde_json::from_str(&text).unwrap();
    let added: Vec<&str> = report["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        added,
        ["action", "action_permission", "custom_type"],
        "{text}"
    );
    assert_eq!(report["inconsistent_objects"], json!([]));

    // The same action and types made through /v1/query.
    server
        .ok(json!({"type": "bulk", "args": [
            {"type": "set_custom_types", "args": {"objects": [{"name": "ArchiveResult",
                "fields": [{"name": "article_id", "type": "Int!"}]}]}},
            {"type": "create_action", "args": {"name": "archiveArticle", "definition": {
                "output_type": "ArchiveResult", "arguments": [{"name": "id", "type": "Int!"}],
                "handler": "http://127.0.0.1:9/archive"}}},
            {"type": "create_action_permission", "args": {"action": "archiveArticle", "role": "user"}}]}))
        .await;
    let before = (server.export().await, version(&server).await);
    std::fs::remove_file(dir.path().join("types.yaml")).unwrap();
    let (code, text) = diff(&["-f", path, "--database-url", &server.db_url]).await;
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("! conflict action:archiveArticle: exists, created through the metadata API; annotate the resource basalt.dev/adopt: \"true\" to take it over"), "{text}");
    edit_yaml(&file, |a| {
        a["metadata"]["annotations"] = json!({"basalt.dev/adopt": "true"});
    });
    let (code, text) = diff(&["-f", path, "--endpoint", &server.base]).await;
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!(
            "= adopt action:archiveArticle: created through the metadata API    (Action {NS}/archive-article)"
        )),
        "{text}"
    );
    // A spec the CRD refuses is refused here too.
    edit_yaml(&file, |a| {
        a["spec"]["definition"]["type"] = json!("query");
        a["spec"]["definition"]["kind"] = json!("asynchronous");
    });
    let (code, text) = diff(&["-f", path, "--endpoint", &server.base]).await;
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("kind is for mutations only"), "{text}");
    assert_eq!((server.export().await, version(&server).await), before);
}

/// The blog example's InheritedRole and ApiLimitPolicy: a changed parent list and a changed
/// limit are changes of their objects; a second ApiLimitPolicy is a conflict naming the owner
/// (which keeps the limits even though the newcomer's name sorts first); without their files
/// (and with `--prune`) both objects would go.
#[tokio::test]
async fn inherited_role_and_api_limit_edits_are_previewed() {
    let s = applied_blog_example().await;
    let server = &s.server;
    let before = (server.export().await, version(server).await);
    let dir = example_copy();
    edit_yaml(&dir.path().join("inherited-role-staff.yaml"), |r| {
        r["spec"]["roleSet"] = json!(["user"]);
    });
    edit_yaml(&dir.path().join("api-limit-policy.yaml"), |p| {
        p["spec"]["depthLimit"]["global"] = json!(4);
    });
    let path = dir.path().to_str().unwrap();
    let (code, text) = diff(&["-f", path, "-n", NS, "--endpoint", &server.base]).await;
    assert_eq!(code, 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1..lines.len() - 1],
        [
            format!("~ api_limits [depth_limit.global]    (ApiLimitPolicy {NS}/api-limits)"),
            format!("~ inherited_role:staff [role_set]    (InheritedRole {NS}/staff)"),
        ],
        "{text}"
    );

    std::fs::write(
        dir.path().join("a-strict.yaml"),
        "apiVersion: basalt.dev/v1alpha1\nkind: ApiLimitPolicy\nmetadata: {name: a-strict}\n\
         spec:\n  depthLimit: {global: 2}\n",
    )
    .unwrap();
    let (code, text) = diff(&["-f", path, "-n", NS, "--endpoint", &server.base]).await;
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&format!(
            "! conflict api_limits: api_limits is owned by ApiLimitPolicy {NS}/api-limits    (ApiLimitPolicy {NS}/a-strict)"
        )),
        "{text}"
    );
    assert!(text.contains("~ api_limits [depth_limit.global]"), "{text}");

    for file in [
        "a-strict.yaml",
        "inherited-role-staff.yaml",
        "api-limit-policy.yaml",
    ] {
        std::fs::remove_file(dir.path().join(file)).unwrap();
    }
    let (code, text) = diff(&[
        "-f",
        path,
        "-n",
        NS,
        "--endpoint",
        &server.base,
        "--prune",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(code, 1, "{text}");
    let report: Value = serde_json::from_str(&text).unwrap();
    let removed: Vec<(&str, &str)> = report["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["type"].as_str().unwrap(),
                r["resource"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let staff = format!("InheritedRole {NS}/staff (not in the files)");
    let limits = format!("ApiLimitPolicy {NS}/api-limits (not in the files)");
    assert_eq!(
        removed,
        [
            ("api_limits", limits.as_str()),
            ("inherited_role", staff.as_str())
        ],
        "{text}"
    );
    assert_eq!((server.export().await, version(server).await), before);
}
