//! Relationships resolved: the target table and the join columns of each object and array
//! relationship, from a foreign key or a manual mapping.

use super::*;

pub(super) fn resolve_relationships(entry: &TableEntry, cache: &mut Resolution) {
    if !cache.resolved.tables.contains_key(&entry.table) {
        return;
    }
    for rel in &entry.object_relationships {
        let result = resolve_object_relationship(&entry.table, rel, &cache.resolved);
        settle(cache, &entry.table, rel, "object_relation", result);
    }
    for rel in &entry.array_relationships {
        let result = resolve_array_relationship(&entry.table, rel, &cache.resolved);
        settle(cache, &entry.table, rel, "array_relation", result);
    }
}

/// Adds a resolved relationship to its table, or reports it inconsistent (it failed to
/// resolve, or its name is taken by a column or an earlier relationship). The definition is
/// built only for a report: building it for every consistent one is a sizeable part of
/// resolving a document with thousands of relationships.
fn settle<U: serde::Serialize>(
    cache: &mut Resolution,
    table: &QualifiedTable,
    rel: &RelationshipEntry<U>,
    kind: &'static str,
    result: Result<ResolvedRelationship, MetadataError>,
) {
    let name = &rel.name.0;
    let Some(owner) = cache.resolved.table_mut(table) else {
        return;
    };
    let clash = owner.db.column(name).is_some() || owner.relationships.contains_key(name);
    let reason = match result {
        Ok(_) if clash => {
            format!("column/relationship \"{name}\" of table \"{table}\" already exists")
        }
        Ok(r) => {
            owner.relationships.insert(name.clone(), r);
            return;
        }
        Err(e) => e.message,
    };
    cache.inconsistencies.push(Inconsistency {
        object: ObjectId::Relationship(table.clone(), name.clone()),
        kind,
        definition: relationship_definition(table, rel),
        reason,
        conflict: false,
    });
}

fn tracked<'a>(
    resolved: &'a Resolved,
    table: &QualifiedTable,
) -> Result<&'a ResolvedTable, MetadataError> {
    resolved.table(table).ok_or_else(|| {
        not_exists_in_metadata(
            JsonPath::root(),
            format!("table \"{table}\" does not exist"),
        )
    })
}

fn column_exists(table: &ResolvedTable, column: &str) -> Result<(), MetadataError> {
    table.db.column(column).map(|_| ()).ok_or_else(|| {
        not_exists_in_database(
            JsonPath::root(),
            format!("column \"{column}\" does not exist"),
        )
    })
}

fn resolve_manual(
    owner: &ResolvedTable,
    manual: &ManualConfiguration,
    resolved: &Resolved,
) -> Result<(QualifiedTable, Vec<(String, String)>), MetadataError> {
    let remote = tracked(resolved, &manual.remote_table)?;
    if manual.column_mapping.is_empty() {
        return Err(MetadataError::new(
            Code::ParseFailed,
            JsonPath::root(),
            "column_mapping must not be empty",
        ));
    }
    for (local, remote_col) in &manual.column_mapping {
        column_exists(owner, local)?;
        column_exists(remote, remote_col)?;
    }
    Ok((
        manual.remote_table.clone(),
        manual
            .column_mapping
            .iter()
            .map(|(a, b)| (a.clone(), b.clone()))
            .collect(),
    ))
}

/// Resolves an object relationship; the error is the reason text.
pub fn resolve_object_relationship(
    table: &QualifiedTable,
    rel: &RelationshipEntry<ObjRelUsing>,
    resolved: &Resolved,
) -> Result<ResolvedRelationship, MetadataError> {
    super::checks::check_reserved_name(&rel.name.0, JsonPath::root().key("name"))?;
    let owner = tracked(resolved, table)?;
    let (target, mapping) = match &rel.using {
        ObjRelUsing::ForeignKey(column) => {
            column_exists(owner, column)?;
            let fks: Vec<_> = owner
                .db
                .foreign_keys()
                .filter(|fk| fk.columns.len() == 1 && &fk.columns[0] == column)
                .collect();
            let fk = single_fk(&fks)?;
            let target = fk.referenced_table().ok_or_else(|| {
                MetadataError::new(
                    Code::ConstraintError,
                    JsonPath::root(),
                    "foreign key without a referenced table",
                )
            })?;
            tracked(resolved, &target)?;
            let remote_cols = fk.ref_columns.clone().unwrap_or_default();
            (
                target,
                vec![(
                    column.clone(),
                    remote_cols.first().cloned().unwrap_or_default(),
                )],
            )
        }
        ObjRelUsing::Manual(manual) => resolve_manual(owner, manual, resolved)?,
    };
    Ok(ResolvedRelationship {
        name: rel.name.0.clone(),
        kind: RelationshipKind::Object,
        target,
        mapping,
    })
}

fn single_fk<'a>(
    fks: &[&'a crate::db_model::DbConstraint],
) -> Result<&'a crate::db_model::DbConstraint, MetadataError> {
    let message = match fks {
        [fk] => return Ok(fk),
        [] => "no foreign constraint exists on the given column",
        _ => "more than one foreign key constraint exists on the given column",
    };
    Err(MetadataError::new(
        Code::ConstraintError,
        JsonPath::root(),
        message,
    ))
}

/// Resolves an array relationship; the error is the reason text.
pub fn resolve_array_relationship(
    table: &QualifiedTable,
    rel: &RelationshipEntry<ArrRelUsing>,
    resolved: &Resolved,
) -> Result<ResolvedRelationship, MetadataError> {
    super::checks::check_reserved_name(&rel.name.0, JsonPath::root().key("name"))?;
    let owner = tracked(resolved, table)?;
    let (target, mapping) = match &rel.using {
        ArrRelUsing::ForeignKey(fk_ref) => {
            let remote = tracked(resolved, &fk_ref.table)?;
            column_exists(remote, &fk_ref.column)?;
            let fks: Vec<_> = remote
                .db
                .foreign_keys()
                .filter(|fk| {
                    fk.columns.len() == 1
                        && fk.columns[0] == fk_ref.column
                        && fk.referenced_table().as_ref() == Some(table)
                })
                .collect();
            let fk = single_fk(&fks)?;
            let local = fk
                .ref_columns
                .as_ref()
                .and_then(|c| c.first().cloned())
                .unwrap_or_default();
            (fk_ref.table.clone(), vec![(local, fk_ref.column.clone())])
        }
        ArrRelUsing::Manual(manual) => resolve_manual(owner, manual, resolved)?,
    };
    Ok(ResolvedRelationship {
        name: rel.name.0.clone(),
        kind: RelationshipKind::Array,
        target,
        mapping,
    })
}
