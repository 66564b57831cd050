//! The provider conformance suite: the same cases, through the zone-manager's gRPC API, against
//! each zone provider, so a zone behaves the same wherever its workers run:
//! - the local provider (worker processes on this machine);
//! - the Kubernetes provider against the played API (`ramen-kube-double`), its pods run for
//!   real by the double's kubelet with `ramen-runner` as the worker image;
//! - the Kubernetes provider against a real cluster, when `RAMEN_TEST_KUBECONFIG` names one
//!   (kind, GKE or EKS; docs/operator-guide.md "Testing against a real cluster" says what else
//!   it reads). CI has no cluster: that case reports SKIPPED there.
//!
//! The cases, in order: ensure → write_config → the canary rolls out and serves MCP → stable
//! rolls out → apply_policy (a disabled package vanishes live, on the same worker) → IP rules
//! (the workers roll; a caller outside is refused, inside is served) → scale (stable to two,
//! the canary to zero) → a teardown that dies after its first step and is finished by a
//! restarted zone-manager → nothing of the placement left.

use std::path::PathBuf;
use std::time::Duration;

use ramen_config::{ClusterAccess, ClusterConfig, Config};
use ramen_kube_double::{KubeDouble, LocalImage, PodBehaviour};
use ramen_proto::common::v1 as common;
use ramen_proto::zone::v1 as pb;
use ramen_testkit::{Nats, eventually};
use ramen_zone_manager::provider::kubernetes::manifests::WORKER_COMMAND;
use ramen_zone_manager::store;
use ramen_zone_manager::teardown::TeardownPhase;
use tempfile::TempDir;

use crate::mcp::{Mcp, add_once};
use crate::support::{Harness, KEY, pids_under, runner_binary};

const GROUP: &str = "conform";
const MINUTE: Duration = Duration::from_secs(60);

/// Where the zone under test runs its workers.
enum Backend {
    Local,
    /// The played API; the double is kept for the checks of what is left.
    Played(KubeDouble),
    /// A real cluster from `RAMEN_TEST_KUBECONFIG`.
    Cluster(Box<RealCluster>),
}

struct RealCluster {
    kubeconfig: String,
    context: String,
    provider: String,
    location: String,
    /// The `[kubernetes]` and `[s3]` settings from `RAMEN_CONFIG` (worker image, blob store).
    base: Config,
}

impl RealCluster {
    fn from_env() -> Option<Self> {
        let kubeconfig = std::env::var("RAMEN_TEST_KUBECONFIG").ok().filter(|v| !v.is_empty())?;
        let var = |name: &str, default: &str| {
            std::env::var(name).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| default.into())
        };
        let file = std::env::var_os("RAMEN_CONFIG").map(PathBuf::from);
        let base: Config = Config::figment(file.as_deref())
            .extract()
            .expect("RAMEN_CONFIG and the RAMEN_* environment are a valid configuration");
        Some(Self {
            kubeconfig,
            context: var("RAMEN_TEST_KUBE_CONTEXT", ""),
            provider: var("RAMEN_TEST_KUBE_PROVIDER", "gcp"),
            location: var("RAMEN_TEST_KUBE_LOCATION", "europe-west1-b"),
            base,
        })
    }
}

/// One zone of one provider, with a placement of [`GROUP`] in it.
struct Subject {
    harness: Harness,
    backend: Backend,
    zone: &'static str,
    _kube_dir: TempDir,
}

impl Backend {
    fn provider(&self) -> common::Provider {
        match self {
            Backend::Local => common::Provider::Local,
            Backend::Played(_) => common::Provider::Gcp,
            Backend::Cluster(c) if c.provider == "aws" => common::Provider::Aws,
            Backend::Cluster(_) => common::Provider::Gcp,
        }
    }

    fn location(&self) -> String {
        match self {
            Backend::Local => String::new(),
            Backend::Played(_) => "europe-west1-b".into(),
            Backend::Cluster(c) => c.location.clone(),
        }
    }

    /// Whether this test process can reach the workers' MCP addresses (pod IPs of a real
    /// cluster are not reachable from outside it).
    fn reaches_workers(&self) -> bool {
        !matches!(self, Backend::Cluster(_))
    }

    /// The configuration every start of the zone-manager gets (the first and the restart).
    fn tweak(&self, kube_dir: &std::path::Path) -> impl Fn(&mut Config) + use<> {
        let (cluster, base) = match self {
            Backend::Local => (None, None),
            Backend::Played(double) => {
                let kubeconfig = kube_dir.join("kubeconfig");
                double.write_kubeconfig(&kubeconfig, "played").unwrap();
                let cluster = ClusterConfig {
                    provider: "gcp".into(),
                    region: "europe-west1".into(),
                    access: ClusterAccess::Kubeconfig,
                    kubeconfig: kubeconfig.display().to_string(),
                    context: "played".into(),
                    ..ClusterConfig::default()
                };
                (Some(cluster), None)
            }
            Backend::Cluster(real) => {
                let region = match real.location.rsplit_once('-') {
                    Some((region, zone)) if zone.len() == 1 => region.to_owned(),
                    _ => real.location.trim_end_matches(char::is_alphabetic).to_owned(),
                };
                let cluster = ClusterConfig {
                    provider: real.provider.clone(),
                    region,
                    access: ClusterAccess::Kubeconfig,
                    kubeconfig: real.kubeconfig.clone(),
                    context: real.context.clone(),
                    ..ClusterConfig::default()
                };
                (Some(cluster), Some(real.base.clone()))
            }
        };
        move |config: &mut Config| {
            if let Some(base) = &base {
                config.kubernetes = base.kubernetes.clone();
                config.s3 = base.s3.clone();
            } else if cluster.is_some() {
                // What the worker image holds, on this machine: the played pods run here.
                config.kubernetes.worker_image = "registry.example/ramen-worker:1.0".into();
                config.kubernetes.python = config.zone.python.clone();
                config.kubernetes.site_packages = config.zone.site_packages.clone();
                config.kubernetes.bind_pod_ip = true;
            }
            if let Some(cluster) = &cluster {
                config.kubernetes.clusters.insert("under-test".into(), cluster.clone());
                config.kubernetes.poll_interval = Duration::from_millis(200);
            }
        }
    }
}

impl Subject {
    async fn start(backend: Backend) -> Self {
        let kube_dir = tempfile::tempdir().unwrap();
        let tweak = backend.tweak(kube_dir.path());
        let nats = Nats::start().await.expect("nats-server starts");
        let mut harness = Harness::start_on(nats, tempfile::tempdir().unwrap(), tweak).await;
        let zone = match backend {
            Backend::Local => "local-c",
            _ => "cloud-c",
        };
        let request = pb::CreateZoneRequest {
            name: zone.into(),
            provider: backend.provider() as i32,
            region: backend.location(),
            ..Default::default()
        };
        harness.client.create_zone(request).await.expect("zone created");
        Self { harness, backend, zone, _kube_dir: kube_dir }
    }

    /// The zone-manager stops (its process dies) and a new one starts on the same data.
    async fn restart_zone_manager(self) -> Self {
        let Subject { harness, backend, zone, _kube_dir } = self;
        let (nats, dir) = harness.stop().await;
        let harness = Harness::start_on(nats, dir, backend.tweak(_kube_dir.path())).await;
        Subject { harness, backend, zone, _kube_dir }
    }

    async fn ready_workers(&mut self, track: common::Track, count: usize) -> Vec<pb::Worker> {
        let (group, zone) = (GROUP, self.zone);
        eventually(&format!("{count} ready {track:?} worker(s)"), MINUTE, || {
            let mut client = self.harness.client.clone();
            async move {
                let request = pb::ListWorkersRequest {
                    group: group.into(),
                    zone: zone.into(),
                    ..Default::default()
                };
                let workers = client.list_workers(request).await.map_err(|e| e.to_string())?;
                let workers: Vec<pb::Worker> = workers
                    .into_inner()
                    .workers
                    .into_iter()
                    .filter(|w| w.track == track as i32)
                    .collect();
                let ready =
                    workers.iter().filter(|w| w.state == common::WorkerState::Ready as i32).count();
                if ready == count && workers.len() == count {
                    Ok(workers)
                } else {
                    Err(format!("{workers:?}"))
                }
            }
        })
        .await
    }

    /// Nothing of the placement is left: no record, no listed placement, and nothing where the
    /// workers ran (no process or directory locally; no namespace or pod process in a cluster).
    async fn assert_nothing_left(&mut self) {
        for collection in [store::PLACEMENTS, store::WORKERS] {
            let left = self.harness.records(collection, GROUP).await;
            assert!(left.is_empty(), "records left in {collection}: {left:?}");
        }
        let namespace = format!("ramen-{GROUP}-{}", self.zone);
        match &self.backend {
            Backend::Local => {
                assert!(pids_under(&self.harness.zones_dir()).is_empty(), "worker processes left");
                let dir = self.harness.placement_dir(GROUP, self.zone);
                assert!(!dir.exists(), "{} left", dir.display());
            }
            Backend::Played(double) => {
                assert!(
                    double.get("v1", "Namespace", "", &namespace).is_none(),
                    "{namespace} left"
                );
                let sandboxes = double.kubelet_dir().to_owned();
                eventually("the pods' processes stopped", MINUTE, || {
                    let left = pids_under(&sandboxes);
                    async move { if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) } }
                })
                .await;
            }
            Backend::Cluster(real) => {
                let client = kube_client(&real.kubeconfig, &real.context).await;
                let api: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
                eventually(&format!("{namespace} deleted"), 5 * MINUTE, || {
                    let api = api.clone();
                    let namespace = namespace.clone();
                    async move {
                        match api.get_opt(&namespace).await {
                            Ok(None) => Ok(()),
                            other => Err(format!("{other:?}")),
                        }
                    }
                })
                .await;
            }
        }
    }
}

async fn kube_client(kubeconfig: &str, context: &str) -> kube::Client {
    let file =
        kube::config::Kubeconfig::read_from(kubeconfig).expect("RAMEN_TEST_KUBECONFIG reads");
    let options = kube::config::KubeConfigOptions {
        context: (!context.is_empty()).then(|| context.to_owned()),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(file, &options).await.expect("a context");
    kube::Client::try_from(config).expect("a client")
}

/// The played worker image: the double's kubelet runs `ramen-runner` for it.
async fn played() -> Backend {
    let double = KubeDouble::start().await.expect("the double starts");
    let image = LocalImage {
        entrypoint: WORKER_COMMAND.iter().map(|s| (*s).to_owned()).collect(),
        program: vec![runner_binary().display().to_string()],
        env: Vec::new(),
    };
    double.set_pod_behaviour(&format!("ramen-{GROUP}-cloud-c"), PodBehaviour::Run(image));
    Backend::Played(double)
}

async fn serves(address: &str) -> Vec<String> {
    let session = Mcp::connect(address, KEY).await.expect("a session with the test key");
    session.tool_names().await.expect("tools/list")
}

/// Every case, in order, against one backend.
async fn conformance(backend: Backend) {
    let mut s = Subject::start(backend).await;
    let zone = s.zone;
    let reaches = s.backend.reaches_workers();

    // ensure: the placement exists, named for its group and zone.
    let ensure = pb::EnsurePlacementRequest { group: GROUP.into(), zone: zone.into() };
    let placement = s.harness.client.ensure_placement(ensure.clone()).await.unwrap().into_inner();
    assert_eq!((placement.group.as_str(), placement.zone.as_str()), (GROUP, zone));
    assert!(!placement.namespace.is_empty(), "{placement:?}");
    s.harness.client.ensure_placement(ensure).await.expect("ensure again is a no-op");

    // write_config, then the canary: ready, on the commit written, serving MCP.
    s.harness.write_config(GROUP, zone, "c1", "examples/hello-repo").await;
    let canary = s.harness.restart(GROUP, zone, common::Track::WorkerCanary, MINUTE).await;
    assert!(canary.ready, "{:?}", canary.not_ready);
    assert_eq!(canary.workers.len(), 1, "{:?}", canary.workers);
    assert_eq!(canary.workers[0].loaded_commit, "c1");
    if reaches {
        let tools = serves(&canary.workers[0].mcp_address).await;
        assert!(tools.contains(&"notes.add".to_owned()), "{tools:?}");
    }

    // Stable.
    let stable = s.harness.restart(GROUP, zone, common::Track::Worker, MINUTE).await;
    assert!(stable.ready, "{:?}", stable.not_ready);
    let worker = s.ready_workers(common::Track::Worker, 1).await.remove(0);

    // apply_policy: a disabled package vanishes from a live session, on the same worker.
    let report = |name: &str| common::PackageReport { name: name.into(), ..Default::default() };
    let packages = pb::StorePackageReportRequest {
        group: GROUP.into(),
        zone: zone.into(),
        environment: "prod".into(),
        commit: "c1".into(),
        packages: vec![report("notes"), report("weather")],
    };
    s.harness.client.store_package_report(packages).await.unwrap();
    let disable = pb::SetPackageEnabledRequest {
        group: GROUP.into(),
        zone: zone.into(),
        package: "notes".into(),
    };
    s.harness.client.disable_package(disable.clone()).await.unwrap();
    if reaches {
        let session = Mcp::connect(&worker.mcp_address, KEY).await.unwrap();
        eventually("the package vanishes live", MINUTE, || async {
            let tools = session.tool_names().await.map_err(|e| format!("{e:?}"))?;
            if tools.iter().any(|t| t.starts_with("notes.")) {
                Err(format!("{tools:?}"))
            } else {
                Ok(())
            }
        })
        .await;
    }
    s.harness.client.enable_package(disable).await.unwrap();
    let same = s.ready_workers(common::Track::Worker, 1).await.remove(0);
    assert_eq!(
        (same.id.as_str(), same.restarts),
        (worker.id.as_str(), worker.restarts),
        "applied live"
    );

    // IP rules: the workers roll onto them; a caller outside is refused, inside is served.
    let rules = |cidrs: &[&str]| pb::SetIpRulesRequest {
        group: GROUP.into(),
        zone: zone.into(),
        cidrs: cidrs.iter().map(|c| c.to_string()).collect(),
    };
    let outside = s.harness.client.set_ip_rules(rules(&["10.0.0.0/8"])).await.unwrap().into_inner();
    assert!(outside.rolled, "{outside:?}");
    if reaches {
        let worker = s.ready_workers(common::Track::Worker, 1).await.remove(0);
        let refused = eventually("a caller outside the rules is refused", MINUTE, || {
            let address = worker.mcp_address.clone();
            async move {
                match add_once(&address, KEY, 1, 1).await {
                    Err(refused) if refused.status == 403 => Ok(refused),
                    other => Err(format!("{other:?}")),
                }
            }
        })
        .await;
        assert!(refused.body.contains("127.0.0.1 is not allowed"), "{}", refused.body);
    }
    let inside = s.harness.client.set_ip_rules(rules(&["10.0.0.0/8", "127.0.0.1"])).await.unwrap();
    assert_eq!(inside.into_inner().normalized, vec!["10.0.0.0/8", "127.0.0.1/32"]);
    if reaches {
        let worker = s.ready_workers(common::Track::Worker, 1).await.remove(0);
        let sum = eventually("a caller inside the rules is served", MINUTE, || {
            let address = worker.mcp_address.clone();
            async move { add_once(&address, KEY, 2, 3).await.map_err(|e| format!("{e:?}")) }
        })
        .await;
        assert_eq!(sum, 5);
    }

    // Scale: stable to two workers, the canary to none.
    let count = pb::SetWorkerCountRequest { group: GROUP.into(), zone: zone.into(), count: 2 };
    let placement = s.harness.client.set_worker_count(count).await.unwrap().into_inner();
    assert_eq!(placement.worker_count, 2);
    s.ready_workers(common::Track::Worker, 2).await;
    let zero = s.harness.scale(GROUP, zone, common::Track::WorkerCanary, 0).await;
    assert!(zero.ready && zero.workers.is_empty(), "{zero:?}");
    s.ready_workers(common::Track::WorkerCanary, 0).await;

    // Teardown, killed after its first step; a restarted zone-manager finishes it.
    let manager = s.harness.manager.clone();
    manager.record_teardown(&Default::default(), GROUP, zone).await.unwrap();
    let halfway =
        manager.run_teardown(&format!("{GROUP}/{zone}"), Some("drain_workers")).await.unwrap();
    assert_eq!(halfway.state, TeardownPhase::Running);
    assert_eq!(halfway.next_step(), Some("remove_route"));
    drop(manager);
    let mut s = s.restart_zone_manager().await;
    eventually("the teardown is finished", 5 * MINUTE, || {
        let mut client = s.harness.client.clone();
        async move {
            let request = pb::TeardownRequest { group: GROUP.into(), zone: zone.into() };
            let progress = client.get_teardown(request).await.map_err(|e| e.to_string())?;
            match progress.into_inner().placements.first() {
                Some(p) if p.state == pb::TeardownState::Done as i32 => Ok(()),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    s.assert_nothing_left().await;
    s.harness.stop().await;
}

#[tokio::test]
async fn the_local_provider_conforms() {
    conformance(Backend::Local).await;
}

#[tokio::test]
async fn the_kubernetes_provider_conforms_on_the_played_api() {
    conformance(played().await).await;
}

/// Against a real cluster; CI has none (SKIPPED there, said so in the note).
#[tokio::test]
async fn the_kubernetes_provider_conforms_on_a_real_cluster() {
    let Some(real) = RealCluster::from_env() else {
        eprintln!(
            "SKIPPED: RAMEN_TEST_KUBECONFIG is not set (docs/operator-guide.md says how to run this)"
        );
        return;
    };
    conformance(Backend::Cluster(Box::new(real))).await;
}
