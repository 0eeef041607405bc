//! JSON select paths (`$.a.b[0]`, `a.b`, `$['x y']`) as lists of keys: the `path` argument of
//! json columns and the claims path of JWT settings. Pure; knows nothing else.

/// The keys of a path, or `None` when it is malformed. Array indexes are kept as text (`"0"`).
pub fn keys(path: &str) -> Option<Vec<String>> {
    let trimmed = path.strip_prefix('$').unwrap_or(path);
    let trimmed = trimmed.strip_prefix('.').unwrap_or(trimmed);
    let mut keys = Vec::new();
    for part in trimmed.split('.').filter(|p| !p.is_empty()) {
        let name_end = part.find('[').unwrap_or(part.len());
        if name_end > 0 {
            keys.push(part[..name_end].to_owned());
        }
        let mut rest = &part[name_end..];
        while let Some(r) = rest.strip_prefix('[') {
            let close = r.find(']')?;
            let index = r[..close].trim_matches(|c| c == '"' || c == '\'');
            if index.is_empty() {
                return None;
            }
            keys.push(index.to_owned());
            rest = &r[close + 1..];
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(keys)
}

#[cfg(test)]
mod tests {
    use super::keys;

    #[test]
    fn paths_become_key_lists() {
        assert_eq!(keys("$.a.b[0]").unwrap(), ["a", "b", "0"]);
        assert_eq!(keys("a").unwrap(), ["a"]);
        assert_eq!(keys("$['x y']").unwrap(), ["x y"]);
        assert_eq!(keys("$").unwrap(), Vec::<String>::new());
        assert!(keys("$.a[").is_none());
        assert!(keys("$.a[]").is_none());
        assert!(keys("$.a[0]b").is_none());
    }
}
