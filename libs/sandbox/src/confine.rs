//! What a confined process may reach, turned into a Landlock ruleset before the process is
//! started (in the parent, where allocating and opening paths is safe), then enforced by the
//! child on itself between `fork` and `exec` ([`Prepared::apply`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

use crate::system::{DEVICES, SYSTEM_DIRS, SYSTEM_FILES};

/// The newest ABI this code was written and tested against: its access rights are requested,
/// and an older kernel enforces what it knows (best effort; [`crate::Support`] says what).
const TESTED: ABI = ABI::V7;

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot build the Landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("cannot read this process's capabilities: {0}")]
    Capabilities(std::io::Error),
}

/// What one confined process may reach. Starts from the system's programs and libraries
/// ([`Confinement::system`]); the caller adds the process's own directories.
#[derive(Clone, Debug, Default)]
pub struct Confinement {
    read: BTreeSet<PathBuf>,
    write: BTreeSet<PathBuf>,
    /// `None`: TCP connects are not restricted.
    connect_ports: Option<BTreeSet<u16>>,
}

impl Confinement {
    /// The system's programs, libraries and the configuration libc, TLS and Python read; no
    /// network (add ports with [`connect_ports`](Self::connect_ports)).
    pub fn system() -> Self {
        let read = SYSTEM_DIRS.iter().chain(SYSTEM_FILES).map(PathBuf::from).collect();
        Self { read, write: BTreeSet::new(), connect_ports: Some(BTreeSet::new()) }
    }

    /// Reads (and executes) beneath `path`.
    pub fn read(mut self, path: impl Into<PathBuf>) -> Self {
        self.read.insert(path.into());
        self
    }

    /// An interpreter and what it reads at start: the installation its path lies in (for a
    /// virtualenv's `bin/python`, the virtualenv with its `pyvenv.cfg`) and the base
    /// installation that path leads to (the standard library).
    pub fn python(mut self, python: &Path) -> Self {
        if let Some(own) = python.parent().and_then(Path::parent) {
            self.read.insert(own.to_path_buf());
        }
        if let Some(base) = crate::python_prefix(python) {
            self.read.insert(base);
        }
        self
    }

    /// Everything beneath `path`: read, execute, create, write, remove.
    pub fn write(mut self, path: impl Into<PathBuf>) -> Self {
        self.write.insert(path.into());
        self
    }

    /// TCP connects to these ports only (to any address: Landlock rules name ports).
    pub fn connect_ports(mut self, ports: impl IntoIterator<Item = u16>) -> Self {
        self.connect_ports.get_or_insert_with(BTreeSet::new).extend(ports);
        self
    }

    /// TCP connects anywhere (only for confinement without a network boundary of its own).
    pub fn any_connect(mut self) -> Self {
        self.connect_ports = None;
        self
    }

    pub fn readable(&self) -> impl Iterator<Item = &Path> {
        self.read.iter().map(PathBuf::as_path)
    }

    pub fn writable(&self) -> impl Iterator<Item = &Path> {
        self.write.iter().map(PathBuf::as_path)
    }

    pub fn ports(&self) -> Option<&BTreeSet<u16>> {
        self.connect_ports.as_ref()
    }

    /// Builds the ruleset now. Paths that do not exist are left out (nothing to grant); a path
    /// that exists but cannot be opened is an error.
    pub fn prepare(&self) -> Result<Prepared, SandboxError> {
        let ruleset = self.ruleset()?;
        let drop_capabilities =
            crate::exec::has_capabilities().map_err(SandboxError::Capabilities)?;
        Ok(Prepared { ruleset, drop_capabilities, last_cap: crate::exec::last_capability() })
    }

    fn ruleset(&self) -> Result<RulesetCreated, SandboxError> {
        let read = AccessFs::from_read(TESTED);
        let all = AccessFs::from_all(TESTED);
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(all)?
            .scope(Scope::from_all(TESTED))?;
        if self.connect_ports.is_some() {
            ruleset = ruleset.handle_access(AccessNet::ConnectTcp)?;
        }
        let mut created = ruleset.create()?;
        for path in &self.read {
            created = add(created, path, read)?;
        }
        // Devices: read and write the file (truncating `> /dev/null` included), no ioctl.
        let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
        for path in DEVICES {
            created = add(created, Path::new(path), device)?;
        }
        for path in &self.write {
            created = add(created, path, all)?;
        }
        for port in self.connect_ports.iter().flatten() {
            created = created.add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
        }
        Ok(created)
    }
}

/// Grants `access` beneath `path`, keeping only the rights a file can have when it is one.
fn add(
    ruleset: RulesetCreated,
    path: &Path,
    access: landlock::BitFlags<AccessFs>,
) -> Result<RulesetCreated, SandboxError> {
    let Ok(metadata) = std::fs::metadata(path) else { return Ok(ruleset) };
    let access = if metadata.is_dir() { access } else { access & AccessFs::from_file(TESTED) };
    let Ok(fd) = PathFd::new(path) else { return Ok(ruleset) };
    Ok(ruleset.add_rule(PathBeneath::new(fd, access))?)
}

/// A ruleset ready to be enforced by a child on itself.
#[derive(Debug)]
pub struct Prepared {
    pub(crate) ruleset: RulesetCreated,
    /// Started by a process holding capabilities (root): the child drops them all.
    pub(crate) drop_capabilities: bool,
    pub(crate) last_cap: u32,
}
