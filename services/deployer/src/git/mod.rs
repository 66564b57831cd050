//! Repo sync with the `git` CLI: one bare mirror per group and URL in a cache under the data
//! directory, fetched (never cloned with the URL stored in its config), refs resolved to
//! commits, and a commit exported as a plain directory tree for the snapshot.

mod command;
pub mod refs;
pub mod url;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

pub use command::{Credentials, GitRunner, scrub};
pub use url::{Transport, check_repo_url};

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("repo_url {url:?} {reason}")]
    InvalidUrl { url: String, reason: String },
    #[error("git ref {git_ref:?} {reason}")]
    InvalidRef { git_ref: String, reason: String },
    #[error("git ref {git_ref:?} is not a branch, tag or commit of the repository")]
    UnknownRef { git_ref: String },
    #[error("git {what} failed ({status}): {stderr}")]
    Failed { what: String, status: String, stderr: String },
    #[error("git {what} did not finish within {after:?}")]
    Timeout { what: String, after: Duration },
    #[error("git {what} wrote more than the limit of {}", ramen_node_contract::tree::bytes(*limit))]
    TooLarge { what: String, limit: u64 },
    #[error("{op}: {source}")]
    Io { op: &'static str, source: std::io::Error },
}

impl GitError {
    fn io(op: &'static str, source: std::io::Error) -> Self {
        Self::Io { op, source }
    }

    /// Outages (network, a server error) are worth retrying; a refused login or a missing
    /// repository is not.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Timeout { .. } => true,
            Self::Failed { stderr, .. } => [
                "Could not resolve host",
                "Connection refused",
                "Connection timed out",
                "Connection reset",
                "returned error: 5",
                "early EOF",
                "unable to connect",
            ]
            .iter()
            .any(|needle| stderr.contains(needle)),
            _ => false,
        }
    }

    /// The caller's input is wrong (as opposed to git or the network failing).
    pub fn is_invalid_input(&self) -> bool {
        matches!(self, Self::InvalidUrl { .. } | Self::InvalidRef { .. } | Self::UnknownRef { .. })
    }
}

/// The most a commit's tree may hold, as the tar `git archive` writes: the deployer holds it in
/// memory to pack it, and every node loading the snapshot holds the packed archive. A repo of
/// MCP servers is code; anything near this is a mistake (a data set or a virtualenv
/// committed), and reading it without a bound would let one repo exhaust the deployer's memory.
pub const MAX_TREE_BYTES: u64 = 512 << 20;

/// The mirrors, one fetch at a time per mirror.
#[derive(Clone)]
pub struct RepoCache {
    root: PathBuf,
    git: GitRunner,
    locks: Arc<parking_lot::Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>>,
}

impl RepoCache {
    pub fn new(root: PathBuf, local_mode: bool, timeout: Duration) -> Result<Self, GitError> {
        let git = GitRunner::new(&root, local_mode, timeout)?;
        Ok(Self { root, git, locks: Default::default() })
    }

    /// Fetches every branch and tag of `url` into the group's mirror and resolves `git_ref`
    /// to a full commit id.
    pub async fn fetch_and_resolve(
        &self,
        group: &str,
        url: &str,
        git_ref: &str,
        creds: Option<&Credentials>,
    ) -> Result<String, GitError> {
        refs::check_ref(git_ref)?;
        let mirror = self.mirror(group, url);
        let lock = self.locks.lock().entry(mirror.clone()).or_default().clone();
        let _guard = lock.lock().await;
        if !mirror.join("HEAD").is_file() {
            std::fs::create_dir_all(&mirror).map_err(|e| GitError::io("create the mirror", e))?;
            self.git.run(&mirror, &["init", "--quiet", "--bare"], None).await?;
        }
        let refspecs = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"];
        let mut args = vec!["fetch", "--quiet", "--prune", "--no-tags", "--end-of-options", url];
        args.extend(refspecs);
        self.git.run(&mirror, &args, creds).await?;
        self.resolve(&mirror, git_ref).await
    }

    /// The commit `git_ref` names in the mirror: a branch, then a tag, then a commit id.
    async fn resolve(&self, mirror: &Path, git_ref: &str) -> Result<String, GitError> {
        let mut candidates = Vec::new();
        if git_ref.starts_with("refs/") {
            candidates.push(git_ref.to_owned());
        } else {
            candidates.push(format!("refs/heads/{git_ref}"));
            candidates.push(format!("refs/tags/{git_ref}"));
            if refs::looks_like_commit(git_ref) {
                candidates.push(git_ref.to_owned());
            }
        }
        for candidate in candidates {
            let spec = format!("{candidate}^{{commit}}");
            let args = ["rev-parse", "--verify", "--quiet", "--end-of-options", spec.as_str()];
            if let Ok(out) = self.git.run(mirror, &args, None).await {
                let commit = String::from_utf8_lossy(&out).trim().to_owned();
                if !commit.is_empty() {
                    return Ok(commit);
                }
            }
        }
        Err(GitError::UnknownRef { git_ref: git_ref.to_owned() })
    }

    /// Writes the tree of `commit` (a full id from [`fetch_and_resolve`]) under `dest`, at most
    /// [`MAX_TREE_BYTES`] of it. Symlinks are written as they are in the commit: what reads the
    /// tree decides about them ([`ramen_node_contract::tree`]).
    pub async fn export(
        &self,
        group: &str,
        url: &str,
        commit: &str,
        dest: &Path,
    ) -> Result<(), GitError> {
        if !refs::looks_like_commit(commit) {
            return Err(GitError::InvalidRef {
                git_ref: commit.to_owned(),
                reason: "is not a commit id".into(),
            });
        }
        let mirror = self.mirror(group, url);
        let args = ["archive", "--format=tar", commit];
        let archive = match self.git.run_limited(&mirror, &args, None, MAX_TREE_BYTES).await {
            Err(GitError::TooLarge { limit, .. }) => {
                return Err(GitError::TooLarge { what: format!("archive of {commit}"), limit });
            }
            other => other?,
        };
        let dest = dest.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut tar = tar::Archive::new(archive.as_slice());
            tar.set_preserve_permissions(false);
            tar.unpack(&dest)
        })
        .await
        .map_err(|e| GitError::io("unpack the commit", std::io::Error::other(e)))?
        .map_err(|e| GitError::io("unpack the commit", e))
    }

    /// Removes every mirror of the group (group deletion).
    pub fn forget_group(&self, group: &str) -> std::io::Result<()> {
        match std::fs::remove_dir_all(self.root.join("mirrors").join(group)) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    fn mirror(&self, group: &str, url: &str) -> PathBuf {
        let digest = hex::encode(Sha256::digest(url.as_bytes()));
        self.root.join("mirrors").join(group).join(format!("{}.git", &digest[..16]))
    }
}
