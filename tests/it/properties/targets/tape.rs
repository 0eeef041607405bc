//! Choices read from bytes, and the strings and JSON values generators draw.

use serde_json::{json, Value};

/// A source of choices: one byte per choice, zero once the bytes run out.
#[derive(Debug)]
pub struct Tape<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Tape<'a> {
    /// Choices read from `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Tape { bytes, at: 0 }
    }

    fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at = self.at.saturating_add(1);
        b
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        match n {
            0 | 1 => 0,
            2..=256 => self.byte() as usize % n,
            _ => (usize::from(self.byte()) << 8 | usize::from(self.byte())) % n,
        }
    }

    /// True with about `percent` % probability; false when the tape has run out.
    pub fn chance(&mut self, percent: u32) -> bool {
        u32::from(self.byte()) * 100 >= (100 - percent.min(100)) * 256
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'i, T>(&mut self, items: &'i [T]) -> &'i T {
        &items[self.below(items.len())]
    }

    /// Whether every byte has been read.
    pub fn exhausted(&self) -> bool {
        self.at >= self.bytes.len()
    }

    /// The bytes not read yet (consumed).
    pub fn rest(&mut self) -> &'a [u8] {
        let rest = self.bytes.get(self.at..).unwrap_or_default();
        self.at = self.bytes.len();
        rest
    }
}

/// Strings that mean something to some parser or rule, and some that mean trouble.
const STRINGS: &[&str] = &[
    "",
    "Ann",
    "Bo",
    "%o%",
    "_",
    "published",
    "draft",
    "Rust in practice",
    "x-svc-user-id",
    "X-Svc-User-Id",
    "X-Svc-Allowed-Ids",
    "x-svc-",
    "x-svc\u{e9}-id",
    "a\u{e9}\u{e9}\u{e9}\u{e9}",
    "\u{65e5}\u{672c}\u{8a9e}",
    "it's",
    "say \"hi\"",
    "back\\slash",
    "nul\u{0}byte",
    "line\nbreak",
    "{1,2}",
    "{\"a\",NULL}",
    "{\"a\": 1}",
    "$.city",
    "langs[1]",
    "$['x y']",
    "$[",
    "$.a[99999999999999999999]",
    "1",
    "-1.5",
    "1e400",
    "2020-01-01",
    "now()",
    "NaN",
    "[a-",
    "(",
    "'; SELECT 1; --",
    "\u{1F600}",
];

/// Characters random strings are made of.
const CHARS: &[char] = &[
    'a',
    'b',
    'z',
    'A',
    '0',
    '9',
    ' ',
    '_',
    '-',
    '.',
    '$',
    '%',
    '\'',
    '"',
    '\\',
    '{',
    '}',
    '[',
    ']',
    '(',
    ')',
    ',',
    ':',
    '\n',
    '\t',
    '\u{0}',
    '\u{7f}',
    '\u{e9}',
    '\u{65e5}',
    '\u{1F600}',
];

/// GraphQL names for keys of JSON values written as GraphQL literals.
const NAMES: &[&str] = &["a", "city", "langs", "x", "_y", "Z9"];

pub(super) fn string(tape: &mut Tape) -> String {
    if tape.below(3) < 2 {
        return (*tape.pick(STRINGS)).to_owned();
    }
    let len = tape.below(12);
    (0..len).map(|_| *tape.pick(CHARS)).collect()
}

/// Any JSON value.
pub(super) fn json_any(tape: &mut Tape, depth: usize) -> Value {
    let kinds = if depth >= 3 { 6 } else { 8 };
    match tape.below(kinds) {
        0 => Value::Null,
        1 => Value::Bool(tape.chance(50)),
        2 => json!(tape.below(2000) as i64 - 1000),
        3 => json!(*tape.pick(&[0.5, -1.25, 1e300, 3.0, 2147483648.0, -9.2e18])),
        4 | 5 => Value::String(string(tape)),
        6 => Value::Array(
            (0..tape.below(4))
                .map(|_| json_any(tape, depth + 1))
                .collect(),
        ),
        _ => Value::Object(
            (0..tape.below(4))
                .map(|_| {
                    let key = if tape.chance(70) {
                        (*tape.pick(NAMES)).to_owned()
                    } else {
                        string(tape)
                    };
                    (key, json_any(tape, depth + 1))
                })
                .collect(),
        ),
    }
}
