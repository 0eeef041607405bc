//! The `basalt` binary: parses the command line and runs the subcommand.

use basalt::config::{Cli, Command};
use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(config) => {
            basalt::telemetry::init(config.log_format);
            match basalt::app::serve(config).await {
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
