//! Which other tables resolving a table looks at. [`super::resolve_from`] resolves again only
//! the tables a change reaches: those changed, and those whose resolution read one of them. So
//! every look from one table's resolution into the resolved tables goes through
//! [`super::Resolved::table`], which notes the name here while a resolver stage of one table
//! is being recorded ([`recording`]), and the names end up in [`super::ResolvedTable::reads`].
//!
//! A thread-local rather than a parameter: the checks that look (relationship targets,
//! boolean expressions, computed-field return types) are also called by metadata operations,
//! which record nothing, and threading a recorder through all of them would change every
//! signature for the resolver's sake alone. Resolution is synchronous, so a stage starts and
//! ends on one thread.

use crate::metadata::types::QualifiedTable;
use std::cell::RefCell;
use std::collections::BTreeSet;

thread_local! {
    static NOTED: RefCell<Option<BTreeSet<QualifiedTable>>> = const { RefCell::new(None) };
}

/// Notes that `table` was looked at, when something is recording.
pub(super) fn note(table: &QualifiedTable) {
    NOTED.with(|noted| {
        if let Some(set) = noted.borrow_mut().as_mut() {
            if !set.contains(table) {
                set.insert(table.clone());
            }
        }
    });
}

/// Runs `stage` and returns the tables it looked at. Recordings do not nest: an inner one
/// would take the outer one's names.
pub(super) fn recording(stage: impl FnOnce()) -> BTreeSet<QualifiedTable> {
    let outer = NOTED.with(|noted| noted.borrow_mut().replace(BTreeSet::new()));
    debug_assert!(outer.is_none(), "recordings of reads do not nest");
    stage();
    NOTED
        .with(|noted| noted.borrow_mut().take())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_looks_made_while_recording_are_kept() {
        let a = QualifiedTable::new("public", "a");
        let b = QualifiedTable::new("public", "b");
        note(&a);
        let seen = recording(|| {
            note(&b);
            note(&b);
        });
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![b]);
        note(&a);
        assert!(recording(|| {}).is_empty());
    }
}
