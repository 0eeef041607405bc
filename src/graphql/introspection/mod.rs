//! Introspection (`__schema`, `__type`) answered straight from a role's [`TypeSystem`]: no
//! second copy of the schema is built. The planner hands over the introspection root fields
//! as a standalone document (fragments inlined, directives applied, variables substituted);
//! [`answer`] validates it against the introspection types of the GraphQL specification
//! ([`meta`]) and writes the JSON answer while walking the type system.
//!
//! Memory and time are what matter here: an admin schema over many tables has a great many
//! types, so nothing is copied per type: the answer is written as bytes, and the only
//! per-request structure is the set of types reachable from the roots.

use super::types::{EnumValueDef, FieldDef, InputValueDef, Name, TypeDef, TypeRef, TypeSystem};
use async_graphql_parser::types::{
    ExecutableDocument, Field as AstField, OperationType, Selection, SelectionSet,
};
use async_graphql_parser::Positioned;
use async_graphql_value::Value as GqlValue;
use indexmap::IndexMap;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

mod meta;
#[cfg(test)]
mod tests;

pub(crate) use meta::meta;
use meta::{Directive, DIRECTIVES, ROOT_FIELDS};

/// Failures of introspection.
#[derive(Debug, thiserror::Error)]
pub enum IntrospectionError {
    /// The document does not parse (the planner printed it: a bug, reported as such).
    #[error("introspection document: {0}")]
    Parse(String),
    /// The introspection fields of the request do not fit the introspection types.
    #[error("{}", .0.join("; "))]
    Rejected(Vec<String>),
}

/// The `data` object answering an introspection-only document for one role.
pub fn answer(types: &TypeSystem, document: &str) -> Result<Answer, IntrospectionError> {
    let doc = async_graphql_parser::parse_query(document)
        .map_err(|e| IntrospectionError::Parse(e.to_string()))?;
    let set = operation(&doc)?;
    if has_spread(set) {
        return Err(IntrospectionError::Rejected(vec![
            "fragment spreads must be inlined before introspection".into(),
        ]));
    }
    let meta = meta();
    let mut root = Selections::default();
    collect(ROOT, set, &mut root.fields, 0);
    let mut errors = Vec::new();
    validate(meta, ROOT, &root, &mut errors);
    if !errors.is_empty() {
        return Err(IntrospectionError::Rejected(errors));
    }
    let mut writer = Writer {
        types,
        meta,
        out: Vec::with_capacity(4096),
        visible: None,
        merged: HashMap::new(),
    };
    // The root object by hand, to record where each field's value lies.
    writer.out.push(b'{');
    let mut fields = Vec::with_capacity(root.fields.len());
    for (i, (key, selected)) in root.fields.iter().enumerate() {
        if i > 0 {
            writer.out.push(b',');
        }
        writer.string(key);
        writer.out.push(b':');
        let start = writer.out.len();
        writer.field(Node::Root, selected);
        fields.push(((*key).to_owned(), start..writer.out.len()));
    }
    writer.out.push(b'}');
    // The answer may be kept (per role and version): without the doubling's spare capacity.
    writer.out.shrink_to_fit();
    Ok(Answer {
        json: writer.out,
        fields,
    })
}

/// The answer to an introspection document: the `data` object's JSON, and where in it each
/// root field's value lies (so the fields can be placed among an operation's other fields
/// without reading the JSON back).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The `data` object.
    pub json: Vec<u8>,
    /// Each response key and the byte range of its value in `json`, in document order.
    pub fields: Vec<(String, std::ops::Range<usize>)>,
}

/// The selection set of the document's only operation (the planner prints one `query`).
fn operation(doc: &ExecutableDocument) -> Result<&SelectionSet, IntrospectionError> {
    let mut operations = doc.operations.iter();
    match (operations.next(), operations.next()) {
        (Some((_, op)), None) if op.node.ty == OperationType::Query => {
            Ok(&op.node.selection_set.node)
        }
        _ => Err(IntrospectionError::Parse("expected one query".into())),
    }
}

/// A value of the introspection types.
#[derive(Clone, Copy)]
enum Node<'a> {
    /// The root of the introspection document (`__schema`, `__type`).
    Root,
    /// `__Schema`.
    Schema,
    /// `__Type`.
    Type(Ty<'a>),
    /// `__Field`.
    Field(&'a FieldDef),
    /// `__InputValue`.
    Input(&'a InputValueDef),
    /// `__EnumValue`.
    EnumValue(&'a EnumValueDef),
    /// `__Directive`.
    Directive(&'a Directive),
}

impl Node<'_> {
    fn type_name(&self) -> &'static str {
        match self {
            Node::Root => ROOT,
            Node::Schema => "__Schema",
            Node::Type(_) => "__Type",
            Node::Field(_) => "__Field",
            Node::Input(_) => "__InputValue",
            Node::EnumValue(_) => "__EnumValue",
            Node::Directive(_) => "__Directive",
        }
    }
}

/// A `__Type`: a named type (of the role or of introspection), a list or non-null wrapper
/// (its kind read from the reference), or a name no type answers to.
#[derive(Clone, Copy)]
enum Ty<'a> {
    Named(&'a TypeDef),
    Wrapped(&'a TypeRef),
    /// A dangling reference: a generation bug, answered as a scalar of that name rather than
    /// failing the whole schema fetch.
    Unknown(&'a str),
}

/// The fields asked of one value, merged by response key across repeated fields and inline
/// fragments (`{ a { x } a { y } }` asks `a { x y }`).
#[derive(Default)]
struct Selections<'d> {
    fields: IndexMap<&'d str, Vec<&'d AstField>>,
}

impl<'d> Selections<'d> {
    /// The merged selections of one response key's fields, on type `on`.
    fn of(on: &str, fields: &[&'d AstField]) -> Self {
        let mut merged = Selections::default();
        for field in fields {
            collect(on, &field.selection_set.node, &mut merged.fields, 0);
        }
        merged
    }
}

/// The pseudo-type of the introspection document's root (`__schema`, `__type`).
const ROOT: &str = "__Root";

/// Adds the fields of a selection set that apply to type `on`. The planner printed the
/// document with every named fragment inlined and checked their nesting: a spread left here
/// is refused by [`answer`], and the depth bound only guards against a document that was
/// not printed by the planner.
fn collect<'d>(
    on: &str,
    set: &'d SelectionSet,
    fields: &mut IndexMap<&'d str, Vec<&'d AstField>>,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    for item in &set.items {
        match &item.node {
            Selection::Field(f) => {
                let key = f.node.response_key().node.as_str();
                fields.entry(key).or_default().push(&f.node);
            }
            Selection::InlineFragment(i) => {
                let applies = i
                    .node
                    .type_condition
                    .as_ref()
                    .is_none_or(|c| c.node.on.node.as_str() == on);
                if applies {
                    collect(on, &i.node.selection_set.node, fields, depth + 1);
                }
            }
            Selection::FragmentSpread(_) => {}
        }
    }
}

/// Named fragment spreads anywhere in a selection set.
fn has_spread(set: &SelectionSet) -> bool {
    set.items.iter().any(|item| match &item.node {
        Selection::FragmentSpread(_) => true,
        Selection::InlineFragment(i) => has_spread(&i.node.selection_set.node),
        Selection::Field(f) => has_spread(&f.node.selection_set.node),
    })
}

/// Checks a selection against the introspection types: known fields and arguments, required
/// arguments present and of the right kind, sub-selections exactly on object-typed fields.
fn validate(meta: &TypeSystem, on: &str, selections: &Selections<'_>, errors: &mut Vec<String>) {
    for fields in selections.fields.values() {
        for field in fields {
            validate_field(meta, on, field, errors);
        }
        // Fields sharing a response key are merged: their merged selection is checked once.
        let first = fields.first().map(|f| f.name.node.as_str());
        if let Some(def) = first.and_then(|name| fields_on(meta, on)?.get(name)) {
            let target = def.ty.base();
            if meta.is_composite(target) {
                validate(meta, target, &Selections::of(target, fields), errors);
            }
        }
    }
}

/// The fields of an introspection type (or of the root pseudo-type).
fn fields_on<'m>(meta: &'m TypeSystem, on: &str) -> Option<&'m IndexMap<Name, FieldDef>> {
    if on == ROOT {
        Some(&ROOT_FIELDS)
    } else {
        meta.fields_of(on)
    }
}

fn validate_field(meta: &TypeSystem, on: &str, field: &AstField, errors: &mut Vec<String>) {
    let name = field.name.node.as_str();
    if name == "__typename" {
        if !field.selection_set.node.items.is_empty() {
            errors.push(format!(
                "Field \"__typename\" of type \"{on}\" is a String: it takes no selection."
            ));
        }
        return;
    }
    let Some(def) = fields_on(meta, on).and_then(|f| f.get(name)) else {
        errors.push(format!("Unknown field \"{name}\" on type \"{on}\"."));
        return;
    };
    for (arg, value) in &field.arguments {
        let arg = arg.node.as_str();
        match def.argument(arg) {
            None => errors.push(format!(
                "Unknown argument \"{arg}\" on field \"{name}\" of type \"{on}\"."
            )),
            Some(declared) if !fits(&declared.ty, &value.node) => errors.push(format!(
                "Invalid value for argument \"{arg}\" of field \"{name}\": expected {}.",
                declared.ty
            )),
            Some(_) => {}
        }
    }
    for declared in def.args.iter() {
        let given = field
            .arguments
            .iter()
            .any(|(a, _)| a.node.as_str() == declared.name);
        if declared.ty.is_non_null() && declared.default.is_none() && !given {
            errors.push(format!(
                "Field \"{name}\" of type \"{on}\" needs its argument \"{}\" ({}).",
                declared.name, declared.ty
            ));
        }
    }
    let composite = meta.is_composite(def.ty.base());
    let selected = !field.selection_set.node.items.is_empty();
    if composite && !selected {
        errors.push(format!(
            "Field \"{name}\" of type \"{on}\" must have a selection of subfields."
        ));
    } else if !composite && selected {
        errors.push(format!(
            "Field \"{name}\" of type \"{on}\" is a leaf ({}): it takes no selection.",
            def.ty
        ));
    }
}

/// Whether a literal fits an argument of the introspection types (`Boolean`, `String`).
fn fits(ty: &TypeRef, value: &GqlValue) -> bool {
    match (ty.base(), value) {
        (_, GqlValue::Null) => !ty.is_non_null(),
        ("Boolean", GqlValue::Boolean(_)) | ("String", GqlValue::String(_)) => true,
        _ => false,
    }
}

/// The JSON writer walking the type system.
struct Writer<'a, 'd> {
    types: &'a TypeSystem,
    meta: &'a TypeSystem,
    out: Vec<u8>,
    /// Types reachable from the roots (what `__schema.types` and `__type` show), computed
    /// when first needed.
    visible: Option<HashSet<&'a str>>,
    /// Merged selections by (fields, type): the same few are asked of every field, argument and
    /// input field of the schema (each one's `type { … ofType { … } }`), merged once each.
    merged: HashMap<(usize, usize, &'static str), Rc<Selections<'d>>>,
}

impl<'a, 'd> Writer<'a, 'd> {
    fn raw(&mut self, text: &str) {
        self.out.extend_from_slice(text.as_bytes());
    }

    fn string(&mut self, text: &str) {
        // Writing JSON into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.out, text);
    }

    fn opt_string(&mut self, text: Option<&str>) {
        match text {
            Some(t) => self.string(t),
            None => self.raw("null"),
        }
    }

    fn bool(&mut self, value: bool) {
        self.raw(if value { "true" } else { "false" });
    }

    /// A named type of the role, of introspection, or a built-in scalar.
    fn named(&self, name: &str) -> Option<&'a TypeDef> {
        lookup(self.types, self.meta, name)
    }

    fn visible(&mut self) -> &HashSet<&'a str> {
        let (types, meta) = (self.types, self.meta);
        self.visible.get_or_insert_with(|| reachable(types, meta))
    }

    /// The merged selections of `fields` on `on`, remembered.
    fn selections(&mut self, on: &'static str, fields: &[&'d AstField]) -> Rc<Selections<'d>> {
        let key = (fields.as_ptr() as usize, fields.len(), on);
        self.merged
            .entry(key)
            .or_insert_with(|| Rc::new(Selections::of(on, fields)))
            .clone()
    }

    fn object(&mut self, node: Node<'a>, selections: &Selections<'d>) {
        self.out.push(b'{');
        for (i, (key, fields)) in selections.fields.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.string(key);
            self.out.push(b':');
            self.field(node, fields);
        }
        self.out.push(b'}');
    }

    fn list<I>(&mut self, items: I, on: &'static str, fields: &[&'d AstField])
    where
        I: IntoIterator<Item = Node<'a>>,
    {
        let sub = self.selections(on, fields);
        self.out.push(b'[');
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.object(item, &sub);
        }
        self.out.push(b']');
    }

    fn single(&mut self, item: Option<Node<'a>>, fields: &[&'d AstField]) {
        match item {
            Some(node) => {
                let sub = self.selections(node.type_name(), fields);
                self.object(node, &sub);
            }
            None => self.raw("null"),
        }
    }

    fn of_ref(&self, ty: &'a TypeRef) -> Node<'a> {
        Node::Type(match ty {
            TypeRef::NonNull(_) | TypeRef::List(_) => Ty::Wrapped(ty),
            TypeRef::Named(name) => self.named(name).map_or(Ty::Unknown(name), Ty::Named),
        })
    }

    fn field(&mut self, node: Node<'a>, fields: &[&'d AstField]) {
        let Some(field) = fields.first() else {
            return self.raw("null");
        };
        let name = field.name.node.as_str();
        if name == "__typename" {
            return self.string(node.type_name());
        }
        // `includeDeprecated` changes nothing: no field, argument or value is deprecated.
        match node {
            Node::Root => match name {
                "__schema" => self.single(Some(Node::Schema), fields),
                "__type" => {
                    let wanted = string_arg(field, "name").unwrap_or_default();
                    let found = self
                        .named(&wanted)
                        .filter(|def| self.visible().contains(def.name().as_str()));
                    self.single(found.map(|d| Node::Type(Ty::Named(d))), fields)
                }
                _ => self.raw("null"),
            },
            Node::Schema => self.schema_field(name, fields),
            Node::Type(ty) => self.type_field(ty, name, fields),
            Node::Field(def) => match name {
                "name" => self.string(&def.name),
                "description" => self.opt_string(def.description.as_deref()),
                "args" => self.list(def.args.iter().map(Node::Input), "__InputValue", fields),
                "type" => {
                    let target = self.of_ref(&def.ty);
                    self.single(Some(target), fields)
                }
                "isDeprecated" => self.bool(false),
                _ => self.raw("null"),
            },
            Node::Input(def) => match name {
                "name" => self.string(&def.name),
                "description" => self.opt_string(def.description.as_deref()),
                "type" => {
                    let target = self.of_ref(&def.ty);
                    self.single(Some(target), fields)
                }
                "defaultValue" => {
                    let printed = def.default.as_deref().map(graphql_literal);
                    self.opt_string(printed.as_deref())
                }
                "isDeprecated" => self.bool(false),
                _ => self.raw("null"),
            },
            Node::EnumValue(def) => match name {
                "name" => self.string(&def.name),
                "description" => self.opt_string(def.description.as_deref()),
                "isDeprecated" => self.bool(false),
                _ => self.raw("null"),
            },
            Node::Directive(def) => match name {
                "name" => self.string(def.name),
                "description" => self.string(def.description),
                "locations" => {
                    self.out.push(b'[');
                    for (i, location) in def.locations.iter().enumerate() {
                        if i > 0 {
                            self.out.push(b',');
                        }
                        self.string(location);
                    }
                    self.out.push(b']');
                }
                "args" => self.list(def.args.iter().map(Node::Input), "__InputValue", fields),
                "isRepeatable" => self.bool(false),
                _ => self.raw("null"),
            },
        }
    }

    fn schema_field(&mut self, name: &str, fields: &[&'d AstField]) {
        let types = self.types;
        match name {
            "types" => {
                let (types, meta) = (self.types, self.meta);
                let mut shown: Vec<&'a TypeDef> = self
                    .visible()
                    .iter()
                    .filter_map(|n| lookup(types, meta, n))
                    .collect();
                shown.sort_unstable_by(|a, b| a.name().cmp(b.name()));
                self.list(
                    shown.into_iter().map(|d| Node::Type(Ty::Named(d))),
                    "__Type",
                    fields,
                )
            }
            "queryType" => {
                let root = self.named(&types.query_root);
                self.single(root.map(|d| Node::Type(Ty::Named(d))), fields)
            }
            "mutationType" => {
                let root = types.mutation_root.as_deref().and_then(|n| self.named(n));
                self.single(root.map(|d| Node::Type(Ty::Named(d))), fields)
            }
            "subscriptionType" => {
                let root = types
                    .subscription_root
                    .as_deref()
                    .and_then(|n| self.named(n));
                self.single(root.map(|d| Node::Type(Ty::Named(d))), fields)
            }
            "directives" => self.list(
                DIRECTIVES.iter().map(Node::Directive),
                "__Directive",
                fields,
            ),
            _ => self.raw("null"),
        }
    }

    fn type_field(&mut self, ty: Ty<'a>, name: &str, fields: &[&'d AstField]) {
        let def = match ty {
            Ty::Named(def) => def,
            Ty::Unknown(missing) => {
                return match name {
                    "kind" => self.string("SCALAR"),
                    "name" => self.string(missing),
                    _ => self.raw("null"),
                };
            }
            Ty::Wrapped(wrapper) => {
                return match (name, wrapper) {
                    ("kind", TypeRef::List(_)) => self.string("LIST"),
                    ("kind", _) => self.string("NON_NULL"),
                    ("ofType", TypeRef::List(inner) | TypeRef::NonNull(inner)) => {
                        let target = self.of_ref(inner);
                        self.single(Some(target), fields)
                    }
                    _ => self.raw("null"),
                };
            }
        };
        match name {
            "kind" => self.string(kind(def)),
            "name" => self.string(def.name()),
            "description" => self.opt_string(description(def)),
            "fields" => match def {
                TypeDef::Object {
                    fields: members, ..
                }
                | TypeDef::Interface {
                    fields: members, ..
                } => self.list(
                    members
                        .values()
                        .filter(|f| !f.name.starts_with("__"))
                        .map(Node::Field),
                    "__Field",
                    fields,
                ),
                _ => self.raw("null"),
            },
            "interfaces" => match def {
                TypeDef::Object { interfaces, .. } => {
                    let shown: Vec<&'a TypeDef> =
                        interfaces.iter().filter_map(|n| self.named(n)).collect();
                    self.list(
                        shown.into_iter().map(|d| Node::Type(Ty::Named(d))),
                        "__Type",
                        fields,
                    )
                }
                _ => self.raw("null"),
            },
            "possibleTypes" => match def {
                TypeDef::Union { members, .. } => {
                    let shown: Vec<&'a TypeDef> =
                        members.iter().filter_map(|n| self.named(n)).collect();
                    self.list(
                        shown.into_iter().map(|d| Node::Type(Ty::Named(d))),
                        "__Type",
                        fields,
                    )
                }
                TypeDef::Interface { name: iface, .. } => {
                    let shown = implementers(self.types, iface);
                    self.list(
                        shown.into_iter().map(|d| Node::Type(Ty::Named(d))),
                        "__Type",
                        fields,
                    )
                }
                _ => self.raw("null"),
            },
            "enumValues" => match def {
                TypeDef::Enum { values, .. } => {
                    self.list(values.iter().map(Node::EnumValue), "__EnumValue", fields)
                }
                _ => self.raw("null"),
            },
            "inputFields" => match def {
                TypeDef::Input {
                    fields: members, ..
                } => self.list(members.values().map(Node::Input), "__InputValue", fields),
                _ => self.raw("null"),
            },
            "isOneOf" => match def {
                TypeDef::Input { .. } => self.bool(false),
                _ => self.raw("null"),
            },
            // `ofType` of a named type, `specifiedByURL` (no scalar names a specification).
            _ => self.raw("null"),
        }
    }
}

fn kind(def: &TypeDef) -> &'static str {
    match def {
        TypeDef::Object { .. } => "OBJECT",
        TypeDef::Interface { .. } => "INTERFACE",
        TypeDef::Union { .. } => "UNION",
        TypeDef::Input { .. } => "INPUT_OBJECT",
        TypeDef::Enum { .. } => "ENUM",
        TypeDef::Scalar { .. } => "SCALAR",
    }
}

fn description(def: &TypeDef) -> Option<&str> {
    match def {
        TypeDef::Object { description, .. }
        | TypeDef::Interface { description, .. }
        | TypeDef::Union { description, .. }
        | TypeDef::Input { description, .. }
        | TypeDef::Enum { description, .. }
        | TypeDef::Scalar { description, .. } => description.as_deref(),
    }
}

/// A named type of the role, of introspection, or a built-in scalar.
fn lookup<'a>(types: &'a TypeSystem, meta: &'a TypeSystem, name: &str) -> Option<&'a TypeDef> {
    types.get(name).or_else(|| meta.get(name))
}

/// Objects implementing an interface, by name.
fn implementers<'a>(types: &'a TypeSystem, interface: &str) -> Vec<&'a TypeDef> {
    let mut found: Vec<&TypeDef> = types
        .types
        .values()
        .map(|t| &**t)
        .filter(|t| matches!(t, TypeDef::Object { interfaces, .. } if interfaces.iter().any(|i| i == interface)))
        .collect();
    found.sort_unstable_by(|a, b| a.name().cmp(b.name()));
    found
}

/// The names of the types a client can reach: from the roots through fields, arguments,
/// input fields, union members and interfaces (an interface is shown when one of its
/// implementers is), plus the introspection types and the built-in scalars, always.
fn reachable<'a>(types: &'a TypeSystem, meta: &'a TypeSystem) -> HashSet<&'a str> {
    let mut seen: HashSet<&'a str> = meta.types.keys().map(Name::as_str).collect();
    let mut stack: Vec<&'a str> = Vec::new();
    stack.push(&types.query_root);
    stack.extend(types.mutation_root.as_deref());
    stack.extend(types.subscription_root.as_deref());
    while let Some(name) = stack.pop() {
        let Some((key, def)) = types.types.get_key_value(name) else {
            continue;
        };
        if !seen.insert(key.as_str()) {
            continue;
        }
        let mut push_ref = |ty: &'a TypeRef| {
            let base = ty.base();
            if !seen.contains(base) {
                stack.push(base);
            }
        };
        match &**def {
            TypeDef::Object {
                fields, interfaces, ..
            } => {
                for f in fields.values() {
                    push_ref(&f.ty);
                    f.args.iter().for_each(|a| push_ref(&a.ty));
                }
                stack.extend(interfaces.iter().map(Name::as_str));
            }
            TypeDef::Interface { fields, .. } => {
                for f in fields.values() {
                    push_ref(&f.ty);
                    f.args.iter().for_each(|a| push_ref(&a.ty));
                }
            }
            TypeDef::Union { members, .. } => stack.extend(members.iter().map(Name::as_str)),
            TypeDef::Input { fields, .. } => fields.values().for_each(|a| push_ref(&a.ty)),
            TypeDef::Enum { .. } | TypeDef::Scalar { .. } => {}
        }
    }
    seen
}

fn argument<'f>(field: &'f AstField, name: &str) -> Option<&'f Positioned<GqlValue>> {
    field
        .arguments
        .iter()
        .find(|(n, _)| n.node.as_str() == name)
        .map(|(_, v)| v)
}

fn string_arg(field: &AstField, name: &str) -> Option<String> {
    match argument(field, name).map(|v| &v.node) {
        Some(GqlValue::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// A JSON value (a default, a constant) as a GraphQL literal: strings quoted, object keys
/// bare.
pub(crate) fn graphql_literal(value: &Value) -> String {
    match value {
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{k}: {}", graphql_literal(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(graphql_literal)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}
