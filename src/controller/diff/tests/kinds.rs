//! The plan for table configuration, actions, query collections, inherited roles and API
//! limits, and the ownership index plans read.

use super::*;

const TABLE: &str = "table:public.article";

/// A catalog with table article whose `update_many` root field is called `name`.
fn with_update_many(name: &str) -> Metadata {
    metadata(
        json!({"version": 2, "tables": [{"table": {"schema": "public", "name": "article"},
        "configuration": {"custom_root_fields": {"select": "posts", "update_many": name},
            "custom_column_names": {}}}]}),
    )
}

/// A table's configuration (its `update_many` name here) is set in place, whether the spec
/// changed, the catalog was edited behind the resource and is healed, or an unmanaged table is
/// adopted with another configuration.
#[test]
fn table_configuration_is_set_in_place() {
    let old = with_update_many("editPosts");
    let want = object(&with_update_many("editArticles"), TABLE);
    let fields = || vec!["configuration.custom_root_fields".to_owned()];
    let set = json!({"type": "set_table_custom_fields", "version": 2, "args": {
        "table": {"schema": "public", "name": "article"},
        "custom_root_fields": {"select": "posts", "update_many": "editArticles"},
        "custom_column_names": {}}});

    let update = plan_for(
        std::slice::from_ref(&want),
        &old,
        &[row(&object(&old, TABLE), "me")],
        Policy::default(),
    );
    assert_eq!(
        update.steps,
        vec![(TABLE.to_owned(), Step::Update(fields()))]
    );
    assert_eq!(update.ops.len(), 1);
    assert_eq!(update.ops[0].request, set);

    let rows = [row(&want, "me")];
    let report = plan_for(std::slice::from_ref(&want), &old, &rows, Policy::default());
    assert_eq!(
        report.steps,
        vec![(TABLE.to_owned(), Step::Drift(DriftKind::Modified, fields()))]
    );
    assert!(report.is_noop());
    let heal = plan_for(
        std::slice::from_ref(&want),
        &old,
        &rows,
        Policy {
            self_heal: true,
            ..Policy::default()
        },
    );
    assert_eq!(
        heal.steps,
        vec![(TABLE.to_owned(), Step::Heal(DriftKind::Modified, fields()))]
    );
    assert_eq!(heal.ops.len(), 1);
    assert_eq!(heal.ops[0].request, set);

    let adopt = plan_for(
        std::slice::from_ref(&want),
        &old,
        &[],
        Policy {
            adopt: true,
            ..Policy::default()
        },
    );
    assert_eq!(adopt.steps, vec![(TABLE.to_owned(), Step::Adopt)]);
    assert_eq!(adopt.ops.len(), 1);
    assert_eq!(adopt.ops[0].request, set);
}

/// A catalog with action `archiveArticle` (handler `handler`) and the given roles' permissions.
fn with_action(handler: &str, roles: &[(&str, Option<&str>)]) -> Metadata {
    let permissions: Vec<Value> = roles
        .iter()
        .map(|(role, comment)| json!({"role": role, "comment": comment}))
        .collect();
    metadata(json!({"version": 2, "tables": [],
        "actions": [{"name": "archiveArticle", "comment": "soft delete",
            "definition": {"handler": handler, "output_type": "ArchiveResult",
                "arguments": [{"name": "id", "type": "Int!"}]},
            "permissions": permissions}]}))
}

const ACTION: &str = "action:archiveArticle";

fn declared(m: &Metadata) -> Vec<Object> {
    catalog_objects(m)
        .into_iter()
        .filter(|(k, _)| k.starts_with("action"))
        .map(|(_, o)| o)
        .collect()
}

#[test]
fn actions_are_created_updated_in_place_and_dropped_with_their_permissions() {
    let editor = "action_permission:archiveArticle.editor";
    let user = "action_permission:archiveArticle.user";
    let old = with_action("http://a/archive", &[("editor", None), ("user", None)]);
    let want = declared(&with_action(
        "http://b/archive",
        &[("editor", Some("desk")), ("guest", None)],
    ));
    let bare = metadata(json!({"version": 2, "tables": []}));

    // Created: the action, then one create_action_permission per role.
    let created = plan_for(&want, &bare, &[], Policy::default());
    assert_eq!(
        types(&created),
        vec![
            "create_action",
            "create_action_permission",
            "create_action_permission"
        ]
    );
    assert_eq!(
        created.ops[0].request["args"],
        json!({"name": "archiveArticle", "comment": "soft delete",
            "definition": {"handler": "http://b/archive", "output_type": "ArchiveResult",
                "arguments": [{"name": "id", "type": "Int!"}], "type": "mutation"}}),
        "the action's own settings; permissions are requests of their own"
    );
    assert_eq!(
        created.ops[1].request["args"],
        json!({"action": "archiveArticle", "role": "editor", "comment": "desk"})
    );
    assert_eq!(created.ownership.upsert.len(), 3);

    // A new handler, a permission whose comment changed, one removed and one added:
    // update_action keeps the permissions, which are dropped and created one by one.
    let rows: Vec<Managed> = declared(&old).iter().map(|o| row(o, "me")).collect();
    let update = plan_for(&want, &old, &rows, Policy::default());
    assert_eq!(
        update.steps,
        vec![
            (user.to_owned(), Step::Delete),
            (
                ACTION.to_owned(),
                Step::Update(vec!["definition.handler".into()])
            ),
            (editor.to_owned(), Step::Update(vec!["comment".into()])),
            (
                "action_permission:archiveArticle.guest".to_owned(),
                Step::Create
            ),
        ]
    );
    assert_eq!(
        types(&update),
        vec![
            "drop_action_permission",
            "update_action",
            "drop_action_permission",
            "create_action_permission",
            "create_action_permission",
        ]
    );
    assert_eq!(
        update.ops[1].request["args"]["definition"]["handler"],
        "http://b/archive"
    );
    assert_eq!(update.ownership.remove, vec![user]);

    // Changed through /v1/query behind the resource's back: drift on the object that changed.
    let current = with_action(
        "http://a/archive",
        &[("editor", Some("desk")), ("guest", None)],
    );
    let rows: Vec<Managed> = want.iter().map(|o| row(o, "me")).collect();
    let drift = plan_for(&want, &current, &rows, Policy::default());
    assert!(drift.is_noop());
    assert_eq!(
        drift.steps[0],
        (
            ACTION.to_owned(),
            Step::Drift(DriftKind::Modified, vec!["definition.handler".into()])
        )
    );
    assert!(drift.steps[1..].iter().all(|(_, s)| *s == Step::Noop));
    let missing = with_action("http://b/archive", &[("guest", None)]);
    let heal = plan_for(
        &want,
        &missing,
        &rows,
        Policy {
            self_heal: true,
            ..Policy::default()
        },
    );
    assert_eq!(
        heal.steps[1],
        (editor.to_owned(), Step::Heal(DriftKind::Missing, vec![]))
    );
    assert_eq!(types(&heal), vec!["create_action_permission"]);

    // Created through /v1/query: a conflict until adopted; identical, adoption writes only
    // ownership.
    let theirs = plan_for(&want, &current, &[], Policy::default());
    assert_eq!(theirs.steps[0], (ACTION.to_owned(), Step::Conflict(None)));
    let adopted = plan_for(
        &want,
        &current,
        &[],
        Policy {
            adopt: true,
            ..Policy::default()
        },
    );
    assert!(adopted.steps.iter().all(|(_, s)| *s == Step::Adopt));
    assert_eq!(types(&adopted), vec!["update_action"]);

    // Deleted: permissions first, then the action (clear_data left to its default).
    let m = with_action(
        "http://b/archive",
        &[("editor", Some("desk")), ("guest", None)],
    );
    let removal = Removal {
        orphan: false,
        cascade: false,
        tables: false,
    };
    let gone = cleanup(&owner("me"), &m, &rows, removal);
    assert_eq!(
        types(&gone),
        vec![
            "drop_action_permission",
            "drop_action_permission",
            "drop_action"
        ]
    );
    assert_eq!(
        gone.ops[2].request["args"],
        json!({"name": "archiveArticle"})
    );
    assert_eq!(gone.ownership.remove.len(), 3);
}

/// A collection with these (name, query) pairs, in order.
fn collection(queries: &[(&str, &str)]) -> Metadata {
    let queries: Vec<Value> = queries
        .iter()
        .map(|(n, q)| json!({"name": n, "query": q}))
        .collect();
    metadata(json!({"version": 2, "tables": [],
        "query_collections": [{"name": "app", "definition": {"queries": queries}}]}))
}

#[test]
fn collection_edits_end_in_the_resources_order() {
    type Queries<'a> = &'a [(&'a str, &'a str)];
    let cases: [(Queries, Queries); 4] = [
        // Reordered.
        (
            &[("a", "{ a }"), ("b", "{ b }"), ("c", "{ c }")],
            &[("a", "{ a }"), ("c", "{ c }"), ("b", "{ b }")],
        ),
        // A query changed in the middle.
        (
            &[("a", "{ a }"), ("b", "{ b }"), ("c", "{ c }")],
            &[("a", "{ a }"), ("b", "{ bb }"), ("c", "{ c }")],
        ),
        // One added first, one removed.
        (
            &[("a", "{ a }"), ("b", "{ b }")],
            &[("z", "{ z }"), ("a", "{ a }")],
        ),
        // Appended only: nothing dropped.
        (&[("a", "{ a }")], &[("a", "{ a }"), ("b", "{ b }")]),
    ];
    for (before, after) in cases {
        let current = collection(before);
        let wanted = collection(after);
        let key = "query_collection:app";
        let me = object(&wanted, key);
        let plan = plan_for(
            std::slice::from_ref(&me),
            &current,
            &[row(&object(&current, key), "me")],
            Policy::default(),
        );
        // Run the plan's requests through the metadata API's own parser and operations.
        let mut m = current.clone();
        let db = crate::db_model::DbModel::default();
        let remotes = crate::resolve::remote::Remotes::default();
        for planned in &plan.ops {
            let limits = crate::ops::Limits {
                max_batch_size: 100,
            };
            let crate::ops::Op::Metadata(op) = crate::ops::Op::parse(&planned.request, limits)
                .unwrap_or_else(|e| panic!("{}: {e}", planned.request))
            else {
                panic!("not a metadata operation: {}", planned.request);
            };
            let ctx = crate::ops::Context {
                db: &db,
                remotes: &remotes,
                resolved: None,
            };
            m = crate::ops::apply(&m, &op, ctx).unwrap().metadata;
        }
        assert_eq!(
            m.query_collections,
            wanted.query_collections,
            "{before:?} → {after:?}: {:?}",
            types(&plan)
        );
        if before.len() < after.len() && after.starts_with(before) {
            assert!(
                !types(&plan).contains(&"drop_query_from_collection".to_owned()),
                "appending drops nothing"
            );
        }
        // Applied, the same resource plans nothing: no drift, no endless self-heal.
        let again = plan_for(
            std::slice::from_ref(&me),
            &m,
            &[row(&object(&m, key), "me")],
            Policy::default(),
        );
        assert!(again.ops.is_empty(), "{:?}", types(&again));
    }
}

/// The index a view plans against finds exactly what a walk over every row would: each row by
/// key, and an owner's rows (its uid's, and orphaned rows left under its kind/namespace/name)
/// in key order.
#[test]
fn ownership_index_agrees_with_walking_every_row() {
    let mut rows = Vec::new();
    for i in 0..60 {
        let uid = format!("u{}", i % 7);
        let mut r = Managed {
            key: format!("permission:public.t{:02}.user.select", (i * 37) % 60),
            owner: owner(&uid),
            generation: 1,
            desired: json!({}),
            desired_hash: String::new(),
            applied_version: 1,
            orphaned: i % 5 == 0,
        };
        // Orphans of a deleted resource that shared the name of `u3`'s resource.
        if i % 10 == 0 {
            r.owner.uid = format!("gone{i}");
            r.owner.name = owner("u3").name;
        }
        rows.push(r);
    }
    let index = Ownership::new(rows.clone());
    for r in &rows {
        assert_eq!(index.get(&r.key).map(|f| &f.owner.uid), Some(&r.owner.uid));
    }
    assert!(index.get("permission:public.nope.user.select").is_none());
    for uid in ["u0", "u3", "u6", "nobody"] {
        let who = owner(uid);
        let mut walked: Vec<&Managed> = rows.iter().filter(|r| owned_by(r, &who)).collect();
        walked.sort_by(|a, b| a.key.cmp(&b.key));
        let found = index.owned(&who);
        assert_eq!(
            found.iter().map(|r| &r.key).collect::<Vec<_>>(),
            walked.iter().map(|r| &r.key).collect::<Vec<_>>(),
            "{uid}"
        );
    }
    // u3's own rows and the orphans under its name.
    assert!(index
        .owned(&owner("u3"))
        .iter()
        .any(|r| r.owner.uid != "u3"));
    assert!(index.owned(&owner("nobody")).is_empty());
}

/// An inherited role and the API limits are replaced in place by the operations that create
/// them; dropped with their own drop operations.
#[test]
fn inherited_roles_and_api_limits_are_replaced_in_place() {
    let with = |parents: Value, depth: u32| {
        metadata(json!({"version": 2, "tables": [],
            "api_limits": {"depth_limit": {"global": depth}},
            "inherited_roles": [{"role_name": "member", "role_set": parents}]}))
    };
    let old = with(json!(["user"]), 5);
    let new = with(json!(["user", "guest"]), 3);
    let want = vec![
        object(&new, "inherited_role:member"),
        object(&new, "api_limits"),
    ];
    let rows = [
        row(&object(&old, "inherited_role:member"), "me"),
        row(&object(&old, "api_limits"), "me"),
    ];
    let updated = plan_for(&want, &old, &rows, Policy::default());
    assert_eq!(
        types(&updated),
        vec!["add_inherited_role", "set_api_limits"]
    );
    assert_eq!(
        updated.ops[0].request["args"],
        json!({"role_name": "member", "role_set": ["user", "guest"]})
    );
    assert_eq!(
        updated.ops[1].request["args"],
        json!({"disabled": false, "depth_limit": {"global": 3, "per_role": {}}})
    );
    let owned = [
        row(&object(&new, "inherited_role:member"), "me"),
        row(&object(&new, "api_limits"), "me"),
    ];
    let gone = cleanup(&owner("me"), &new, &owned, removal());
    assert_eq!(
        types(&gone),
        vec!["remove_api_limits", "drop_inherited_role"]
    );
    assert_eq!(gone.ops[1].request["args"], json!({"role_name": "member"}));
}

/// A policy declaring no limits is in sync with a catalog that stores none (it holds no
/// `api_limits` object then), so it neither drifts nor re-applies.
#[test]
fn no_limits_are_in_sync_with_a_catalog_without_limits() {
    let bare = metadata(json!({"version": 2, "tables": []}));
    let none = Object::ApiLimits(Box::default());
    let created = plan_for(std::slice::from_ref(&none), &bare, &[], Policy::default());
    assert_eq!(created.steps, vec![("api_limits".to_owned(), Step::Create)]);
    assert_eq!(types(&created), vec!["set_api_limits"]);
    let again = plan_for(
        std::slice::from_ref(&none),
        &bare,
        &[row(&none, "me")],
        Policy::default(),
    );
    assert_eq!(again.steps, vec![("api_limits".to_owned(), Step::Noop)]);
    assert!(again.is_noop());
    let mut full = row(&none, "me");
    full.desired = none.canonical();
    assert_eq!(
        crate::metadata::objects::drift(&[full], &bare),
        Vec::new(),
        "the engine reports no drift either"
    );
    // Limits set through /v1/query behind its back are drift.
    let limited = metadata(json!({"version": 2, "tables": [],
        "api_limits": {"node_limit": {"global": 9}}}));
    let drifted = plan_for(
        std::slice::from_ref(&none),
        &limited,
        &[row(&none, "me")],
        Policy::default(),
    );
    assert!(matches!(
        drifted.steps[0].1,
        Step::Drift(DriftKind::Modified, _)
    ));
}

/// A row whose owner is gone is taken over only when the plan is told to (a singleton's turn);
/// otherwise it stays the other resource's.
#[test]
fn orphaned_rows_are_taken_over_only_on_request() {
    let m = metadata(json!({"version": 2, "tables": [],
        "api_limits": {"depth_limit": {"global": 4}}}));
    let limits = object(&m, "api_limits");
    let mut theirs = row(&limits, "gone");
    theirs.orphaned = true;
    let held = plan_for(
        std::slice::from_ref(&limits),
        &m,
        std::slice::from_ref(&theirs),
        Policy::default(),
    );
    assert_eq!(held.steps[0].1, Step::Conflict(Some(owner("gone"))));
    let taken = plan_for(
        std::slice::from_ref(&limits),
        &m,
        std::slice::from_ref(&theirs),
        Policy {
            take_orphaned: true,
            ..Policy::default()
        },
    );
    assert_eq!(taken.steps[0].1, Step::Noop);
    assert!(taken.ops.is_empty(), "in sync: ownership only");
    assert_eq!(taken.ownership.upsert[0].owner.uid, "me");
    // A live owner is never taken over.
    theirs.orphaned = false;
    let live = plan_for(
        std::slice::from_ref(&limits),
        &m,
        &[theirs],
        Policy {
            take_orphaned: true,
            ..Policy::default()
        },
    );
    assert_eq!(live.steps[0].1, Step::Conflict(Some(owner("gone"))));
}
