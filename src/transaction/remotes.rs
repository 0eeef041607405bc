//! Remote schemas in the metadata transaction (`docs/remote-schemas.md`): the remotes an
//! operation adds or reloads are introspected before its transaction starts, so no lock is
//! held while a remote answers; the catalog's stored introspections are laid under them, with
//! the GraphQL layer's clash rules, for resolving; and at server start every remote is
//! introspected again.

use super::TransactionError;
use crate::catalog::{self, remote, Notification};
use crate::metadata::types::Metadata;
use crate::ops::Op;
use crate::resolve::remote::{Fetched, Remotes};
use std::collections::BTreeMap;
use tokio_postgres::GenericClient;

/// The remote-schema side of resolving `metadata`: the stored state (read only when it has
/// remote schemas: the rows carry whole introspection results) and the GraphQL layer's clash
/// rules.
pub(super) async fn world(
    client: &impl GenericClient,
    metadata: &Metadata,
) -> Result<Remotes, TransactionError> {
    let stored = if metadata.remote_schemas.is_empty() {
        BTreeMap::new()
    } else {
        remote::load_stored(client).await?
    };
    Ok(Remotes {
        stored,
        check: Some(crate::graphql::remote::check),
        action_types: Some(crate::graphql::typegen::action_type_clashes),
        documents: Some(crate::graphql::rest::check_documents),
        fetched: BTreeMap::new(),
    })
}

/// Introspects what `op` needs before its transaction starts. Reads the document without a
/// lock: a definition changed in between is simply not found among the results, and the
/// stored state is used for it.
pub(super) async fn prefetch(
    client: &impl GenericClient,
    op: &Op,
) -> Result<Vec<Fetched>, TransactionError> {
    if !op.may_introspect() {
        return Ok(Vec::new());
    }
    let (metadata, _) = catalog::load(client, false).await?;
    let wanted = op.introspects(&metadata);
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    Ok(crate::remote::introspect_all(&wanted).await)
}

/// At server start: introspects every remote schema again and stores the results, so a
/// remote that changed is served as it is now, and one that is down is reported
/// inconsistent by every replica (its stored schema still served). Peers are told to
/// rebuild when anything was stored.
pub async fn refresh(client: &mut tokio_postgres::Client) -> Result<(), TransactionError> {
    let (metadata, _) = catalog::load(&*client, false).await?;
    if metadata.remote_schemas.is_empty() {
        return Ok(());
    }
    let fetched = crate::remote::introspect_all(&metadata.remote_schemas).await;
    let tx = client.transaction().await?;
    // Serializes with metadata writers, and sees the document as it is now.
    let (metadata, version) = catalog::load(&tx, true).await?;
    if remote::store(&tx, &metadata, &metadata, &fetched).await? {
        Notification::of(version, true).send(&tx).await?;
    }
    tx.commit().await?;
    Ok(())
}
