//! `fake-kube [--port N]`: serves the fake Kubernetes API on 127.0.0.1 (a free port unless
//! given), prints its URL as the first line on stdout, and runs until SIGINT or SIGTERM. Other
//! processes drive it through the `/_fake/` control API (see the library's `control` module):
//! this is what `bench/controller-scale.py` runs.

use fake_kube::FakeKube;
use std::net::SocketAddr;
use std::process::ExitCode;

const USAGE: &str = "usage: fake-kube [--port N]";

fn port(mut args: impl Iterator<Item = String>) -> Result<u16, String> {
    let mut port = 0;
    while let Some(arg) = args.next() {
        let value = match arg.as_str() {
            "--port" => args.next().ok_or("--port needs a value")?,
            other => match other.strip_prefix("--port=") {
                Some(value) => value.to_owned(),
                None if other == "-h" || other == "--help" => return Err(String::new()),
                None => return Err(format!("unknown argument {other:?}")),
            },
        };
        port = value
            .parse()
            .map_err(|_| format!("invalid port {value:?}"))?;
    }
    Ok(port)
}

#[tokio::main]
async fn main() -> ExitCode {
    let port = match port(std::env::args().skip(1)) {
        Ok(port) => port,
        Err(message) if message.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("fake-kube: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let fake = match FakeKube::bind(SocketAddr::from(([127, 0, 0, 1], port))).await {
        Ok(fake) => fake,
        Err(err) => {
            eprintln!("fake-kube: cannot listen on 127.0.0.1:{port}: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", fake.url());
    stopped().await;
    drop(fake);
    ExitCode::SUCCESS
}

/// Resolves on SIGINT or SIGTERM.
async fn stopped() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}

#[cfg(test)]
mod tests {
    use super::port;

    fn parse(args: &[&str]) -> Result<u16, String> {
        port(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn the_port_comes_from_either_flag_form() {
        assert_eq!(parse(&[]), Ok(0));
        assert_eq!(parse(&["--port", "8080"]), Ok(8080));
        assert_eq!(parse(&["--port=9"]), Ok(9));
        assert!(parse(&["--port"]).is_err());
        assert!(parse(&["--port", "x"])
            .unwrap_err()
            .contains("invalid port"));
        assert!(parse(&["--verbose"]).unwrap_err().contains("unknown"));
    }
}
