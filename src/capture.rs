//! What an event trigger captures in Postgres (`docs/events.md`, "Capture"): for each
//! operation it listens to, a trigger function and a trigger named
//! `notify_basalt_<name>_<OP>`, whose DDL `sql::capture` writes. Each function carries the hash
//! of its own text as its comment, so the catalog can tell a current capture from a stale one
//! without comparing bodies.

use crate::metadata::types::{Columns, EventTriggerEntry, OperationSpec, QualifiedTable};
use crate::sql::capture::{self as ddl, CaptureFunction, RowOp};

/// Prefix of every capture trigger and function Basalt owns.
pub const PREFIX: &str = "notify_basalt_";

/// One capture trigger, ready to be created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// `notify_basalt_<name>_<OP>`: the trigger's and the function's name.
    pub name: String,
    /// The table it is on.
    pub table: QualifiedTable,
    /// The row operation it fires on.
    pub op: RowOp,
    /// `sha256:<hex>` of `function`; stored as the function's comment.
    pub hash: String,
    /// `CREATE OR REPLACE FUNCTION …`.
    pub function: String,
}

impl Capture {
    /// The statements installing it (function, comment, trigger), in order.
    pub fn create(&self) -> [String; 3] {
        [
            self.function.clone(),
            ddl::comment(&self.name, &self.hash),
            ddl::trigger(&self.name, self.op, &self.table),
        ]
    }
}

/// The statements removing the capture `name` from `table` (either may be gone already).
pub fn drop(name: &str, table: Option<&QualifiedTable>) -> Vec<String> {
    ddl::drop(name, table)
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

/// The listed columns of `columns`, `None` for all.
fn listed(columns: &Columns) -> Option<&[String]> {
    match columns {
        Columns::All => None,
        Columns::List(list) => Some(list),
    }
}

fn capture(table: &QualifiedTable, trigger: &str, op: RowOp, spec: &OperationSpec) -> Capture {
    let name = format!("{PREFIX}{trigger}_{}", op.as_str());
    let function = ddl::function(&CaptureFunction {
        name: &name,
        table,
        trigger,
        op,
        changed: listed(&spec.columns),
        payload: spec.payload.as_ref().and_then(listed),
    });
    let hash = crate::metadata::digest::sha256_tagged(function.as_bytes());
    Capture {
        name,
        table: table.clone(),
        op,
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
