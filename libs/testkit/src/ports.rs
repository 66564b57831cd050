//! Loopback ports for test servers, without the bind-release-rebind race.
//!
//! The old way (bind port 0, read the port, close the socket, hand the number to a server) lost
//! under nextest's parallelism: between the close and the server's bind, another test process
//! took the port ("bind: address already in use"). Here a port is *leased*:
//!
//! - it comes from below the kernel's ephemeral range (`ip_local_port_range`), so no socket
//!   bound to port 0 and no outgoing connection's source port can ever land on it;
//! - among test processes, a port is held with an exclusive `flock` on
//!   `$TMPDIR/ramen-testkit-ports/<port>.lock` for as long as the lease lives, so two tests
//!   never get the same one (the kernel drops the lock when the holder dies, even by SIGKILL);
//! - it is bound once before it is handed out, so a port some other program listens on is
//!   skipped.
//!
//! A server restarted on its old port (fault tests) keeps its lease across the restart, so the
//! port is still its own when it comes back.

use std::fs::File;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Mutex;

use nix::fcntl::{Flock, FlockArg};

/// Where leases are kept when the ephemeral range cannot be read.
const FALLBACK_RANGE: (u16, u16) = (20_000, 32_000);
/// Ports below this are left to system services.
const LOWEST: u16 = 10_000;

/// A port held for one test server; released when dropped.
#[derive(Debug)]
pub struct PortLease {
    port: u16,
    _lock: Flock<File>,
}

impl PortLease {
    pub fn port(&self) -> u16 {
        self.port
    }
}

/// Leases a loopback port nobody else (no other test, no listening program, no ephemeral
/// socket) can take while the lease lives.
pub fn lease_port() -> PortLease {
    let (low, high) = lease_range();
    let dir = lock_dir();
    let span = u32::from(high - low);
    let start = seed() % span;
    for step in 0..span {
        let port = low + ((start + step) % span) as u16;
        let Ok(file) = File::create(dir.join(format!("{port}.lock"))) else { continue };
        let Ok(lock) = Flock::lock(file, FlockArg::LockExclusiveNonblock) else { continue };
        // Held by us now; still skip it if a program outside the tests listens on it.
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return PortLease { port, _lock: lock };
        }
    }
    panic!("no free loopback port in {low}..{high} (all leased or in use)");
}

/// A leased port kept for the rest of this process (tests that only need a number, such as a
/// listen address for an in-process service or an address where nothing answers). Under
/// nextest every test is its own process, so these are released when the test ends.
pub fn free_port() -> u16 {
    static KEPT: Mutex<Vec<PortLease>> = Mutex::new(Vec::new());
    let lease = lease_port();
    let port = lease.port;
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).push(lease);
    port
}

/// The ports below the kernel's ephemeral range (and above [`LOWEST`]).
fn lease_range() -> (u16, u16) {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u16>().ok());
    match ephemeral_low {
        Some(low) if low > LOWEST + 1_000 => (LOWEST, low),
        _ => FALLBACK_RANGE,
    }
}

fn lock_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("ramen-testkit-ports");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Where the search starts: different per process and per call, so parallel tests rarely
/// contend for the same lock file.
fn seed() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let calls = CALLS.fetch_add(1, Ordering::Relaxed);
    std::process::id().wrapping_mul(2_654_435_761).wrapping_add(nanos).wrapping_add(calls * 7_919)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leased_ports_are_distinct_bindable_and_below_the_ephemeral_range() {
        let (_, high) = lease_range();
        let leases: Vec<PortLease> = (0..20).map(|_| lease_port()).collect();
        let mut ports: Vec<u16> = leases.iter().map(PortLease::port).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 20, "a port was leased twice: {ports:?}");
        for port in ports {
            assert!((LOWEST..high).contains(&port), "{port} outside {LOWEST}..{high}");
            TcpListener::bind(("127.0.0.1", port)).expect("a leased port is free to bind");
        }
    }

    #[test]
    fn a_held_lease_is_not_handed_out_again_until_dropped() {
        let lease = lease_port();
        let path = lock_dir().join(format!("{}.lock", lease.port()));
        let second = Flock::lock(File::create(&path).unwrap(), FlockArg::LockExclusiveNonblock);
        assert!(second.is_err(), "the lock of a held lease was taken again");
        drop(lease);
        let third = Flock::lock(File::create(&path).unwrap(), FlockArg::LockExclusiveNonblock);
        assert!(third.is_ok(), "a dropped lease stays locked");
    }
}
