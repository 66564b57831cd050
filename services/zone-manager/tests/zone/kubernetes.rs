//! Kubernetes zones: the zone-manager's gRPC API driving the Kubernetes provider against the
//! played Kubernetes API (`ramen-kube-double`, real HTTP, the real `kube` client from a
//! kubeconfig). Pods are simulated: a rollout is judged on the Deployment's status as a
//! cluster reports it, a stuck one on the pod conditions the scheduler and kubelet write.

use std::path::PathBuf;
use std::time::Duration;

use ramen_config::{ClusterAccess, ClusterConfig};
use ramen_kube_double::{KubeDouble, PodBehaviour};
use ramen_proto::common::v1 as common;
use ramen_proto::zone::v1 as pb;
use serde_json::Value;

use super::support::Harness;

const GROUP: &str = "team";
const ZONE: &str = "eu1";
const LOCATION: &str = "europe-west1-b";
const NAMESPACE: &str = "ramen-team-eu1";
/// The field manager of the test's writes standing in for the HPA controller.
const HPA_MANAGER: &str = "horizontal-pod-autoscaler";

struct Cloud {
    double: KubeDouble,
    harness: Harness,
    _kubeconfig: tempfile::TempDir,
}

/// A zone-manager whose `gcp` provider reaches the double through a kubeconfig context, with
/// one gcp zone `eu1` pinned to `europe-west1-b` and the placement of `team` in it.
async fn gcp_zone() -> Cloud {
    let cluster = ClusterConfig {
        provider: "gcp".into(),
        region: "europe-west1".into(),
        project: "acme-prod".into(),
        ..ClusterConfig::default()
    };
    cloud_zone(cluster, common::Provider::Gcp, ZONE, LOCATION).await
}

async fn cloud_zone(
    cluster: ClusterConfig,
    provider: common::Provider,
    zone: &str,
    location: &str,
) -> Cloud {
    let double = KubeDouble::start().await.expect("the double starts");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    double.write_kubeconfig(&kubeconfig, "gke-europe-west1").unwrap();
    let path = kubeconfig.display().to_string();
    let mut harness = Harness::start_with(move |config| {
        config.kubernetes.clusters.insert(
            "cluster".into(),
            ClusterConfig {
                access: ClusterAccess::Kubeconfig,
                kubeconfig: path,
                context: "gke-europe-west1".into(),
                ..cluster
            },
        );
        config.kubernetes.worker_image = "registry.example/ramen-worker:1.0".into();
        config.kubernetes.poll_interval = Duration::from_millis(100);
    })
    .await;
    let request = pb::CreateZoneRequest {
        name: zone.into(),
        provider: provider as i32,
        region: location.into(),
        ..Default::default()
    };
    harness.client.create_zone(request).await.expect("cloud zone created");
    let ensure = pb::EnsurePlacementRequest { group: GROUP.into(), zone: zone.into() };
    harness.client.ensure_placement(ensure).await.expect("placement ensured");
    Cloud { double, harness, _kubeconfig: dir }
}

fn object(double: &KubeDouble, api_version: &str, kind: &str, name: &str) -> Value {
    double
        .get(api_version, kind, NAMESPACE, name)
        .unwrap_or_else(|| panic!("{kind} {NAMESPACE}/{name} exists"))
}

async fn eventually_replicas(double: &KubeDouble, track: &str, ready: i64) {
    ramen_testkit::eventually("the track settles", Duration::from_secs(30), || {
        let d = deployment(double, track);
        async move {
            let status = &d["status"];
            if status["readyReplicas"] == ready && status["replicas"] == ready {
                Ok(())
            } else {
                Err(status.to_string())
            }
        }
    })
    .await;
}

fn deployment(double: &KubeDouble, track: &str) -> Value {
    object(double, "apps/v1", "Deployment", track)
}

#[tokio::test]
async fn a_gcp_zone_is_a_namespace_whose_tracks_are_deployments() {
    let Cloud { double, mut harness, .. } = gcp_zone().await;

    // ensure: the namespace and what every placement has, labelled as ramen's.
    let ns = double.get("v1", "Namespace", "", NAMESPACE).expect("namespace made");
    assert_eq!(ns["metadata"]["labels"]["app.kubernetes.io/managed-by"], "ramen");
    assert_eq!(ns["metadata"]["labels"]["ramen.dev/group"], GROUP);
    assert_eq!(ns["metadata"]["labels"]["ramen.dev/zone"], ZONE);
    let sa = object(&double, "v1", "ServiceAccount", "ramen-worker");
    assert_eq!(
        sa["metadata"]["annotations"]["iam.gke.io/gcp-service-account"],
        "ramen-team-eu1@acme-prod.iam.gserviceaccount.com"
    );
    let placement = harness
        .client
        .get_placement(pb::GetPlacementRequest { group: GROUP.into(), zone: ZONE.into() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(placement.namespace, NAMESPACE);
    assert_eq!(placement.service_account, "ramen-team-eu1@acme-prod.iam.gserviceaccount.com");
    let policy = object(&double, "networking.k8s.io/v1", "NetworkPolicy", "ramen-workers");
    let types: Vec<&str> = policy["spec"]["policyTypes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(types, ["Ingress", "Egress"], "default deny both ways: {policy}");
    let egress_ports: Vec<i64> = policy["spec"]["egress"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|rule| rule["ports"].as_array().cloned().unwrap_or_default())
        .filter_map(|port| port["port"].as_i64())
        .collect();
    assert!(egress_ports.contains(&53), "DNS allowed: {egress_ports:?}");
    for track in ["worker", "worker-canary"] {
        let service = object(&double, "v1", "Service", track);
        assert_eq!(service["spec"]["selector"]["ramen.dev/track"], track, "{service}");
        object(&double, "policy/v1", "PodDisruptionBudget", track);
    }

    // A rollout before any config: nothing to run, said so.
    let err = harness
        .client
        .restart_track(pb::RestartTrackRequest {
            group: GROUP.into(),
            zone: ZONE.into(),
            track: common::Track::WorkerCanary as i32,
            timeout: Some(Duration::from_secs(20).try_into().unwrap()),
        })
        .await
        .expect_err("nothing deployed yet");
    assert!(err.message().contains("team/eu1"), "{}", err.message());

    harness.write_config(GROUP, ZONE, "c1", "examples/hello-repo").await;
    let written = object(&double, "v1", "Secret", "ramen-written-config");
    assert!(written["data"]["template.json"].is_string(), "{written}");

    // The canary: one pod of the worker image, pinned to the zone's location.
    let canary =
        harness.restart(GROUP, ZONE, common::Track::WorkerCanary, Duration::from_secs(30)).await;
    assert!(canary.ready, "canary ready: {:?}", canary.not_ready);
    assert_eq!(canary.workers.len(), 1, "{:?}", canary.workers);
    assert_eq!(canary.workers[0].loaded_commit, "c1");
    let d = deployment(&double, "worker-canary");
    assert_eq!(d["spec"]["replicas"], 1);
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["image"], "registry.example/ramen-worker:1.0");
    let term = &pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        [0]["matchExpressions"][0];
    assert_eq!(term["key"], "topology.kubernetes.io/zone");
    assert_eq!(term["values"][0], LOCATION);
    // Size `s` by default: 250m / 512Mi.
    assert_eq!(pod["containers"][0]["resources"]["requests"]["cpu"], "250m");
    assert_eq!(pod["containers"][0]["resources"]["limits"]["memory"], "512Mi");
    let grace = pod["terminationGracePeriodSeconds"].as_i64().unwrap();
    assert_eq!(grace, 5 + 3 + 15, "the drain (5 s), the node's linger (3 s), then a margin");
    let security = &pod["containers"][0]["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    // Probes on the node's health port (named `admin`, 9090).
    assert_eq!(pod["containers"][0]["readinessProbe"]["httpGet"]["port"], "admin");
    assert_eq!(pod["containers"][0]["livenessProbe"]["httpGet"]["port"], "admin");
    let ports = pod["containers"][0]["ports"].as_array().unwrap();
    assert!(ports.iter().any(|p| p["name"] == "admin" && p["containerPort"] == 9090), "{ports:?}");
    let config_secret = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|v| {
            v["secret"]["secretName"].as_str().filter(|n| n.starts_with("worker-canary-"))
        })
        .expect("the track's config secret is mounted")
        .to_owned();
    object(&double, "v1", "Secret", &config_secret);

    // Stable at two workers: the Deployment and its autoscaler (min = count, max = 2 × count).
    let stable = harness.restart(GROUP, ZONE, common::Track::Worker, Duration::from_secs(30)).await;
    assert!(stable.ready, "{:?}", stable.not_ready);
    assert_eq!(stable.workers.len(), 1);
    let count = pb::SetWorkerCountRequest { group: GROUP.into(), zone: ZONE.into(), count: 2 };
    let placement = harness.client.set_worker_count(count).await.unwrap().into_inner();
    assert_eq!((placement.worker_count, placement.max_workers), (2, 4));
    assert_eq!(deployment(&double, "worker")["spec"]["replicas"], 2);
    let hpa = object(&double, "autoscaling/v2", "HorizontalPodAutoscaler", "worker");
    assert_eq!(hpa["spec"]["minReplicas"], 2);
    assert_eq!(hpa["spec"]["maxReplicas"], 4);
    assert_eq!(hpa["spec"]["scaleTargetRef"]["name"], "worker");

    // The HPA scales stable to 3 under load; a deploy's restart keeps the 3 (within 2..4)
    // rather than dropping a busy zone to its floor.
    let client = double.client().await.unwrap();
    let deployments: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(client, NAMESPACE);
    let scale = serde_json::json!({"spec": {"replicas": 3}});
    // Written as the HPA controller writes it (its own field manager).
    let params =
        kube::api::PatchParams { field_manager: Some(HPA_MANAGER.into()), ..Default::default() };
    deployments.patch_scale("worker", &params, &kube::api::Patch::Merge(&scale)).await.unwrap();
    let stable = harness.restart(GROUP, ZONE, common::Track::Worker, Duration::from_secs(30)).await;
    assert!(stable.ready, "{:?}", stable.not_ready);
    assert_eq!(stable.workers.len(), 3, "{:?}", stable.workers);
    assert_eq!(deployment(&double, "worker")["spec"]["replicas"], 3);
    deployments
        .patch_scale(
            "worker",
            &params,
            &kube::api::Patch::Merge(&serde_json::json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    eventually_replicas(&double, "worker", 2).await;
    let workers = harness.workers(GROUP, ZONE).await;
    let tracks: Vec<i32> = workers.iter().map(|w| w.track).collect();
    assert_eq!(
        tracks,
        [
            common::Track::Worker as i32,
            common::Track::Worker as i32,
            common::Track::WorkerCanary as i32
        ]
    );
    assert!(workers.iter().all(|w| w.state == common::WorkerState::Ready as i32), "{workers:?}");

    // A new config rolls the canary onto a new content-addressed secret; the old one goes.
    harness.write_config(GROUP, ZONE, "c2", "examples/hello-repo").await;
    let canary =
        harness.restart(GROUP, ZONE, common::Track::WorkerCanary, Duration::from_secs(30)).await;
    assert!(canary.ready, "{:?}", canary.not_ready);
    assert_eq!(canary.workers[0].loaded_commit, "c2");
    let d = deployment(&double, "worker-canary");
    let mounted: Vec<String> = d["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["secret"]["secretName"].as_str().map(str::to_owned))
        .collect();
    assert!(!mounted.contains(&config_secret), "a new config secret: {mounted:?}");
    // The one it ran before stays (what a put-back needs); older ones go.
    assert!(double.get("v1", "Secret", NAMESPACE, &config_secret).is_some(), "previous kept");
    harness.write_config(GROUP, ZONE, "c3", "examples/hello-repo").await;
    let canary =
        harness.restart(GROUP, ZONE, common::Track::WorkerCanary, Duration::from_secs(30)).await;
    assert!(canary.ready, "{:?}", canary.not_ready);
    assert!(double.get("v1", "Secret", NAMESPACE, &config_secret).is_none(), "oldest pruned");

    // Scale the canary to zero (after a failed step, the pipeline does this).
    let zero = harness.scale(GROUP, ZONE, common::Track::WorkerCanary, 0).await;
    assert!(zero.ready && zero.workers.is_empty(), "{zero:?}");
    assert_eq!(deployment(&double, "worker-canary")["spec"]["replicas"], 0);

    every_apply_is_server_side_and_valid(&double);

    // Teardown: the namespace goes, and so does the record.
    let teardown = pb::TeardownRequest { group: GROUP.into(), zone: ZONE.into() };
    harness.client.teardown(teardown.clone()).await.expect("teardown started");
    ramen_testkit::eventually(
        "the namespace and the placement go",
        Duration::from_secs(30),
        || {
            let mut client = harness.client.clone();
            let teardown = teardown.clone();
            let gone = double.get("v1", "Namespace", "", NAMESPACE).is_none();
            async move {
                let progress = client.get_teardown(teardown).await.map_err(|e| e.to_string())?;
                let done = progress
                    .into_inner()
                    .placements
                    .iter()
                    .all(|p| p.state == pb::TeardownState::Done as i32);
                if gone && done {
                    Ok(())
                } else {
                    Err(format!("namespace gone: {gone}, done: {done}"))
                }
            }
        },
    )
    .await;
}

#[tokio::test]
async fn an_unschedulable_canary_is_named_and_stable_keeps_its_template() {
    let Cloud { double, mut harness, .. } = gcp_zone().await;
    harness.write_config(GROUP, ZONE, "c1", "examples/hello-repo").await;
    let stable = harness.restart(GROUP, ZONE, common::Track::Worker, Duration::from_secs(30)).await;
    assert!(stable.ready, "{:?}", stable.not_ready);
    let stable_template = deployment(&double, "worker")["spec"]["template"].clone();

    double.set_deployment_pod_behaviour(
        NAMESPACE,
        "worker-canary",
        PodBehaviour::Unschedulable {
            message: "0/3 nodes are available: 3 Insufficient cpu.".into(),
        },
    );
    harness.write_config(GROUP, ZONE, "c2", "examples/hello-repo").await;
    let canary =
        harness.restart(GROUP, ZONE, common::Track::WorkerCanary, Duration::from_secs(3)).await;
    assert!(!canary.ready, "an unschedulable pod is not ready");
    let stuck = &canary.not_ready[0];
    assert!(stuck.worker_id.starts_with("worker-canary-"), "{stuck:?}");
    assert!(stuck.reason.contains("Unschedulable"), "{stuck:?}");
    assert!(stuck.reason.contains("Insufficient cpu"), "{stuck:?}");
    assert_eq!(
        deployment(&double, "worker")["spec"]["template"],
        stable_template,
        "stable untouched"
    );

    // A crash-looping canary names its exit code and its last log lines.
    double.set_deployment_pod_behaviour(
        NAMESPACE,
        "worker-canary",
        PodBehaviour::CrashLoopBackOff {
            exit_code: 3,
            log_lines: vec!["error: package hello: ImportError: no module named 'missing'".into()],
        },
    );
    double.reevaluate_pods(NAMESPACE);
    let canary =
        harness.restart(GROUP, ZONE, common::Track::WorkerCanary, Duration::from_secs(3)).await;
    assert!(!canary.ready);
    let crashed = canary
        .not_ready
        .iter()
        .find(|n| n.reason.contains("CrashLoopBackOff"))
        .unwrap_or_else(|| panic!("a crash loop named: {:?}", canary.not_ready));
    assert_eq!(crashed.exit_code, Some(3), "{crashed:?}");
    assert!(
        crashed.last_log_lines.iter().any(|l| l.contains("ImportError")),
        "{:?}",
        crashed.last_log_lines
    );
    assert_eq!(
        deployment(&double, "worker")["spec"]["template"],
        stable_template,
        "stable untouched"
    );
}

#[tokio::test]
async fn a_namespace_ramen_did_not_make_is_left_alone_and_named() {
    let double = KubeDouble::start().await.unwrap();
    let client = double.client().await.unwrap();
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
    let foreign =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "ramen-other-eu1"}}))
            .unwrap();
    namespaces.create(&Default::default(), &foreign).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig: PathBuf = dir.path().join("kubeconfig");
    double.write_kubeconfig(&kubeconfig, "gke").unwrap();
    let path = kubeconfig.display().to_string();
    let mut harness = Harness::start_with(move |config| {
        config.kubernetes.clusters.insert(
            "gke".into(),
            ClusterConfig {
                provider: "gcp".into(),
                region: "europe-west1".into(),
                kubeconfig: path,
                context: "gke".into(),
                ..ClusterConfig::default()
            },
        );
    })
    .await;
    let request = pb::CreateZoneRequest {
        name: ZONE.into(),
        provider: common::Provider::Gcp as i32,
        region: LOCATION.into(),
        ..Default::default()
    };
    harness.client.create_zone(request).await.unwrap();
    let err = harness
        .client
        .ensure_placement(pb::EnsurePlacementRequest { group: "other".into(), zone: ZONE.into() })
        .await
        .expect_err("someone else's namespace");
    assert!(err.message().contains("ramen-other-eu1"), "{}", err.message());
    assert!(err.message().contains("did not make it"), "{}", err.message());
    let kept = double.get("v1", "Namespace", "", "ramen-other-eu1").unwrap();
    assert!(kept["metadata"]["labels"].get("app.kubernetes.io/managed-by").is_none(), "{kept}");

    // A zone whose location no configured cluster holds names what to configure.
    let request = pb::CreateZoneRequest {
        name: "us1".into(),
        provider: common::Provider::Gcp as i32,
        region: "us-central1-a".into(),
        ..Default::default()
    };
    harness.client.create_zone(request).await.unwrap();
    let err = harness
        .client
        .ensure_placement(pb::EnsurePlacementRequest { group: "other".into(), zone: "us1".into() })
        .await
        .expect_err("no cluster for us-central1");
    assert!(err.message().contains("[kubernetes.clusters."), "{}", err.message());
}

/// Every object was sent as a server-side apply by ramen's field manager, and each passes
/// `kubernetes-validate --strict` for the oldest and newest Kubernetes the chart claims.
fn every_apply_is_server_side_and_valid(double: &KubeDouble) {
    let applies: Vec<_> = double
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH")
        .filter(|r| r.query_param("fieldManager").as_deref() != Some(HPA_MANAGER))
        .collect();
    assert!(applies.len() >= 10, "{} applies", applies.len());
    let dir = tempfile::tempdir().unwrap();
    for (i, request) in applies.iter().enumerate() {
        assert_eq!(
            request.content_type.as_deref(),
            Some("application/apply-patch+yaml"),
            "{}",
            request.path
        );
        assert_eq!(request.query_param("fieldManager").as_deref(), Some("ramen-zone-manager"));
        let body = request.json().expect("an apply body");
        std::fs::write(dir.path().join(format!("{i:03}.json")), body.to_string()).unwrap();
    }
    let validate = kubernetes_validate();
    let files: Vec<PathBuf> =
        (0..applies.len()).map(|i| dir.path().join(format!("{i:03}.json"))).collect();
    // The oldest and the newest Kubernetes the Helm chart claims (e2e/run-charts uses the same).
    for version in ["1.28", "1.37"] {
        let out = std::process::Command::new(&validate)
            .args(["--strict", "--kubernetes-version", version])
            .args(&files)
            .output()
            .unwrap_or_else(|e| panic!("{} runs: {e}", validate.display()));
        assert!(
            out.status.success(),
            "kubernetes-validate {version} refused a manifest:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `kubernetes-validate` as `scripts/install-chart-tools` installs it (scripts/test runs that
/// before the Rust tests).
fn kubernetes_validate() -> PathBuf {
    let path =
        std::env::var_os("RAMEN_KUBERNETES_VALIDATE").map(PathBuf::from).unwrap_or_else(|| {
            let cache =
                std::env::var_os("RAMEN_CACHE_DIR").map(PathBuf::from).unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/ramen")
                });
            cache.join("chart-tools/venv/bin/kubernetes-validate")
        });
    assert!(path.exists(), "{} is missing: run scripts/install-chart-tools", path.display());
    path
}

fn secret_file(double: &KubeDouble, namespace: &str, name: &str, file: &str) -> String {
    use base64::Engine as _;
    let secret = double.get("v1", "Secret", namespace, name).expect("secret exists");
    let encoded = secret["data"][file].as_str().unwrap_or_else(|| panic!("{name} has {file}"));
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(encoded).unwrap()).unwrap()
}

#[tokio::test]
async fn an_aws_zone_follows_ip_rules_and_blocking_and_waits_for_a_terminating_namespace() {
    const NS: &str = "ramen-team-use1";
    let cluster = ClusterConfig {
        provider: "aws".into(),
        region: "us-east-1".into(),
        account_id: "123456789012".into(),
        ..ClusterConfig::default()
    };
    let Cloud { double, mut harness, .. } =
        cloud_zone(cluster, common::Provider::Aws, "use1", "us-east-1a").await;
    let sa = double.get("v1", "ServiceAccount", NS, "ramen-worker").unwrap();
    assert_eq!(
        sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"],
        "arn:aws:iam::123456789012:role/ramen-team-use1"
    );
    harness.write_config(GROUP, "use1", "c1", "examples/hello-repo").await;
    let stable =
        harness.restart(GROUP, "use1", common::Track::Worker, Duration::from_secs(30)).await;
    assert!(stable.ready, "{:?}", stable.not_ready);
    let restarted = |double: &KubeDouble| {
        double.get("apps/v1", "Deployment", NS, "worker").unwrap()["spec"]["template"]["metadata"]
            ["annotations"]["ramen.dev/restarted-at"]
            .clone()
    };
    let before = restarted(&double);

    // IP rules: normalised, in the policy Secret every node follows, and the pods rolled.
    let rules = pb::SetIpRulesRequest {
        group: GROUP.into(),
        zone: "use1".into(),
        cidrs: vec!["10.0.0.1".into(), "192.168.0.0/16".into()],
    };
    let changed = harness.client.set_ip_rules(rules).await.expect("rules set").into_inner();
    assert_eq!(changed.normalized, ["10.0.0.1/32", "192.168.0.0/16"]);
    assert!(changed.rolled);
    let policy = secret_file(&double, NS, "ramen-policy", "policy.toml");
    assert!(policy.contains("10.0.0.1/32") && policy.contains("192.168.0.0/16"), "{policy}");
    assert_ne!(restarted(&double), before, "an IP-rule change rolls the pods");

    // Blocking a package is live: in the policy Secret, no restart.
    let rolled_at = restarted(&double);
    let package = pb::SetPackageEnabledRequest {
        group: GROUP.into(),
        zone: "use1".into(),
        package: "hello".into(),
    };
    harness.client.disable_package(package).await.expect("package disabled");
    let policy = secret_file(&double, NS, "ramen-policy", "policy.toml");
    assert!(policy.contains("\"hello\""), "{policy}");
    assert_eq!(restarted(&double), rolled_at, "no restart for a block");

    // A namespace held by a finalizer: the teardown waits, says why, and finishes once it clears.
    double.hold_namespace(NS).unwrap();
    let teardown = pb::TeardownRequest { group: GROUP.into(), zone: "use1".into() };
    harness.client.teardown(teardown.clone()).await.expect("teardown started");
    let detail = ramen_testkit::eventually(
        "the teardown waits on the namespace",
        Duration::from_secs(30),
        || {
            let mut client = harness.client.clone();
            let teardown = teardown.clone();
            async move {
                let progress =
                    client.get_teardown(teardown).await.map_err(|e| e.to_string())?.into_inner();
                progress
                    .placements
                    .iter()
                    .flat_map(|p| &p.steps)
                    .find(|s| s.name == "remove_namespace" && s.detail.contains("Terminating"))
                    .map(|s| s.detail.clone())
                    .ok_or_else(|| format!("{progress:?}"))
            }
        },
    )
    .await;
    assert!(detail.contains(ramen_kube_double::HOLD_FINALIZER), "{detail}");
    assert!(double.get("apps/v1", "Deployment", NS, "worker").is_none(), "workers gone first");
    double.release_namespace(NS).unwrap();
    ramen_testkit::eventually("the teardown finishes", Duration::from_secs(60), || {
        let mut client = harness.client.clone();
        let teardown = teardown.clone();
        let gone = double.get("v1", "Namespace", "", NS).is_none();
        async move {
            let progress =
                client.get_teardown(teardown).await.map_err(|e| e.to_string())?.into_inner();
            let done =
                progress.placements.iter().all(|p| p.state == pb::TeardownState::Done as i32);
            if gone && done { Ok(()) } else { Err(format!("gone {gone}: {progress:?}")) }
        }
    })
    .await;
}
