//! What a repo tree may hold once it is out of git: symlinks that stay inside it, and files
//! read with a bound. A group's repo is written by its admins, so a link in it is their
//! pointer into whatever machine reads the tree: `requirements.txt -> /dev/zero` would have the
//! deployer read forever, `ramen.toml -> <data_dir>/keys/jwt.key` would carry a control-plane
//! key into a snapshot. The deployer (a commit's tree, before packing and before reading
//! `requirements.txt`) and the node (an archive's links, once unpacked) both decide with
//! [`resolve`], which follows links the way the kernel does but never leaves the root.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// How many links one path may go through (the kernel's own limit), so a loop ends.
const MAX_HOPS: usize = 40;

/// Why a link is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Its target is absolute, climbs above the root, or goes through a link that does.
    Outside,
    /// Following it never ends (links pointing at each other).
    Loop,
}

/// A symlink left out of a tree, and why. Displays as the line a job log shows:
/// `refused requirements.txt: a symlink to /dev/zero, outside the repo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The path that was refused, relative to the tree's root.
    pub path: PathBuf,
    /// Where it points, as written in the link (empty when the path is not a link itself but
    /// lies under one).
    pub target: PathBuf,
    pub why: Why,
}

impl Refused {
    /// `path` (relative to `root`) refused for `why`, with the target read from the link.
    pub fn at(root: &Path, path: &Path, why: Why) -> Self {
        let target = std::fs::read_link(root.join(path)).unwrap_or_default();
        Self { path: path.to_owned(), target, why }
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (path, target) = (self.path.display(), self.target.display());
        match (self.why, self.target.as_os_str().is_empty()) {
            (Why::Outside, false) => {
                write!(f, "refused {path}: a symlink to {target}, outside the repo")
            }
            (Why::Outside, true) => {
                write!(f, "refused {path}: it lies through a symlink that leads outside the repo")
            }
            (Why::Loop, _) => {
                write!(
                    f,
                    "refused {path}: a symlink to {target} that loops (more than {MAX_HOPS} links)"
                )
            }
        }
    }
}

impl std::error::Error for Refused {}

enum Part {
    Up,
    Name(OsString),
}

/// The parts of a relative path; an absolute one leaves any root.
fn parts(path: &Path) -> Result<VecDeque<Part>, Why> {
    let mut out = VecDeque::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => out.push_back(Part::Up),
            Component::Normal(name) => out.push_back(Part::Name(name.to_owned())),
            Component::RootDir | Component::Prefix(_) => return Err(Why::Outside),
        }
    }
    Ok(out)
}

/// Where `path` (relative to `root`) leads once every symlink on the way is followed: a path
/// relative to `root` through real directories only. `Err` when it leaves `root` (an absolute
/// target, a `..` above the root, through any link that does) or loops.
///
/// A part that does not exist is taken as written, and what follows it too, until a `..`
/// climbs back into what exists: so a dangling link inside the tree is accepted, and one
/// whose written path would climb out once its missing part appears is not.
pub fn resolve(root: &Path, path: &Path) -> Result<PathBuf, Why> {
    let mut at: Vec<OsString> = Vec::new();
    let mut todo = parts(path)?;
    let mut hops = 0;
    // The depth from which the parts do not exist.
    let mut missing_from: Option<usize> = None;
    while let Some(part) = todo.pop_front() {
        let name = match part {
            Part::Up => {
                at.pop().ok_or(Why::Outside)?;
                if missing_from.is_some_and(|depth| at.len() < depth) {
                    missing_from = None;
                }
                continue;
            }
            Part::Name(name) => name,
        };
        at.push(name);
        if missing_from.is_some() {
            continue;
        }
        let here: PathBuf = root.join(at.iter().collect::<PathBuf>());
        match std::fs::symlink_metadata(&here) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_HOPS {
                    return Err(Why::Loop);
                }
                let target = std::fs::read_link(&here).map_err(|_| Why::Outside)?;
                at.pop();
                let mut ahead = parts(&target)?;
                ahead.extend(todo);
                todo = ahead;
            }
            Ok(_) => {}
            Err(_) => missing_from = Some(at.len()),
        }
    }
    Ok(at.into_iter().collect())
}

/// Why a file of a tree was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error("refused {path}: {kind}, not a regular file")]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("refused {path}: larger than the limit of {}", bytes(*limit))]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("reading {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// The most of `requirements.txt` anyone reads (the deployer hashes it, the environment
/// builder and the node install it): a pin list of thousands of packages is some 100 KiB.
pub const MAX_REQUIREMENTS_BYTES: u64 = 1 << 20;
/// The most of `ramen.toml`, the manifest the node's runtime reads: a few lines per package.
pub const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// A snapshot's `requirements.txt`, bounded ([`read_bounded`]); empty when there is none.
pub fn read_requirements(root: &Path) -> Result<Vec<u8>, ReadError> {
    Ok(read_bounded(root, Path::new("requirements.txt"), MAX_REQUIREMENTS_BYTES)?
        .unwrap_or_default())
}

/// `limit` for a message: `1 MiB`, `64 KiB`, or bytes.
pub fn bytes(limit: u64) -> String {
    match limit {
        l if l >= 1 << 20 && l % (1 << 20) == 0 => format!("{} MiB", l >> 20),
        l if l >= 1 << 10 && l % (1 << 10) == 0 => format!("{} KiB", l >> 10),
        l => format!("{l} bytes"),
    }
}

/// The contents of `path` (relative to `root`), at most `limit` bytes; `None` when it does
/// not exist (a dangling link inside the tree included). Links are followed only inside
/// `root`; anything but a regular file (a fifo, a device, a directory) is refused without
/// reading it, and the file is opened with `O_NOFOLLOW | O_NONBLOCK` so neither a link put in
/// place since nor a fifo can hold the reader.
pub fn read_bounded(root: &Path, path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
    let real = resolve(root, path).map_err(|why| Refused::at(root, path, why))?;
    let full = root.join(&real);
    let io = |source| ReadError::Io { path: path.to_owned(), source };
    let not_a_file = |kind| ReadError::NotAFile { path: path.to_owned(), kind };
    match std::fs::symlink_metadata(&full) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io(err)),
        Ok(meta) if !meta.is_file() => return Err(not_a_file(kind(&meta.file_type()))),
        Ok(_) => {}
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(&full)
        .map_err(|err| match err.raw_os_error() {
            Some(nix::libc::ELOOP) => ReadError::Refused(Refused::at(root, path, Why::Outside)),
            _ => io(err),
        })?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(not_a_file(kind(&meta.file_type())));
    }
    let too_large = || ReadError::TooLarge { path: path.to_owned(), limit };
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut data = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut data).map_err(io)?;
    if data.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(Some(data))
}

fn kind(kind: &std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a fifo"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_symlink() {
        "a symlink"
    } else {
        "a special file"
    }
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
