//! The introspection types of the GraphQL specification (`__Schema`, `__Type`, `__Field`,
//! `__InputValue`, `__EnumValue`, `__Directive` and their enums), the built-in scalars, the
//! root pseudo-type's fields and the directives every Basalt schema has.

use crate::graphql::types::{
    EnumValueDef, FieldDef, InputValueDef, Name, TypeDef, TypeRef, TypeSystem, BUILTIN_SCALARS,
};
use indexmap::IndexMap;
use serde_json::Value;
use std::sync::LazyLock;

/// A directive every Basalt schema supports.
pub(super) struct Directive {
    pub(super) name: &'static str,
    pub(super) description: &'static str,
    pub(super) locations: &'static [&'static str],
    pub(super) args: Vec<InputValueDef>,
}

/// `@include`, `@skip` (executed), `@deprecated` and `@specifiedBy` (schema annotations a
/// client may see in remote schemas' SDL), by name.
pub(super) static DIRECTIVES: LazyLock<Vec<Directive>> = LazyLock::new(|| {
    let arg = |name: &str, ty: &str, description: &str, default: Option<Value>| InputValueDef {
        name: name.into(),
        description: Some(description.into()),
        ty: TypeRef::parse(ty).unwrap_or_else(|| TypeRef::named(ty)),
        default: default.map(Box::new),
    };
    vec![
        Directive {
            name: "deprecated",
            description:
                "Marks a field, argument, input field or enum value as no longer supported.",
            locations: &[
                "FIELD_DEFINITION",
                "ARGUMENT_DEFINITION",
                "INPUT_FIELD_DEFINITION",
                "ENUM_VALUE",
            ],
            args: vec![arg(
                "reason",
                "String",
                "Why, and what to use instead (Markdown).",
                Some(Value::String("No longer supported".into())),
            )],
        },
        Directive {
            name: "include",
            description: "Keeps a field or fragment only when `if` is true.",
            locations: &["FIELD", "FRAGMENT_SPREAD", "INLINE_FRAGMENT"],
            args: vec![arg("if", "Boolean!", "Kept when true.", None)],
        },
        Directive {
            name: "skip",
            description: "Leaves a field or fragment out when `if` is true.",
            locations: &["FIELD", "FRAGMENT_SPREAD", "INLINE_FRAGMENT"],
            args: vec![arg("if", "Boolean!", "Left out when true.", None)],
        },
        Directive {
            name: "specifiedBy",
            description: "Links a custom scalar to the specification of its behaviour.",
            locations: &["SCALAR"],
            args: vec![arg("url", "String!", "Where the specification is.", None)],
        },
    ]
});

/// The introspection types of the GraphQL specification and the built-in scalars, as a
/// type system (so `__type(name: "__Type")` and `__schema { types }` show them too).
pub(crate) fn meta() -> &'static TypeSystem {
    static META: LazyLock<TypeSystem> = LazyLock::new(build_meta);
    &META
}

/// The fields of the root pseudo-type: `__schema` and `__type(name: String!)`.
pub(super) static ROOT_FIELDS: LazyLock<IndexMap<Name, FieldDef>> = LazyLock::new(|| {
    let fields = [
        FieldDef::new("__schema", TypeRef::non_null("__Schema")),
        FieldDef::new("__type", TypeRef::named("__Type"))
            .arg(InputValueDef::new("name", TypeRef::non_null("String"))),
    ];
    fields.into_iter().map(|f| (f.name.clone(), f)).collect()
});

fn build_meta() -> TypeSystem {
    fn object(name: &str, description: &str, fields: Vec<FieldDef>) -> TypeDef {
        TypeDef::Object {
            name: name.into(),
            description: Some(description.into()),
            fields: fields.into_iter().map(|f| (f.name.clone(), f)).collect(),
            interfaces: Vec::new(),
        }
    }
    fn field(name: &str, ty: &str, description: &str) -> FieldDef {
        FieldDef::new(
            name,
            TypeRef::parse(ty).unwrap_or_else(|| TypeRef::named(ty)),
        )
        .describe(description)
    }
    fn deprecated_flag() -> InputValueDef {
        InputValueDef {
            name: "includeDeprecated".into(),
            description: None,
            ty: TypeRef::non_null("Boolean"),
            default: Some(Box::new(Value::Bool(false))),
        }
    }
    fn enumeration(name: &str, description: &str, values: &[&str]) -> TypeDef {
        TypeDef::Enum {
            name: name.into(),
            description: Some(description.into()),
            values: values
                .iter()
                .map(|v| EnumValueDef {
                    name: (*v).into(),
                    description: None,
                })
                .collect(),
        }
    }
    let mut meta = TypeSystem::default();
    for (name, description) in [
        ("Boolean", "`true` or `false`."),
        ("Float", "A double-precision floating-point number."),
        ("ID", "A unique identifier, serialized as a string."),
        ("Int", "A signed 32-bit integer."),
        ("String", "UTF-8 text."),
    ] {
        debug_assert!(BUILTIN_SCALARS.contains(&name));
        meta.add(TypeDef::Scalar {
            name: name.into(),
            description: Some(description.into()),
        });
    }
    let deprecation = || {
        vec![
            field("isDeprecated", "Boolean!", "Whether it is deprecated."),
            field("deprecationReason", "String", "Why it is deprecated."),
        ]
    };
    meta.add(object(
        "__Schema",
        "What this server offers the current role: its types, directives and root types.",
        vec![
            field("description", "String", "A description of the schema."),
            field("types", "[__Type!]!", "Every type the role can reach."),
            field("queryType", "__Type!", "The root type of queries."),
            field(
                "mutationType",
                "__Type",
                "The root type of mutations, if any.",
            ),
            field(
                "subscriptionType",
                "__Type",
                "The root type of subscriptions, if any.",
            ),
            field(
                "directives",
                "[__Directive!]!",
                "The directives the server supports.",
            ),
        ],
    ));
    meta.add(object(
        "__Type",
        "A type of the schema: named (scalar, object, interface, union, enum, input object) or a list or non-null wrapper of another.",
        vec![
            field("kind", "__TypeKind!", "What kind of type this is."),
            field("name", "String", "The name, for named types."),
            field("description", "String", "Free text."),
            field("fields", "[__Field!]", "Fields of an object or interface.")
                .arg(deprecated_flag()),
            field("interfaces", "[__Type!]", "Interfaces an object implements."),
            field("possibleTypes", "[__Type!]", "Object types of an interface or union."),
            field("enumValues", "[__EnumValue!]", "Values of an enum.").arg(deprecated_flag()),
            field("inputFields", "[__InputValue!]", "Fields of an input object.")
                .arg(deprecated_flag()),
            field("ofType", "__Type", "The wrapped type of a list or non-null type."),
            field("specifiedByURL", "String", "The specification of a custom scalar."),
            field("isOneOf", "Boolean", "Whether an input object takes exactly one field."),
        ],
    ));
    let mut field_fields = vec![
        field("name", "String!", "The name."),
        field("description", "String", "Free text."),
        field("args", "[__InputValue!]!", "Its arguments.").arg(deprecated_flag()),
        field("type", "__Type!", "The type of its value."),
    ];
    field_fields.extend(deprecation());
    meta.add(object(
        "__Field",
        "A field of an object or interface type.",
        field_fields,
    ));
    let mut input_fields = vec![
        field("name", "String!", "The name."),
        field("description", "String", "Free text."),
        field("type", "__Type!", "The type it takes."),
        field(
            "defaultValue",
            "String",
            "The default, as a GraphQL literal.",
        ),
    ];
    input_fields.extend(deprecation());
    meta.add(object(
        "__InputValue",
        "An argument, or a field of an input object.",
        input_fields,
    ));
    let mut enum_fields = vec![
        field("name", "String!", "The name."),
        field("description", "String", "Free text."),
    ];
    enum_fields.extend(deprecation());
    meta.add(object("__EnumValue", "One value of an enum.", enum_fields));
    meta.add(object(
        "__Directive",
        "A directive: where it may be used and the arguments it takes.",
        vec![
            field("name", "String!", "The name."),
            field("description", "String", "Free text."),
            field(
                "locations",
                "[__DirectiveLocation!]!",
                "Where it may be used.",
            ),
            field("args", "[__InputValue!]!", "Its arguments.").arg(deprecated_flag()),
            field(
                "isRepeatable",
                "Boolean!",
                "Whether it may appear more than once at one place.",
            ),
        ],
    ));
    meta.add(enumeration(
        "__TypeKind",
        "The kinds of types.",
        &[
            "SCALAR",
            "OBJECT",
            "INTERFACE",
            "UNION",
            "ENUM",
            "INPUT_OBJECT",
            "LIST",
            "NON_NULL",
        ],
    ));
    meta.add(enumeration(
        "__DirectiveLocation",
        "Where a directive may be used.",
        &[
            "QUERY",
            "MUTATION",
            "SUBSCRIPTION",
            "FIELD",
            "FRAGMENT_DEFINITION",
            "FRAGMENT_SPREAD",
            "INLINE_FRAGMENT",
            "VARIABLE_DEFINITION",
            "SCHEMA",
            "SCALAR",
            "OBJECT",
            "FIELD_DEFINITION",
            "ARGUMENT_DEFINITION",
            "INTERFACE",
            "UNION",
            "ENUM",
            "ENUM_VALUE",
            "INPUT_OBJECT",
            "INPUT_FIELD_DEFINITION",
        ],
    ));
    meta
}
