//! The kubelet double: runs the pods whose behaviour is [`PodBehaviour::Run`] as processes on
//! this machine, so what a provider deploys really serves (a worker answers MCP at its pod
//! IP, a builder pod's log is what its program printed).
//!
//! - **Addresses**: each pod gets its own loopback address `127.2.x.y`, so every pod binds the
//!   container ports it declares, as in a cluster. An address is held with an exclusive
//!   `flock` on `$TMPDIR/ramen-kube-double-ips/<ip>.lock` while its pod runs, so doubles in
//!   parallel test processes never hand out the same one.
//! - **Image**: the image's entrypoint (the command's leading words) is replaced by the local
//!   program the test names ([`LocalImage`]); the rest of the command and the args follow.
//! - **Volumes** are directories of the pod's sandbox: a Secret volume holds one file per key,
//!   rewritten when the Secret changes (the kubelet's periodic sync, here every pass); an
//!   emptyDir starts empty. A missing Secret holds the pod in `ContainerCreating` with a
//!   `FailedMount` event, as on a node.
//! - **Paths**: there is no mount namespace, so every argument and environment value that is a
//!   mount path, or a path under one, is rewritten to the sandbox directory. Paths inside files
//!   are not rewritten: a program reads its pod's paths from its environment.
//! - **Environment**: the host's `PATH`, then the image's variables, then the container's;
//!   `fieldRef` (`metadata.name`, `metadata.namespace`, `metadata.uid`, `status.podIP`,
//!   `spec.nodeName`, `spec.serviceAccountName`) and `secretKeyRef` are resolved. Nothing else
//!   of the test's environment reaches the process.
//! - **Probes**: readiness is the container's `httpGet` probe against the pod IP on every pass;
//!   no probe means ready once started. Liveness and startup probes are not run.
//! - **Exits**: a container that exits is restarted after a one-second back-off
//!   (`restartPolicy: Always`, `CrashLoopBackOff` meanwhile, the earlier run's log as
//!   `previous`); with `Never` (or `OnFailure` after a success) the pod ends `Succeeded` or
//!   `Failed`.
//! - **Deletion**: the pod object goes at once, as for simulated pods; its process group gets
//!   SIGTERM, then SIGKILL once the pod's grace period has passed. Stopping the double kills
//!   every process it started.
//! - Pods have one container; init containers, resources and security contexts are ignored.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use nix::fcntl::{Flock, FlockArg};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::behaviour::PodBehaviour;
use crate::controllers::{Cluster, condition, deployment, events};
use crate::logs::Logs;
use crate::resources::{self, pods};
use crate::store::meta;

/// A container image played by a local program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalImage {
    /// The leading words of the container's command that the program stands for (the image's
    /// entry point, e.g. `["/usr/bin/tini", "--", "/usr/local/bin/ramen", "worker"]`).
    pub entrypoint: Vec<String>,
    /// The local program and its leading arguments, run in their place.
    pub program: Vec<String>,
    /// Variables the image sets (`ENV`), before the container's own.
    pub env: Vec<(String, String)>,
}

/// The node the kubelet double runs pods on (as simulated pods).
const NODE: &str = crate::controllers::pods::NODE;
/// How long an exited container waits before it runs again.
const BACK_OFF: Duration = Duration::from_secs(1);
/// How long a readiness probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// The longest grace a deleted pod's process gets before SIGKILL.
const MAX_GRACE: Duration = Duration::from_secs(60);

/// The kubelet's pods, by uid, and the directory their sandboxes live in.
pub(crate) struct Kubelet {
    // Declared before `root`: processes stop before their sandboxes go.
    pods: HashMap<String, RunPod>,
    root: tempfile::TempDir,
}

impl Kubelet {
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    pub fn new() -> std::io::Result<Self> {
        Ok(Self {
            pods: HashMap::new(),
            root: tempfile::Builder::new().prefix("kube-double-kubelet").tempdir()?,
        })
    }
}

/// One pod the kubelet runs.
struct RunPod {
    ns: String,
    name: String,
    container: String,
    ip: String,
    _ip_lock: Flock<File>,
    sandbox: PathBuf,
    image: LocalImage,
    /// Why the container cannot start (a missing Secret, an unknown entrypoint), if so.
    blocked: Option<Blocked>,
    child: Option<Child>,
    started_at: Option<String>,
    restarts: u32,
    last_terminated: Option<Value>,
    restart_after: Option<Instant>,
    /// The exit code that ended the pod (`restartPolicy: Never`).
    ended: Option<i32>,
    ready: bool,
    grace: Duration,
}

#[derive(Debug, Clone)]
enum Blocked {
    /// A volume cannot be set up yet (the event says which). Retried every pass.
    Mount,
    /// The container cannot be created: the message. Not retried.
    Create(String),
}

impl Drop for RunPod {
    fn drop(&mut self) {
        if let Some(pid) = self.child.as_ref().and_then(Child::id) {
            let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }
}

/// One pass: starts new pods, follows running ones, stops the ones deleted.
pub(crate) async fn reconcile_all(cluster: &Arc<Cluster>, kubelet: &mut Kubelet) {
    let (all, _) = cluster.store.list(pods(), None);
    let mut seen = Vec::new();
    for pod in &all {
        let uid = meta::uid(pod).to_owned();
        let ns = meta::namespace(pod);
        let deployment = deployment::deployment_of_pod(cluster, pod);
        let assigned = cluster.behaviours.lock().assign(&uid, ns, deployment.as_deref());
        let PodBehaviour::Run(image) = assigned.behaviour else { continue };
        if meta::is_terminating(pod) {
            if let Some(run) = kubelet.pods.remove(&uid) {
                stop(run);
            }
            cluster.store.finish_pod_deletion(ns, meta::name(pod));
            continue;
        }
        seen.push(uid.clone());
        if !kubelet.pods.contains_key(&uid) {
            match admit(kubelet.root.path(), pod, image) {
                Ok(run) => {
                    kubelet.pods.insert(uid.clone(), run);
                }
                Err(message) => {
                    tracing::warn!(pod = meta::name(pod), %message, "the kubelet double cannot run a pod");
                    continue;
                }
            }
        }
        let run = kubelet.pods.get_mut(&uid).expect("admitted above");
        step(cluster, pod, run).await;
        write_status(cluster, pod, run);
    }
    let gone: Vec<String> =
        kubelet.pods.keys().filter(|uid| !seen.contains(uid)).cloned().collect();
    for uid in gone {
        if let Some(run) = kubelet.pods.remove(&uid) {
            cluster.logs.forget_pod(&run.ns, &run.name);
            stop(run);
        }
    }
}

/// A new pod: its address and sandbox. The container starts in [`step`].
fn admit(root: &Path, pod: &Value, image: LocalImage) -> Result<RunPod, String> {
    let (ip, lock) = lease_ip()?;
    let ns = meta::namespace(pod).to_owned();
    let name = meta::name(pod).to_owned();
    let sandbox = root.join(format!("{ns}_{name}_{}", meta::uid(pod)));
    std::fs::create_dir_all(&sandbox)
        .map_err(|e| format!("creating {}: {e}", sandbox.display()))?;
    let container = pod
        .pointer("/spec/containers/0/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let grace = pod
        .pointer("/spec/terminationGracePeriodSeconds")
        .and_then(Value::as_u64)
        .map_or(Duration::from_secs(30), Duration::from_secs)
        .min(MAX_GRACE);
    Ok(RunPod {
        ns,
        name,
        container,
        ip,
        _ip_lock: lock,
        sandbox,
        image,
        blocked: None,
        child: None,
        started_at: None,
        restarts: 0,
        last_terminated: None,
        restart_after: None,
        ended: None,
        ready: false,
        grace,
    })
}

/// Moves a pod on: volumes synced, the process started, restarted or ended, readiness probed.
async fn step(cluster: &Arc<Cluster>, pod: &Value, run: &mut RunPod) {
    if let Some(Blocked::Create(_)) = run.blocked {
        return;
    }
    match sync_volumes(cluster, pod, &run.sandbox) {
        Ok(()) => {
            if matches!(run.blocked, Some(Blocked::Mount)) {
                run.blocked = None;
            }
        }
        Err(message) => {
            if run.child.is_none() {
                events::record(&cluster.store, pod, "Warning", "FailedMount", &message, "kubelet");
                run.blocked = Some(Blocked::Mount);
                return;
            }
        }
    }
    if let Some(child) = run.child.as_mut()
        && let Ok(Some(status)) = child.try_wait()
    {
        exited(cluster, pod, run, status);
    }
    if run.child.is_none() && run.ended.is_none() {
        let due = run.restart_after.is_none_or(|at| Instant::now() >= at);
        if due {
            start(cluster, pod, run);
        }
    }
    run.ready = match (&run.child, readiness_probe(pod)) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(_), Some((path, port))) => probe(&run.ip, port, &path).await,
    };
}

fn start(cluster: &Arc<Cluster>, pod: &Value, run: &mut RunPod) {
    let launch = match launch(cluster, pod, run) {
        Ok(launch) => launch,
        Err(message) => {
            events::record(&cluster.store, pod, "Warning", "Failed", &message, "kubelet");
            run.blocked = Some(Blocked::Create(message));
            return;
        }
    };
    let mut command = Command::new(&launch.program);
    command
        .args(&launch.args)
        .env_clear()
        .envs(launch.env)
        .current_dir(&run.sandbox)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    match command.spawn() {
        Ok(mut child) => {
            if run.started_at.is_some() {
                cluster.logs.rotate(&run.ns, &run.name, &run.container);
            }
            for stream in [child.stdout.take().map(boxed), child.stderr.take().map(boxed)]
                .into_iter()
                .flatten()
            {
                let logs = cluster.logs.clone();
                let (ns, name, container) =
                    (run.ns.clone(), run.name.clone(), run.container.clone());
                tokio::spawn(forward_lines(stream, logs, ns, name, container));
            }
            run.child = Some(child);
            run.started_at = Some(meta::now());
            events::record(
                &cluster.store,
                pod,
                "Normal",
                "Started",
                &format!("Started container {}", run.container),
                "kubelet",
            );
        }
        Err(err) => {
            let message = format!("starting {}: {err}", launch.program.display());
            events::record(&cluster.store, pod, "Warning", "Failed", &message, "kubelet");
            run.blocked = Some(Blocked::Create(message));
        }
    }
}

fn exited(cluster: &Arc<Cluster>, pod: &Value, run: &mut RunPod, status: std::process::ExitStatus) {
    use std::os::unix::process::ExitStatusExt;
    run.child = None;
    let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    let reason = if code == 0 { "Completed" } else { "Error" };
    run.last_terminated = Some(json!({
        "exitCode": code,
        "reason": reason,
        "startedAt": run.started_at,
        "finishedAt": meta::now(),
    }));
    let policy = pod.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("Always");
    let again = match policy {
        "Never" => false,
        "OnFailure" => code != 0,
        _ => true,
    };
    if again {
        run.restarts += 1;
        run.restart_after = Some(Instant::now() + BACK_OFF);
        events::back_off(&cluster.store, pod);
    } else {
        run.ended = Some(code);
    }
}

/// What to run for the pod's container.
struct Launch {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

fn launch(cluster: &Arc<Cluster>, pod: &Value, run: &RunPod) -> Result<Launch, String> {
    let container = pod.pointer("/spec/containers/0").ok_or("the pod has no container")?;
    let words = |key: &str| meta::strings(container.get(key));
    let mut command = words("command");
    command.extend(words("args"));
    let entry = &run.image.entrypoint;
    if !command.starts_with(entry) {
        return Err(format!(
            "the kube double runs only the local image's entrypoint {entry:?}; the container's command is {command:?}"
        ));
    }
    let mounts = mounts(container, &run.sandbox);
    let rewrite = |value: &str| rewrite_path(value, &mounts);
    let mut program = run.image.program.clone();
    let first = if program.is_empty() {
        return Err("the local image names no program".into());
    } else {
        program.remove(0)
    };
    let mut args = program;
    args.extend(command[entry.len()..].iter().map(|a| rewrite(a)));
    let mut env: Vec<(String, String)> = Vec::new();
    if let Ok(path) = std::env::var("PATH") {
        env.push(("PATH".into(), path));
    }
    env.extend(run.image.env.iter().cloned());
    for var in container.get("env").and_then(Value::as_array).into_iter().flatten() {
        let name = var["name"].as_str().unwrap_or_default().to_owned();
        let value = match (&var["value"], var.get("valueFrom")) {
            (Value::String(value), _) => rewrite(value),
            (_, Some(from)) => value_from(cluster, pod, &run.ip, from)
                .map_err(|why| format!("environment variable {name}: {why}"))?,
            _ => String::new(),
        };
        env.retain(|(n, _)| *n != name);
        env.push((name, value));
    }
    Ok(Launch { program: PathBuf::from(first), args, env })
}

fn value_from(
    cluster: &Arc<Cluster>,
    pod: &Value,
    ip: &str,
    from: &Value,
) -> Result<String, String> {
    if let Some(path) = from.pointer("/fieldRef/fieldPath").and_then(Value::as_str) {
        let value = match path {
            "metadata.name" => meta::name(pod).to_owned(),
            "metadata.namespace" => meta::namespace(pod).to_owned(),
            "metadata.uid" => meta::uid(pod).to_owned(),
            "status.podIP" => ip.to_owned(),
            "spec.nodeName" => NODE.to_owned(),
            "spec.serviceAccountName" => pod
                .pointer("/spec/serviceAccountName")
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_owned(),
            other => return Err(format!("fieldRef {other} is not served by the kube double")),
        };
        return Ok(value);
    }
    if let Some(secret) = from.get("secretKeyRef") {
        let name = secret["name"].as_str().unwrap_or_default();
        let key = secret["key"].as_str().unwrap_or_default();
        let data = secret_data(cluster, meta::namespace(pod), name)
            .ok_or_else(|| format!("secret \"{name}\" not found"))?;
        let bytes = data.get(key).ok_or_else(|| {
            format!("couldn't find key {key} in Secret {}/{name}", meta::namespace(pod))
        })?;
        return Ok(String::from_utf8_lossy(bytes).into_owned());
    }
    Err(format!("{from} is not served by the kube double"))
}

/// The container's mounts, longest path first: (mount path, sandbox directory).
fn mounts(container: &Value, sandbox: &Path) -> Vec<(String, PathBuf)> {
    let mut mounts: Vec<(String, PathBuf)> = container
        .get("volumeMounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let path = m["mountPath"].as_str()?.trim_end_matches('/').to_owned();
            let volume = m["name"].as_str()?;
            Some((path, volume_dir(sandbox, volume)))
        })
        .collect();
    mounts.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    mounts
}

fn volume_dir(sandbox: &Path, volume: &str) -> PathBuf {
    sandbox.join("volumes").join(volume)
}

/// `value` with a leading mount path replaced by its sandbox directory.
fn rewrite_path(value: &str, mounts: &[(String, PathBuf)]) -> String {
    for (path, dir) in mounts {
        if value == path {
            return dir.display().to_string();
        }
        if let Some(rest) = value.strip_prefix(path.as_str()).and_then(|r| r.strip_prefix('/')) {
            return dir.join(rest).display().to_string();
        }
    }
    value.to_owned()
}

/// Creates the pod's volumes and brings Secret volumes up to date; the kubelet's message for
/// a volume that cannot be set up.
fn sync_volumes(cluster: &Arc<Cluster>, pod: &Value, sandbox: &Path) -> Result<(), String> {
    let ns = meta::namespace(pod);
    for volume in pod.pointer("/spec/volumes").and_then(Value::as_array).into_iter().flatten() {
        let name = volume["name"].as_str().unwrap_or_default();
        let dir = volume_dir(sandbox, name);
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let Some(secret) = volume.pointer("/secret/secretName").and_then(Value::as_str) else {
            continue;
        };
        let data = secret_data(cluster, ns, secret).ok_or_else(|| {
            format!(
                "MountVolume.SetUp failed for volume \"{name}\" : secret \"{secret}\" not found"
            )
        })?;
        for (key, bytes) in data {
            let file = dir.join(&key);
            if std::fs::read(&file).is_ok_and(|old| old == bytes) {
                continue;
            }
            // Replaced in one rename, so a reader never sees half a file (the kubelet swaps a
            // symlink for the same reason).
            let staging = dir.join(format!("..{key}.tmp"));
            std::fs::write(&staging, &bytes)
                .and_then(|()| std::fs::rename(&staging, &file))
                .map_err(|e| format!("writing {}: {e}", file.display()))?;
        }
    }
    Ok(())
}

/// A Secret's keys and decoded values (`data` and `stringData`).
fn secret_data(cluster: &Arc<Cluster>, ns: &str, name: &str) -> Option<BTreeMap<String, Vec<u8>>> {
    let rt = resources::by_kind("v1", "Secret")?;
    let secret = cluster.store.get(rt, ns, name)?;
    let mut data = BTreeMap::new();
    for (key, value) in secret.get("data").and_then(Value::as_object).into_iter().flatten() {
        let text = value.as_str().unwrap_or_default();
        let bytes = base64::engine::general_purpose::STANDARD.decode(text).unwrap_or_default();
        data.insert(key.clone(), bytes);
    }
    for (key, value) in secret.get("stringData").and_then(Value::as_object).into_iter().flatten() {
        data.insert(key.clone(), value.as_str().unwrap_or_default().as_bytes().to_vec());
    }
    Some(data)
}

/// The readiness probe's path and port number, if the container has an `httpGet` one.
fn readiness_probe(pod: &Value) -> Option<(String, u16)> {
    let container = pod.pointer("/spec/containers/0")?;
    let get = container.pointer("/readinessProbe/httpGet")?;
    let path = get["path"].as_str().unwrap_or("/").to_owned();
    let port = match &get["port"] {
        Value::Number(n) => n.as_u64()? as u16,
        Value::String(named) => container
            .get("ports")
            .and_then(Value::as_array)?
            .iter()
            .find(|p| p["name"] == named.as_str())?["containerPort"]
            .as_u64()? as u16,
        _ => return None,
    };
    Some((path, port))
}

/// An HTTP GET of `path` answering 2xx or 3xx within [`PROBE_TIMEOUT`].
async fn probe(ip: &str, port: u16, path: &str) -> bool {
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect((ip, port)).await.ok()?;
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {ip}:{port}\r\nUser-Agent: kube-probe/1.33\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await.ok()?;
        let code: u16 = std::str::from_utf8(&head[9..12]).ok()?.parse().ok()?;
        Some((200..400).contains(&code))
    };
    tokio::time::timeout(PROBE_TIMEOUT, attempt).await.ok().flatten().unwrap_or(false)
}

type Stream = Box<dyn AsyncRead + Send + Unpin>;

fn boxed(stream: impl AsyncRead + Send + Unpin + 'static) -> Stream {
    Box::new(stream)
}

async fn forward_lines(
    stream: Stream,
    logs: Arc<Logs>,
    ns: String,
    pod: String,
    container: String,
) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        logs.append(&ns, &pod, &container, &line);
    }
}

/// SIGTERM to the pod's processes now, SIGKILL after its grace period (in the background: the
/// object is gone already).
fn stop(mut run: RunPod) {
    let Some(mut child) = run.child.take() else { return };
    let Some(pid) = child.id() else { return };
    let group = Pid::from_raw(pid as i32);
    let _ = killpg(group, Signal::SIGTERM);
    let grace = run.grace;
    tokio::spawn(async move {
        let _keep_address = run;
        if tokio::time::timeout(grace, child.wait()).await.is_err() {
            let _ = killpg(group, Signal::SIGKILL);
            let _ = child.wait().await;
        }
    });
}

/// Writes the pod's status from what its process is doing.
fn write_status(cluster: &Arc<Cluster>, pod: &Value, run: &RunPod) {
    let image = pod.pointer("/spec/containers/0/image").and_then(Value::as_str).unwrap_or_default();
    let mut container = json!({
        "name": run.container, "image": image, "imageID": "", "ready": run.ready,
        "restartCount": run.restarts, "started": run.child.is_some(),
    });
    if let Some(last) = &run.last_terminated {
        container["lastState"] = json!({"terminated": last});
    }
    let (phase, state) = match (&run.blocked, &run.child, run.ended) {
        (Some(Blocked::Mount), None, _) => {
            ("Pending", json!({"waiting": {"reason": "ContainerCreating"}}))
        }
        (Some(Blocked::Create(message)), None, _) => {
            ("Pending", json!({"waiting": {"reason": "CreateContainerError", "message": message}}))
        }
        (_, Some(_), _) => ("Running", json!({"running": {"startedAt": run.started_at}})),
        (_, None, Some(code)) => {
            container.as_object_mut().map(|c| c.remove("lastState"));
            (
                if code == 0 { "Succeeded" } else { "Failed" },
                json!({"terminated": run.last_terminated}),
            )
        }
        (_, None, None) => {
            let message = format!(
                "back-off {}s restarting failed container={} pod={}_{}",
                BACK_OFF.as_secs(),
                run.container,
                run.name,
                run.ns
            );
            ("Running", json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}}))
        }
    };
    container["state"] = state;
    let old = pod.pointer("/status/conditions");
    let (reason, message) = match (phase, run.ready) {
        (_, true) => ("", String::new()),
        ("Succeeded" | "Failed", _) => ("PodCompleted", String::new()),
        _ => ("ContainersNotReady", format!("containers with unready status: [{}]", run.container)),
    };
    let started = pod.pointer("/status/startTime").cloned().unwrap_or_else(|| json!(meta::now()));
    let status = json!({
        "phase": phase,
        "qosClass": "Guaranteed",
        "hostIP": "127.0.0.1",
        "hostIPs": [{"ip": "127.0.0.1"}],
        "podIP": run.ip,
        "podIPs": [{"ip": run.ip}],
        "startTime": started,
        "conditions": [
            condition(old, "PodReadyToStartContainers", true, "", ""),
            condition(old, "Initialized", true, "", ""),
            condition(old, "Ready", run.ready, reason, &message),
            condition(old, "ContainersReady", run.ready, reason, &message),
            condition(old, "PodScheduled", true, "", ""),
        ],
        "containerStatuses": [container],
    });
    crate::controllers::pods::write(cluster, pod, Some(NODE), status);
}

/// A loopback address `127.2.x.y` no other pod (of any double on this machine) holds.
fn lease_ip() -> Result<(String, Flock<File>), String> {
    let dir = std::env::temp_dir().join("ramen-kube-double-ips");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    const SPAN: u32 = 256 * 256;
    let start: u32 = rand::random::<u32>() % SPAN;
    for step in 0..SPAN {
        let n = (start + step) % SPAN;
        let (x, y) = (n / 256, n % 256);
        if y == 0 || y == 255 {
            continue;
        }
        let ip = format!("127.2.{x}.{y}");
        let Ok(file) = File::create(dir.join(format!("{ip}.lock"))) else { continue };
        let Ok(lock) = Flock::lock(file, FlockArg::LockExclusiveNonblock) else { continue };
        return Ok((ip, lock));
    }
    Err("every 127.2.x.y address is held by another pod".into())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    #[test]
    fn paths_under_a_mount_are_rewritten_and_others_are_not() {
        let mounts = vec![
            ("/var/lib/ramen/cache".to_owned(), PathBuf::from("/s/volumes/cache")),
            ("/var/lib/ramen".to_owned(), PathBuf::from("/s/volumes/data")),
            ("/tmp".to_owned(), PathBuf::from("/s/volumes/tmp")),
        ];
        let r = |v: &str| super::rewrite_path(v, &mounts);
        assert_eq!(r("/var/lib/ramen"), "/s/volumes/data");
        assert_eq!(r("/var/lib/ramen/node"), "/s/volumes/data/node");
        assert_eq!(r("/var/lib/ramen/cache/x"), "/s/volumes/cache/x");
        assert_eq!(r("/var/lib/ramenx"), "/var/lib/ramenx");
        assert_eq!(r("/tmp"), "/s/volumes/tmp");
        assert_eq!(r("json"), "json");
    }
}
