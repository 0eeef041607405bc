//! The InheritedRole and ApiLimitPolicy CRDs: printer columns, the schema of their lists and
//! maps, and the client-side CEL rules (an inherited role is neither admin nor its own parent,
//! its name is its identity; time limits are greater than 0).

use super::*;

fn inherited_role(spec: Value) -> InheritedRole {
    InheritedRole {
        metadata: ObjectMeta {
            name: Some("r".into()),
            ..Default::default()
        },
        spec: serde_json::from_value(spec).unwrap(),
        status: None,
    }
}

fn api_limits(spec: Value) -> ApiLimitPolicy {
    ApiLimitPolicy {
        metadata: ObjectMeta {
            name: Some("limits".into()),
            ..Default::default()
        },
        spec: serde_json::from_value(spec).unwrap(),
        status: None,
    }
}

const STANDARD: [(&str, &str, i32); 4] = [
    (
        "Ready",
        ".status.conditions[?(@.type==\"Ready\")].status",
        0,
    ),
    (
        "Reason",
        ".status.conditions[?(@.type==\"Ready\")].reason",
        1,
    ),
    (
        "Drifted",
        ".status.conditions[?(@.type==\"Drifted\")].status",
        0,
    ),
    ("Age", ".metadata.creationTimestamp", 0),
];

#[test]
fn columns_and_schemas() {
    let crd = crd_of("InheritedRole");
    let mut wanted = vec![
        ("Role", ".spec.roleName", 0),
        ("Parents", ".spec.roleSet", 0),
    ];
    wanted.extend(STANDARD);
    assert_columns(&crd, &wanted);
    let spec = &schema_of(&crd)["properties"]["spec"];
    assert_eq!(spec["required"], json!(["roleName", "roleSet"]));
    let role_set = &spec["properties"]["roleSet"];
    assert_eq!(role_set["minItems"], 1);
    assert_eq!(role_set["x-kubernetes-list-type"], "set");
    // Bounded, so the API server's estimate of the `in` rule's cost stays within its budget.
    assert_eq!(role_set["maxItems"], 100);
    assert_eq!(role_set["items"]["maxLength"], 256);
    assert_eq!(spec["properties"]["roleName"]["maxLength"], 256);

    let crd = crd_of("ApiLimitPolicy");
    let mut wanted = vec![("Disabled", ".spec.disabled", 0)];
    wanted.extend(STANDARD);
    assert_columns(&crd, &wanted);
    let spec = &schema_of(&crd)["properties"]["spec"]["properties"];
    for limit in ["depthLimit", "nodeLimit", "batchLimit"] {
        let props = &spec[limit]["properties"];
        assert_eq!(props["global"]["type"], "integer", "{limit}");
        assert_eq!(props["global"]["minimum"], 1.0, "{limit}");
        let per_role = &props["perRole"]["additionalProperties"];
        assert_eq!(
            per_role["minimum"], 1.0,
            "{limit}: role names are keys, values counts"
        );
    }
    assert_eq!(spec["timeLimit"]["properties"]["global"]["type"], "number");
    // Each per-role time is checked on its own, not by a rule over the whole map.
    let seconds = &spec["timeLimit"]["properties"]["perRole"]["additionalProperties"];
    assert_eq!(seconds["x-kubernetes-validations"][0]["rule"], "self > 0.0");
    // "IP" or a list: untyped, parsed by the controller.
    let unique = &spec["rateLimit"]["properties"]["global"]["properties"]["uniqueParams"];
    assert_eq!(unique["x-kubernetes-preserve-unknown-fields"], true);
    assert!(unique.get("type").is_none(), "{unique}");
    assert_eq!(
        spec["rateLimit"]["properties"]["perRole"]["additionalProperties"]["required"],
        json!(["maxReqsPerMin"])
    );
}

#[test]
fn inherited_role_cel_rules() {
    let ok =
        inherited_role(json!({"roleName": "manager_employee", "roleSet": ["manager", "employee"]}));
    ok.validate_cel().expect("valid");
    basalt::controller::cel::validate(&ok).expect("valid");
    for (spec, message) in [
        (
            json!({"roleName": "admin", "roleSet": ["user"]}),
            "cannot define an inherited role named",
        ),
        (
            json!({"roleName": "x", "roleSet": ["x", "manager"]}),
            "an inherited role name cannot be in the role combination",
        ),
    ] {
        let err = inherited_role(spec.clone())
            .validate_cel()
            .expect_err("must fail");
        assert!(format!("{err:?}").contains(message), "{spec}: {err:?}");
        let ours = basalt::controller::cel::validate(&inherited_role(spec.clone()))
            .expect_err("must fail");
        assert_eq!(format!("{ours:?}"), format!("{err:?}"), "{spec}");
    }
    // The name is the identity; the parents may change.
    let renamed = inherited_role(json!({"roleName": "other", "roleSet": ["manager", "employee"]}));
    let err = renamed
        .validate_cel_update(&ok)
        .expect_err("roleName is immutable");
    assert!(
        format!("{err:?}").contains("roleName is immutable"),
        "{err:?}"
    );
    inherited_role(json!({"roleName": "manager_employee", "roleSet": ["manager"]}))
        .validate_cel_update(&ok)
        .expect("parents may change");
}

#[test]
fn api_limit_policy_cel_rules() {
    let ok = api_limits(json!({"timeLimit": {"global": 2, "perRole": {"user": 0.5}},
        "rateLimit": {"global": {"maxReqsPerMin": 60, "uniqueParams": "IP"}}}));
    ok.validate_cel().expect("valid");
    api_limits(json!({}))
        .validate_cel()
        .expect("no limits is valid");
    for spec in [
        json!({"timeLimit": {"global": 0}}),
        json!({"timeLimit": {"global": -1.5}}),
        json!({"timeLimit": {"global": 1, "perRole": {"user": 0}}}),
    ] {
        let err = api_limits(spec.clone())
            .validate_cel()
            .expect_err("must fail");
        assert!(
            format!("{err:?}").contains("must be greater than 0"),
            "{spec}: {err:?}"
        );
    }
}

/// What the controller refuses as `InvalidSpec` although the schema lets it through: a
/// `uniqueParams` that is neither `"IP"` nor a list of session variables.
#[test]
fn bad_unique_params_do_not_map() {
    let policy = api_limits(
        json!({"rateLimit": {"global": {"maxReqsPerMin": 5, "uniqueParams": ["x-svc-role"]}}}),
    );
    policy.validate_cel().expect("the schema cannot tell");
    let err = policy.declared().unwrap_err();
    assert_eq!(err.path.as_str(), "$.spec.rateLimit.global.uniqueParams");
    assert_eq!(
        err.message,
        "Not a valid value. Should be either: 'IP' or a list of session variables"
    );
}
