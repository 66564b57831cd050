//! Step 1 of the pipeline: the repo at a commit as a snapshot in the group's bucket prefix,
//! content-addressed by commit (`groups/<group>/snapshots/<commit>.tar.gz`) with a small
//! sidecar (`<commit>.json`: digest and requirements hash) written after it, so a present
//! sidecar means a complete snapshot and the sync is skipped.
//!
//! The tree is the group's, so nothing in it is followed blindly: a symlink leading outside the
//! tree is left out of the snapshot (and named in the job's log), and the files the pipeline
//! reads are read with a bound ([`ramen_node_contract::tree`]). A refused `requirements.txt` or
//! `ramen.toml` fails the sync rather than being treated as absent: the snapshot would then
//! deploy without the dependencies or the manifest its author wrote, failing later and far
//! from the cause (an import error on a worker), where the refusal names the file now.

use std::path::Path;
use std::sync::Arc;

use ramen_blob::BlobStore;
use ramen_node_contract::tree::{self, MAX_MANIFEST_BYTES, MAX_REQUIREMENTS_BYTES, ReadError};
use ramen_proto::common::v1::Snapshot;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::git::{Credentials, RepoCache};

/// The files of the tree the pipeline reads whole, and their limits. Each is checked here, at
/// sync, so a link out of the tree, a special file or an oversized file fails the deploy
/// naming the file before any worker is touched.
const READ: [(&str, u64); 2] =
    [("requirements.txt", MAX_REQUIREMENTS_BYTES), ("ramen.toml", MAX_MANIFEST_BYTES)];

#[derive(Debug, Serialize, Deserialize)]
struct Sidecar {
    digest: String,
    requirements_hash: String,
    bytes: u64,
    /// The job-log lines of the links left out, so a later deploy of the same commit shows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    refused: Vec<String>,
}

pub fn archive_key(group: &str, commit: &str) -> String {
    format!("groups/{group}/snapshots/{commit}.tar.gz")
}

fn sidecar_key(group: &str, commit: &str) -> String {
    format!("groups/{group}/snapshots/{commit}.json")
}

/// What [`ensure`] did.
pub struct Synced {
    pub snapshot: Snapshot,
    /// False when the snapshot was already in the blob store.
    pub uploaded: bool,
    pub bytes: u64,
    /// One line per symlink left out of the snapshot (it led outside the repo, or looped).
    pub refused: Vec<String>,
}

/// The snapshot of `commit` for `group`, uploading it when missing.
pub async fn ensure(
    blob: &Arc<dyn BlobStore>,
    repos: &RepoCache,
    source: Source<'_>,
    commit: &str,
) -> Result<Synced> {
    let group = source.group;
    let location = archive_key(group, commit);
    if let Some(raw) = blob.get(&sidecar_key(group, commit)).await?
        && let Ok(sidecar) = serde_json::from_slice::<Sidecar>(&raw)
        && blob.exists(&location).await?
    {
        let snapshot = snapshot(commit, location, &sidecar);
        let (bytes, refused) = (sidecar.bytes, sidecar.refused);
        return Ok(Synced { snapshot, uploaded: false, bytes, refused });
    }
    let work = tempfile::tempdir_in(source.scratch)
        .map_err(|e| Error::Internal(format!("scratch directory: {e}")))?;
    let tree = work.path().join("tree");
    std::fs::create_dir_all(&tree).map_err(|e| Error::Internal(format!("scratch: {e}")))?;
    // The mirror may be gone (another replica synced the ref): fetching again is cheap.
    repos.fetch_and_resolve(group, source.url, commit, source.creds).await?;
    repos.export(group, source.url, commit, &tree).await?;
    let Packed { archive, requirements, refused } =
        tokio::task::spawn_blocking(move || pack(&tree))
            .await
            .map_err(|e| Error::Internal(e.to_string()))??;
    let sidecar = Sidecar {
        digest: hex::encode(Sha256::digest(&archive)),
        requirements_hash: requirements
            .map(|r| format!("sha256:{}", hex::encode(Sha256::digest(&r))))
            .unwrap_or_default(),
        bytes: archive.len() as u64,
        refused,
    };
    blob.put(&location, archive.into()).await?;
    let raw = serde_json::to_vec(&sidecar).map_err(|e| Error::Internal(e.to_string()))?;
    blob.put(&sidecar_key(group, commit), raw.into()).await?;
    let snapshot = snapshot(commit, location, &sidecar);
    Ok(Synced { snapshot, uploaded: true, bytes: sidecar.bytes, refused: sidecar.refused })
}

/// A packed tree and what the pipeline read of it.
struct Packed {
    archive: Vec<u8>,
    requirements: Option<Vec<u8>>,
    refused: Vec<String>,
}

/// Packs the exported tree (links out of it left out) and reads the files the pipeline needs.
fn pack(tree: &Path) -> Result<Packed> {
    let packed = ramen_node_contract::archive::pack_tree(tree)
        .map_err(|e| Error::Internal(format!("packing the snapshot: {e}")))?;
    let mut requirements = None;
    for (name, limit) in READ {
        let read = tree::read_bounded(tree, Path::new(name), limit).map_err(|err| match err {
            ReadError::Io { .. } => Error::Internal(err.to_string()),
            refused => Error::RepoContent(format!("{refused} (the pipeline reads it)")),
        })?;
        if name == "requirements.txt" {
            requirements = read;
        }
    }
    let refused = packed.refused.iter().map(ToString::to_string).collect();
    Ok(Packed { archive: packed.archive, requirements, refused })
}

/// Where a snapshot comes from.
pub struct Source<'a> {
    pub group: &'a str,
    pub url: &'a str,
    pub creds: Option<&'a Credentials>,
    /// Directory for the exported tree (removed afterwards).
    pub scratch: &'a std::path::Path,
}

fn snapshot(commit: &str, location: String, sidecar: &Sidecar) -> Snapshot {
    Snapshot {
        commit: commit.to_owned(),
        location,
        digest: format!("sha256:{}", sidecar.digest),
        requirements_hash: sidecar.requirements_hash.clone(),
        environment: None,
    }
}
