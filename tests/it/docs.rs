//! The documentation checked against the code: `docs/configuration.md` is what
//! `basalt::config::reference_markdown` renders from the CLI definitions.

use std::path::{Path, PathBuf};

/// The line of `docs/configuration.md` after which everything is generated.
const GENERATED_MARKER: &str =
    "<!-- Generated from src/config.rs below this line: BASALT_WRITE_DOCS=1 cargo test --test it docs:: rewrites it. -->";

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
