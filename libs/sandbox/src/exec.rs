//! The child's side: between `fork` and `exec`, drop every capability, forbid new privileges
//! and enforce the prepared Landlock ruleset on itself. Only system calls run there (`prctl`,
//! `capset`, `dup`, `landlock_restrict_self`): nothing that takes a lock another thread of the
//! parent may have held when it forked.
#![allow(unsafe_code)]

use std::io;

use landlock::RulesetCreated;

use crate::Prepared;

/// `_LINUX_CAPABILITY_VERSION_3`: 64-bit capability sets in two 32-bit words.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

impl Prepared {
    /// Makes `command` confine the process it starts. A child that cannot confine itself is
    /// not started: the spawn fails with the reason (fail closed).
    pub fn apply(self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let Prepared { ruleset, drop_capabilities, last_cap } = self;
        let hook = move || confine_self(&ruleset, drop_capabilities, last_cap);
        // SAFETY: the hook runs in the forked child before exec. It calls only prctl, capset,
        // dup (through `try_clone`) and landlock_restrict_self, and allocates only on an error
        // path that ends the child; it takes no lock.
        unsafe {
            command.pre_exec(hook);
        }
    }
}

fn confine_self(
    ruleset: &RulesetCreated,
    drop_capabilities: bool,
    last_cap: u32,
) -> io::Result<()> {
    if drop_capabilities {
        drop_all_capabilities(last_cap)?;
    }
    // `try_clone` (a dup): the hook may run once per spawn of the same command.
    let status = ruleset.try_clone()?.restrict_self().map_err(io::Error::other)?;
    if !status.no_new_privs {
        return Err(io::Error::other("PR_SET_NO_NEW_PRIVS was refused"));
    }
    Ok(())
}

/// Bounding set first (it needs CAP_SETPCAP, which the last step removes), then ambient, then
/// the effective, permitted and inheritable sets. After this even `exec` of a set-uid-root or
/// file-capability program, or of anything as uid 0, yields no capability.
fn drop_all_capabilities(last_cap: u32) -> io::Result<()> {
    for cap in 0..=last_cap {
        // SAFETY: prctl(PR_CAPBSET_DROP, cap) changes this process's bounding set only.
        let dropped = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
        if dropped != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: clears this process's ambient set; EINVAL on kernels without ambient sets.
    let _ = unsafe {
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0)
    };
    let mut header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
    let data = [CapData::default(); 2];
    // SAFETY: capset reads the header and two data words, all on this stack frame.
    let set = unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) };
    if set != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether this process holds any capability (effective or permitted): root does.
pub(crate) fn has_capabilities() -> io::Result<bool> {
    let mut header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget writes two data words into this stack array and may update the header.
    let got = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    if got != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(data.iter().any(|d| d.effective != 0 || d.permitted != 0))
}

/// The highest capability number this kernel knows.
pub(crate) fn last_capability() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(63)
}
