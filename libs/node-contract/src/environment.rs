//! A snapshot's Python environment, built once per deploy and reused by every worker.
//!
//! The builder (`ramen worker --build-env <spec>`, run by the zone's provider where its workers
//! run: a local process, or a Kubernetes Job of the worker image) installs requirements.txt into
//! a fresh virtualenv and packs what the install added — the virtualenv's `site-packages`, which
//! holds no absolute path — as `groups/<group>/environments/<key>.tar.gz`. A node unpacks it
//! and puts it on its interpreter's path with a `.pth` file: no worker start runs pip or
//! reaches a package index.
//!
//! The key hashes everything the result depends on — the requirements, the Python version and
//! the platform — so an unchanged requirements.txt on the same runtime is found and reused.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{BlobConfig, EnvironmentRef, SandboxConfig, SnapshotRef};

/// What the builder is asked to build (a TOML file the provider writes, 0600).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuildSpec {
    pub group: String,
    pub snapshot: SnapshotRef,
    pub blob: BlobConfig,
    /// Interpreter the environment is built for (the workers' own).
    pub python: PathBuf,
    /// Directories the workers also see (an image's preinstalled SDK): what they provide is
    /// not installed again.
    pub site_packages: Vec<PathBuf>,
    /// Extra `pip install` arguments (an index URL, `--no-index --find-links ...`).
    pub pip_args: Vec<String>,
    /// Scratch space for the install.
    pub workdir: PathBuf,
    /// pip runs the requirements' build code (`setup.py`): confined like the workers' code
    /// (only its `enabled` matters here; pip reaches the package indexes, not the group's ports).
    pub sandbox: SandboxConfig,
}

/// What the builder prints (one JSON line on stdout) when it is done.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct BuildOutcome {
    /// The environment, when there is one (built now or found).
    pub environment: Option<EnvironmentRef>,
    /// False when it was present already.
    pub built: bool,
    /// pip's output (its tail).
    pub log: Vec<String>,
    /// Set when the install failed, naming what failed.
    pub error: Option<String>,
}

/// The key of an environment: requirements, Python version and platform, hashed.
pub fn key(requirements: &[u8], python_version: &str, platform: &str) -> String {
    let mut hash = Sha256::new();
    for part in [requirements, python_version.as_bytes(), platform.as_bytes()] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    hex::encode(hash.finalize())
}

/// Where an environment is stored: beside the group's snapshots, so it goes with the group.
pub fn location(group: &str, key: &str) -> String {
    format!("groups/{group}/environments/{key}.tar.gz")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_key_changes_with_each_input_and_parts_cannot_shift() {
        let base = super::key(b"fastmcp==4.1.6\n", "3.11.7", "linux-x86_64");
        assert_eq!(base, super::key(b"fastmcp==4.1.6\n", "3.11.7", "linux-x86_64"));
        assert_ne!(base, super::key(b"fastmcp==4.1.7\n", "3.11.7", "linux-x86_64"));
        assert_ne!(base, super::key(b"fastmcp==4.1.6\n", "3.12.1", "linux-x86_64"));
        assert_ne!(base, super::key(b"fastmcp==4.1.6\n", "3.11.7", "linux-aarch64"));
        assert_ne!(super::key(b"ab", "c", ""), super::key(b"a", "bc", ""));
        assert_eq!(
            super::location("team", &base),
            format!("groups/team/environments/{base}.tar.gz")
        );
    }
}
