//! Tracked functions: created with their grants, a configuration set in place, a comment
//! tracked again with the grants it holds, and dropped grants first.

use super::*;

/// A catalog tracking `search_articles` with `configuration`, `comment` and grants to `roles`.
fn with_function(configuration: Value, comment: Option<&str>, roles: &[&str]) -> Metadata {
    let permissions: Vec<Value> = roles.iter().map(|r| json!({"role": r})).collect();
    metadata(json!({"version": 2, "tables": [],
        "functions": [{"function": {"schema": "public", "name": "search_articles"},
            "configuration": configuration, "comment": comment, "permissions": permissions}]}))
}

const FUNCTION: &str = "function:public.search_articles";

fn declared(m: &Metadata) -> Vec<Object> {
    catalog_objects(m)
        .into_iter()
        .filter(|(k, _)| k.starts_with("function"))
        .map(|(_, o)| o)
        .collect()
}

#[test]
fn functions_are_tracked_customized_retracked_and_untracked_with_their_grants() {
    let bare = metadata(json!({"version": 2, "tables": []}));
    let want = declared(&with_function(
        json!({"custom_name": "find"}),
        None,
        &["user"],
    ));
    let created = plan_for(&want, &bare, &[], Policy::default());
    assert_eq!(
        types(&created),
        vec!["track_function", "create_function_permission"]
    );
    assert_eq!(
        created.ops[0].request,
        json!({"type": "track_function", "version": 2, "args": {
            "function": {"schema": "public", "name": "search_articles"},
            "configuration": {"custom_name": "find"}}})
    );
    assert_eq!(
        created.ops[1].request["args"],
        json!({"function": {"schema": "public", "name": "search_articles"}, "role": "user"})
    );

    // Only the configuration changed: set in place, whole.
    let old = with_function(json!({}), None, &["user"]);
    let rows: Vec<Managed> = declared(&old).iter().map(|o| row(o, "me")).collect();
    let update = plan_for(&want, &old, &rows, Policy::default());
    assert_eq!(types(&update), vec!["set_function_customization"]);
    assert_eq!(
        update.ops[0].request["args"],
        json!({"function": {"schema": "public", "name": "search_articles"},
            "configuration": {"custom_name": "find"}})
    );

    // The comment changed: untracked and tracked again, the grant it holds put back.
    let commented = declared(&with_function(json!({}), Some("search"), &["user"]));
    let retrack = plan_for(&commented, &old, &rows, Policy::default());
    assert_eq!(
        types(&retrack),
        vec![
            "untrack_function",
            "track_function",
            "create_function_permission"
        ]
    );
    assert_eq!(retrack.ops[1].request["args"]["comment"], "search");
    assert_eq!(
        retrack.ops[2].key, "function_permission:public.search_articles.user",
        "the grant is created again under its own key, so it may wait"
    );

    // The comment changed and a grant was removed: only the declared grants come back.
    let two = with_function(json!({}), None, &["user", "editor"]);
    let two_rows: Vec<Managed> = declared(&two).iter().map(|o| row(o, "me")).collect();
    let fewer = plan_for(&commented, &two, &two_rows, Policy::default());
    assert_eq!(
        types(&fewer),
        vec![
            "drop_function_permission",
            "untrack_function",
            "track_function",
            "create_function_permission"
        ]
    );
    assert_eq!(fewer.ops[0].request["args"]["role"], "editor");
    assert_eq!(fewer.ops[3].request["args"]["role"], "user");

    // Removed: the grant first, then the function.
    let cleanup = cleanup(&owner("me"), &old, &rows, removal());
    assert_eq!(
        types(&cleanup),
        vec!["drop_function_permission", "untrack_function"]
    );
    assert_eq!(
        cleanup
            .steps
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>(),
        vec!["function_permission:public.search_articles.user", FUNCTION]
    );
}
