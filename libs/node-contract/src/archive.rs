//! Snapshot archives: a gzipped tar of a repo tree, built by the deployer's repo sync and
//! unpacked by the node. Packing is deterministic (sorted regular files, fixed metadata), so
//! the same tree gives the same digest and the digest can address the archive.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of an archive: how a snapshot is addressed and verified.
pub fn digest(archive: &[u8]) -> String {
    hex::encode(Sha256::digest(archive))
}

/// Unpacks a gzipped tar, refusing entries that would land outside `dest`.
pub fn unpack(archive: &[u8], dest: &Path) -> std::io::Result<()> {
    if dest.exists() {
        std::fs::remove_dir_all(dest)?;
    }
    std::fs::create_dir_all(dest)?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(archive));
    tar.set_preserve_permissions(false);
    for entry in tar.entries()? {
        let mut entry = entry?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            continue; // links and devices have no place in a snapshot
        }
        // `unpack_in` refuses absolute paths and `..` components.
        if !entry.unpack_in(dest)? {
            let path = entry.path()?.display().to_string();
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("entry {path} escapes the snapshot"),
            ));
        }
    }
    Ok(())
}

/// Builds a snapshot archive from a directory: regular files only (no `.git`, no
/// `__pycache__`), sorted, with fixed metadata so the same tree gives the same digest.
pub fn pack_dir(dir: &Path) -> std::io::Result<Vec<u8>> {
    let mut files = Vec::new();
    collect_files(dir, dir, &mut files)?;
    files.sort();
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(encoder);
    for relative in files {
        let data = std::fs::read(dir.join(&relative))?;
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        tar.append_data(&mut header, &relative, data.as_slice())?;
    }
    tar.into_inner()?.finish()
}

fn collect_files(base: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".git" || name == "__pycache__" {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            collect_files(base, &entry.path(), out)?;
        } else if kind.is_file() {
            out.push(entry.path().strip_prefix(base).map_err(std::io::Error::other)?.to_path_buf());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_is_deterministic_and_round_trips() {
        let tree = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tree.path().join("pkg/.git")).unwrap();
        std::fs::write(tree.path().join("pkg/__init__.py"), "x = 1\n").unwrap();
        std::fs::write(tree.path().join("pkg/.git/HEAD"), "ref").unwrap();
        std::fs::write(tree.path().join("requirements.txt"), "").unwrap();
        let first = pack_dir(tree.path()).unwrap();
        assert_eq!(digest(&first), digest(&pack_dir(tree.path()).unwrap()));
        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("snap");
        unpack(&first, &dest).unwrap();
        assert_eq!(std::fs::read_to_string(dest.join("pkg/__init__.py")).unwrap(), "x = 1\n");
        assert!(!dest.join("pkg/.git").exists(), ".git is not packed");
    }
}
