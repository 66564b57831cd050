//! Confinement of a group's code: the Python runtime, the stdio programs it starts, and pip
//! when it builds a group's requirements. ramen runs several teams' code side by side and
//! beside the control plane; each confined process reaches what its [`Confinement`] grants
//! and nothing else, enforced by the kernel:
//!
//! - **Landlock** (unprivileged LSM, `landlock` crate): reads and executes only beneath the
//!   granted directories (the system's programs and libraries, the interpreter, the group's
//!   snapshot and environment), writes only beneath its scratch directory, TCP `connect` only
//!   to the granted ports (ABI ≥ 4), no signals to and no abstract unix sockets of processes
//!   outside its domain (ABI ≥ 6). Landlock also refuses `ptrace` — and so `/proc/<pid>/mem`
//!   and `environ` — of any process outside the domain, whatever the uid.
//! - **No capabilities**: a process started by root keeps uid 0 but loses every capability
//!   (bounding, ambient, effective, permitted, inheritable), so it cannot load modules, open raw
//!   sockets, override file permissions or regain them through `exec`.
//! - **No new privileges** (`PR_SET_NO_NEW_PRIVS`): set-uid programs do not elevate.
//!
//! Nothing here filters by inspecting what the code asks for: the kernel decides. The other
//! half of the boundary is [`forbid_dumping`], which the processes holding secrets call on
//! themselves (the node, the control plane).
//!
//! What the running kernel offers is [`Support::probe`]; a [`Confinement`] applies what it can
//! (best effort) and the caller decides, from the support, whether that is enough for it (the
//! local zone refuses to host a second group when it is not).

mod confine;
mod exec;
mod probe;
mod system;

pub use confine::{Confinement, Prepared, SandboxError};
pub use probe::{Support, dumpable, forbid_dumping};
pub use system::python_prefix;

/// The ports group code may connect to when its group lists none: the web.
pub const DEFAULT_CONNECT_PORTS: [u16; 2] = [80, 443];
