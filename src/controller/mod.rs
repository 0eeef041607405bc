//! The Kubernetes side of Basalt (`docs/kubernetes.md`): the resource kinds, one module each
//! with its CRD and its mapping to metadata objects ([`kinds`], their CEL rules checked by
//! [`cel`]), the pure plan ([`diff`], [`conditions`]), the reconcile ([`reconcile`]) and its
//! catalog writes (`commit`), leader election ([`leader`]), the process and its orphan scans
//! ([`run`], [`scope`]), and `basalt export` ([`export`]); reconciles share one view of the
//! catalog and database (`view`), and a kind whose object the catalog holds once has one owner
//! at a time (`singleton`). Catalog writes go through the metadata API's operations and
//! transaction; the controller never runs SQL of its own on user tables.

pub mod cel;
mod commit;
pub mod conditions;
mod cycles;
pub mod diff;
pub mod export;
mod invalid;
pub mod kinds;
pub mod leader;
pub mod metrics;
pub mod reconcile;
pub mod run;
pub mod scope;
mod singleton;
mod view;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Every CRD, in the kinds table's order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    kinds::crds()
}

/// `(file name, YAML)` of every CRD, as `basalt crds --out DIR` writes them.
pub fn crd_files() -> Result<Vec<(String, String)>, serde_yaml::Error> {
    crds()
        .into_iter()
        .map(|crd| {
            let name = format!("{}.yaml", crd.metadata.name.clone().unwrap_or_default());
            serde_yaml::to_string(&crd).map(|yaml| (name, yaml))
        })
        .collect()
}

/// `basalt controller`: runs the controller until SIGINT/SIGTERM, or a maintenance action.
pub async fn main(command: crate::config::ControllerCommand) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let url = command
        .database_url
        .clone()
        .context("the controller needs --database-url / BASALT_DATABASE_URL")?;
    if let Some(crate::config::ControllerAction::ReleaseOwnership { namespace }) = &command.action {
        let (pool, _) = crate::pool::pool_for(&url, 1)?;
        let mut client = pool.get().await.context("cannot connect to the database")?;
        crate::catalog::migrate(&mut client).await?;
        let n = crate::catalog::managed::release(&**client, namespace.as_deref()).await?;
        println!("released ownership of {n} catalog objects");
        return Ok(());
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        crate::shutdown::shutdown_signal().await;
        tracing::info!("shutting down the controller");
        let _ = stop.send(true);
    });
    let mut settings = command.settings;
    settings.live = command.detection.policy();
    run::run(settings, &url, stopped).await
}
