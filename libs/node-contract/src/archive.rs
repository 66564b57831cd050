//! Snapshot archives: a gzipped tar of a repo tree, built by the deployer's repo sync and
//! unpacked by the node. Packing is deterministic (sorted regular files and links, fixed
//! metadata), so the same tree gives the same digest and the digest can address the archive.
//! Neither side lets a link lead out of the tree ([`crate::tree`]): packing leaves such links
//! out, unpacking refuses an archive holding one.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::tree::{self, Refused};

/// Lowercase hex SHA-256 of an archive: how a snapshot is addressed and verified.
pub fn digest(archive: &[u8]) -> String {
    hex::encode(Sha256::digest(archive))
}

/// Unpacks a gzipped tar into `dest` (replacing it). Refused, with an error naming the entry:
/// a path that would land outside `dest`, a symlink whose target leads outside `dest` (once
/// every link of the archive is in place), a link under a link, and any other kind of entry (a
/// hard link, a device, a fifo): [`pack_dir`] writes none of them, so an archive holding one
/// was not made by it. On an error nothing of `dest` is left.
pub fn unpack(archive: &[u8], dest: &Path) -> std::io::Result<()> {
    if dest.exists() {
        std::fs::remove_dir_all(dest)?;
    }
    std::fs::create_dir_all(dest)?;
    let unpacked = unpack_into(archive, dest);
    if unpacked.is_err() {
        // `remove_dir_all` removes links, it does not follow them.
        let _ = std::fs::remove_dir_all(dest);
    }
    unpacked
}

fn unpack_into(archive: &[u8], dest: &Path) -> std::io::Result<()> {
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(archive));
    tar.set_preserve_permissions(false);
    // Links go in last, once every file and directory is written: no file is ever written
    // through one.
    let mut links = Vec::new();
    for entry in tar.entries()? {
        let mut entry = entry?;
        let kind = entry.header().entry_type();
        let path = entry.path()?.into_owned();
        if kind.is_symlink() {
            let target = entry.link_name()?.map(|t| t.into_owned()).unwrap_or_default();
            links.push((path, target));
            continue;
        }
        if kind.is_pax_global_extensions() {
            continue; // metadata for the whole archive, nothing to write
        }
        if !(kind.is_file() || kind.is_dir()) {
            return Err(invalid(format!(
                "entry {}: {}, which a snapshot never holds",
                path.display(),
                entry_kind(kind)
            )));
        }
        // `unpack_in` refuses absolute paths and `..` components.
        if !entry.unpack_in(dest)? {
            return Err(invalid(format!("entry {} escapes the snapshot", path.display())));
        }
    }
    for (path, target) in &links {
        place_link(dest, path, target)?;
    }
    for (path, _) in &links {
        if let Err(why) = tree::resolve(dest, path) {
            return Err(invalid(Refused::at(dest, path, why).to_string()));
        }
    }
    Ok(())
}

/// Creates the link `path -> target` under `dest`, its parent directories being real
/// directories (never a link placed before it).
fn place_link(dest: &Path, path: &Path, target: &Path) -> std::io::Result<()> {
    let named = |what: &str| invalid(format!("entry {}: {what}", path.display()));
    if path.as_os_str().is_empty()
        || !path.components().all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        return Err(named("a symlink whose path escapes the snapshot"));
    }
    if target.as_os_str().is_empty() {
        return Err(named("a symlink with no target"));
    }
    let mut at = dest.to_path_buf();
    for part in path.parent().into_iter().flat_map(Path::components) {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_dir() => {}
            Ok(_) => return Err(named("lies under something that is not a directory")),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(&at)?,
            Err(err) => return Err(err),
        }
    }
    std::os::unix::fs::symlink(target, dest.join(path)).map_err(|err| match err.kind() {
        std::io::ErrorKind::AlreadyExists => named("is in the archive twice"),
        _ => err,
    })
}

fn entry_kind(kind: tar::EntryType) -> &'static str {
    match kind {
        tar::EntryType::Link => "a hard link",
        tar::EntryType::Char | tar::EntryType::Block => "a device",
        tar::EntryType::Fifo => "a fifo",
        _ => "a special entry",
    }
}

fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

/// A snapshot archive and the links left out of it.
pub struct Packed {
    pub archive: Vec<u8>,
    /// Symlinks that lead outside the tree (or loop), which the archive does not hold.
    pub refused: Vec<Refused>,
}

/// Builds a snapshot archive from a directory: see [`pack_tree`]; the links it leaves out are
/// not reported.
pub fn pack_dir(dir: &Path) -> std::io::Result<Vec<u8>> {
    pack_tree(dir).map(|packed| packed.archive)
}

/// Builds a snapshot archive from a directory: regular files and the symlinks that stay inside
/// it (no `.git`, no `__pycache__`), sorted, with fixed metadata so the same tree gives the
/// same digest. A symlink leading outside the tree, or looping, is left out and reported; no
/// file is read through a link.
pub fn pack_tree(dir: &Path) -> std::io::Result<Packed> {
    let mut entries = Vec::new();
    let mut refused = Vec::new();
    collect(dir, dir, &mut entries, &mut refused)?;
    entries.sort();
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(encoder);
    for (relative, link) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_mtime(0);
        match link {
            None => {
                let data = std::fs::read(dir.join(&relative))?;
                header.set_size(data.len() as u64);
                header.set_mode(0o644);
                header.set_cksum();
                tar.append_data(&mut header, &relative, data.as_slice())?;
            }
            Some(target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_size(0);
                header.set_mode(0o777);
                tar.append_link(&mut header, &relative, &target)?;
            }
        }
    }
    let archive = tar.into_inner()?.finish()?;
    Ok(Packed { archive, refused })
}

/// Files (`None`) and links inside the tree (`Some(target)`), relative to `base`; directories
/// are walked as they are, never through a link.
fn collect(
    base: &Path,
    dir: &Path,
    out: &mut Vec<(PathBuf, Option<PathBuf>)>,
    refused: &mut Vec<Refused>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".git" || name == "__pycache__" {
            continue;
        }
        let kind = entry.file_type()?;
        let relative = || entry.path().strip_prefix(base).map(Path::to_path_buf);
        if kind.is_dir() {
            collect(base, &entry.path(), out, refused)?;
        } else if kind.is_file() {
            out.push((relative().map_err(std::io::Error::other)?, None));
        } else if kind.is_symlink() {
            let relative = relative().map_err(std::io::Error::other)?;
            match tree::resolve(base, &relative) {
                Ok(_) => out.push((relative, Some(std::fs::read_link(entry.path())?))),
                Err(why) => refused.push(Refused::at(base, &relative, why)),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
