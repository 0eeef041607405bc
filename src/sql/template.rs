//! A native query's code (`docs/native-queries.md`): SQL text with `{{argument}}` placeholders,
//! read once into text pieces and the arguments between them. Only placeholders in plain SQL
//! count: one inside a string, a quoted identifier, a dollar-quoted body or a comment is
//! refused, as are positional parameters (`$1`) of the code's own, and code that does not start
//! as a read (`SELECT`, `WITH`, `VALUES`, `TABLE`). Each distinct argument becomes one
//! parameter, numbered by first occurrence, so a value is always bound, never spliced.

/// A piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// SQL text, as written.
    Text(String),
    /// An argument's placeholder, by name (verbatim: `{{ id }}` names ` id `).
    Argument(String),
}

/// Code read into pieces, trailing spaces and `;` removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub pieces: Vec<Piece>,
}

/// Why code is not a template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("Found '{{{{' without a matching closing '}}}}'")]
    Unclosed,
    #[error("argument placeholder {{{{{0}}}}} is inside a quoted string or comment")]
    Quoted(String),
    #[error("positional parameters are not allowed, use {{{{argument}}}}")]
    Positional,
    #[error("native query code must be a single read-only query")]
    NotRead,
    #[error("native query code has an unterminated quoted string, quoted identifier or comment")]
    Unterminated,
}

impl Template {
    /// Reads `code`.
    pub fn parse(code: &str) -> Result<Self, TemplateError> {
        let code = code.trim_end_matches([' ', '\t', '\n', '\r', ';']);
        if !starts_as_read(code) {
            return Err(TemplateError::NotRead);
        }
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut rest = code;
        while let Some(c) = rest.chars().next() {
            if rest.starts_with("{{") {
                let inner = &rest[2..];
                let end = inner.find("}}").ok_or(TemplateError::Unclosed)?;
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::Argument(inner[..end].to_owned()));
                rest = &inner[end + 2..];
                continue;
            }
            let previous = text.chars().next_back().or_else(|| last_text_char(&pieces));
            // `$` continues an identifier (`a$1`, `a$$`): no parameter, no dollar quote.
            let after_identifier =
                previous.is_some_and(|p| p.is_alphanumeric() || p == '_' || p == '$');
            let skipped = match c {
                '\'' => Some(quoted(rest, '\'', escapes_backslash(&text))?),
                '"' => Some(quoted(rest, '"', false)?),
                '-' if rest.starts_with("--") => Some(line_comment(rest)?),
                '/' if rest.starts_with("/*") => Some(block_comment(rest)?),
                '$' if !after_identifier => match dollar_tag(rest) {
                    Some(tag) => Some(dollar_quoted(rest, tag)?),
                    None if rest[1..].starts_with(|d: char| d.is_ascii_digit()) => {
                        return Err(TemplateError::Positional)
                    }
                    None => None,
                },
                _ => None,
            };
            let len = skipped.unwrap_or(c.len_utf8());
            text.push_str(&rest[..len]);
            rest = &rest[len..];
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(Template { pieces })
    }

    /// The distinct arguments, in order of first use: argument `i` is parameter `i + 1`.
    pub fn arguments(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for piece in &self.pieces {
            if let Piece::Argument(name) = piece {
                if !out.contains(&name.as_str()) {
                    out.push(name);
                }
            }
        }
        out
    }
}

impl Template {
    /// The code with argument `i` (in [`Template::arguments`] order) as `$<i+1>::<type i>`,
    /// `types` being catalog spellings (`format_type`), followed by a newline so that a
    /// trailing `--` comment ends there.
    pub fn with_parameters(&self, types: &[&str]) -> String {
        let arguments = self.arguments();
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Argument(name) => {
                    let i = arguments.iter().position(|a| a == name).unwrap_or(0);
                    let ty = types.get(i).copied().unwrap_or("text");
                    out.push_str(&format!("${}::{ty}", i + 1));
                }
            }
        }
        out.push('\n');
        out
    }

    /// The statement Postgres describes, never runs, to check the code against a logical
    /// model: the code as a CTE and the model's scalar fields selected from it by name.
    pub fn validation_statement(&self, types: &[&str], fields: &[&str]) -> String {
        let list: Vec<String> = fields
            .iter()
            .map(|f| super::quote::quote_ident(f))
            .collect();
        format!(
            "WITH \"_basalt_nq\" AS (\n{})\nSELECT {}\nFROM \"_basalt_nq\"",
            self.with_parameters(types),
            list.join(", ")
        )
    }
}

fn last_text_char(pieces: &[Piece]) -> Option<char> {
    match pieces.last() {
        Some(Piece::Text(t)) => t.chars().next_back(),
        // A placeholder stands for a value, not an identifier.
        _ => None,
    }
}

/// Whether a string after `text` takes backslash escapes: `E'…'` (the `E` being the whole
/// word before it).
fn escapes_backslash(text: &str) -> bool {
    let mut before = text.chars().rev();
    if !matches!(before.next(), Some('e' | 'E')) {
        return false;
    }
    !before
        .next()
        .is_some_and(|b| b.is_alphanumeric() || b == '_' || b == '$')
}

/// The length of a quoted string or identifier at the start of `rest` (`quote` doubled
/// inside is the quote itself; with `backslash`, `\` escapes the next character). A
/// placeholder inside is refused.
fn quoted(rest: &str, quote: char, backslash: bool) -> Result<usize, TemplateError> {
    let mut chars = rest.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        if rest[i..].starts_with("{{") {
            return Err(placeholder_inside(&rest[i..]));
        }
        if backslash && c == '\\' {
            chars.next();
            continue;
        }
        if c == quote {
            if chars.peek().is_some_and(|(_, n)| *n == quote) {
                chars.next();
                continue;
            }
            return Ok(i + c.len_utf8());
        }
    }
    Err(TemplateError::Unterminated)
}

fn line_comment(rest: &str) -> Result<usize, TemplateError> {
    let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
    refuse_placeholder(&rest[..end])?;
    Ok(end)
}

/// A block comment, nested ones included, as Postgres reads them.
fn block_comment(rest: &str) -> Result<usize, TemplateError> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < rest.len() {
        let here = &rest[i..];
        if here.starts_with("{{") {
            return Err(placeholder_inside(here));
        }
        if here.starts_with("/*") {
            depth += 1;
            i += 2;
        } else if here.starts_with("*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Ok(i);
            }
        } else {
            i += here.chars().next().map_or(1, char::len_utf8);
        }
    }
    Err(TemplateError::Unterminated)
}

/// The tag of a dollar quote starting `rest` (`$$`, `$tag$`), with both dollars.
fn dollar_tag(rest: &str) -> Option<&str> {
    let body = &rest[1..];
    let end = body.find('$')?;
    let tag = &body[..end];
    let valid = tag.is_empty()
        || (tag.starts_with(|c: char| c.is_alphabetic() || c == '_')
            && tag.chars().all(|c| c.is_alphanumeric() || c == '_'));
    valid.then(|| &rest[..end + 2])
}

fn dollar_quoted(rest: &str, tag: &str) -> Result<usize, TemplateError> {
    let body = &rest[tag.len()..];
    let end = body.find(tag).ok_or(TemplateError::Unterminated)?;
    refuse_placeholder(&body[..end])?;
    Ok(tag.len() + end + tag.len())
}

fn refuse_placeholder(text: &str) -> Result<(), TemplateError> {
    match text.find("{{") {
        Some(i) => Err(placeholder_inside(&text[i..])),
        None => Ok(()),
    }
}

/// The refusal of the placeholder at the start of `text`.
fn placeholder_inside(text: &str) -> TemplateError {
    let inner = &text[2..];
    let name = inner.find("}}").map_or(inner, |end| &inner[..end]);
    TemplateError::Quoted(name.to_owned())
}

/// Whether the first keyword, after spaces, comments and `(`, is one that starts a read.
fn starts_as_read(code: &str) -> bool {
    let mut rest = code;
    loop {
        let trimmed = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
        if trimmed.starts_with("--") {
            rest = trimmed.find('\n').map_or("", |i| &trimmed[i..]);
        } else if trimmed.starts_with("/*") {
            rest = match block_comment(trimmed) {
                Ok(len) => &trimmed[len..],
                Err(_) => return false,
            };
        } else {
            rest = trimmed;
            break;
        }
    }
    let word: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    matches!(
        word.to_ascii_uppercase().as_str(),
        "SELECT" | "WITH" | "VALUES" | "TABLE"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(code: &str) -> Result<Vec<String>, TemplateError> {
        Template::parse(code).map(|t| t.arguments().into_iter().map(str::to_owned).collect())
    }

    #[test]
    fn placeholders_become_arguments_in_order_of_first_use() {
        let t = Template::parse(
            "SELECT a FROM t WHERE x > {{min}} AND y < {{ max }} OR z = {{min}};\n ",
        )
        .unwrap();
        assert_eq!(t.arguments(), vec!["min", " max "]);
        assert_eq!(
            t.pieces,
            vec![
                Piece::Text("SELECT a FROM t WHERE x > ".into()),
                Piece::Argument("min".into()),
                Piece::Text(" AND y < ".into()),
                Piece::Argument(" max ".into()),
                Piece::Text(" OR z = ".into()),
                Piece::Argument("min".into()),
            ]
        );
        // A lone brace is text; `$` inside an identifier is no parameter.
        assert_eq!(
            args("SELECT '{' AS a, b$1 FROM t").unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(
            args("select $$ {x} $$, '%' || {{q}} || '%'").unwrap(),
            vec!["q"]
        );
    }

    #[test]
    fn placeholders_in_strings_comments_and_quotes_are_refused() {
        for (code, name) in [
            ("SELECT '%{{q}}%'", "q"),
            ("SELECT E'it\\'s {{q}}'", "q"),
            ("SELECT 'it''s {{q}}'", "q"),
            ("SELECT \"{{col}}\" FROM t", "col"),
            ("SELECT $$ {{q}} $$", "q"),
            ("SELECT $tag$ {{q}} $tag$", "q"),
            ("SELECT 1 -- {{q}}\n", "q"),
            ("SELECT 1 /* outer /* {{q}} */ */", "q"),
        ] {
            assert_eq!(
                Template::parse(code),
                Err(TemplateError::Quoted(name.into())),
                "{code}"
            );
        }
        // A string ends where it ends: the placeholder after it counts.
        assert_eq!(args("SELECT 'a''b', {{q}}").unwrap(), vec!["q"]);
        assert_eq!(args("SELECT E'a\\'', {{q}}").unwrap(), vec!["q"]);
    }

    #[test]
    fn unclosed_placeholders_own_parameters_and_writes_are_refused() {
        assert_eq!(Template::parse("SELECT {{q"), Err(TemplateError::Unclosed));
        assert_eq!(
            Template::parse("SELECT * FROM t WHERE id = $1"),
            Err(TemplateError::Positional)
        );
        for code in [
            "DELETE FROM t",
            "INSERT INTO t VALUES (1)",
            "EXPLAIN SELECT 1",
            "",
        ] {
            assert_eq!(Template::parse(code), Err(TemplateError::NotRead), "{code}");
        }
        for code in [
            "select 1",
            "  -- a comment\n (WITH a AS (SELECT 1) SELECT * FROM a)",
            "/* c */ VALUES (1)",
            "TABLE t",
        ] {
            assert!(Template::parse(code).is_ok(), "{code}");
        }
        assert_eq!(
            TemplateError::Quoted("q".into()).to_string(),
            "argument placeholder {{q}} is inside a quoted string or comment"
        );
        assert_eq!(
            TemplateError::Unclosed.to_string(),
            "Found '{{' without a matching closing '}}'"
        );
    }
}
