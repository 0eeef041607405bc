//! The `basalt` binary: parses the command line and runs the subcommand.

use basalt::config::{Cli, Command};
use clap::Parser;

/// mimalloc rather than glibc's malloc: the resolved metadata is rebuilt from many small
/// allocations on every metadata change, and glibc spent more time consolidating and
/// unlinking its free lists than Basalt spent resolving (see `docs/operations.md`, "Memory").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its index in mimalloc 3's `mi_option_e`, which
/// libmimalloc-sys does not name; checked by a test below).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Returns freed memory to the system at once rather than after a delay (1 s by default),
/// which mimalloc runs only on later allocator activity: without it, a server that rebuilds its
/// schema and then goes quiet keeps the old one's pages. An explicit `MIMALLOC_PURGE_DELAY` in
/// the environment wins.
fn return_freed_memory_promptly() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a process-wide option of the allocator, which mimalloc allows at any
        // time; the index is checked against mimalloc's default by `purge_delay_index`.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    return_freed_memory_promptly();
    let cli = Cli::parse();
    match cli.command {
        Command::Crds { out } => match write_crds(&out) {
            Ok(n) => {
                println!("wrote {n} CRDs to {}", out.display());
                std::process::ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("basalt: {err:#}");
                std::process::ExitCode::FAILURE
            }
        },
        Command::Export(command) => match export(&command).await {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("basalt: {err:#}");
                std::process::ExitCode::FAILURE
            }
        },
        Command::Diff(command) => {
            std::process::ExitCode::from(basalt::preview::main(&command).await)
        }
        Command::Controller(command) => {
            let telemetry =
                basalt::telemetry::init(command.log_format, &command.otlp, "basalt-controller");
            let result = basalt::controller::main(*command).await;
            finish(result, telemetry, "basalt controller stopped").await
        }
        Command::Serve(config) => {
            let telemetry = basalt::telemetry::init(config.log_format, &config.otlp, "basalt");
            let result = basalt::app::serve(*config).await;
            finish(result, telemetry, "basalt stopped").await
        }
    }
}

/// Reports how a long-running command ended, flushes the traces, and gives the exit code.
async fn finish(
    result: anyhow::Result<()>,
    telemetry: basalt::telemetry::Telemetry,
    stopped: &str,
) -> std::process::ExitCode {
    let code = match &result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = format!("{err:#}"), "{stopped}");
            eprintln!("basalt: {err:#}");
            std::process::ExitCode::FAILURE
        }
    };
    telemetry.shutdown().await;
    code
}

/// Writes every CRD into `dir`; returns how many.
fn write_crds(dir: &std::path::Path) -> anyhow::Result<usize> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let files = basalt::controller::crd_files()?;
    for (name, yaml) in &files {
        let path = dir.join(name);
        std::fs::write(&path, yaml).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(files.len())
}

/// `basalt export`: reads the catalog and writes it as resources or as the metadata document.
async fn export(command: &basalt::config::ExportCommand) -> anyhow::Result<()> {
    use anyhow::Context;
    use basalt::config::ExportFormat;
    let url = command
        .database_url
        .as_deref()
        .context("export needs --database-url / BASALT_DATABASE_URL")?;
    let (pool, _) = basalt::pool::pool_for(url, 1)?;
    let client = pool.get().await.context("cannot connect to the database")?;
    let (metadata, version) = basalt::catalog::load(&**client, false)
        .await
        .context("cannot read basalt_catalog (is this Basalt's database?)")?;
    let files = match command.format {
        ExportFormat::Metadata => {
            // As `export_metadata` writes it: cron triggers left out of metadata stay out.
            let mut metadata = metadata;
            metadata.cron_triggers.retain(|t| t.include_in_metadata);
            let text = serde_json::to_string_pretty(&metadata)?;
            vec![("metadata.json".to_owned(), text + "\n")]
        }
        ExportFormat::Crds => {
            let export = basalt::controller::export::resources(&metadata, &command.namespace)?;
            match &command.out {
                Some(_) => export.files()?,
                None => vec![(String::new(), export.stream()?)],
            }
        }
    };
    match &command.out {
        None => {
            for (_, text) in &files {
                print!("{text}");
            }
        }
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            for (name, text) in &files {
                let path = dir.join(name);
                std::fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            eprintln!(
                "wrote {} files for catalog version {version} to {}",
                files.len(),
                dir.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The option index names `purge_delay`: mimalloc 3's defaults of it (1,000 ms) and of
    /// its neighbours.
    #[test]
    fn purge_delay_index() {
        // SAFETY: reads allocator options.
        let (before, at, after) = unsafe {
            (
                libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY - 1),
                libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY),
                libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY + 1),
            )
        };
        assert_eq!(at, 1000, "purge_delay defaults to 1,000 ms");
        assert_eq!(
            (before, after),
            (1, 0),
            "deprecated_eager_commit_delay, use_numa_nodes"
        );
    }
}
