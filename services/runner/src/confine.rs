//! How the node runs the group's code: the Python runtime (and every stdio program it starts,
//! which inherit its confinement), and pip when it installs the group's requirements. Each gets
//! a scrubbed environment (nothing of the node's own: blob-store credentials, `RAMEN_*`) and,
//! unless the operator turned it off, a `ramen_sandbox` confinement: the system's programs and
//! libraries, the interpreter, what the process works on, a scratch directory to write, and the
//! TCP ports the group may connect to.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ramen_sandbox::Confinement;
use tokio::process::Command;

/// What group code sees of the node's environment: locale, time zone, TLS and proxy settings.
const PASSED: &[&str] = &[
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];

/// pip's own settings (an index, a proxy, find-links) pass to pip, and only to pip.
const PIP_PREFIX: &str = "PIP_";

/// The node's settings for confining its group's code.
#[derive(Clone, Debug)]
pub struct GroupCode {
    /// `false` only when the operator set `zone.sandbox = "off"`.
    pub confined: bool,
    /// Directories the code reads besides the interpreter and what it works on (an image's
    /// preinstalled packages).
    pub read: Vec<PathBuf>,
    /// The one directory it writes: its `HOME` and `TMPDIR`.
    pub scratch: PathBuf,
    pub connect_ports: Vec<u16>,
}

impl GroupCode {
    /// Clears `command`'s environment down to what group code may see, with `HOME` and
    /// `TMPDIR` in its scratch directory.
    pub fn environment(&self, command: &mut Command) {
        command.env_clear();
        for (name, value) in std::env::vars_os() {
            if name.to_str().is_some_and(|n| PASSED.contains(&n)) {
                command.env(name, value);
            }
        }
        // Not PYTHONPYCACHEPREFIX: Python would then ignore the bytecode already beside every
        // installed module and compile them all again at each first start. Bytecode of the
        // snapshot's own modules is simply not written (the snapshot is read-only to it).
        command.env("HOME", &self.scratch).env("TMPDIR", &self.scratch);
    }

    /// Confines `command` to `confinement` (nothing when confinement is off).
    pub fn confine(&self, command: &mut Command, confinement: Confinement) -> Result<(), String> {
        if !self.confined {
            return Ok(());
        }
        let prepared =
            confinement.prepare().map_err(|e| format!("cannot confine the group's code: {e}"))?;
        prepared.apply(command.as_std_mut());
        Ok(())
    }

    /// The runtime's confinement: the interpreter and its virtualenv, `read`, the snapshot and
    /// environment being served, the scratch directory, the group's ports.
    pub fn runtime(&self, python: &Path, serving: &[&Path]) -> Confinement {
        let mut confinement = Confinement::system()
            .python(python)
            .write(&self.scratch)
            .connect_ports(self.connect_ports.iter().copied());
        for dir in self.read.iter().map(PathBuf::as_path).chain(serving.iter().copied()) {
            confinement = confinement.read(dir);
        }
        confinement
    }

    /// pip's confinement: what [`runtime`](Self::runtime) grants, the target it installs into
    /// (written), the paths its arguments name (a find-links directory) and the ports of the
    /// package indexes they name, besides the web.
    pub fn pip(
        &self,
        python: &Path,
        read: &[&Path],
        target: &Path,
        pip_args: &[String],
    ) -> Confinement {
        let mut confinement = self.runtime(python, read).write(target);
        for path in named_paths(pip_args) {
            confinement = confinement.read(path);
        }
        confinement.connect_ports(index_ports(pip_args))
    }

    /// The environment pip runs with: group code's, and the operator's `PIP_*` settings.
    pub fn pip_environment(&self, command: &mut Command) {
        self.environment(command);
        for (name, value) in std::env::vars_os() {
            if name.to_str().is_some_and(|n| n.starts_with(PIP_PREFIX)) {
                command.env(name, value);
            }
        }
    }
}

/// Ports of the package indexes pip reaches: the web, and any port an index URL in its
/// arguments or `PIP_*` settings names (a devpi or proxy on 3141, say). The operator writes
/// these (`zone.pip_args`), not the group.
pub fn index_ports(pip_args: &[String]) -> BTreeSet<u16> {
    let settings = std::env::vars().filter(|(n, _)| n.starts_with(PIP_PREFIX)).map(|(_, v)| v);
    let mut ports: BTreeSet<u16> = ramen_node_contract::egress::WEB_PORTS.into_iter().collect();
    for text in pip_args.iter().cloned().chain(settings) {
        for word in text.split([' ', '=', ',']) {
            if let Some(port) = url_port(word) {
                ports.insert(port);
            }
        }
    }
    ports
}

/// `http://host:3141/simple` → 3141.
fn url_port(word: &str) -> Option<u16> {
    let rest = word.strip_prefix("http://").or_else(|| word.strip_prefix("https://"))?;
    let authority = rest.split('/').next()?;
    let host_port = authority.rsplit('@').next()?;
    let (_, port) = host_port.rsplit_once(':')?;
    port.parse().ok()
}

/// Paths pip's arguments and the operator's `PIP_*` settings name that exist
/// (`--find-links /wheels`, `PIP_FIND_LINKS=/opt/wheels`, `PIP_CERT=/etc/ssl/…`).
fn named_paths(pip_args: &[String]) -> Vec<PathBuf> {
    let settings = std::env::vars().filter(|(n, _)| n.starts_with(PIP_PREFIX)).map(|(_, v)| v);
    pip_args
        .iter()
        .cloned()
        .chain(settings)
        .flat_map(|arg| arg.split(['=', ' ']).map(str::to_owned).collect::<Vec<_>>())
        .map(|word| PathBuf::from(word.strip_prefix("file://").unwrap_or(&word)))
        .filter(|path| path.is_absolute() && path.exists())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_urls_add_their_ports_to_the_web() {
        let args = ["--index-url".to_owned(), "http://user:pw@devpi.local:3141/simple".to_owned()];
        assert_eq!(index_ports(&args).into_iter().collect::<Vec<_>>(), vec![80, 443, 3141]);
        let args = ["--extra-index-url=https://pypi.example:8443/".to_owned()];
        assert!(index_ports(&args).contains(&8443));
    }

    #[test]
    fn paths_named_by_pip_arguments_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let wheels = dir.path().display().to_string();
        let args =
            ["--no-index".to_owned(), format!("--find-links={wheels}"), "/no/such/dir".to_owned()];
        assert!(named_paths(&args).contains(&dir.path().to_path_buf()));
        assert!(!named_paths(&args).contains(&PathBuf::from("/no/such/dir")));
    }
}
