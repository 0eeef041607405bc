//! The shape `docs/architecture.md` promises, checked on the source: no import circle between
//! the crate's top-level modules; the metadata document and the database model depending on
//! nothing above them (the shared name type aside); no source file over 800 lines and no test
//! file over 1,000; SQL text built only in `src/sql/`; the role header named in one place; and
//! no comment pointing at a document outside the repository. (That the docs name only what
//! exists is `docs.rs`'s.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    found
}

/// A file's code: comments and `#[cfg(test)]` modules left out (doc links name modules
/// they do not use).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|l| l.trim_start())
        .filter(|l| !l.starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names after `crate::` in `code`, including those of `crate::{a, b::c}` groups.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let first = item.trim().split("::").next().unwrap_or_default();
                names.insert(first.trim().to_owned());
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            names.insert(name);
        }
    }
    names
}

/// Top-level module → the other top-level modules its code uses.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            // A module may be a file and a folder of its submodules (`config.rs`, `config/`).
            modules.entry(name).or_default().extend(sources(&path));
        } else if name != "lib" && name != "main" {
            modules.entry(name).or_default().push(path);
        }
    }
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    modules
        .iter()
        .map(|(module, files)| {
            let used = files
                .iter()
                .flat_map(|f| crate_paths(&code(f)))
                .filter(|m| m != module && names.contains(m))
                .collect();
            (module.clone(), used)
        })
        .collect()
}

/// A circle through `start`, if there is one.
fn circle_from(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        let Some(last) = path.last().cloned() else {
            return false;
        };
        for next in graph.get(&last).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_owned()];
    walk(graph, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn top_level_modules_form_no_import_circle() {
    let graph = module_graph();
    assert!(graph.len() > 20, "{} modules found", graph.len());
    assert!(
        graph["http"].contains("state") && graph["engine"].contains("translate"),
        "the graph reads imports: {graph:?}"
    );
    for module in graph.keys() {
        if let Some(circle) = circle_from(&graph, module) {
            panic!("import circle: {}", circle.join(" -> "));
        }
    }
}

#[test]
fn the_document_and_the_database_model_depend_on_nothing_above_them() {
    let graph = module_graph();
    let names_only = BTreeSet::from(["names".to_owned()]);
    for leaf in ["metadata", "db_model"] {
        assert_eq!(graph[leaf], names_only, "{leaf} uses {:?}", graph[leaf]);
    }
    assert_eq!(
        graph["names"],
        BTreeSet::new(),
        "names uses {:?}",
        graph["names"]
    );
}

/// The repository's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file of the crate and of the workspace's other crates.
fn workspace_sources() -> Vec<PathBuf> {
    let mut files = sources(&root().join("src"));
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            files.extend(sources(&src));
        }
    }
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap().display().to_string()
}

/// The files of `files` with more than `limit` lines.
fn longer_than(files: &[PathBuf], limit: usize) -> Vec<String> {
    files
        .iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(file).unwrap().lines().count();
            (lines > limit).then(|| format!("{} has {lines} lines", relative(file)))
        })
        .collect()
}

#[test]
fn no_source_file_is_over_800_lines() {
    let files = workspace_sources();
    assert!(files.len() > 50, "{} files found", files.len());
    let long = longer_than(&files, 800);
    assert!(long.is_empty(), "{long:#?}");
}

/// Test files may run longer than source files (a scenario reads best whole), but none is a
/// catch-all: an area that outgrows this splits into files by what they test.
#[test]
fn no_test_file_is_over_1000_lines() {
    let mut files = sources(&root().join("tests"));
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let tests = entry.unwrap().path().join("tests");
        if tests.is_dir() {
            files.extend(sources(&tests));
        }
    }
    assert!(files.len() > 50, "{} files found", files.len());
    let long = longer_than(&files, 1000);
    assert!(long.is_empty(), "{long:#?}");
}

/// The SQL keywords that start a statement or a clause Basalt writes.
const SQL_WORDS: &[&str] = &[
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "CREATE",
    "DROP",
    "ALTER",
    "COMMENT ON",
    "SAVEPOINT",
    "ROLLBACK",
    "RELEASE",
    "LISTEN",
    "NOTIFY",
    "GRANT",
    "TRUNCATE",
    "PERFORM",
    "RETURNING",
];

/// The format strings of `format!`, `write!` and `writeln!` in `code` that hold SQL.
fn built_sql(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for mac in ["format!(", "write!(", "writeln!(", "push_str("] {
        for (i, _) in code.match_indices(mac) {
            let rest = &code[i + mac.len()..];
            let Some(open) = rest.find('"') else { continue };
            // The first argument of `write!` is the target, not the format string.
            let before = &rest[..open];
            if before.contains(';') || before.contains(')') {
                continue;
            }
            let literal = &rest[open + 1..];
            let end = literal.find('"').unwrap_or(literal.len());
            let literal = &literal[..end];
            let is_word = |w: &&str| {
                literal.match_indices(*w).any(|(j, _)| {
                    let after = literal[j + w.len()..].chars().next();
                    let before = literal[..j].chars().next_back();
                    !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                        && !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                })
            };
            if SQL_WORDS.iter().any(is_word) {
                found.push(literal.to_owned());
            }
        }
    }
    found
}

#[test]
fn sql_text_is_built_only_in_the_sql_module() {
    let sql = root().join("src").join("sql");
    let outside: Vec<String> = sources(&root().join("src"))
        .into_iter()
        .filter(|file| !file.starts_with(&sql))
        .flat_map(|file| {
            built_sql(&code(&file))
                .into_iter()
                .map(move |text| format!("{}: {text}", relative(&file)))
        })
        .collect();
    assert!(
        outside.is_empty(),
        "SQL built outside src/sql/: {outside:#?}"
    );
}

#[test]
fn the_role_header_is_named_in_one_place() {
    let naming: Vec<String> = sources(&root().join("src"))
        .into_iter()
        .filter(|file| code(file).contains("\"x-svc-role\""))
        .map(|file| relative(&file))
        .collect();
    assert_eq!(naming, ["src/session.rs"]);
}

/// The comments of a file (`//`, `///`, `//!`), test modules included.
fn comments(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("//").map(str::to_owned))
        .collect()
}

/// Why a comment points outside the repository: a section sign (the spec's numbering), or a
/// Markdown file that is not in the repository.
fn outside_reference(comment: &str) -> Option<String> {
    if comment.contains('§') {
        return Some("a section number (§)".to_owned());
    }
    for (i, _) in comment.match_indices(".md") {
        let start = comment[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "/_-.".contains(c)))
            .map_or(0, |s| s + 1);
        let name = &comment[start..i + 3];
        // A placeholder such as `docs/<page>.md` names no file.
        let named = comment[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '-');
        if named && !root().join(name).exists() {
            return Some(format!("{name}, not a file of the repository"));
        }
    }
    None
}

#[test]
fn no_comment_points_outside_the_repository() {
    let mut files = workspace_sources();
    files.extend(sources(&root().join("tests")));
    let found: Vec<String> = files
        .iter()
        .flat_map(|file| {
            comments(file)
                .into_iter()
                .filter_map(|c| {
                    outside_reference(&c).map(|why| format!("{}: {why}: {c}", relative(file)))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_checks_find_what_they_look_for() {
    assert_eq!(
        built_sql("let q = format!(\"SELECT {} FROM t\", x); format!(\"no update here\");"),
        ["SELECT {} FROM t"]
    );
    assert!(built_sql("write!(f, \"UPDATED {x}\")").is_empty());
    assert_eq!(built_sql("write!(out, \"DROP {x}\")"), ["DROP {x}"]);
    assert!(outside_reference(" see spec §4").is_some());
    assert!(outside_reference(" see `graphql-api.md`").is_some());
    assert!(outside_reference(" see `docs/graphql.md`, \"Subscriptions\"").is_none());
    assert!(outside_reference(" `docs/<page>.md` spans").is_none());
}

#[test]
fn crate_paths_reads_single_paths_and_groups() {
    let code = "use crate::state::AppState;\nuse crate::{engine, sql::ast::Expr};\nlet x = crate::stats::get();";
    let found: Vec<String> = crate_paths(code).into_iter().collect();
    assert_eq!(found, ["engine", "sql", "state", "stats"]);
}
