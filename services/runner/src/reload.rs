//! Reload: fetch the repo snapshot for a commit, verify it, put its Python environment in
//! place, and restart the runtime on it. The environment is the one built once per deploy
//! (`ramen_node_contract::environment`): unpacked and put on the path, no pip, no package
//! index. A snapshot without one (no requirements, or a config older than environments) falls
//! back to `pip install -r requirements.txt`, run only when the requirements changed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ramen_blob::BlobStore;
use sha2::{Digest, Sha256};
use tokio::process::Command;

use crate::runtime::{Load, Report, Runtime, RuntimeError};
use ramen_node_contract::{EnvironmentRef, SnapshotRef, archive};

#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("{what} {key} is not in the blob store")]
    Missing { what: &'static str, key: String },
    #[error("{what} {key} has digest {actual}, expected {expected}: refusing to load it")]
    DigestMismatch { what: &'static str, key: String, expected: String, actual: String },
    #[error("blob store: {0}")]
    Blob(#[from] ramen_blob::BlobError),
    #[error("cannot unpack {what} {key}: {reason}")]
    Unpack { what: &'static str, key: String, reason: String },
    #[error("cannot create the virtualenv with {python}: {reason}")]
    Venv { python: String, reason: String },
    #[error("pip install -r requirements.txt failed (exit {status}):\n{output}")]
    Pip { status: String, output: String },
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

pub struct Reloaded {
    pub report: Arc<Report>,
    pub pip_ran: bool,
    pub root: PathBuf,
}

/// Files under the node's working directory.
#[derive(Clone, Debug)]
pub struct Workdir {
    pub root: PathBuf,
}

impl Workdir {
    pub fn venv(&self) -> PathBuf {
        self.root.join("venv")
    }
    pub fn python(&self) -> PathBuf {
        self.venv().join("bin/python")
    }
    pub fn runtime_dir(&self) -> PathBuf {
        self.root.join("runtime")
    }
    /// Where a built environment is unpacked (named by its digest).
    pub fn environment(&self, digest: &str) -> PathBuf {
        self.root.join("environments").join(digest)
    }

    pub fn snapshot(&self, digest: &str) -> PathBuf {
        self.root.join("snapshots").join(digest)
    }

    /// The one directory the group's code writes (its `HOME` and `TMPDIR`).
    pub fn scratch(&self) -> PathBuf {
        self.root.join("scratch")
    }

    /// Creates the scratch directory, private to this node's user.
    pub fn create_scratch(&self) -> std::io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(self.scratch())
    }

    /// Writes the embedded runtime sources (every start: the binary decides the version).
    pub fn install_runtime(&self) -> std::io::Result<()> {
        let dir = self.runtime_dir().join("ramen_runtime");
        std::fs::create_dir_all(&dir)?;
        for (name, contents) in crate::RUNTIME_FILES {
            std::fs::write(dir.join(name), contents)?;
        }
        Ok(())
    }
}

pub struct Reloader {
    pub workdir: Workdir,
    pub blob: Arc<dyn BlobStore>,
    pub python: PathBuf,
    pub site_packages: Vec<PathBuf>,
    pub pip_args: Vec<String>,
    /// How pip (it runs the group's `setup.py`s) is confined.
    pub group_code: crate::confine::GroupCode,
}

impl Reloader {
    pub async fn reload(
        &self,
        runtime: &Runtime,
        snapshot: &SnapshotRef,
        env: Vec<(String, String)>,
    ) -> Result<Reloaded, ReloadError> {
        let root = self.unpack(snapshot).await?;
        let pip_ran = match &snapshot.environment {
            Some(environment) => {
                let dir = self.unpack_environment(environment).await?;
                self.ensure_venv(false).await?;
                self.put_on_path(Some(&dir))?;
                false
            }
            None => {
                self.ensure_venv(true).await?;
                self.put_on_path(None)?;
                self.install_requirements(&root).await?
            }
        };
        let report = runtime.load(Load { root: root.clone(), env }).await?;
        self.prune_snapshots(snapshot);
        Ok(Reloaded { report, pip_ran, root })
    }

    /// Unpacks the snapshot once per commit (into a temp dir, then renamed into place).
    /// Snapshots are unpacked under their digest, so an archive is verified before it is first
    /// used and a different archive for the same commit is never mistaken for it.
    async fn unpack(&self, snapshot: &SnapshotRef) -> Result<PathBuf, ReloadError> {
        let dest = self.workdir.snapshot(&snapshot.digest.to_ascii_lowercase());
        fetch_verified(&*self.blob, "snapshot", &snapshot.key, &snapshot.digest, &dest).await?;
        Ok(dest)
    }

    /// The deploy's environment, unpacked once per digest.
    async fn unpack_environment(&self, env: &EnvironmentRef) -> Result<PathBuf, ReloadError> {
        let dest = self.workdir.environment(&env.digest.to_ascii_lowercase());
        fetch_verified(&*self.blob, "environment", &env.location, &env.digest, &dest).await?;
        Ok(dest)
    }

    /// The node's virtualenv; with `pip` only when this node may install requirements itself
    /// (with a built environment it never does, and skipping ensurepip saves seconds).
    async fn ensure_venv(&self, pip: bool) -> Result<(), ReloadError> {
        let python = self.workdir.python();
        if !python.exists() {
            let mut args = vec!["-m", "venv"];
            if !pip {
                args.push("--without-pip");
            }
            let output = Command::new(&self.python)
                .args(&args)
                .arg(self.workdir.venv())
                .output()
                .await
                .map_err(|e| ReloadError::Venv {
                    python: self.python.display().to_string(),
                    reason: e.to_string(),
                })?;
            if !output.status.success() {
                let reason = String::from_utf8_lossy(&output.stderr).into_owned();
                return Err(ReloadError::Venv {
                    python: self.python.display().to_string(),
                    reason,
                });
            }
        }
        Ok(())
    }

    /// The directories the runtime imports from besides its own virtualenv: the image's
    /// preinstalled packages and, when there is one, the deploy's environment.
    fn put_on_path(&self, environment: Option<&Path>) -> Result<(), ReloadError> {
        let site = site_packages_dir(&self.workdir.venv())?;
        let lines: Vec<String> = environment
            .into_iter()
            .chain(self.site_packages.iter().map(PathBuf::as_path))
            .map(|p| p.display().to_string())
            .collect();
        let pth = site.join("ramen-base.pth");
        if lines.is_empty() {
            let _ = std::fs::remove_file(pth);
        } else {
            std::fs::write(pth, lines.join("\n") + "\n")?;
        }
        Ok(())
    }

    /// Runs pip only when `requirements.txt` differs from the last successful install.
    async fn install_requirements(&self, root: &Path) -> Result<bool, ReloadError> {
        let requirements = root.join("requirements.txt");
        let contents =
            ramen_node_contract::tree::read_requirements(root).map_err(std::io::Error::other)?;
        let digest = hex::encode(Sha256::digest(&contents));
        let marker = self.workdir.venv().join(".ramen-requirements.sha256");
        if std::fs::read_to_string(&marker).is_ok_and(|m| m.trim() == digest) {
            return Ok(false);
        }
        if !contents.is_empty() {
            let python = self.workdir.python();
            let mut pip = Command::new(&python);
            self.group_code.pip_environment(&mut pip);
            pip.args(["-m", "pip", "install", "--disable-pip-version-check", "-q", "-r"])
                .arg(&requirements)
                .args(&self.pip_args);
            let confinement =
                self.group_code.pip(&python, &[root], &self.workdir.venv(), &self.pip_args);
            self.group_code.confine(&mut pip, confinement).map_err(std::io::Error::other)?;
            let output = pip.output().await?;
            if !output.status.success() {
                let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&output.stderr));
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines[lines.len().saturating_sub(30)..].join("\n");
                return Err(ReloadError::Pip { status: output.status.to_string(), output: tail });
            }
        }
        std::fs::write(marker, digest)?;
        Ok(true)
    }

    /// Keeps the snapshot (and environment) in use and removes older ones.
    fn prune_snapshots(&self, keep: &SnapshotRef) {
        let keep_env = keep.environment.as_ref().map(|e| e.digest.to_ascii_lowercase());
        let keep_snapshot = keep.digest.to_ascii_lowercase();
        for (dir, keep) in [("snapshots", Some(keep_snapshot)), ("environments", keep_env)] {
            let Ok(entries) = std::fs::read_dir(self.workdir.root.join(dir)) else { continue };
            for entry in entries.flatten() {
                if keep.as_deref() != entry.file_name().to_str() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
    }
}

/// Fetches the archive at `key`, verifies it against `digest` (lowercase hex SHA-256) and
/// unpacks it into `dest` (through a temp dir renamed into place), once: a `dest` that exists is
/// the same archive, since it is named by the digest.
pub(crate) async fn fetch_verified(
    blob: &dyn BlobStore,
    what: &'static str,
    key: &str,
    digest: &str,
    dest: &Path,
) -> Result<(), ReloadError> {
    if dest.is_dir() {
        return Ok(());
    }
    let key = key.to_owned();
    let archive =
        blob.get(&key).await?.ok_or_else(|| ReloadError::Missing { what, key: key.clone() })?;
    let actual = archive::digest(&archive);
    let expected = digest.trim_start_matches("sha256:");
    if !actual.eq_ignore_ascii_case(expected) {
        return Err(ReloadError::DigestMismatch {
            what,
            key,
            expected: expected.to_owned(),
            actual,
        });
    }
    let tmp = dest.with_extension("partial");
    let unpack_to = tmp.clone();
    tokio::task::spawn_blocking(move || archive::unpack(&archive, &unpack_to))
        .await
        .map_err(|e| ReloadError::Unpack { what, key: key.clone(), reason: e.to_string() })?
        .map_err(|e| ReloadError::Unpack { what, key, reason: e.to_string() })?;
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::rename(&tmp, dest)?;
    Ok(())
}

fn site_packages_dir(venv: &Path) -> std::io::Result<PathBuf> {
    let lib = venv.join("lib");
    for entry in std::fs::read_dir(&lib)? {
        let path = entry?.path().join("site-packages");
        if path.is_dir() {
            return Ok(path);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("no site-packages under {}", lib.display()),
    ))
}
