//! Label selectors as the API server reads them from `?labelSelector=`: equality (`a=b`,
//! `a==b`), inequality (`a!=b`), existence (`a`, `!a`) and the set forms (`a in (x,y)`,
//! `a notin (x)`), comma-separated and all required. Pure.

use serde_json::Value;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Selector(Vec<Requirement>);

impl Selector {
    /// Parses the `labelSelector` query parameter; the error says which term is malformed.
    pub(crate) fn parse(text: &str) -> Result<Selector, String> {
        let mut requirements = Vec::new();
        for term in split_terms(text) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            requirements.push(requirement(term).ok_or_else(|| {
                format!("unable to parse requirement: {term:?} in label selector {text:?}")
            })?);
        }
        Ok(Selector(requirements))
    }

    /// Whether an object (its `metadata.labels`) satisfies every requirement.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => label(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => label(k) != Some(v.as_str()),
            Requirement::In(k, vs) => label(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => label(k).is_none_or(|l| vs.iter().all(|v| v != l)),
            Requirement::Exists(k) => label(k).is_some(),
            Requirement::NotExists(k) => label(k).is_none(),
        })
    }
}

/// Splits at commas outside parentheses (set values are comma-separated too).
fn split_terms(text: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&text[start..]);
    terms
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn requirement(term: &str) -> Option<Requirement> {
    if let Some(open) = term.find('(') {
        let values = term[open + 1..].strip_suffix(')')?;
        let values: Vec<String> = values
            .split(',')
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .collect();
        let mut words = term[..open].split_whitespace();
        let (key, operator) = (words.next()?, words.next()?);
        if words.next().is_some() || !valid_key(key) {
            return None;
        }
        return match operator {
            "in" => Some(Requirement::In(key.to_owned(), values)),
            "notin" => Some(Requirement::NotIn(key.to_owned(), values)),
            _ => None,
        };
    }
    let pair = |separator: &str| {
        term.split_once(separator)
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .filter(|(k, _)| valid_key(k))
    };
    if let Some((k, v)) = pair("!=") {
        return Some(Requirement::NotEquals(k, v));
    }
    if let Some((k, v)) = pair("==").or_else(|| pair("=")) {
        return Some(Requirement::Equals(k, v));
    }
    if let Some(key) = term.strip_prefix('!') {
        let key = key.trim();
        return valid_key(key).then(|| Requirement::NotExists(key.to_owned()));
    }
    valid_key(term).then(|| Requirement::Exists(term.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labelled(labels: Value) -> Value {
        json!({"metadata": {"name": "x", "labels": labels}})
    }

    #[test]
    fn every_form_matches_as_the_api_server_does() {
        let prod = labelled(json!({"env": "prod", "tier": "db"}));
        let dev = labelled(json!({"env": "dev"}));
        let none = json!({"metadata": {"name": "x"}});
        let cases = [
            ("env=prod", [true, false, false]),
            ("env==prod", [true, false, false]),
            ("env!=prod", [false, true, true]),
            ("tier", [true, false, false]),
            ("!tier", [false, true, true]),
            ("env in (prod, staging)", [true, false, false]),
            ("env notin (prod)", [false, true, true]),
            ("env=prod,tier=db", [true, false, false]),
            ("env in (dev,prod),!tier", [false, true, false]),
            ("", [true, true, true]),
        ];
        for (text, expected) in cases {
            let selector = Selector::parse(text).unwrap();
            let got = [&prod, &dev, &none].map(|o| selector.matches(o));
            assert_eq!(got, expected, "{text}");
        }
    }

    #[test]
    fn malformed_terms_are_refused() {
        for text in [
            "env in prod",
            "=prod",
            "env in (a",
            "a b",
            "env between (a)",
        ] {
            assert!(Selector::parse(text).is_err(), "{text}");
        }
    }
}
