//! Paths of a local placement and its workers, and the private (0600) files in them.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::model::TrackKind;
use crate::provider::{ConfigTemplate, ProviderError, StepOutcome};

/// `<root>/<zone>/<group>`: the local stand-in for the namespace `ramen-<group>-<zone>`.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub dir: PathBuf,
}

impl Layout {
    pub fn new(root: &Path, zone: &str, group: &str) -> Self {
        Self { dir: root.join(zone).join(group) }
    }

    pub fn written(&self) -> PathBuf {
        self.dir.join("config/written.toml")
    }

    pub fn track(&self, track: TrackKind) -> PathBuf {
        self.dir.join("config").join(format!("{}.toml", track.name()))
    }

    pub fn workers(&self) -> PathBuf {
        self.dir.join("workers")
    }

    pub fn worker(&self, id: &str) -> WorkerDir {
        WorkerDir { dir: self.workers().join(id) }
    }

    /// Every worker directory present on disk (including ones no process runs in).
    pub fn worker_dirs(&self) -> Vec<WorkerDir> {
        let Ok(entries) = std::fs::read_dir(self.workers()) else { return Vec::new() };
        entries
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| WorkerDir { dir: e.path() })
            .collect()
    }

    pub fn create(&self) -> Result<(), ProviderError> {
        for dir in [self.dir.join("config"), self.workers()] {
            private_dir(&dir)?;
        }
        Ok(())
    }

    pub fn read_template(&self, path: &Path) -> Result<Option<ConfigTemplate>, ProviderError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ProviderError::io(format!("reading {}", path.display()), e)),
        };
        toml::from_str(&text)
            .map(Some)
            .map_err(|e| ProviderError::Failed(format!("{} is unreadable: {e}", path.display())))
    }

    pub fn write_template(
        &self,
        path: &Path,
        template: &ConfigTemplate,
    ) -> Result<(), ProviderError> {
        let text = toml::to_string(template)
            .map_err(|e| ProviderError::Failed(format!("encoding config: {e}")))?;
        write_private(path, text.as_bytes())
    }

    /// Removes the directory, then the zone's directory when it was the last placement in it.
    pub fn remove(&self) -> Result<StepOutcome, ProviderError> {
        let existed = self.dir.exists();
        match std::fs::remove_dir_all(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ProviderError::io(format!("removing {}", self.dir.display()), e)),
        }
        if let Some(zone_dir) = self.dir.parent() {
            // Fails while another group still has a placement in the zone, which is fine.
            let _ = std::fs::remove_dir(zone_dir);
        }
        let what = if existed { "removed" } else { "already gone:" };
        Ok(StepOutcome::Done(format!("{what} {}", self.dir.display())))
    }
}

/// The groups with a placement directory in any local zone under `root` (`<root>/<zone>/<group>`).
pub(crate) fn groups_on_host(root: &Path) -> Vec<String> {
    let dirs = |dir: &Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
            .unwrap_or_default()
    };
    let mut groups: Vec<String> = dirs(root)
        .iter()
        .flat_map(|zone| dirs(zone))
        .filter_map(|group| group.file_name()?.to_str().map(str::to_owned))
        .collect();
    groups.sort();
    groups.dedup();
    groups
}

/// One worker's directory.
#[derive(Clone, Debug)]
pub(crate) struct WorkerDir {
    pub dir: PathBuf,
}

impl WorkerDir {
    pub fn node_config(&self) -> PathBuf {
        self.dir.join("node.toml")
    }
    /// Where the node writes the ports it bound (`ramen_node_contract::NodePorts`).
    pub fn ports_file(&self) -> PathBuf {
        self.dir.join("ports.json")
    }

    pub fn log(&self) -> PathBuf {
        self.dir.join("worker.log")
    }
    pub fn pid_file(&self) -> PathBuf {
        self.dir.join("worker.pid")
    }
    /// The node's own working directory (virtualenv, snapshots, runtime sources).
    pub fn node_workdir(&self) -> PathBuf {
        self.dir.join("node")
    }
}

pub(crate) fn private_dir(dir: &Path) -> Result<(), ProviderError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| ProviderError::io(format!("creating {}", dir.display()), e))
}

/// Writes atomically (temp file + rename) with mode 0600: these files hold secrets.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), ProviderError> {
    let io = |e| ProviderError::io(format!("writing {}", path.display()), e);
    if let Some(parent) = path.parent() {
        private_dir(parent)?;
    }
    let tmp = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}
