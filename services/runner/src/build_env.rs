//! The environment builder: `ramen worker --build-env <spec>` (and `ramen-runner --build-env`),
//! run by a zone's provider where its workers run, once per deploy. It installs the snapshot's
//! requirements.txt into a fresh virtualenv (seeing the same preinstalled packages the workers
//! see), packs what the install added — the virtualenv's `site-packages` — and stores it in the
//! blob store under its key (`ramen_node_contract::environment`). Found already: nothing is
//! installed. The outcome is one JSON line on stdout; pip's output goes into it for the job log.

use std::path::Path;
use std::sync::Arc;

use ramen_blob::BlobStore;
use ramen_node_contract::environment::{BuildOutcome, BuildSpec, key, location};
use ramen_node_contract::{EnvironmentRef, archive};
use tokio::process::Command;

use crate::confine::GroupCode;
use crate::reload::fetch_verified;

/// How many lines of pip's output the outcome keeps.
const LOG_LINES: usize = 60;

/// Builds (or finds) the environment of `spec`. Failures are in the outcome, never a panic.
pub async fn build(spec: &BuildSpec, blob: Arc<dyn BlobStore>) -> BuildOutcome {
    match build_inner(spec, blob).await {
        Ok(outcome) => outcome,
        Err(error) => BuildOutcome { error: Some(error), ..BuildOutcome::default() },
    }
}

async fn build_inner(spec: &BuildSpec, blob: Arc<dyn BlobStore>) -> Result<BuildOutcome, String> {
    std::fs::create_dir_all(&spec.workdir)
        .map_err(|e| format!("cannot create {}: {e}", spec.workdir.display()))?;
    let scratch = tempfile::tempdir_in(&spec.workdir).map_err(|e| format!("scratch: {e}"))?;
    let tree = scratch.path().join("snapshot");
    let snapshot = &spec.snapshot;
    fetch_verified(&*blob, "snapshot", &snapshot.key, &snapshot.digest, &tree)
        .await
        .map_err(|e| e.to_string())?;
    let requirements =
        ramen_node_contract::tree::read_requirements(&tree).map_err(|e| e.to_string())?;
    if requirements.iter().all(u8::is_ascii_whitespace) {
        return Ok(BuildOutcome::default());
    }
    let (version, platform) = runtime_of(&spec.python).await?;
    let key = key(&requirements, &version, &platform);
    let location = location(&spec.group, &key);
    let sidecar = format!("{location}.json");
    if let Some(raw) = blob.get(&sidecar).await.map_err(|e| e.to_string())?
        && let Ok(found) = serde_json::from_slice::<EnvironmentRef>(&raw)
        && blob.exists(&location).await.map_err(|e| e.to_string())?
    {
        return Ok(BuildOutcome { environment: Some(found), ..BuildOutcome::default() });
    }
    let (site, log) = match install(spec, scratch.path(), &tree.join("requirements.txt")).await? {
        Installed::Done { site, log } => (site, tail(&log)),
        Installed::Failed { log } => {
            let error = Some(failure(&log));
            return Ok(BuildOutcome { log: tail(&log), error, ..BuildOutcome::default() });
        }
    };
    let packed = tokio::task::spawn_blocking(move || archive::pack_dir(&site))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("packing the environment: {e}"))?;
    let digest = archive::digest(&packed);
    blob.put(&location, packed.into()).await.map_err(|e| format!("storing {location}: {e}"))?;
    let environment = EnvironmentRef { key, location, digest };
    let raw = serde_json::to_vec(&environment).map_err(|e| e.to_string())?;
    // Written last: a present sidecar means a complete environment.
    blob.put(&sidecar, raw.into()).await.map_err(|e| format!("storing {sidecar}: {e}"))?;
    Ok(BuildOutcome { environment: Some(environment), built: true, log, error: None })
}

/// `(cpython-3.11.7, linux-x86_64)`: what an environment built by this interpreter fits.
async fn runtime_of(python: &Path) -> Result<(String, String), String> {
    let probe = "import sys, sysconfig; print(sys.implementation.name + '-' + '.'.join(map(str, sys.version_info[:3]))); print(sysconfig.get_platform())";
    let output = Command::new(python)
        .args(["-c", probe])
        .output()
        .await
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines = text.lines();
    match (output.status.success(), lines.next(), lines.next()) {
        (true, Some(version), Some(platform)) => Ok((version.to_owned(), platform.to_owned())),
        _ => Err(format!(
            "{} did not say its version and platform: {}",
            python.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        )),
    }
}

enum Installed {
    /// The virtualenv's `site-packages` (without the `.pth` that points at the preinstalled
    /// packages) and pip's output.
    Done { site: std::path::PathBuf, log: String },
    /// pip failed; its output.
    Failed { log: String },
}

/// A fresh virtualenv (`<scratch>/venv`) that sees `spec.site_packages`, `requirements`
/// installed into it by a confined pip that writes nothing outside `scratch`.
async fn install(
    spec: &BuildSpec,
    scratch: &Path,
    requirements: &Path,
) -> Result<Installed, String> {
    let venv = &scratch.join("venv");
    // pip from the preinstalled packages when they have it: ensurepip costs seconds.
    let preinstalled_pip = spec.site_packages.iter().any(|p| p.join("pip").is_dir());
    let mut args = vec!["-m", "venv"];
    if preinstalled_pip {
        args.push("--without-pip");
    }
    let created =
        Command::new(&spec.python).args(&args).arg(venv).output().await.map_err(|e| {
            format!("cannot create a virtualenv with {}: {e}", spec.python.display())
        })?;
    if !created.status.success() {
        return Err(format!(
            "cannot create a virtualenv with {}: {}",
            spec.python.display(),
            String::from_utf8_lossy(&created.stderr).trim()
        ));
    }
    let site = site_packages(venv)?;
    let base = site.join("ramen-base.pth");
    if !spec.site_packages.is_empty() {
        let lines: Vec<String> =
            spec.site_packages.iter().map(|p| p.display().to_string()).collect();
        std::fs::write(&base, lines.join("\n") + "\n").map_err(|e| e.to_string())?;
    }
    let python = venv.join("bin/python");
    let home = scratch.join("home");
    std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
    let group_code = GroupCode {
        confined: spec.sandbox.enabled,
        read: spec.site_packages.clone(),
        scratch: home,
        connect_ports: Vec::new(),
    };
    let mut pip = Command::new(&python);
    group_code.pip_environment(&mut pip);
    pip.args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-r"])
        .arg(requirements)
        .args(&spec.pip_args);
    let confinement = group_code.pip(&python, &[], scratch, &spec.pip_args);
    group_code.confine(&mut pip, confinement)?;
    let output = pip.output().await.map_err(|e| format!("cannot run pip: {e}"))?;
    let mut log = String::from_utf8_lossy(&output.stdout).into_owned();
    log.push_str(&String::from_utf8_lossy(&output.stderr));
    if !output.status.success() {
        return Ok(Installed::Failed { log });
    }
    let _ = std::fs::remove_file(base);
    Ok(Installed::Done { site, log })
}

/// The line of pip's output that names what failed, with the last lines for context.
fn failure(log: &str) -> String {
    let named = log
        .lines()
        .filter(|l| l.starts_with("ERROR:"))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" | ");
    let what = if named.is_empty() { tail(log).join(" | ") } else { named };
    format!("pip install -r requirements.txt failed: {what}")
}

fn tail(log: &str) -> Vec<String> {
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(LOG_LINES)..].iter().map(|l| (*l).to_owned()).collect()
}

fn site_packages(venv: &Path) -> Result<std::path::PathBuf, String> {
    let lib = venv.join("lib");
    let entries = std::fs::read_dir(&lib).map_err(|e| format!("{}: {e}", lib.display()))?;
    entries
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .ok_or_else(|| format!("no site-packages under {}", lib.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_failure_names_what_pip_could_not_install() {
        let log = "Collecting nope==9\n  ERROR: Could not find a version that satisfies the requirement nope==9\nERROR: No matching distribution found for nope==9\n";
        let message = super::failure(log);
        assert!(message.contains("No matching distribution found for nope==9"), "{message}");
        assert!(super::failure("boom\n").contains("boom"));
    }
}
