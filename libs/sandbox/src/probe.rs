//! What the running kernel can enforce, and the one call a secret-holding process makes on
//! itself.
#![allow(unsafe_code)]

use std::sync::OnceLock;

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask the kernel for its Landlock ABI instead of creating a
/// ruleset.
const CREATE_RULESET_VERSION: libc::c_uint = 1;

/// The Landlock ABI of the running kernel (0: none, or disabled at boot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Support {
    pub abi: i32,
}

impl Support {
    /// Asks the kernel once per process.
    pub fn probe() -> Support {
        static ABI: OnceLock<i32> = OnceLock::new();
        Support { abi: *ABI.get_or_init(landlock_abi) }
    }

    /// Files: reads, writes and executes beneath granted directories (ABI 1).
    pub fn filesystem(&self) -> bool {
        self.abi >= 1
    }

    /// TCP `connect` and `bind` rules by port (ABI 4, Linux 6.7).
    pub fn tcp(&self) -> bool {
        self.abi >= 4
    }

    /// Signals and abstract unix sockets scoped to the domain (ABI 6, Linux 6.12).
    pub fn scopes(&self) -> bool {
        self.abi >= 6
    }

    /// Files and TCP both: group code can neither read the data directory nor reach the bus or
    /// another node. Below this, a host cannot keep two groups apart.
    pub fn complete(&self) -> bool {
        self.filesystem() && self.tcp()
    }

    /// One line for logs and refusals: what is enforced and what is not.
    pub fn describe(&self) -> String {
        if !self.filesystem() {
            return "no Landlock in this kernel (or it is disabled at boot: `lsm=` must list \
                    landlock): files, TCP connects and signals of group code are not confined"
                .to_owned();
        }
        let mut missing = Vec::new();
        if !self.tcp() {
            missing.push("TCP connects (needs Landlock ABI 4, Linux 6.7)");
        }
        if !self.scopes() {
            missing.push("signals and abstract unix sockets (needs ABI 6, Linux 6.12)");
        }
        if missing.is_empty() {
            format!("Landlock ABI {}: files, TCP connects and signals confined", self.abi)
        } else {
            format!(
                "Landlock ABI {}: files confined; not confined: {}",
                self.abi,
                missing.join(", ")
            )
        }
    }
}

fn landlock_abi() -> i32 {
    // SAFETY: `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)` reads no
    // memory and creates nothing; it answers the ABI version or -1 with errno.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(abi).unwrap_or(0).max(0)
}

/// Makes the calling process non-dumpable: no core file, and `/proc/<pid>/mem`, `environ`,
/// `maps` and `ptrace` are refused to other processes of the same uid that lack
/// `CAP_SYS_PTRACE`. The node and the control plane call it at start: they hold keys and
/// secrets that group code running as the same user must not read out of their memory.
pub fn forbid_dumping() -> std::io::Result<()> {
    // SAFETY: prctl(PR_SET_DUMPABLE, 0) changes a flag of this process and touches no memory.
    let result = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    if result == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// Whether this process may be dumped (1) or not (0).
pub fn dumpable() -> i32 {
    // SAFETY: prctl(PR_GET_DUMPABLE) only reads a flag of this process.
    unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_names_what_is_missing() {
        assert!(Support { abi: 0 }.describe().starts_with("no Landlock"));
        let three = Support { abi: 3 }.describe();
        assert!(three.contains("TCP connects") && three.contains("signals"), "{three}");
        assert!(!Support { abi: 3 }.complete());
        let four = Support { abi: 4 };
        assert!(four.complete() && four.describe().contains("signals"));
        assert!(!Support { abi: 7 }.describe().contains("not confined"));
    }

    #[test]
    fn a_process_that_forbids_dumping_is_not_dumpable() {
        forbid_dumping().unwrap();
        assert_eq!(dumpable(), 0);
    }
}
