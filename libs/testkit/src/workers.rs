//! What tests that run real worker nodes need: the repo root (for fixtures and examples), the
//! test virtualenv's interpreter and site-packages (`scripts/install-test-servers`), the
//! `ramen-runner` binary cargo built beside the test, and the processes left under a directory.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The repository root (fixtures, `examples/`): the nearest directory above the running
/// test's `CARGO_MANIFEST_DIR` (set by cargo and nextest) that holds `Cargo.lock`, not the
/// directory compiled in — a target directory shared by two checkouts may hold a testkit
/// built in the other, which may be gone.
pub fn repo_root() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let manifest = manifest.canonicalize().unwrap_or(manifest);
    manifest
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .unwrap_or_else(|| panic!("no Cargo.lock above {}", manifest.display()))
        .to_path_buf()
}

/// The test virtualenv's interpreter (has the pinned `mcp` SDK): `$RAMEN_TEST_BIN_DIR/python`,
/// else `~/.cache/ramen/venv/bin/python`.
pub fn python() -> PathBuf {
    let bin = std::env::var_os("RAMEN_TEST_BIN_DIR").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ramen/venv/bin")
    });
    bin.join("python")
}

/// The test virtualenv's site-packages, made visible to each node's own virtualenv so
/// `pip install -r requirements.txt` (mcp==2.3.0) is already satisfied offline.
pub fn site_packages() -> PathBuf {
    static SITE: OnceLock<PathBuf> = OnceLock::new();
    SITE.get_or_init(|| {
        let out = std::process::Command::new(python())
            .args(["-c", "import site; print(site.getsitepackages()[0])"])
            .output()
            .expect("the test virtualenv's python runs (scripts/test installs it)");
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
    .clone()
}

/// `<target>/debug/ramen-runner`, next to the directory holding the running test executable.
pub fn runner_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let binary = exe.parent().and_then(Path::parent).unwrap().join("ramen-runner");
    assert!(
        binary.is_file(),
        "{} is missing: build the worker binary first with `cargo build -p ramen-runner` (same CARGO_TARGET_DIR)",
        binary.display()
    );
    binary
}

/// Processes whose command line mentions a path under `dir` (workers and their runtimes).
pub fn pids_under(dir: &Path) -> Vec<u32> {
    let needle = dir.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
        .collect()
}
