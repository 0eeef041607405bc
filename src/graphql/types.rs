//! A GraphQL type system as plain data: what a role's schema contains. The validator checks
//! documents against it and [`super::introspection`] answers `__schema` / `__type` from it.

use indexmap::IndexMap;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// A name or description in a type system. A role's schema over many tables holds a great many
/// of them: short ones (most field and argument names) are stored inline, longer ones are
/// shared on clone, and fixed texts take no allocation at all.
pub type Name = smol_str::SmolStr;

/// A description taken from metadata (`comment`, `description`) into a type system.
pub fn text(description: &Option<String>) -> Option<Name> {
    description.as_deref().map(Name::from)
}

/// A type reference: `T`, `[T]`, `T!` and nestings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeRef {
    /// A named type.
    Named(Name),
    /// A list of the inner type.
    List(Box<TypeRef>),
    /// The inner type, not null.
    NonNull(Box<TypeRef>),
}

impl TypeRef {
    /// `T`.
    pub fn named(name: impl Into<Name>) -> Self {
        TypeRef::Named(name.into())
    }

    /// `T!`.
    pub fn non_null(name: impl Into<Name>) -> Self {
        TypeRef::NonNull(Box::new(TypeRef::named(name)))
    }

    /// `[T!]!`.
    pub fn list_of_non_null(name: impl Into<Name>) -> Self {
        TypeRef::NonNull(Box::new(TypeRef::List(Box::new(TypeRef::non_null(name)))))
    }

    /// `[T!]`.
    pub fn nullable_list_of_non_null(name: impl Into<Name>) -> Self {
        TypeRef::List(Box::new(TypeRef::non_null(name)))
    }

    /// Reads a type expression (`Int`, `[Obj!]!`); `None` when it is malformed.
    pub fn parse(expr: &str) -> Option<TypeRef> {
        fn inner(rest: &str) -> Option<(TypeRef, &str)> {
            let rest = rest.trim_start();
            let (ty, rest) = if let Some(r) = rest.strip_prefix('[') {
                let (element, r) = inner(r)?;
                (
                    TypeRef::List(Box::new(element)),
                    r.trim_start().strip_prefix(']')?,
                )
            } else {
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                let (name, r) = rest.split_at(end);
                if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                    return None;
                }
                (TypeRef::named(name), r)
            };
            let rest = rest.trim_start();
            match rest.strip_prefix('!') {
                Some(r) => Some((TypeRef::NonNull(Box::new(ty)), r)),
                None => Some((ty, rest)),
            }
        }
        let (ty, rest) = inner(expr)?;
        rest.trim().is_empty().then_some(ty)
    }

    /// The type without a top-level `!`.
    pub fn nullable(&self) -> &TypeRef {
        match self {
            TypeRef::NonNull(inner) => inner,
            other => other,
        }
    }

    /// The innermost named type.
    pub fn base(&self) -> &str {
        match self {
            TypeRef::Named(n) => n,
            TypeRef::List(inner) | TypeRef::NonNull(inner) => inner.base(),
        }
    }

    /// Whether null is not allowed at the top.
    pub fn is_non_null(&self) -> bool {
        matches!(self, TypeRef::NonNull(_))
    }
}

impl fmt::Display for TypeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeRef::Named(n) => f.write_str(n),
            TypeRef::List(inner) => write!(f, "[{inner}]"),
            TypeRef::NonNull(inner) => write!(f, "{inner}!"),
        }
    }
}

/// An argument or input-object field.
#[derive(Debug, Clone, PartialEq)]
pub struct InputValueDef {
    pub name: Name,
    pub description: Option<Name>,
    pub ty: TypeRef,
    /// Default value (JSON form of a GraphQL constant). Boxed: few inputs have one, and a large
    /// schema holds very many inputs.
    pub default: Option<Box<Value>>,
}

impl InputValueDef {
    /// An input value without description or default.
    pub fn new(name: impl Into<Name>, ty: TypeRef) -> Self {
        InputValueDef {
            name: name.into(),
            description: None,
            ty,
            default: None,
        }
    }
}

/// A field, argument or input field: stored in its type under its own name.
pub trait Member {
    /// The member's name, its key in the type.
    fn key(&self) -> &Name;
}

impl Member for InputValueDef {
    fn key(&self) -> &Name {
        &self.name
    }
}

impl Member for FieldDef {
    fn key(&self) -> &Name {
        &self.name
    }
}

/// Adding members to a type's ordered map under their own names (the key shares the name's
/// storage).
pub trait Members<T> {
    /// Adds or replaces the member of that name.
    fn put(&mut self, member: T);
}

impl<T: Member> Members<T> for IndexMap<Name, T> {
    fn put(&mut self, member: T) {
        self.insert(member.key().clone(), member);
    }
}

/// An output field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDef {
    pub name: Name,
    pub description: Option<Name>,
    /// Arguments in order: a handful per field at most, so a list (looked up by
    /// [`FieldDef::argument`]) rather than a map with its hash table and second copy of
    /// each name.
    pub args: Vec<InputValueDef>,
    pub ty: TypeRef,
}

impl FieldDef {
    /// A field without arguments.
    pub fn new(name: impl Into<Name>, ty: TypeRef) -> Self {
        FieldDef {
            name: name.into(),
            description: None,
            args: Vec::new(),
            ty,
        }
    }

    /// Adds an argument, replacing one of the same name.
    pub fn arg(mut self, arg: InputValueDef) -> Self {
        match self.args.iter_mut().find(|a| a.name == arg.name) {
            Some(known) => *known = arg,
            None => self.args.push(arg),
        }
        self
    }

    /// The argument of that name.
    pub fn argument(&self, name: &str) -> Option<&InputValueDef> {
        self.args.iter().find(|a| a.name == name)
    }

    pub fn describe(mut self, text: impl Into<Name>) -> Self {
        self.description = Some(text.into());
        self
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct EnumValueDef {
    pub name: Name,
    pub description: Option<Name>,
}

/// A named type.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeDef {
    /// Object with fields.
    Object {
        name: Name,
        description: Option<Name>,
        /// Fields in order.
        fields: IndexMap<Name, FieldDef>,
        /// Interfaces it implements (only remote schemas declare any).
        interfaces: Vec<Name>,
    },
    /// Interface (from remote schemas).
    Interface {
        name: Name,
        description: Option<Name>,
        /// Fields in order.
        fields: IndexMap<Name, FieldDef>,
    },
    /// Union of object types (from remote schemas).
    Union {
        name: Name,
        description: Option<Name>,
        /// Member object types.
        members: Vec<Name>,
    },
    /// Input object.
    Input {
        name: Name,
        description: Option<Name>,
        /// Fields in order.
        fields: IndexMap<Name, InputValueDef>,
    },
    Enum {
        name: Name,
        description: Option<Name>,
        /// Values in order.
        values: Vec<EnumValueDef>,
    },
    /// Custom scalar (built-ins are implicit).
    Scalar {
        name: Name,
        description: Option<Name>,
    },
}

/// Where root fields merged from a remote schema go: the remote's name for each field of
/// the query and mutation roots.
#[derive(Debug, Clone, Default)]
pub struct RemoteRoots {
    /// `query_root` field → remote schema name.
    pub query: std::collections::HashMap<String, String>,
    /// `mutation_root` field → remote schema name.
    pub mutation: std::collections::HashMap<String, String>,
}

impl TypeDef {
    pub fn name(&self) -> &Name {
        match self {
            TypeDef::Object { name, .. }
            | TypeDef::Interface { name, .. }
            | TypeDef::Union { name, .. }
            | TypeDef::Input { name, .. }
            | TypeDef::Enum { name, .. }
            | TypeDef::Scalar { name, .. } => name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system(author_fields: &[&str]) -> TypeSystem {
        let mut types = TypeSystem::default();
        types.add(TypeDef::Object {
            name: "author".into(),
            description: None,
            fields: author_fields
                .iter()
                .map(|f| (Name::from(*f), FieldDef::new(*f, TypeRef::named("Int"))))
                .collect(),
            interfaces: Vec::new(),
        });
        types.add(TypeDef::Scalar {
            name: "uuid".into(),
            description: None,
        });
        types
    }

    #[test]
    fn equal_types_are_shared_and_changed_copies_stay_apart() {
        let mut shared = std::collections::HashMap::new();
        let mut admin = system(&["id", "name"]);
        admin.share(&mut shared);
        let mut full = system(&["id", "name"]);
        full.share(&mut shared);
        let mut narrow = system(&["id"]);
        narrow.share(&mut shared);
        assert!(Arc::ptr_eq(&admin.types["author"], &full.types["author"]));
        assert!(!Arc::ptr_eq(
            &admin.types["author"],
            &narrow.types["author"]
        ));
        assert!(Arc::ptr_eq(&admin.types["uuid"], &narrow.types["uuid"]));
        // Changing a shared definition copies it: the other role's type is untouched.
        if let Some(TypeDef::Object { fields, .. }) = full.get_mut("author") {
            fields.shift_remove("name");
        }
        assert_eq!(admin.object_fields("author").map(|f| f.len()), Some(2));
        assert_eq!(full.object_fields("author").map(|f| f.len()), Some(1));
    }

    #[test]
    fn type_expressions_read_back_as_written() {
        for expr in ["Int", "Obj!", "[Obj]", "[Obj!]!", "[[a!]]!"] {
            assert_eq!(
                TypeRef::parse(expr).map(|t| t.to_string()).as_deref(),
                Some(expr)
            );
        }
        assert_eq!(
            TypeRef::parse(" [ Obj ! ] ! ")
                .map(|t| t.to_string())
                .as_deref(),
            Some("[Obj!]!")
        );
        for bad in ["", "[Obj", "Obj]", "1x", "Obj!!", "[]"] {
            assert_eq!(TypeRef::parse(bad), None, "{bad}");
        }
    }
}

/// The built-in scalars every schema has.
pub const BUILTIN_SCALARS: [&str; 5] = ["Int", "Float", "String", "Boolean", "ID"];

/// A role's whole type system.
#[derive(Debug, Clone, Default)]
pub struct TypeSystem {
    /// Named types (built-in scalars excluded). Shared: roles whose view of a table is the
    /// same hold the same definitions ([`TypeSystem::share`]).
    pub types: IndexMap<Name, Arc<TypeDef>>,
    /// Name of the query root.
    pub query_root: String,
    /// Name of the mutation root, when the role may write.
    pub mutation_root: Option<String>,
    /// Name of the subscription root, when the role may select from some table.
    pub subscription_root: Option<String>,
    /// Root fields answered by remote schemas.
    pub remote: RemoteRoots,
}

impl TypeSystem {
    /// Adds a type unless one of that name exists.
    pub fn add(&mut self, def: TypeDef) {
        self.types
            .entry(def.name().clone())
            .or_insert_with(|| Arc::new(def));
    }

    /// Adds a type, replacing any of that name.
    pub fn insert(&mut self, def: TypeDef) {
        self.types.insert(def.name().clone(), Arc::new(def));
    }

    /// A type by name.
    pub fn get(&self, name: &str) -> Option<&TypeDef> {
        self.types.get(name).map(|d| &**d)
    }

    /// A type by name, to change (copied first if another type system shares it).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut TypeDef> {
        self.types.get_mut(name).map(Arc::make_mut)
    }

    /// Makes this type system hold the definitions of `shared` wherever they are equal, and
    /// adds its other types to `shared`: the types of a table that two roles see alike are
    /// then stored once (for roles with broad access, most of their types).
    pub fn share(&mut self, shared: &mut std::collections::HashMap<Name, Arc<TypeDef>>) {
        for (name, def) in self.types.iter_mut() {
            match shared.get(name) {
                Some(known) if Arc::ptr_eq(known, def) => {}
                Some(known) if **known == **def => *def = known.clone(),
                Some(_) => {}
                None => {
                    shared.insert(name.clone(), def.clone());
                }
            }
        }
    }

    /// Fields of an object type.
    pub fn object_fields(&self, name: &str) -> Option<&IndexMap<Name, FieldDef>> {
        match self.get(name) {
            Some(TypeDef::Object { fields, .. }) => Some(fields),
            _ => None,
        }
    }

    /// Fields of an object or interface type (what a selection on it may name).
    pub fn fields_of(&self, name: &str) -> Option<&IndexMap<Name, FieldDef>> {
        match self.get(name) {
            Some(TypeDef::Object { fields, .. } | TypeDef::Interface { fields, .. }) => {
                Some(fields)
            }
            _ => None,
        }
    }

    /// Whether `name` is an object, interface or union (a type with a selection set).
    pub fn is_composite(&self, name: &str) -> bool {
        matches!(
            self.get(name),
            Some(TypeDef::Object { .. } | TypeDef::Interface { .. } | TypeDef::Union { .. })
        )
    }

    /// Whether `name` is a scalar or enum (a leaf).
    pub fn is_leaf(&self, name: &str) -> bool {
        BUILTIN_SCALARS.contains(&name)
            || matches!(
                self.get(name),
                Some(TypeDef::Scalar { .. } | TypeDef::Enum { .. })
            )
    }
}
