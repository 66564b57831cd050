//! Reload: fetch the repo snapshot for a commit, verify it, install requirements only when
//! they changed, and restart the runtime on it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ramen_blob::BlobStore;
use sha2::{Digest, Sha256};
use tokio::process::Command;

use crate::runtime::{Load, Report, Runtime, RuntimeError};
use ramen_node_contract::{SnapshotRef, archive};

#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("snapshot {key} is not in the blob store")]
    Missing { key: String },
    #[error("snapshot {key} has digest {actual}, expected {expected}: refusing to load it")]
    DigestMismatch { key: String, expected: String, actual: String },
    #[error("blob store: {0}")]
    Blob(#[from] ramen_blob::BlobError),
    #[error("cannot unpack snapshot {key}: {reason}")]
    Unpack { key: String, reason: String },
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
    pub fn snapshot(&self, digest: &str) -> PathBuf {
        self.root.join("snapshots").join(digest)
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
}

impl Reloader {
    pub async fn reload(
        &self,
        runtime: &Runtime,
        snapshot: &SnapshotRef,
        env: Vec<(String, String)>,
    ) -> Result<Reloaded, ReloadError> {
        let root = self.unpack(snapshot).await?;
        self.ensure_venv().await?;
        let pip_ran = self.install_requirements(&root).await?;
        let report = runtime.load(Load { root: root.clone(), env }).await?;
        self.prune_snapshots(&snapshot.digest.to_ascii_lowercase());
        Ok(Reloaded { report, pip_ran, root })
    }

    /// Unpacks the snapshot once per commit (into a temp dir, then renamed into place).
    /// Snapshots are unpacked under their digest, so an archive is verified before it is first
    /// used and a different archive for the same commit is never mistaken for it.
    async fn unpack(&self, snapshot: &SnapshotRef) -> Result<PathBuf, ReloadError> {
        let dest = self.workdir.snapshot(&snapshot.digest.to_ascii_lowercase());
        if dest.is_dir() {
            return Ok(dest);
        }
        let key = snapshot.key.clone();
        let archive =
            self.blob.get(&key).await?.ok_or_else(|| ReloadError::Missing { key: key.clone() })?;
        let actual = archive::digest(&archive);
        if !actual.eq_ignore_ascii_case(&snapshot.digest) {
            return Err(ReloadError::DigestMismatch {
                key,
                expected: snapshot.digest.clone(),
                actual,
            });
        }
        let tmp = dest.with_extension("partial");
        let unpack_to = tmp.clone();
        tokio::task::spawn_blocking(move || archive::unpack(&archive, &unpack_to))
            .await
            .map_err(|e| ReloadError::Unpack { key: key.clone(), reason: e.to_string() })?
            .map_err(|e| ReloadError::Unpack { key, reason: e.to_string() })?;
        std::fs::rename(&tmp, &dest)?;
        Ok(dest)
    }

    async fn ensure_venv(&self) -> Result<(), ReloadError> {
        let python = self.workdir.python();
        if !python.exists() {
            let output = Command::new(&self.python)
                .args(["-m", "venv"])
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
        if !self.site_packages.is_empty() {
            let site = site_packages_dir(&self.workdir.venv())?;
            let lines: Vec<String> =
                self.site_packages.iter().map(|p| p.display().to_string()).collect();
            std::fs::write(site.join("ramen-base.pth"), lines.join("\n") + "\n")?;
        }
        Ok(())
    }

    /// Runs pip only when `requirements.txt` differs from the last successful install.
    async fn install_requirements(&self, root: &Path) -> Result<bool, ReloadError> {
        let requirements = root.join("requirements.txt");
        let contents = std::fs::read(&requirements).unwrap_or_default();
        let digest = hex::encode(Sha256::digest(&contents));
        let marker = self.workdir.venv().join(".ramen-requirements.sha256");
        if std::fs::read_to_string(&marker).is_ok_and(|m| m.trim() == digest) {
            return Ok(false);
        }
        if !contents.is_empty() {
            let output = Command::new(self.workdir.python())
                .args(["-m", "pip", "install", "--disable-pip-version-check", "-q", "-r"])
                .arg(&requirements)
                .args(&self.pip_args)
                .output()
                .await?;
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

    /// Keeps the snapshot in use and removes older ones.
    fn prune_snapshots(&self, keep: &str) {
        let Ok(entries) = std::fs::read_dir(self.workdir.root.join("snapshots")) else { return };
        for entry in entries.flatten() {
            if entry.file_name() != keep {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
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
