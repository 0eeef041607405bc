//! `run_sql` arguments, and the inferred `check_metadata_consistency`. Running the SQL is the
//! catalog's job (it needs the database between the before and after snapshots);
//! reconciling metadata with the change is [`crate::ops::schema_changes`]. See
//! `docs/metadata-api.md`, "run_sql". Must not run SQL or do any other IO.

use crate::metadata::error::Result;
use crate::metadata::parse::parse;
use crate::metadata::path::JsonPath;
use serde::Deserialize;
use serde_json::Value;

/// Parsed `run_sql` arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSql {
    /// One or more statements separated by `;`.
    pub sql: String,
    /// Remove dependent metadata of dropped objects instead of failing.
    pub cascade: bool,
    /// Diff the database before and after and keep metadata consistent (explicit or inferred).
    pub check_metadata_consistency: bool,
    /// Run in a read-only transaction; nothing changes.
    pub read_only: bool,
}

#[derive(Deserialize)]
struct Args {
    sql: String,
    #[serde(default)]
    cascade: bool,
    #[serde(default)]
    check_metadata_consistency: Option<bool>,
    #[serde(default)]
    read_only: bool,
}

impl RunSql {
    /// Parses the arguments; an absent `check_metadata_consistency` is inferred from the SQL.
    pub fn parse(args: &Value, path: &JsonPath) -> Result<Self> {
        let a: Args = parse(args, path)?;
        let check = if a.read_only {
            false
        } else {
            a.check_metadata_consistency
                .unwrap_or_else(|| may_change_schema(&a.sql))
        };
        Ok(RunSql {
            sql: a.sql,
            cascade: a.cascade,
            check_metadata_consistency: check,
            read_only: a.read_only,
        })
    }
}

/// Whether SQL text (case-insensitive, whole words) mentions `alter`, `drop`, `replace`,
/// `create function` or `comment on` — the statements that can break metadata.
pub fn may_change_schema(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .iter()
        .any(|w| matches!(*w, "alter" | "drop" | "replace"))
        || words
            .windows(2)
            .any(|pair| matches!(pair, ["create", "function"] | ["comment", "on"]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn consistency_check_is_inferred_from_whole_words() {
        assert!(may_change_schema("ALTER TABLE a ADD COLUMN b int"));
        assert!(may_change_schema("select 1; Drop table x"));
        assert!(may_change_schema("create or replace view v as select 1"));
        assert!(may_change_schema(
            "CREATE\n  FUNCTION f() returns int as 'select 1' language sql"
        ));
        assert!(may_change_schema("comment on table a is 'x'"));
        assert!(!may_change_schema("create table altered (dropped int)"));
        assert!(!may_change_schema("select * from comments"));
    }

    #[test]
    fn explicit_flags_win_and_read_only_never_checks() {
        let p = JsonPath::args();
        let r = RunSql::parse(
            &json!({"sql": "drop table x", "check_metadata_consistency": false}),
            &p,
        )
        .unwrap();
        assert!(!r.check_metadata_consistency);
        let r = RunSql::parse(
            &json!({"sql": "select 1", "check_metadata_consistency": true}),
            &p,
        )
        .unwrap();
        assert!(r.check_metadata_consistency);
        let r = RunSql::parse(&json!({"sql": "drop table x", "read_only": true}), &p).unwrap();
        assert!(!r.check_metadata_consistency);
        assert!(RunSql::parse(&json!({}), &p).is_err());
    }
}
