//! Remote schema → table relationships as SQL (`docs/remote-schemas.md`, "Relationships to
//! tables"): every occurrence read from one remote answer in one statement. Each occurrence's
//! distinct keys are bound as one `jsonb` list of `{<join field>: value}` objects; each key
//! becomes a row whose join values are cast to their columns' types, joined laterally with the
//! target table under the role's permission and the client's arguments, exactly as an action's
//! output joins a table. The statement sets the session first and answers a JSON array with one
//! list per occurrence, in the order given, each element `{"v": …}` for the key at its index.

use super::action::output;
use super::{print_select, session_select, State};
use crate::db_model::PgType;
use crate::graphql::ir::{CellRules, TableJoinPart};
use crate::sql::ast::{Expr, ParamSource, SelectItem};
use crate::sql::SqlText;

/// The statement that reads `parts` for a role with cell rules `cells`.
pub fn table_joins(parts: &[&TableJoinPart], cells: &CellRules) -> SqlText {
    let mut state = State::new(cells);
    let lists = parts
        .iter()
        .map(|part| {
            let keys = Expr::value(ParamSource::Provided(part.parameter()), PgType::Jsonb);
            output(&mut state, keys, &part.output)
        })
        .collect();
    let answer = Expr::call("json_build_array", lists);
    print_select(session_select(vec![SelectItem::bare(answer, "data")]), true)
}
