//! The `basalt` binary: parses the command line and runs the subcommand.

use basalt::config::{Cli, Command};
use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
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
        Command::Controller(command) => {
            basalt::telemetry::init(command.log_format);
            match basalt::controller::main(*command).await {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(err) => {
                    tracing::error!(error = format!("{err:#}"), "basalt controller stopped");
                    eprintln!("basalt: {err:#}");
                    std::process::ExitCode::FAILURE
                }
            }
        }
        Command::Serve(config) => {
            basalt::telemetry::init(config.log_format);
            match basalt::app::serve(*config).await {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(err) => {
                    tracing::error!(error = format!("{err:#}"), "basalt stopped");
                    eprintln!("basalt: {err:#}");
                    std::process::ExitCode::FAILURE
                }
            }
        }
    }
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
