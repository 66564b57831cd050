//! The filesystem work behind [`super::LocalDirStore`], run on blocking threads.

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::BlobError;
use crate::key::TEMP_MARKER;

/// Attempts at a write that races with a delete pruning the now-empty parent directory.
const WRITE_ATTEMPTS: usize = 3;

/// Joins a validated key onto the root.
pub(super) fn key_path(root: &Path, key: &str) -> PathBuf {
    key.split('/').fold(root.to_path_buf(), |path, segment| path.join(segment))
}

/// The path holds no object: missing, or a directory/file where the key expects the other.
pub(super) fn is_absent(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory | ErrorKind::IsADirectory)
}

/// temp file + fsync + rename + fsync of the directory, so the object is either the old or the
/// new content, and durable once this returns.
pub(super) fn write_atomic(path: &Path, body: &[u8]) -> Result<(), BlobError> {
    let dir = path.parent().expect("a key path is below the root");
    let mut attempt = 0;
    loop {
        attempt += 1;
        std::fs::create_dir_all(dir).map_err(|e| BlobError::io(dir, e))?;
        let temp = dir.join(temp_name());
        let result = write_temp(&temp, body).and_then(|()| std::fs::rename(&temp, path));
        match result {
            Ok(()) => return sync_dir(dir),
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                // A concurrent delete may have pruned the directory between our create and
                // write; make it again.
                if e.kind() == ErrorKind::NotFound && attempt < WRITE_ATTEMPTS {
                    continue;
                }
                return Err(BlobError::io(path, e));
            }
        }
    }
}

fn write_temp(temp: &Path, body: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(temp)?;
    file.write_all(body)?;
    file.sync_all()
}

fn sync_dir(dir: &Path) -> Result<(), BlobError> {
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| BlobError::io(dir, e))
}

fn temp_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{TEMP_MARKER}{}.{n}", std::process::id())
}

/// Removes one object and the directories it leaves empty. True when an object was removed.
pub(super) fn remove_key(root: &Path, key: &str) -> Result<bool, BlobError> {
    let path = key_path(root, key);
    match std::fs::remove_file(&path) {
        Ok(()) => {
            prune_empty_parents(root, &path);
            Ok(true)
        }
        Err(e) if is_absent(&e) => Ok(false),
        Err(e) => Err(BlobError::io(path, e)),
    }
}

/// `remove_dir` only removes empty directories, so this stops at the first one still in use.
fn prune_empty_parents(root: &Path, path: &Path) {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d == root || !d.starts_with(root) || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// Walks only the directories that can hold keys with `prefix`, never following symlinks.
pub(super) fn list_keys(root: &Path, prefix: &str) -> Result<Vec<String>, BlobError> {
    let base = prefix.rsplit_once('/').map_or("", |(dir, _)| dir);
    let (start, base_key) = if base.is_empty() {
        (root.to_path_buf(), String::new())
    } else {
        (key_path(root, base), format!("{base}/"))
    };
    let mut keys = Vec::new();
    walk(&start, &base_key, prefix, &mut keys)?;
    keys.sort();
    Ok(keys)
}

fn walk(dir: &Path, dir_key: &str, prefix: &str, keys: &mut Vec<String>) -> Result<(), BlobError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if is_absent(&e) => return Ok(()),
        Err(e) => return Err(BlobError::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| BlobError::io(dir, e))?;
        // A name that is not UTF-8 was not written by this store and cannot be a key.
        let Ok(name) = entry.file_name().into_string() else { continue };
        let file_type = entry.file_type().map_err(|e| BlobError::io(entry.path(), e))?;
        if file_type.is_dir() {
            let sub_key = format!("{dir_key}{name}/");
            if sub_key.starts_with(prefix) || prefix.starts_with(&sub_key) {
                walk(&entry.path(), &sub_key, prefix, keys)?;
            }
        } else if file_type.is_file() && !name.starts_with(TEMP_MARKER) {
            let key = format!("{dir_key}{name}");
            if key.starts_with(prefix) {
                keys.push(key);
            }
        }
    }
    Ok(())
}
