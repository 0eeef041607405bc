//! Names in generated SQL: catalog names, always quoted ([`Ident`], [`QualifiedName`]), and the
//! names Basalt invents, printed bare ([`Alias`]).

use std::borrow::Cow;
use std::fmt;

/// A name from the catalog or the metadata (column, constraint, CTE), printed double-quoted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ident(pub String);

impl Ident {
    pub fn new(name: impl Into<String>) -> Self {
        Ident(name.into())
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&super::quote::quote_ident(&self.0))
    }
}

pub use crate::names::QualifiedName;

/// A qualified name as SQL spells it: `"schema"."name"`, both parts always quoted.
#[derive(Debug, Clone, Copy)]
pub struct Quoted<'a>(pub &'a QualifiedName);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&super::quote::quote_qualified(&self.0.schema, &self.0.name))
    }
}

/// A name Basalt invents (table aliases `_t3`, `_kv`, `_session`, output names `data`),
/// printed as it is. Only constructible from a counter or a `'static` constant, so no input
/// can reach it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Alias(Cow<'static, str>);

impl Alias {
    /// The `n`th table alias of a statement: `_t<n>`.
    pub fn numbered(n: usize) -> Self {
        Alias(Cow::Owned(format!("_t{n}")))
    }

    /// A fixed name.
    pub const fn fixed(name: &'static str) -> Self {
        Alias(Cow::Borrowed(name))
    }
}

impl fmt::Display for Alias {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
