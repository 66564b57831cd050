//! Pid files, and the processes a previous control plane left running (it crashed, or was
//! killed): found through each worker directory's pid file and stopped before anything starts
//! there again, so no worker outlives its placement.

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use super::layout::{Layout, WorkerDir};

pub(crate) fn write_pid(dir: &WorkerDir, pid: u32) {
    if let Err(err) = std::fs::write(dir.pid_file(), format!("{pid}\n")) {
        tracing::warn!(%err, dir = %dir.dir.display(), "cannot write the worker's pid file");
    }
}

pub(crate) fn clear_pid(dir: &WorkerDir) {
    let _ = std::fs::remove_file(dir.pid_file());
}

/// SIGKILLs every process group recorded in the placement's worker directories whose leader
/// is still the worker started there; returns how many were found.
pub(crate) fn stop_all(layout: &Layout) -> usize {
    layout.worker_dirs().iter().filter(|dir| stop_recorded(dir)).count()
}

fn stop_recorded(dir: &WorkerDir) -> bool {
    let Some(pid) =
        std::fs::read_to_string(dir.pid_file()).ok().and_then(|t| t.trim().parse::<i32>().ok())
    else {
        return false;
    };
    let found = is_worker(pid, dir);
    if found {
        tracing::warn!(pid, dir = %dir.dir.display(), "stopping a worker left over from a previous run");
        kill_group(pid as u32);
    }
    clear_pid(dir);
    found
}

/// The pid still belongs to the worker of this directory (not a recycled pid).
fn is_worker(pid: i32, dir: &WorkerDir) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { return false };
    let config = dir.node_config().display().to_string();
    String::from_utf8_lossy(&cmdline).split('\0').any(|arg| arg == config)
}

/// SIGKILL to the worker's process group (the node and its Python runtime). Workers are
/// started as group leaders, so the group id is the worker's pid.
pub(crate) fn kill_group(pid: u32) {
    let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
}

/// SIGTERM to the node only: it drains, then stops its runtime itself.
pub(crate) fn terminate(pid: u32) {
    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
}
