//! Step 1 of the pipeline: the repo at a commit as a snapshot in the group's bucket prefix,
//! content-addressed by commit (`groups/<group>/snapshots/<commit>.tar.gz`) with a small
//! sidecar (`<commit>.json`: digest and requirements hash) written after it, so a present
//! sidecar means a complete snapshot and the sync is skipped.

use std::sync::Arc;

use ramen_blob::BlobStore;
use ramen_proto::common::v1::Snapshot;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::git::{Credentials, RepoCache};

#[derive(Debug, Serialize, Deserialize)]
struct Sidecar {
    digest: String,
    requirements_hash: String,
    bytes: u64,
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
        return Ok(Synced { snapshot, uploaded: false, bytes: sidecar.bytes });
    }
    let work = tempfile::tempdir_in(source.scratch)
        .map_err(|e| Error::Internal(format!("scratch directory: {e}")))?;
    let tree = work.path().join("tree");
    std::fs::create_dir_all(&tree).map_err(|e| Error::Internal(format!("scratch: {e}")))?;
    // The mirror may be gone (another replica synced the ref): fetching again is cheap.
    repos.fetch_and_resolve(group, source.url, commit, source.creds).await?;
    repos.export(group, source.url, commit, &tree).await?;
    let (archive, requirements) = tokio::task::spawn_blocking(move || {
        let archive = ramen_node_contract::archive::pack_dir(&tree)?;
        let requirements = std::fs::read(tree.join("requirements.txt")).ok();
        Ok::<_, std::io::Error>((archive, requirements))
    })
    .await
    .map_err(|e| Error::Internal(e.to_string()))?
    .map_err(|e| Error::Internal(format!("packing the snapshot: {e}")))?;
    let sidecar = Sidecar {
        digest: hex::encode(Sha256::digest(&archive)),
        requirements_hash: requirements
            .map(|r| format!("sha256:{}", hex::encode(Sha256::digest(&r))))
            .unwrap_or_default(),
        bytes: archive.len() as u64,
    };
    blob.put(&location, archive.into()).await?;
    let raw = serde_json::to_vec(&sidecar).map_err(|e| Error::Internal(e.to_string()))?;
    blob.put(&sidecar_key(group, commit), raw.into()).await?;
    let bytes = sidecar.bytes;
    Ok(Synced { snapshot: snapshot(commit, location, &sidecar), uploaded: true, bytes })
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
