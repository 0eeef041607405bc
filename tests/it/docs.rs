//! The documentation checked against the code: `docs/configuration.md` is what
//! `basalt::config::reference_markdown` renders from the CLI definitions, and the docs name
//! only files, modules and items that exist, and link only to pages and headings that exist.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The line of `docs/configuration.md` after which everything is generated.
const GENERATED_MARKER: &str =
    "<!-- Generated from src/config.rs below this line: BASALT_WRITE_DOCS=1 cargo test --test it docs:: rewrites it. -->";

/// Top-level folders whose paths a doc names from the repository root.
const ROOT_FOLDERS: &[&str] = &[
    "src/",
    "tests/",
    "crates/",
    "docs/",
    "bench/",
    "examples/",
    "charts/",
    "crds/",
    "scripts/",
    ".ci/",
    "fuzz/",
];

/// Extensions that make a token with a `/` a path of the repository.
const PATH_EXTENSIONS: &[&str] = &[
    ".rs", ".md", ".sql", ".py", ".mjs", ".js", ".yaml", ".yml", ".json", ".sh", ".lua", ".toml",
];

/// Extensions that make a token without a `/` a file name that must exist somewhere.
const FILE_NAME_EXTENSIONS: &[&str] = &[".rs", ".md", ".sql", ".py", ".mjs", ".sh"];

/// Folders left out of the repository walk: build output, caches, installed packages.
const SKIPPED_FOLDERS: &[&str] = &[".git", "target", ".basalt", "node_modules", "__pycache__"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

#[test]
fn configuration_reference_matches_the_cli() {
    let path = repo().join("docs/configuration.md");
    let text = read(&path);
    let (head, generated) = text
        .split_once(GENERATED_MARKER)
        .unwrap_or_else(|| panic!("docs/configuration.md has no marker line {GENERATED_MARKER}"));
    let expected = format!("\n{}", basalt::config::reference_markdown());
    if generated == expected {
        return;
    }
    if std::env::var_os("BASALT_WRITE_DOCS").is_some() {
        std::fs::write(&path, format!("{head}{GENERATED_MARKER}{expected}")).unwrap();
        return;
    }
    let first = generated
        .lines()
        .zip(expected.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| generated.lines().count().min(expected.lines().count()));
    panic!(
        "docs/configuration.md is stale (first difference in generated line {}):\n  file: {:?}\n  code: {:?}\n\
         Rewrite it with: BASALT_WRITE_DOCS=1 cargo test --test it docs::",
        first + 1,
        generated.lines().nth(first).unwrap_or(""),
        expected.lines().nth(first).unwrap_or(""),
    );
}

/// What one Markdown document references: its inline code spans and its link targets, both
/// outside fenced code blocks, and the anchors its headings and `id` attributes define.
#[derive(Debug, Default, PartialEq)]
struct Markdown {
    spans: Vec<String>,
    links: Vec<String>,
    anchors: BTreeSet<String>,
}

fn parse_markdown(text: &str) -> Markdown {
    let mut doc = Markdown::default();
    // Fenced blocks are dropped (their lines become empty, so paragraphs stay apart).
    let mut prose = String::new();
    let mut fenced = false;
    let mut headings = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            prose.push('\n');
            continue;
        }
        if fenced {
            prose.push('\n');
            continue;
        }
        if let Some(heading) = heading_text(line) {
            headings.push(heading);
        }
        prose.push_str(line);
        prose.push('\n');
    }
    let mut counts = std::collections::BTreeMap::new();
    for heading in headings {
        let slug = slug(&heading);
        let seen: &mut usize = counts.entry(slug.clone()).or_default();
        doc.anchors.insert(if *seen == 0 {
            slug.clone()
        } else {
            format!("{slug}-{seen}")
        });
        *seen += 1;
    }
    for (i, _) in prose.match_indices("id=\"") {
        let rest = &prose[i + 4..];
        if let Some(end) = rest.find('"') {
            doc.anchors.insert(rest[..end].to_owned());
        }
    }
    // Code spans: a run of backticks up to the next run of the same length, not across a
    // blank line. What is outside them is searched for links.
    let mut outside = String::new();
    let mut rest = prose.as_str();
    while let Some(start) = rest.find('`') {
        outside.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        match closing_ticks(after, ticks) {
            Some(end) if !after[..end].contains("\n\n") => {
                let span = after[..end]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                doc.spans.push(span);
                outside.push(' ');
                rest = &after[end + ticks..];
            }
            _ => rest = after,
        }
    }
    outside.push_str(rest);
    for (i, _) in outside.match_indices("](") {
        let target = &outside[i + 2..];
        if let Some(end) = target.find(')') {
            doc.links.push(target[..end].trim().to_owned());
        }
    }
    doc
}

/// Where in `text` a run of exactly `ticks` backticks starts.
fn closing_ticks(text: &str, ticks: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            if run == ticks {
                return Some(i);
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

/// The text of an ATX heading line (`## Title`).
fn heading_text(line: &str) -> Option<String> {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = line[hashes..].strip_prefix(' ')?;
    Some(rest.trim().trim_end_matches('#').trim().to_owned())
}

/// The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every file and folder of the repository, as paths relative to its root with `/`
/// separators (folders end with `/`).
fn repository_paths(root: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, found: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if path.is_dir() {
                if SKIPPED_FOLDERS.contains(&name.as_str()) {
                    continue;
                }
                found.insert(format!("{relative}/"));
                walk(root, &path, found);
            } else {
                found.insert(relative);
            }
        }
    }
    let mut found = BTreeSet::new();
    walk(root, root, &mut found);
    found
}

/// What a doc's code spans may name, read once from the repository.
struct Repository {
    root: PathBuf,
    paths: BTreeSet<String>,
}

impl Repository {
    fn exists(&self, path: &str) -> bool {
        let path = path.trim_end_matches('/');
        self.paths.contains(path) || self.paths.contains(&format!("{path}/"))
    }

    /// Whether some path of the repository ends with `tail`, a whole number of components.
    fn ends_with(&self, tail: &str) -> bool {
        let tail = tail.trim_end_matches('/');
        self.paths.iter().any(|p| {
            let p = p.trim_end_matches('/');
            p == tail || p.ends_with(&format!("/{tail}"))
        })
    }

    /// The problem with one code span, if it names something that does not exist.
    fn check_span(&self, span: &str) -> Vec<String> {
        let mut problems = Vec::new();
        for word in span.split_whitespace() {
            let word = word.trim_matches(|c: char| matches!(c, ',' | ';' | '(' | ')' | '"' | '\''));
            if let Some(problem) = self.check_path(word) {
                problems.push(problem);
            }
            if let Some(problem) = self.check_rust_path(word) {
                problems.push(problem);
            }
        }
        problems
    }

    fn check_path(&self, word: &str) -> Option<String> {
        let skipped = ["://", "*", "<", "{", "[", "…", "=", "$", "~", "%"];
        if word.is_empty() || word.starts_with('/') || word.starts_with('-') {
            return None;
        }
        if skipped.iter().any(|s| word.contains(s)) {
            return None;
        }
        let path = word.split('#').next().unwrap_or(word);
        let has_extension = |exts: &[&str]| exts.iter().any(|e| path.ends_with(e));
        if ROOT_FOLDERS.iter().any(|f| path.starts_with(f)) {
            return (!self.exists(path)).then(|| format!("no such path: {path}"));
        }
        if path.contains('/') {
            if has_extension(PATH_EXTENSIONS) && !self.exists(path) && !self.ends_with(path) {
                return Some(format!("no file ends with: {path}"));
            }
            return None;
        }
        if has_extension(FILE_NAME_EXTENSIONS) && !self.ends_with(path) {
            return Some(format!("no file named: {path}"));
        }
        None
    }

    /// A Rust path whose first segment is one of the crate's top-level modules must name a
    /// declaration in that module, or, for a test's name, in the test module of that name
    /// under `tests/it/`.
    fn check_rust_path(&self, word: &str) -> Option<String> {
        let path: String = word
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':'))
            .collect();
        if !path.contains("::") {
            return None;
        }
        let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        if matches!(segments.first(), Some(&"crate") | Some(&"basalt")) {
            segments.remove(0);
        }
        let (name, modules) = segments.split_last()?;
        if modules.is_empty() {
            return None;
        }
        let source = module_scope(&self.root.join("src"), modules)?;
        let tests = module_scope(&self.root.join("tests/it"), modules).unwrap_or_default();
        if scope_declares(&source, name) || scope_declares(&tests, name) {
            return None;
        }
        let places: Vec<String> = source
            .iter()
            .map(|p| {
                p.strip_prefix(&self.root)
                    .unwrap_or(p)
                    .display()
                    .to_string()
            })
            .collect();
        Some(format!(
            "{path}: nothing named `{name}` is declared in {}",
            places.join(" or ")
        ))
    }
}

/// The files and folders under `base` that hold the module `modules` names (`x.rs`, `x/` or
/// both), when its first segment is a module there; an inline module ends the walk at what
/// holds it.
fn module_scope(base: &Path, modules: &[&str]) -> Option<Vec<PathBuf>> {
    let mut dir = base.to_owned();
    let mut scope = Vec::new();
    for (i, module) in modules.iter().enumerate() {
        let found: Vec<PathBuf> = [dir.join(format!("{module}.rs")), dir.join(module)]
            .into_iter()
            .filter(|p| p.exists())
            .collect();
        if found.is_empty() {
            if i == 0 {
                return None;
            }
            break;
        }
        scope = found;
        dir = dir.join(module);
    }
    Some(scope)
}

/// Whether a file of `scope`, or of its folders, declares `name`.
fn scope_declares(scope: &[PathBuf], name: &str) -> bool {
    let mut files = Vec::new();
    for path in scope {
        if path.is_dir() {
            rust_files(path, &mut files);
        } else {
            files.push(path.clone());
        }
    }
    files.iter().any(|f| declares(&read(f), name))
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// Whether Rust source `code` declares `name`: an item, a module, a macro or an enum variant.
fn declares(code: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let keywords = [
        "fn",
        "struct",
        "enum",
        "trait",
        "type",
        "const",
        "static",
        "mod",
        "union",
        "macro_rules!",
    ];
    for keyword in keywords {
        let needle = format!("{keyword} {name}");
        for (i, _) in code.match_indices(&needle) {
            let before = code[..i].chars().next_back();
            let after = code[i + needle.len()..].chars().next();
            if !before.is_some_and(is_ident) && !after.is_some_and(is_ident) {
                return true;
            }
        }
    }
    // An enum variant: a line starting with a capitalised name.
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && code.lines().any(|line| {
            line.trim_start()
                .strip_prefix(name)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([',', '(', ' ', '{']))
        })
}

/// The documents whose references are checked.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![
        root.join("README.md"),
        root.join("bench/README.md"),
        root.join("examples/blog/README.md"),
        root.join("examples/messages/README.md"),
        root.join("examples/reports/README.md"),
        root.join("fuzz/README.md"),
    ];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

#[test]
fn docs_name_only_what_exists() {
    let root = repo();
    let repository = Repository {
        paths: repository_paths(&root),
        root: root.clone(),
    };
    // A set: a doc naming the same missing thing twice is listed once.
    let mut problems = BTreeSet::new();
    for doc in documents(&root) {
        let name = doc.strip_prefix(&root).unwrap().display().to_string();
        let markdown = parse_markdown(&read(&doc));
        for span in &markdown.spans {
            for problem in repository.check_span(span) {
                problems.insert(format!("{name}: `{span}`: {problem}"));
            }
        }
        for link in &markdown.links {
            if let Some(problem) = check_link(&doc, &markdown, link) {
                problems.insert(format!("{name}: link ({link}): {problem}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} references to things that do not exist:\n{}",
        problems.len(),
        problems.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The problem with a relative link of `doc`: a missing file, or a missing heading of a page.
fn check_link(doc: &Path, markdown: &Markdown, link: &str) -> Option<String> {
    if link.contains("://") || link.starts_with("mailto:") {
        return None;
    }
    let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
    let target = doc.parent().unwrap().join(file);
    if !file.is_empty() && !target.exists() {
        return Some("no such file".to_owned());
    }
    if anchor.is_empty() {
        return None;
    }
    let anchors = if file.is_empty() {
        &markdown.anchors
    } else if file.ends_with(".md") {
        &parse_markdown(&read(&target)).anchors.clone()
    } else {
        return None;
    };
    (!anchors.contains(anchor)).then(|| format!("no heading #{anchor}"))
}

#[test]
fn markdown_references_are_read_as_intended() {
    let text = "# A page\n\nSee `src/app.rs` and `engine.rs`, a\n`wrapped span`, [x](other.md#a-b).\n\n\
                ```sh\nls `not/a/span.rs`\n# not a heading\n```\n\n## A `b` (c)\n\n`` a ` b `` <a id=\"dry-run\"></a>\n";
    let doc = parse_markdown(text);
    assert_eq!(
        doc.spans,
        ["src/app.rs", "engine.rs", "wrapped span", "b", "a ` b"]
    );
    assert_eq!(doc.links, ["other.md#a-b"]);
    assert_eq!(
        doc.anchors,
        BTreeSet::from([
            "a-page".to_owned(),
            "a-b-c".to_owned(),
            "dry-run".to_owned()
        ])
    );
    assert_eq!(
        slug("Reviewing a change: `basalt diff`"),
        "reviewing-a-change-basalt-diff"
    );

    let repository = Repository {
        paths: repository_paths(&repo()),
        root: repo(),
    };
    let problems = |span: &str| repository.check_span(span);
    assert!(problems("src/app.rs").is_empty());
    assert!(problems("kubectl apply -f crds/").is_empty());
    assert!(
        problems("plan/select.rs").is_empty(),
        "a path named from inside src/"
    );
    assert!(
        problems("floor/<query>.sql").is_empty(),
        "placeholders are skipped"
    );
    assert!(problems("https://example.com/a.md").is_empty());
    assert!(problems("crate::state::AppState").is_empty());
    assert!(problems("execute::SharedStatement").is_empty());
    assert!(problems("translate::query_for(plan, false)").is_empty());
    assert!(
        problems("serde_json::Value").is_empty(),
        "other crates are skipped"
    );
    assert!(
        problems(
            "metadata::catalog::a_write_starts_from_the_previous_one_only_while_nothing_changed"
        )
        .is_empty(),
        "a test named by its path"
    );
    assert_eq!(problems("src/nowhere.rs").len(), 1);
    assert_eq!(problems("docs/nowhere.md#x").len(), 1);
    assert_eq!(problems("nowhere.rs").len(), 1);
    assert_eq!(problems("plan/nowhere.rs").len(), 1);
    assert_eq!(problems("graphql::plan::no_such_function").len(), 1);
    assert_eq!(problems("basalt::stats::NoSuchCounter").len(), 1);

    let readme = repo().join("README.md");
    let none = Markdown::default();
    assert_eq!(check_link(&readme, &none, "docs/operations.md#logs"), None);
    assert_eq!(check_link(&readme, &none, "https://example.com/x.md"), None);
    assert!(check_link(&readme, &none, "docs/operations.md#no-such-heading").is_some());
    assert!(check_link(&readme, &none, "docs/no-such-page.md").is_some());
}
