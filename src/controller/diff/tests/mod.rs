//! The pure plan: what each resource change becomes, in order. Actions, collections and the
//! ownership index are in `kinds.rs`, tracked functions in `functions.rs`.

mod cron;
mod functions;
mod kinds;

use super::*;
use crate::metadata::objects::{catalog_objects, hash};

fn owner(uid: &str) -> Owner {
    Owner {
        api_version: "basalt.dev/v1alpha1".into(),
        kind: "Permission".into(),
        namespace: "shop".into(),
        name: format!("res-{uid}"),
        uid: uid.into(),
    }
}

fn metadata(v: Value) -> Metadata {
    serde_json::from_value(v).unwrap()
}

/// A catalog with table article and a select permission for `user` with `filter`.
fn catalog(filter: Value, comment: Option<&str>) -> Metadata {
    metadata(
        json!({"version": 2, "tables": [{"table": {"schema": "public", "name": "article"},
        "object_relationships": [{"name": "author", "using": {"foreign_key_constraint_on": "author_id"}}],
        "select_permissions": [{"role": "user", "permission": {"columns": "*", "filter": filter}, "comment": comment}]}],
        "custom_types": {"scalars": [{"name": "Unowned"}]}}),
    )
}

fn object(m: &Metadata, key: &str) -> Object {
    catalog_objects(m)[key].clone()
}

fn row(o: &Object, uid: &str) -> Managed {
    Managed {
        key: o.key(),
        owner: owner(uid),
        generation: 1,
        // As `managed::load_for_plans` reads rows: a plan compares the hash only.
        desired: serde_json::Value::Null,
        desired_hash: hash(&o.canonical()),
        applied_version: 1,
        orphaned: false,
    }
}

/// A removal that drops everything the owner has, tables included, without cascade.
fn removal() -> Removal {
    Removal {
        orphan: false,
        cascade: false,
        tables: true,
    }
}

const PERM: &str = "permission:public.article.user.select";

fn plan_for(desired: &[Object], m: &Metadata, rows: &[Managed], policy: Policy) -> Plan {
    let me = owner("me");
    plan(
        &Resource {
            owner: &me,
            generation: 2,
            desired,
        },
        m,
        rows,
        policy,
    )
}

fn types(plan: &Plan) -> Vec<String> {
    plan.ops
        .iter()
        .map(|o| o.request["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn create_noop_update_and_comment_only_update() {
    let want = object(&catalog(json!({"id": {"_eq": 1}}), None), PERM);
    let empty = metadata(
        json!({"version": 2, "tables": [{"table": {"schema": "public", "name": "article"}}]}),
    );
    let created = plan_for(std::slice::from_ref(&want), &empty, &[], Policy::default());
    assert_eq!(created.steps, vec![(PERM.to_owned(), Step::Create)]);
    assert_eq!(types(&created), vec!["create_select_permission"]);
    assert_eq!(created.ownership.upsert.len(), 1);
    assert_eq!(created.ownership.upsert[0].generation, 2);

    let same = catalog(json!({"id": {"_eq": 1}}), None);
    let noop = plan_for(
        std::slice::from_ref(&want),
        &same,
        &[row(&want, "me")],
        Policy::default(),
    );
    assert_eq!(noop.steps, vec![(PERM.to_owned(), Step::Noop)]);
    assert!(noop.is_noop(), "in sync: nothing to write");

    // The spec changed (the row holds the old desired definition).
    let old = object(&catalog(json!({}), None), PERM);
    let stale = catalog(json!({}), None);
    let update = plan_for(
        std::slice::from_ref(&want),
        &stale,
        &[row(&old, "me")],
        Policy::default(),
    );
    assert_eq!(
        update.steps,
        vec![(
            PERM.to_owned(),
            Step::Update(vec!["permission.filter".into()])
        )]
    );
    assert_eq!(
        types(&update),
        vec!["drop_select_permission", "create_select_permission"]
    );

    let commented = object(&catalog(json!({"id": {"_eq": 1}}), Some("why")), PERM);
    let comment = plan_for(
        std::slice::from_ref(&commented),
        &same,
        &[row(&want, "me")],
        Policy::default(),
    );
    assert_eq!(types(&comment), vec!["set_permission_comment"]);

    let rel = "relationship:public.article.author";
    let mut noted = object(&same, rel);
    if let Object::ObjectRelationship(_, r) = &mut noted {
        r.comment = Some("the writer".into());
    }
    let old = object(&same, rel);
    let renoted = plan_for(
        std::slice::from_ref(&noted),
        &same,
        &[row(&old, "me")],
        Policy::default(),
    );
    assert_eq!(types(&renoted), vec!["set_relationship_comment"]);
    assert_eq!(renoted.ops[0].request["args"]["comment"], "the writer");
    assert_eq!(renoted.ops[0].request["args"]["relationship"], "author");
}

#[test]
fn undeclared_keys_are_deleted_first() {
    let m = catalog(json!({}), None);
    let table = object(&m, "table:public.article");
    let rel = object(&m, "relationship:public.article.author");
    let plan = plan_for(
        std::slice::from_ref(&table),
        &m,
        &[row(&table, "me"), row(&rel, "me")],
        Policy::default(),
    );
    assert_eq!(
        plan.steps[0],
        (
            "relationship:public.article.author".to_owned(),
            Step::Delete
        )
    );
    assert_eq!(types(&plan), vec!["drop_relationship"]);
    assert_eq!(
        plan.ownership.remove,
        vec!["relationship:public.article.author"]
    );
}

#[test]
fn conflicts_and_adoption() {
    let m = catalog(json!({}), None);
    let want = object(&m, PERM);
    let unmanaged = plan_for(std::slice::from_ref(&want), &m, &[], Policy::default());
    assert_eq!(
        unmanaged.steps,
        vec![(PERM.to_owned(), Step::Conflict(None))]
    );
    assert!(unmanaged.is_noop());
    let theirs = plan_for(
        std::slice::from_ref(&want),
        &m,
        &[row(&want, "other")],
        Policy {
            adopt: true,
            ..Policy::default()
        },
    );
    assert_eq!(
        theirs.steps,
        vec![(PERM.to_owned(), Step::Conflict(Some(owner("other"))))]
    );
    let adopt = plan_for(
        std::slice::from_ref(&want),
        &m,
        &[],
        Policy {
            adopt: true,
            ..Policy::default()
        },
    );
    assert_eq!(adopt.steps, vec![(PERM.to_owned(), Step::Adopt)]);
    assert!(adopt.ops.is_empty(), "identical object: ownership only");
    assert_eq!(adopt.ownership.upsert.len(), 1);
    // A resource re-created with the same name takes over its orphaned predecessor's rows.
    let mut orphaned = row(&want, "gone");
    orphaned.owner.name = "res-me".into();
    orphaned.orphaned = true;
    let back = plan_for(
        std::slice::from_ref(&want),
        &m,
        &[orphaned],
        Policy::default(),
    );
    assert_eq!(back.steps, vec![(PERM.to_owned(), Step::Noop)]);
    assert_eq!(back.ownership.upsert[0].owner.uid, "me");
}

#[test]
fn drift_is_reported_or_healed_by_policy() {
    let want = object(&catalog(json!({"id": {"_eq": 1}}), None), PERM);
    let edited = catalog(json!({}), None);
    let rows = [row(&want, "me")];
    let report = plan_for(
        std::slice::from_ref(&want),
        &edited,
        &rows,
        Policy::default(),
    );
    assert_eq!(
        report.steps,
        vec![(
            PERM.to_owned(),
            Step::Drift(DriftKind::Modified, vec!["permission.filter".into()])
        )]
    );
    assert!(report.is_noop());
    for policy in [
        Policy {
            self_heal: true,
            ..Policy::default()
        },
        Policy {
            sync_requested: true,
            ..Policy::default()
        },
    ] {
        let heal = plan_for(std::slice::from_ref(&want), &edited, &rows, policy);
        assert!(matches!(
            heal.steps[0].1,
            Step::Heal(DriftKind::Modified, _)
        ));
        assert_eq!(
            types(&heal),
            vec!["drop_select_permission", "create_select_permission"]
        );
    }
    let dropped = metadata(
        json!({"version": 2, "tables": [{"table": {"schema": "public", "name": "article"}}]}),
    );
    let missing = plan_for(
        std::slice::from_ref(&want),
        &dropped,
        &rows,
        Policy::default(),
    );
    assert_eq!(
        missing.steps,
        vec![(PERM.to_owned(), Step::Drift(DriftKind::Missing, vec![]))]
    );
    let healed = plan_for(
        std::slice::from_ref(&want),
        &dropped,
        &rows,
        Policy {
            self_heal: true,
            ..Policy::default()
        },
    );
    assert_eq!(types(&healed), vec!["create_select_permission"]);
}

#[test]
fn custom_types_merge_with_unowned_ones_and_cleanup_removes_only_its_own() {
    let m = catalog(json!({}), None);
    let mine = Object::CustomType(CustomType::Scalar(
        serde_json::from_value(json!({"name": "Email"})).unwrap(),
    ));
    let plan = plan_for(std::slice::from_ref(&mine), &m, &[], Policy::default());
    assert_eq!(plan.ops.len(), 1);
    assert_eq!(
        plan.ops[0].request["args"]["scalars"],
        json!([{"name": "Unowned"}, {"name": "Email"}])
    );
    let with_email = metadata(
        json!({"version": 2, "tables": [], "custom_types": {"scalars": [{"name": "Unowned"}, {"name": "Email"}]}}),
    );
    let gone = cleanup(
        &owner("me"),
        &with_email,
        &[row(&mine, "me")],
        Removal {
            orphan: false,
            cascade: false,
            tables: true,
        },
    );
    assert_eq!(
        gone.ops[0].request["args"]["scalars"],
        json!([{"name": "Unowned"}])
    );
    let orphan = cleanup(
        &owner("me"),
        &with_email,
        &[row(&mine, "me")],
        Removal {
            orphan: true,
            cascade: false,
            tables: true,
        },
    );
    assert!(orphan.ops.is_empty());
    assert_eq!(orphan.ownership.remove, vec!["custom_type:Email"]);
}

#[test]
fn event_triggers_are_replaced_in_place_and_dropped_before_their_table() {
    let article = json!({"schema": "public", "name": "article"});
    let with = |webhook: &str| {
        metadata(json!({"version": 2, "tables": [{"table": article,
            "event_triggers": [{"name": "published", "webhook": webhook,
                "definition": {"update": {"columns": ["published"], "payload": "*"}},
                "headers": [{"name": "X-Token", "value_from_env": "HOOK_TOKEN"}]}]}]}))
    };
    let key = "event_trigger:published";
    let old = object(&with("http://a"), key);
    let want = object(&with("http://b"), key);
    let bare = metadata(json!({"version": 2, "tables": [{"table": article}]}));

    let created = plan_for(std::slice::from_ref(&want), &bare, &[], Policy::default());
    assert_eq!(created.steps, vec![(key.to_owned(), Step::Create)]);
    assert_eq!(types(&created), vec!["create_event_trigger"]);
    let args = &created.ops[0].request["args"];
    assert_eq!(args["replace"], true);
    assert_eq!(args["webhook"], "http://b");
    assert_eq!(args["headers"][0]["value_from_env"], "HOOK_TOKEN");
    // The request is the metadata API's own, flat arguments and all.
    let parsed = crate::ops::Op::parse(
        &created.ops[0].request,
        crate::ops::Limits { max_batch_size: 1 },
    );
    assert!(parsed.is_ok(), "{parsed:?}");

    // A spec change replaces it (no delete: undelivered events are kept).
    let update = plan_for(
        std::slice::from_ref(&want),
        &with("http://a"),
        &[row(&old, "me")],
        Policy::default(),
    );
    assert_eq!(
        update.steps,
        vec![(
            key.to_owned(),
            Step::Update(vec!["configuration.webhook".into()])
        )]
    );
    assert_eq!(types(&update), vec!["create_event_trigger"]);

    // Moved to another table behind the resource's back: re-created on its own table.
    let moved = metadata(json!({"version": 2, "tables": [{"table": article},
        {"table": {"schema": "public", "name": "author"},
         "event_triggers": [{"name": "published", "webhook": "http://b",
            "definition": {"update": {"columns": ["published"], "payload": "*"}},
            "headers": [{"name": "X-Token", "value_from_env": "HOOK_TOKEN"}]}]}]}));
    let healed = plan_for(
        std::slice::from_ref(&want),
        &moved,
        &[row(&want, "me")],
        Policy {
            self_heal: true,
            ..Policy::default()
        },
    );
    assert_eq!(
        types(&healed),
        vec!["delete_event_trigger", "create_event_trigger"]
    );

    let m = with("http://b");
    let rows = [
        row(&object(&m, "table:public.article"), "me"),
        row(&object(&m, key), "me"),
    ];
    let gone = cleanup(
        &owner("me"),
        &m,
        &rows,
        Removal {
            orphan: false,
            cascade: false,
            tables: true,
        },
    );
    assert_eq!(types(&gone), vec!["delete_event_trigger", "untrack_table"]);
    assert_eq!(gone.ops[0].request["args"], json!({"name": "published"}));
}

#[test]
fn remote_schemas_are_added_updated_in_place_and_removed() {
    let with = |url: &str| {
        metadata(json!({"version": 2, "tables": [],
            "remote_schemas": [{"name": "newsletter", "comment": "subscribers",
                "definition": {"url": url, "timeout_seconds": 10,
                    "headers": [{"name": "Authorization", "value_from_env": "NEWSLETTER_API_TOKEN"}]}}]}))
    };
    let key = "remote_schema:newsletter";
    let old = object(&with("http://a/graphql"), key);
    let want = object(&with("http://b/graphql"), key);
    let bare = metadata(json!({"version": 2, "tables": []}));

    let created = plan_for(std::slice::from_ref(&want), &bare, &[], Policy::default());
    assert_eq!(created.steps, vec![(key.to_owned(), Step::Create)]);
    // The metadata API's own request: the stored entry as the arguments, header secrets
    // by their variable's name.
    assert_eq!(
        created.ops[0].request,
        json!({"type": "add_remote_schema", "args": {"name": "newsletter", "comment": "subscribers",
            "definition": {"url": "http://b/graphql", "timeout_seconds": 10,
                "headers": [{"name": "Authorization", "value_from_env": "NEWSLETTER_API_TOKEN"}]}}})
    );
    assert_eq!(created.ownership.upsert[0].key, key);

    let noop = plan_for(
        std::slice::from_ref(&want),
        &with("http://b/graphql"),
        &[row(&want, "me")],
        Policy::default(),
    );
    assert!(noop.is_noop());

    // A spec change: updated in place (the relationships that use it stay).
    let update = plan_for(
        std::slice::from_ref(&want),
        &with("http://a/graphql"),
        &[row(&old, "me")],
        Policy::default(),
    );
    assert_eq!(
        update.steps,
        vec![(key.to_owned(), Step::Update(vec!["definition.url".into()]))]
    );
    assert_eq!(types(&update), vec!["update_remote_schema"]);
    assert_eq!(
        update.ops[0].request["args"]["definition"]["url"],
        "http://b/graphql"
    );

    // Changed or removed through /v1/query: drift, reported or healed.
    let drift = plan_for(
        std::slice::from_ref(&want),
        &with("http://a/graphql"),
        &[row(&want, "me")],
        Policy::default(),
    );
    assert_eq!(
        drift.steps,
        vec![(
            key.to_owned(),
            Step::Drift(DriftKind::Modified, vec!["definition.url".into()])
        )]
    );
    assert!(drift.is_noop());
    let missing = plan_for(
        std::slice::from_ref(&want),
        &bare,
        &[row(&want, "me")],
        Policy {
            self_heal: true,
            ..Policy::default()
        },
    );
    assert_eq!(
        missing.steps,
        vec![(key.to_owned(), Step::Heal(DriftKind::Missing, vec![]))]
    );
    assert_eq!(types(&missing), vec!["add_remote_schema"]);

    // Created through /v1/query: a conflict until adopted.
    let theirs = plan_for(
        std::slice::from_ref(&want),
        &with("http://b/graphql"),
        &[],
        Policy::default(),
    );
    assert_eq!(theirs.steps, vec![(key.to_owned(), Step::Conflict(None))]);
    let adopted = plan_for(
        std::slice::from_ref(&want),
        &with("http://b/graphql"),
        &[],
        Policy {
            adopt: true,
            ..Policy::default()
        },
    );
    assert_eq!(adopted.steps, vec![(key.to_owned(), Step::Adopt)]);
    assert!(adopted.ops.is_empty(), "identical: ownership only");

    let m = with("http://b/graphql");
    let removal = Removal {
        orphan: false,
        cascade: false,
        tables: true,
    };
    let gone = cleanup(&owner("me"), &m, &[row(&want, "me")], removal);
    assert_eq!(types(&gone), vec!["remove_remote_schema"]);
    assert_eq!(gone.ownership.remove, vec![key]);
    let kept = cleanup(
        &owner("me"),
        &m,
        &[row(&want, "me")],
        Removal {
            orphan: true,
            ..removal
        },
    );
    assert!(kept.ops.is_empty(), "deletion policy orphan");
    assert_eq!(kept.ownership.remove, vec![key]);
}

#[test]
fn cleanup_orders_dependants_first_and_spares_other_owners() {
    let m = catalog(json!({}), None);
    let rows = [
        row(&object(&m, "table:public.article"), "me"),
        row(&object(&m, "relationship:public.article.author"), "me"),
        row(&object(&m, PERM), "other"),
    ];
    let all = Removal {
        orphan: false,
        cascade: false,
        tables: true,
    };
    let plan = cleanup(&owner("me"), &m, &rows, all);
    assert_eq!(types(&plan), vec!["drop_relationship", "untrack_table"]);
    assert_eq!(plan.ops[1].request["args"]["cascade"], false);
    let first = cleanup(
        &owner("me"),
        &m,
        &rows,
        Removal {
            tables: false,
            ..all
        },
    );
    assert_eq!(types(&first), vec!["drop_relationship"]);
}

/// Both directions of remote relationships: created, updated and deleted by their own
/// operations; a relationship the catalog holds in the legacy form is the same as the current
/// form with its join fields in another order (no drift).
#[test]
fn remote_relationships_are_created_updated_compared_across_forms_and_deleted() {
    let with = |relationship: Value, mapping: Value| {
        metadata(json!({"version": 2,
            "tables": [{"table": {"schema": "public", "name": "profiles"},
                "remote_relationships": [relationship]}],
            "remote_schemas": [{"name": "msgs", "definition": {"url": "http://msgs/graphql"},
                "remote_relationships": [{"type_name": "Message", "relationships": [
                    {"name": "sender", "definition": {"to_source": {"table": "profiles",
                        "relationship_type": "array", "field_mapping": mapping}}}]}]}]}))
    };
    let current = |lhs: Value| {
        json!({"name": "message", "definition": {"to_remote_schema": {"remote_schema": "msgs",
            "lhs_fields": lhs, "remote_field": {"message": {"arguments": {"id": "$msg_id"}}}}}})
    };
    let legacy = json!({"name": "message", "definition": {"remote_schema": "msgs",
        "basalt_fields": ["name", "msg_id"],
        "remote_field": {"message": {"arguments": {"id": "$msg_id"}}}}});
    let table_key = "remote_relationship:public.profiles.message";
    let remote_key = "remote_schema_relationship:msgs.Message.sender";
    let want = with(current(json!(["msg_id", "name"])), json!({"id": "msg_id"}));
    let desired = [object(&want, table_key), object(&want, remote_key)];
    let bare = metadata(
        json!({"version": 2, "tables": [{"table": {"schema": "public", "name": "profiles"}}],
        "remote_schemas": [{"name": "msgs", "definition": {"url": "http://msgs/graphql"}}]}),
    );

    let created = plan_for(&desired, &bare, &[], Policy::default());
    assert_eq!(
        types(&created),
        vec![
            "create_remote_relationship",
            "create_remote_schema_remote_relationship"
        ]
    );
    assert_eq!(
        created.ops[0].request["args"],
        json!({"name": "message", "table": {"schema": "public", "name": "profiles"},
            "definition": {"to_remote_schema": {"remote_schema": "msgs",
                "lhs_fields": ["msg_id", "name"],
                "remote_field": {"message": {"arguments": {"id": "$msg_id"}}}}}})
    );
    assert_eq!(
        created.ops[1].request["args"],
        json!({"remote_schema": "msgs", "type_name": "Message", "name": "sender",
            "definition": {"to_source": {"source": "default",
                "table": {"schema": "public", "name": "profiles"},
                "relationship_type": "array", "field_mapping": {"id": "msg_id"}}}})
    );

    // The legacy form of the same relationship, join fields in another order: in sync.
    let rows = [row(&desired[0], "me"), row(&desired[1], "me")];
    let same = with(legacy, json!({"id": "msg_id"}));
    assert!(plan_for(&desired, &same, &rows, Policy::default()).is_noop());

    // Changed: updated in place, each by its own operation.
    let old = with(current(json!(["msg_id"])), json!({"id": "name"}));
    let old_rows = [
        row(&object(&old, table_key), "me"),
        row(&object(&old, remote_key), "me"),
    ];
    let update = plan_for(&desired, &old, &old_rows, Policy::default());
    assert_eq!(
        types(&update),
        vec![
            "update_remote_relationship",
            "update_remote_schema_remote_relationship"
        ]
    );

    // Gone from the spec: deleted.
    let removal = Removal {
        orphan: false,
        cascade: false,
        tables: true,
    };
    let gone = cleanup(&owner("me"), &want, &rows, removal);
    assert_eq!(
        types(&gone),
        vec![
            "delete_remote_relationship",
            "delete_remote_schema_remote_relationship"
        ]
    );
    assert_eq!(
        gone.ops[1].request["args"],
        json!({"remote_schema": "msgs", "type_name": "Message", "name": "sender"})
    );
}

/// A REST endpoint: created, changed by a drop and a create in one bulk, deleted.
#[test]
fn rest_endpoints_are_created_replaced_and_dropped() {
    let with = |url: &str| {
        metadata(json!({"version": 2, "tables": [],
            "query_collections": [{"name": "app", "definition": {"queries": [
                {"name": "q", "query": "query q { __typename }"}]}}],
            "rest_endpoints": [{"name": "e", "url": url, "methods": ["GET"],
                "definition": {"query": {"collection_name": "app", "query_name": "q"}}}]}))
    };
    let key = "rest_endpoint:e";
    let want = object(&with("b"), key);
    let bare = metadata(json!({"version": 2, "tables": []}));
    let created = plan_for(std::slice::from_ref(&want), &bare, &[], Policy::default());
    assert_eq!(types(&created), vec!["create_rest_endpoint"]);
    assert_eq!(created.ops[0].request["args"]["url"], "b");
    let old = object(&with("a"), key);
    let update = plan_for(
        std::slice::from_ref(&want),
        &with("a"),
        &[row(&old, "me")],
        Policy::default(),
    );
    assert_eq!(
        update.steps,
        vec![(key.to_owned(), Step::Update(vec!["url".into()]))]
    );
    assert_eq!(
        types(&update),
        vec!["drop_rest_endpoint", "create_rest_endpoint"]
    );
    let removal = Removal {
        orphan: false,
        cascade: false,
        tables: true,
    };
    let gone = cleanup(&owner("me"), &with("b"), &[row(&want, "me")], removal);
    assert_eq!(types(&gone), vec!["drop_rest_endpoint"]);
    assert_eq!(gone.ops[0].request["args"], json!({"name": "e"}));
}
