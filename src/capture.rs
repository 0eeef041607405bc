//! The Postgres side of an event trigger (`docs/events.md`, "Capture"): for each operation it
//! listens to, a trigger function `basalt_catalog."notify_basalt_<name>_<OP>"()` and an
//! `AFTER <OP> … FOR EACH ROW` trigger calling it, which writes the row change into
//! `basalt_catalog.event_log` in the transaction that made it — whoever made it.
//!
//! Pure: this module only prints DDL. Every name is quoted, every string is a literal (DDL
//! takes no parameters), and each function carries the hash of its own text as its comment,
//! so the catalog can tell a current capture from a stale one without comparing bodies.

use crate::metadata::types::{Columns, EventTriggerEntry, OperationSpec, QualifiedTable};
use crate::sql::quote::{quote_ident, quote_literal, quote_qualified};

/// Prefix of every capture trigger and function Basalt owns.
pub const PREFIX: &str = "notify_basalt_";

/// The row operations a trigger can listen to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RowOp {
    /// `INSERT`.
    Insert,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
}

impl RowOp {
    /// The SQL keyword, also the `op` of the event.
    pub fn as_str(self) -> &'static str {
        match self {
            RowOp::Insert => "INSERT",
            RowOp::Update => "UPDATE",
            RowOp::Delete => "DELETE",
        }
    }
}

/// One capture trigger, ready to be created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// `notify_basalt_<name>_<OP>`: the trigger's and the function's name.
    pub name: String,
    /// The table it is on.
    pub table: QualifiedTable,
    /// `sha256:<hex>` of `function`; stored as the function's comment.
    pub hash: String,
    /// `CREATE OR REPLACE FUNCTION …`.
    pub function: String,
}

impl Capture {
    /// The statements installing it (function, comment, trigger), in order.
    pub fn create(&self) -> [String; 3] {
        let function = quote_qualified("basalt_catalog", &self.name);
        [
            self.function.clone(),
            format!(
                "COMMENT ON FUNCTION {function}() IS {}",
                quote_literal(&self.hash)
            ),
            format!(
                "CREATE OR REPLACE TRIGGER {} AFTER {} ON {} FOR EACH ROW EXECUTE FUNCTION {function}()",
                quote_ident(&self.name),
                self.op_keyword(),
                quote_qualified(&self.table.schema, &self.table.name),
            ),
        ]
    }

    fn op_keyword(&self) -> &'static str {
        [RowOp::Insert, RowOp::Update, RowOp::Delete]
            .into_iter()
            .find(|op| self.name.ends_with(op.as_str()))
            .map_or("INSERT", RowOp::as_str)
    }
}

/// The statements removing the capture `name` from `table` (either may be gone already).
pub fn drop(name: &str, table: Option<&QualifiedTable>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(t) = table {
        out.push(format!(
            "DROP TRIGGER IF EXISTS {} ON {}",
            quote_ident(name),
            quote_qualified(&t.schema, &t.name)
        ));
    }
    out.push(format!(
        "DROP FUNCTION IF EXISTS {}()",
        quote_qualified("basalt_catalog", name)
    ));
    out
}

/// The capture triggers an event trigger needs: one per operation it listens to.
pub fn captures(table: &QualifiedTable, trigger: &EventTriggerEntry) -> Vec<Capture> {
    let def = &trigger.definition;
    [
        (RowOp::Insert, &def.insert),
        (RowOp::Update, &def.update),
        (RowOp::Delete, &def.delete),
    ]
    .into_iter()
    .filter_map(|(op, spec)| {
        spec.as_ref()
            .map(|s| capture(table, &trigger.name.0, op, s))
    })
    .collect()
}

/// `row_to_json` of the payload columns of `record` (`OLD` or `NEW`), keyed by column name.
fn row_json(record: &str, payload: &Columns) -> String {
    match payload {
        Columns::All => format!("row_to_json({record})"),
        Columns::List(columns) => {
            let fields: Vec<String> = columns
                .iter()
                .map(|c| format!("{record}.{} AS {}", quote_ident(c), quote_ident(c)))
                .collect();
            format!(
                "(SELECT row_to_json(_row) FROM (SELECT {}) AS _row)",
                fields.join(", ")
            )
        }
    }
}

/// The condition under which an update fires: a listed column (or, for `"*"`, the row)
/// changed.
fn changed(columns: &Columns) -> String {
    match columns {
        Columns::All => "OLD IS DISTINCT FROM NEW".to_owned(),
        Columns::List(list) if list.is_empty() => "false".to_owned(),
        Columns::List(list) => list
            .iter()
            .map(|c| {
                let c = quote_ident(c);
                format!("OLD.{c} IS DISTINCT FROM NEW.{c}")
            })
            .collect::<Vec<_>>()
            .join(" OR "),
    }
}

fn capture(table: &QualifiedTable, trigger: &str, op: RowOp, spec: &OperationSpec) -> Capture {
    let name = format!("{PREFIX}{trigger}_{}", op.as_str());
    let payload = spec.payload.clone().unwrap_or(Columns::All);
    let (old, new) = match op {
        RowOp::Insert => ("NULL".to_owned(), row_json("NEW", &payload)),
        RowOp::Update => (row_json("OLD", &payload), row_json("NEW", &payload)),
        RowOp::Delete => (row_json("OLD", &payload), "NULL".to_owned()),
    };
    let record = format!(
        "PERFORM basalt_catalog.insert_event_log({}, {}, {}, {}, json_build_object('old', {old}, 'new', {new}));",
        quote_literal(&table.schema),
        quote_literal(&table.name),
        quote_literal(trigger),
        quote_literal(op.as_str()),
    );
    let body = match op {
        RowOp::Update => format!(
            "BEGIN\n  IF {} THEN\n    {record}\n  END IF;\n  RETURN NULL;\nEND",
            changed(&spec.columns)
        ),
        _ => format!("BEGIN\n  {record}\n  RETURN NULL;\nEND"),
    };
    // The body is a plain literal, not dollar-quoted: a name can hold any `$tag$`.
    let function = format!(
        "CREATE OR REPLACE FUNCTION {}() RETURNS trigger LANGUAGE plpgsql AS {}",
        quote_qualified("basalt_catalog", &name),
        quote_literal(&body)
    );
    let hash = crate::metadata::digest::sha256_tagged(function.as_bytes());
    Capture {
        name,
        table: table.clone(),
        hash,
        function,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::types::{EventTriggerDefinition, Name, RetryConf};

    fn trigger(definition: EventTriggerDefinition) -> EventTriggerEntry {
        EventTriggerEntry {
            name: Name("member_changed".into()),
            definition,
            retry_conf: RetryConf::default(),
            webhook: Some("http://hook".into()),
            webhook_from_env: None,
            headers: Vec::new(),
        }
    }

    #[test]
    fn an_update_capture_fires_on_listed_columns_and_sends_the_payload() {
        let t = trigger(EventTriggerDefinition {
            enable_manual: false,
            insert: None,
            update: Some(OperationSpec {
                columns: Columns::List(vec!["display_name".into(), "e\"mail".into()]),
                payload: Some(Columns::List(vec!["id".into(), "display_name".into()])),
            }),
            delete: None,
        });
        let table = QualifiedTable::new("public", "member");
        let [capture] = captures(&table, &t).try_into().unwrap();
        assert_eq!(capture.name, "notify_basalt_member_changed_UPDATE");
        let ddl = capture
            .create()
            .join(";\n")
            .replace(&capture.hash, "sha256:…");
        insta::assert_snapshot!(ddl, @r#"
        CREATE OR REPLACE FUNCTION "basalt_catalog"."notify_basalt_member_changed_UPDATE"() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN
          IF OLD."display_name" IS DISTINCT FROM NEW."display_name" OR OLD."e""mail" IS DISTINCT FROM NEW."e""mail" THEN
            PERFORM basalt_catalog.insert_event_log(''public'', ''member'', ''member_changed'', ''UPDATE'', json_build_object(''old'', (SELECT row_to_json(_row) FROM (SELECT OLD."id" AS "id", OLD."display_name" AS "display_name") AS _row), ''new'', (SELECT row_to_json(_row) FROM (SELECT NEW."id" AS "id", NEW."display_name" AS "display_name") AS _row)));
          END IF;
          RETURN NULL;
        END';
        COMMENT ON FUNCTION "basalt_catalog"."notify_basalt_member_changed_UPDATE"() IS 'sha256:…';
        CREATE OR REPLACE TRIGGER "notify_basalt_member_changed_UPDATE" AFTER UPDATE ON "public"."member" FOR EACH ROW EXECUTE FUNCTION "basalt_catalog"."notify_basalt_member_changed_UPDATE"()
        "#);
    }

    #[test]
    fn insert_and_delete_send_the_whole_row_and_hashes_follow_the_text() {
        let spec = || {
            Some(OperationSpec {
                columns: Columns::All,
                payload: None,
            })
        };
        let t = trigger(EventTriggerDefinition {
            enable_manual: true,
            insert: spec(),
            update: None,
            delete: spec(),
        });
        let table = QualifiedTable::new("sales", "o'rder");
        let all = captures(&table, &t);
        let names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "notify_basalt_member_changed_INSERT",
                "notify_basalt_member_changed_DELETE"
            ]
        );
        assert!(all[0]
            .function
            .contains("''sales'', ''o''''rder'', ''member_changed'', ''INSERT'', json_build_object(''old'', NULL, ''new'', row_to_json(NEW))"));
        assert!(all[1].create()[2].contains("AFTER DELETE ON \"sales\".\"o'rder\""));
        assert_ne!(all[0].hash, all[1].hash);
        let renamed = captures(&QualifiedTable::new("sales", "orders"), &t);
        assert_ne!(renamed[0].hash, all[0].hash);
        assert_eq!(captures(&table, &t), all);
    }
}
