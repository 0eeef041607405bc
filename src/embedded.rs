//! The embedded PostgreSQL cluster: `basalt serve` without a database URL, and the test
//! harness, run a private cluster with the server binaries found on this machine.
//!
//! Postgres refuses to run as root, so when Basalt is root the cluster runs as the `postgres`
//! system user; if that user cannot reach the requested directory (e.g. under `/root`), a
//! per-project directory under `/var/tmp/basalt/` is used instead.

use anyhow::{bail, Context as _, Result};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The user the server processes run as (`None`: the current user).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
}

/// A private cluster on loopback and a unix socket.
#[derive(Debug)]
pub struct EmbeddedPostgres {
    /// Directory holding `pg/` (data), the log and the port file.
    pub base_dir: PathBuf,
    /// Directory of `initdb`, `pg_ctl` and `postgres`.
    pub bin_dir: PathBuf,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// Who runs the server.
    pub run_as: Option<RunAs>,
    /// Whether this process started the server (and so stops it).
    pub started_here: bool,
}

/// Options for [`EmbeddedPostgres::start`].
#[derive(Debug, Clone, Copy, Default)]
pub struct StartOptions {
    /// Trade durability for speed (tests): no fsync.
    pub ephemeral: bool,
}

/// Finds `initdb` and `pg_ctl`: on PATH, else the newest `/usr/lib/postgresql/*/bin`.
pub fn find_binaries() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return Ok(dir);
            }
        }
    }
    let mut candidates: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let version = e
                        .file_name()
                        .to_string_lossy()
                        .split('.')
                        .next()?
                        .parse()
                        .ok()?;
                    let bin = e.path().join("bin");
                    (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
                        .then_some((version, bin))
                })
                .collect()
        })
        .unwrap_or_default();
    candidates.sort();
    match candidates.pop() {
        Some((_, bin)) => Ok(bin),
        None => bail!(
            "PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or under \
             /usr/lib/postgresql/*/bin. Install the PostgreSQL server package \
             (Debian/Ubuntu: `apt-get install postgresql`) or pass --database-url / BASALT_DATABASE_URL."
        ),
    }
}

/// The user to run Postgres as: `postgres` when we are root, else ourselves.
pub fn server_user() -> Result<Option<RunAs>> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    match nix::unistd::User::from_name("postgres") {
        Ok(Some(user)) => Ok(Some(RunAs {
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
        })),
        _ => bail!(
            "Basalt is running as root and PostgreSQL refuses to run as root, but there is no \
             `postgres` system user to run it as. Install the PostgreSQL server package \
             (Debian/Ubuntu: `apt-get install postgresql`, which creates that user), run Basalt \
             as a normal user, or pass --database-url / BASALT_DATABASE_URL."
        ),
    }
}

/// Whether `user` can enter every directory from `/` down to `dir` (existing part only).
fn reachable_by(dir: &Path, user: RunAs) -> bool {
    let mut current = PathBuf::from("/");
    for component in dir.components().skip(1) {
        current.push(component);
        let Ok(meta) = fs::metadata(&current) else {
            // Not created yet: we create it owned by the user.
            return true;
        };
        let mode = meta.permissions().mode();
        let can_enter = if meta.uid() == user.uid {
            mode & 0o100 != 0
        } else if meta.gid() == user.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !can_enter {
            return false;
        }
    }
    true
}

/// A stable short hash (FNV-1a) naming a project's fallback directory.
fn project_hash(path: &Path) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in path.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

fn absolute(path: &Path) -> Result<PathBuf> {
    if path.is_absolute() {
        Ok(path.to_path_buf())
    } else {
        Ok(std::env::current_dir()?.join(path))
    }
}

fn chown(path: &Path, user: Option<RunAs>) -> Result<()> {
    if let Some(u) = user {
        nix::unistd::chown(path, Some(u.uid.into()), Some(u.gid.into()))
            .with_context(|| format!("cannot give {} to the postgres user", path.display()))?;
    }
    Ok(())
}

impl EmbeddedPostgres {
    /// Starts (initialising on first use) the cluster under `requested_dir`, or reuses one
    /// already running there.
    pub fn start(requested_dir: &Path, options: StartOptions) -> Result<Self> {
        let bin_dir = find_binaries()?;
        let run_as = server_user()?;
        let requested = absolute(requested_dir)?;
        let base_dir = match run_as {
            Some(user) if !reachable_by(&requested, user) => {
                let fallback = PathBuf::from("/var/tmp/basalt").join(project_hash(&requested));
                tracing::warn!(
                    requested = %requested.display(),
                    used = %fallback.display(),
                    "the postgres user cannot reach the data directory; using a per-project directory it can reach"
                );
                fallback
            }
            _ => requested,
        };
        fs::create_dir_all(&base_dir)
            .with_context(|| format!("cannot create {}", base_dir.display()))?;
        chown(&base_dir, run_as)?;
        if base_dir.starts_with("/var/tmp/basalt") {
            chown(Path::new("/var/tmp/basalt"), run_as)?;
        }
        let mut cluster = EmbeddedPostgres {
            base_dir,
            bin_dir,
            port: 0,
            run_as,
            started_here: false,
        };
        cluster.init(options)?;
        if !cluster.is_running() {
            cluster.run_pg_ctl(
                &["start", "-w", "-t", "120", "-l"],
                Some(&cluster.log_file()),
            )?;
            cluster.started_here = true;
        }
        Ok(cluster)
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.base_dir.join("pg")
    }

    fn log_file(&self) -> PathBuf {
        self.base_dir.join("postgres.log")
    }

    fn socket_dir(&self) -> PathBuf {
        self.data_dir()
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(self.bin_dir.join(program));
        cmd.current_dir("/").stdin(Stdio::null());
        if let Some(user) = self.run_as {
            cmd.uid(user.uid).gid(user.gid);
        }
        cmd
    }

    fn init(&mut self, options: StartOptions) -> Result<()> {
        let port_file = self.base_dir.join("port");
        let data = self.data_dir();
        if data.join("PG_VERSION").is_file() {
            let text = fs::read_to_string(&port_file)
                .with_context(|| format!("cannot read {}", port_file.display()))?;
            self.port = text.trim().parse().context("port file is corrupt")?;
            return Ok(());
        }
        if data.exists() {
            fs::remove_dir_all(&data)
                .with_context(|| format!("cannot clear half-initialised {}", data.display()))?;
        }
        let mut initdb = self.command("initdb");
        initdb.args(["-D"]).arg(&data).args([
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
        ]);
        if options.ephemeral {
            initdb.arg("--no-sync");
        }
        let output = initdb.output().context("cannot run initdb")?;
        if !output.status.success() {
            bail!("initdb failed: {}", String::from_utf8_lossy(&output.stderr));
        }
        self.port = free_port()?;
        let socket = self.socket_dir();
        let socket = if socket.as_os_str().len() > 90 {
            PathBuf::from("/tmp")
        } else {
            socket
        };
        let mut conf = format!(
            "\n# Basalt embedded cluster\nlisten_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\nmax_connections = 200\n",
            self.port,
            socket.display().to_string().replace('\'', "''")
        );
        if options.ephemeral {
            conf.push_str("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n");
        }
        let conf_path = data.join("postgresql.conf");
        let mut existing = fs::read_to_string(&conf_path).context("cannot read postgresql.conf")?;
        existing.push_str(&conf);
        fs::write(&conf_path, existing).context("cannot write postgresql.conf")?;
        fs::write(&port_file, self.port.to_string()).context("cannot write the port file")?;
        Ok(())
    }

    fn is_running(&self) -> bool {
        self.command("pg_ctl")
            .arg("status")
            .arg("-D")
            .arg(self.data_dir())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    }

    fn run_pg_ctl(&self, args: &[&str], log: Option<&Path>) -> Result<()> {
        let mut cmd = self.command("pg_ctl");
        cmd.arg("-D").arg(self.data_dir());
        cmd.args(args);
        if let Some(log) = log {
            cmd.arg(log);
        }
        let output = cmd.output().context("cannot run pg_ctl")?;
        if !output.status.success() {
            let log_tail = log
                .and_then(|l| fs::read_to_string(l).ok())
                .map(|t| {
                    t.lines()
                        .rev()
                        .take(10)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default();
            bail!(
                "pg_ctl {} failed: {}{}\n{}",
                args.first().unwrap_or(&""),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
                log_tail
            );
        }
        Ok(())
    }

    /// Connection URL for `database` (superuser `postgres`, trust auth on loopback).
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{}", self.port, database)
    }

    /// Creates `database` unless it exists.
    pub async fn ensure_database(&self, database: &str) -> Result<()> {
        let (client, connection) =
            tokio_postgres::connect(&self.url("postgres"), tokio_postgres::NoTls)
                .await
                .context("cannot connect to the embedded cluster")?;
        let driver = tokio::spawn(connection);
        let exists = client
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&database])
            .await?
            .is_some();
        if !exists {
            client
                .batch_execute(&crate::sql::helpers::create_database(database).sql)
                .await?;
        }
        drop(client);
        let _ = driver.await;
        Ok(())
    }

    /// Stops the server if this process started it (fast shutdown).
    pub fn stop(&self) -> Result<()> {
        if self.started_here {
            self.run_pg_ctl(&["stop", "-m", "fast", "-w"], None)?;
        }
        Ok(())
    }

    /// PID of the running postmaster, from `postmaster.pid`.
    pub fn postmaster_pid(&self) -> Option<u32> {
        fs::read_to_string(self.data_dir().join("postmaster.pid"))
            .ok()?
            .lines()
            .next()?
            .trim()
            .parse()
            .ok()
    }
}

fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(listener.local_addr()?.port())
}
