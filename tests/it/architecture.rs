//! The layering `docs/architecture.md` promises, checked on the source: no import circle
//! between the crate's top-level modules, the metadata document and database introspection
//! depending on nothing above them (the shared name type aside), and no source file over 1,000 lines.

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
            modules.insert(name, sources(&path));
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

#[test]
fn no_source_file_is_over_1000_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = sources(&src);
    assert!(files.len() > 50, "{} files found", files.len());
    for file in files {
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        assert!(lines <= 1000, "{} has {lines} lines", file.display());
    }
}

#[test]
fn crate_paths_reads_single_paths_and_groups() {
    let code = "use crate::state::AppState;\nuse crate::{engine, sql::ast::Expr};\nlet x = crate::stats::get();";
    let found: Vec<String> = crate_paths(code).into_iter().collect();
    assert_eq!(found, ["engine", "sql", "state", "stats"]);
}
