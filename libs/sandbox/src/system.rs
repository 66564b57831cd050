//! What any confined program needs of the system: its programs and shared libraries, the few
//! files under `/etc` that name resolution, TLS and time zones read, and the harmless devices.
//! Deliberately not `/etc` as a whole (an operator's `ramen.toml` or other services' secrets may
//! live there), not `/proc` (other processes' command lines, the node's `environ`), not `/sys`,
//! `/tmp`, `/dev/shm` or `/run` (shared between groups: a place to leave or find each other's
//! files).

use std::path::{Path, PathBuf};

/// Programs and libraries: read and execute beneath.
pub(crate) const SYSTEM_DIRS: &[&str] =
    &["/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"];

/// Configuration that libc, OpenSSL, Python and pip read: read only.
pub(crate) const SYSTEM_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/passwd",
    "/etc/group",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/debian_version",
];

/// Devices anything may read and write (no ioctl).
pub(crate) const DEVICES: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// The installation an interpreter belongs to (`<prefix>/bin/python3.11` → `<prefix>`), after
/// following symlinks: a virtualenv's `bin/python` leads to the interpreter it was made from,
/// whose standard library the confined process must read. `None` when the path does not
/// resolve.
pub fn python_prefix(python: &Path) -> Option<PathBuf> {
    let real = resolve(python)?;
    let bin = real.parent()?;
    Some(bin.parent().unwrap_or(bin).to_path_buf())
}

/// `python` itself, or the first `PATH` entry holding it when it is a bare name.
fn resolve(python: &Path) -> Option<PathBuf> {
    if python.components().count() > 1 {
        return std::fs::canonicalize(python).ok();
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(python))
        .find(|candidate| candidate.is_file())
        .and_then(|found| std::fs::canonicalize(found).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtualenv_interpreter_leads_to_its_base_installation() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("python-3.11");
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::write(prefix.join("bin/python3.11"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("venv/bin")).unwrap();
        std::os::unix::fs::symlink(
            prefix.join("bin/python3.11"),
            dir.path().join("venv/bin/python"),
        )
        .unwrap();
        let found = python_prefix(&dir.path().join("venv/bin/python")).unwrap();
        assert_eq!(found, std::fs::canonicalize(&prefix).unwrap());
        assert_eq!(python_prefix(&dir.path().join("missing/python")), None);
    }
}
