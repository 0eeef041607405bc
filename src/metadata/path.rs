//! JSON paths into a request (`$.args.table`, `$.args[2].args`), as error bodies report them.

use std::fmt;

/// A JSON path built from the request root `$`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JsonPath(String);

impl JsonPath {
    /// The root `$`.
    pub fn root() -> Self {
        JsonPath("$".to_owned())
    }

    /// `$.args`, where most operation errors point.
    pub fn args() -> Self {
        Self::root().key("args")
    }

    /// This path with an object key appended (`.key`, or `['key']` when it is not an identifier).
    pub fn key(&self, key: &str) -> Self {
        let mut out = self.0.clone();
        if is_identifier(key) {
            out.push('.');
            out.push_str(key);
        } else {
            out.push_str("['");
            out.push_str(&key.replace('\\', "\\\\").replace('\'', "\\'"));
            out.push_str("']");
        }
        JsonPath(out)
    }

    /// This path with an array index appended (`[n]`).
    pub fn index(&self, index: usize) -> Self {
        JsonPath(format!("{}[{index}]", self.0))
    }

    /// Re-roots `inner` (a path starting at `$`) under this path: `$.args[1]` + `$.args.x`
    /// gives `$.args[1].args.x`. Used to report errors of `bulk` elements.
    pub fn join(&self, inner: &JsonPath) -> Self {
        let rest = inner.0.strip_prefix('$').unwrap_or(&inner.0);
        JsonPath(format!("{}{rest}", self.0))
    }

    /// `i` when this path is at or under `$.args[i]`: the element of a `bulk` it points into.
    pub fn bulk_index(&self) -> Option<usize> {
        let rest = self.0.strip_prefix("$.args[")?;
        rest.split(']').next()?.parse().ok()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Keys that print with a dot: a letter or `_` first, then letters, digits, `_` or `-`.
fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_indexes_print_like_the_spec() {
        let p = JsonPath::args().key("table").index(2).key("odd key");
        assert_eq!(p.as_str(), "$.args.table[2]['odd key']");
        assert_eq!(JsonPath::root().key("1x").as_str(), "$['1x']");
    }

    #[test]
    fn join_reroots_an_inner_path() {
        let outer = JsonPath::args().index(1);
        assert_eq!(
            outer.join(&JsonPath::args().key("using")).as_str(),
            "$.args[1].args.using"
        );
        assert_eq!(outer.join(&JsonPath::root()).as_str(), "$.args[1]");
    }

    #[test]
    fn bulk_index_is_the_first_index_under_args() {
        let inner = JsonPath::args().key("table");
        assert_eq!(JsonPath::args().index(3).join(&inner).bulk_index(), Some(3));
        assert_eq!(JsonPath::args().index(0).bulk_index(), Some(0));
        assert_eq!(inner.bulk_index(), None);
        assert_eq!(JsonPath::root().bulk_index(), None);
    }
}
