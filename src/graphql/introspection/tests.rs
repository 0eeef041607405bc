//! Introspection answered from hand-built type systems: what is shown, how selections merge,
//! what is refused.

use super::*;
use crate::graphql::types::{EnumValueDef, FieldDef, InputValueDef, Name, TypeDef, TypeRef};
use serde_json::json;

/// A query root with one object field, an interface with one implementer, a union, an
/// enum and an input object with a default.
fn sample() -> TypeSystem {
    let mut types = TypeSystem {
        query_root: "query_root".into(),
        ..TypeSystem::default()
    };
    let object = |name: &str, fields: Vec<FieldDef>, interfaces: Vec<Name>| TypeDef::Object {
        name: name.into(),
        description: None,
        fields: fields.into_iter().map(|f| (f.name.clone(), f)).collect(),
        interfaces,
    };
    types.add(object(
        "query_root",
        vec![FieldDef::new("pets", TypeRef::list_of_non_null("pet"))
            .arg(InputValueDef {
                name: "where".into(),
                description: None,
                ty: TypeRef::named("pet_filter"),
                default: Some(Box::new(json!({"kind": "CAT", "name": "a\"b"}))),
            })
            .describe("All pets.")],
        vec![],
    ));
    types.add(object(
        "pet",
        vec![FieldDef::new("name", TypeRef::non_null("String"))],
        vec!["named".into()],
    ));
    types.add(TypeDef::Interface {
        name: "named".into(),
        description: None,
        fields: [(
            "name".into(),
            FieldDef::new("name", TypeRef::non_null("String")),
        )]
        .into_iter()
        .collect(),
    });
    types.add(TypeDef::Union {
        name: "anything".into(),
        description: None,
        members: vec!["pet".into()],
    });
    types.add(TypeDef::Input {
        name: "pet_filter".into(),
        description: None,
        fields: [(
            "kind".into(),
            InputValueDef::new("kind", TypeRef::named("kind")),
        )]
        .into_iter()
        .collect(),
    });
    types.add(TypeDef::Enum {
        name: "kind".into(),
        description: Some("Kinds.".into()),
        values: vec![EnumValueDef {
            name: "CAT".into(),
            description: None,
        }],
    });
    types
}

/// The answer as a value, after checking that each field's recorded range holds its value.
fn run(types: &TypeSystem, document: &str) -> Result<Value, IntrospectionError> {
    answer(types, document).map(|answer| {
        let whole: Value = serde_json::from_slice(&answer.json).expect("JSON");
        let keys: Vec<&str> = whole
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let ranged: Vec<&str> = answer.fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(ranged, keys, "one range per field, in order");
        for (key, range) in &answer.fields {
            let value: Value = serde_json::from_slice(&answer.json[range.clone()]).expect("JSON");
            assert_eq!(value, whole[key], "the range of {key}");
        }
        whole
    })
}

#[test]
fn types_are_the_reachable_ones_sorted_with_introspection_and_builtin_scalars() {
    let answer = run(&sample(), "query { __schema { types { name kind } } }").expect("ok");
    let names: Vec<&str> = answer["__schema"]["types"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    // The union is reachable from nowhere: not shown. The interface is, through `pet`.
    assert!(!names.contains(&"anything"), "{names:?}");
    for expected in ["named", "pet", "pet_filter", "kind", "__Type", "Int", "ID"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
}

#[test]
fn named_types_wrappers_defaults_and_members_are_described() {
    let answer = run(
        &sample(),
        r#"query { q: __type(name: "query_root") { kind fields { name description args { name defaultValue type { kind name } } type { kind ofType { kind ofType { kind ofType { name } } } } } }
             pet: __type(name: "pet") { interfaces { name } fields { name } enumValues { name } }
             named: __type(name: "named") { kind possibleTypes { name } interfaces { name } }
             kind: __type(name: "kind") { description enumValues(includeDeprecated: true) { name isDeprecated } }
             filter: __type(name: "pet_filter") { isOneOf inputFields { name type { name } } }
             meta: __type(name: "__Directive") { fields { name } }
             missing: __type(name: "nope") { name }
             hidden: __type(name: "anything") { name } }"#,
    )
    .expect("ok");
    assert_eq!(
        answer["q"],
        json!({"kind": "OBJECT", "fields": [{"name": "pets", "description": "All pets.",
            "args": [{"name": "where", "defaultValue": "{kind: \"CAT\", name: \"a\\\"b\"}",
                      "type": {"kind": "INPUT_OBJECT", "name": "pet_filter"}}],
            "type": {"kind": "NON_NULL", "ofType": {"kind": "LIST", "ofType": {"kind": "NON_NULL", "ofType": {"name": "pet"}}}}}]})
    );
    assert_eq!(
        answer["pet"],
        json!({"interfaces": [{"name": "named"}], "fields": [{"name": "name"}], "enumValues": null})
    );
    assert_eq!(
        answer["named"],
        json!({"kind": "INTERFACE", "possibleTypes": [{"name": "pet"}], "interfaces": null})
    );
    assert_eq!(
        answer["kind"],
        json!({"description": "Kinds.", "enumValues": [{"name": "CAT", "isDeprecated": false}]})
    );
    assert_eq!(
        answer["filter"],
        json!({"isOneOf": false, "inputFields": [{"name": "kind", "type": {"name": "kind"}}]})
    );
    assert_eq!(
        answer["meta"]["fields"],
        json!([{"name": "name"}, {"name": "description"}, {"name": "locations"},
               {"name": "args"}, {"name": "isRepeatable"}])
    );
    assert_eq!(answer["missing"], Value::Null);
    assert_eq!(
        answer["hidden"],
        Value::Null,
        "unreachable types are not shown"
    );
}

#[test]
fn repeated_keys_merge_and_typename_names_the_introspection_type() {
    let answer = run(
        &sample(),
        r#"query { __schema { queryType { name } } __schema { queryType { __typename kind } ... on __Root { description } ... on __Schema { __typename } mutationType { name } }
             t: __type(name: "kind") { ... on __Type { name } ... on __Field { type { name } } } }"#,
    )
    .expect("ok");
    assert_eq!(
        answer,
        json!({"__schema": {"queryType": {"name": "query_root", "__typename": "__Type", "kind": "OBJECT"},
                            "mutationType": null, "__typename": "__Schema"},
               "t": {"name": "kind"}})
    );
}

#[test]
fn selections_that_do_not_fit_the_introspection_types_are_refused() {
    for (document, expected) in [
        (
            "query { __schema { nope } }",
            "Unknown field \"nope\" on type \"__Schema\".",
        ),
        (
            "query { __schema { types } }",
            "must have a selection of subfields",
        ),
        (
            "query { __schema { types { name { x } } } }",
            "it takes no selection",
        ),
        ("query { __type { name } }", "needs its argument \"name\""),
        (
            "query { __type(name: 3) { name } }",
            "Invalid value for argument \"name\"",
        ),
        (
            "query { __type(name: \"x\", other: 1) { name } }",
            "Unknown argument \"other\"",
        ),
        (
            "query { __schema { types { fields(includeDeprecated: null) { name } } } }",
            "Invalid value for argument \"includeDeprecated\"",
        ),
        (
            "query { __schema { ...F } } fragment F on __Schema { types { name } }",
            "inlined",
        ),
    ] {
        match run(&sample(), document) {
            Err(IntrospectionError::Rejected(errors)) => assert!(
                errors.iter().any(|e| e.contains(expected)),
                "{document}: {errors:?}"
            ),
            other => panic!("{document}: expected a refusal, got {other:?}"),
        }
    }
    assert!(matches!(
        run(&sample(), "query {"),
        Err(IntrospectionError::Parse(_))
    ));
}

#[test]
fn directives_are_listed_by_name_with_their_arguments() {
    let answer = run(
        &sample(),
        "query { __schema { directives { name locations isRepeatable args { name type { kind } defaultValue } } } }",
    )
    .expect("ok");
    let directives = answer["__schema"]["directives"].as_array().expect("list");
    let names: Vec<&str> = directives
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(names, ["deprecated", "include", "skip", "specifiedBy"]);
    assert_eq!(
        directives[0]["args"],
        json!([{"name": "reason", "type": {"kind": "SCALAR"}, "defaultValue": "\"No longer supported\""}])
    );
    assert_eq!(
        directives[1]["locations"],
        json!(["FIELD", "FRAGMENT_SPREAD", "INLINE_FRAGMENT"])
    );
}
