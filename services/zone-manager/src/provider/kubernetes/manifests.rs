//! The objects a placement is made of, rendered from its record and the settings. Pure: the
//! same inputs give the same objects, so applying them again changes nothing, and a test can
//! validate every one (`kubernetes-validate --strict`).
//!
//! In the namespace `ramen-<group>-<zone>`: the ServiceAccount `ramen-worker` (with the cloud
//! identity annotation), the NetworkPolicy `ramen-workers` (default deny, then what workers
//! need), per track (`worker`, `worker-canary`) a Deployment, a Service and a
//! PodDisruptionBudget, the stable track's HorizontalPodAutoscaler, and Secrets: the config
//! last written (`ramen-written-config`), each config a track ran (`<track>-<hash>`,
//! content-addressed so a pod of the previous ReplicaSet restarts on what it ran), and the
//! live policy (`ramen-policy`, followed by every node).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec,
    MetricIdentifier, MetricSpec, MetricTarget, PodsMetricSource, ResourceMetricSource,
};
use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    HTTPGetAction, Namespace, NodeAffinity, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, ObjectFieldSelector, Pod, PodSecurityContext, PodSpec, PodTemplateSpec,
    Probe, ResourceRequirements, SeccompProfile, Secret, SecretVolumeSource, SecurityContext,
    Service, ServiceAccount, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer,
    NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::settings::{ADMIN_PORT, GRPC_PORT, KubeSettings, MCP_PORT};
use crate::model::{ProviderKind, SizeClass, TrackKind};

pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGER: &str = "ramen";
pub const GROUP_LABEL: &str = "ramen.dev/group";
pub const ZONE_LABEL: &str = "ramen.dev/zone";
pub const TRACK_LABEL: &str = "ramen.dev/track";
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
/// The Secret a track's pods run (pod template annotation).
pub const CONFIG_ANNOTATION: &str = "ramen.dev/config";
pub const COMMIT_ANNOTATION: &str = "ramen.dev/commit";
/// Changed to restart a track in place on the config it runs (as `kubectl rollout restart`).
pub const RESTARTED_ANNOTATION: &str = "ramen.dev/restarted-at";
/// The field manager of every server-side apply.
pub const FIELD_MANAGER: &str = "ramen-zone-manager";

pub const WORKER_SERVICE_ACCOUNT: &str = "ramen-worker";
pub const NETWORK_POLICY: &str = "ramen-workers";
pub const WRITTEN_SECRET: &str = "ramen-written-config";
pub const POLICY_SECRET: &str = "ramen-policy";
pub const HPA: &str = "worker";

pub const CONFIG_DIR: &str = "/etc/ramen/config";
pub const POLICY_DIR: &str = "/etc/ramen/policy";
pub const DATA_DIR: &str = "/var/lib/ramen";
pub const NODE_FILE: &str = "node.toml";
pub const TEMPLATE_FILE: &str = "template.json";
pub const POLICY_FILE: &str = "policy.toml";
/// The worker image's entry point, without its default arguments.
pub const WORKER_COMMAND: [&str; 4] = ["/usr/bin/tini", "--", "/usr/local/bin/ramen", "worker"];

/// The placement being rendered.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    pub provider: ProviderKind,
    pub group: &'a str,
    pub zone: &'a str,
    pub namespace: &'a str,
    /// The cloud location pods are pinned to (`topology.kubernetes.io/zone`).
    pub region: &'a str,
}

/// Labels on everything ramen makes for a placement: teardown deletes only what carries them.
pub fn labels(target: &Target) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY.to_owned(), MANAGER.to_owned()),
        (GROUP_LABEL.to_owned(), target.group.to_owned()),
        (ZONE_LABEL.to_owned(), target.zone.to_owned()),
    ])
}

/// `key=value,...` selecting what ramen made for this placement.
pub fn selector(target: &Target) -> String {
    join_selector(&labels(target))
}

/// The pods (and only the pods) of one track.
pub fn track_labels(target: &Target, track: TrackKind) -> BTreeMap<String, String> {
    let mut labels = labels(target);
    labels.insert(TRACK_LABEL.to_owned(), track.name().to_owned());
    labels.insert(COMPONENT_LABEL.to_owned(), "worker".to_owned());
    labels
}

pub fn track_selector(target: &Target, track: TrackKind) -> String {
    join_selector(&track_labels(target, track))
}

fn join_selector(labels: &BTreeMap<String, String>) -> String {
    labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

fn meta(target: &Target, name: &str, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(target.namespace.to_owned()),
        labels: Some(labels),
        ..Default::default()
    }
}

pub fn namespace(target: &Target) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(target.namespace.to_owned()),
            labels: Some(labels(target)),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The workers' Kubernetes service account, bound to the cloud identity: GKE Workload Identity
/// reads `iam.gke.io/gcp-service-account`, EKS IRSA reads `eks.amazonaws.com/role-arn`.
pub fn service_account(target: &Target, identity: &str) -> ServiceAccount {
    let mut metadata = meta(target, WORKER_SERVICE_ACCOUNT, labels(target));
    let key = match target.provider {
        ProviderKind::Gcp => Some("iam.gke.io/gcp-service-account"),
        ProviderKind::Aws => Some("eks.amazonaws.com/role-arn"),
        ProviderKind::Local => None,
    };
    if let (Some(key), false) = (key, identity.is_empty()) {
        metadata.annotations = Some(BTreeMap::from([(key.to_owned(), identity.to_owned())]));
    }
    ServiceAccount {
        metadata,
        // Workers never call the Kubernetes API.
        automount_service_account_token: Some(false),
        ..Default::default()
    }
}

fn tcp(port: u16) -> NetworkPolicyPort {
    NetworkPolicyPort {
        port: Some(IntOrString::Int(port.into())),
        protocol: Some("TCP".into()),
        ..Default::default()
    }
}

fn cidr_peer(cidr: &str) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        ip_block: Some(IPBlock { cidr: cidr.to_owned(), except: None }),
        ..Default::default()
    }
}

fn namespace_peer(namespace: &str) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        namespace_selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(
                "kubernetes.io/metadata.name".to_owned(),
                namespace.to_owned(),
            )])),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Default deny both ways, then: MCP from anywhere (the load balancer, the edge); the admin
/// and gRPC ports from the control plane's namespace (and health checks from the trusted
/// proxies); out to DNS, the bus, the configured egress (the blob store) and, on GKE, the
/// metadata server Workload Identity answers on.
pub fn network_policy(target: &Target, settings: &KubeSettings) -> NetworkPolicy {
    let k = &settings.kubernetes;
    let control_plane = namespace_peer(&k.control_plane_namespace);
    let mut admin_from = vec![control_plane.clone()];
    admin_from.extend(k.trusted_proxies.iter().map(|c| cidr_peer(c)));
    let ingress = vec![
        NetworkPolicyIngressRule { from: None, ports: Some(vec![tcp(MCP_PORT)]) },
        NetworkPolicyIngressRule {
            from: Some(admin_from),
            ports: Some(vec![tcp(ADMIN_PORT), tcp(GRPC_PORT)]),
        },
    ];
    let dns = ["UDP", "TCP"]
        .map(|protocol| NetworkPolicyPort {
            port: Some(IntOrString::Int(53)),
            protocol: Some(protocol.into()),
            ..Default::default()
        })
        .to_vec();
    let mut egress = vec![
        NetworkPolicyEgressRule { to: None, ports: Some(dns) },
        NetworkPolicyEgressRule { to: Some(vec![control_plane]), ports: Some(vec![tcp(4222)]) },
    ];
    if !k.egress_cidrs.is_empty() && !k.egress_ports.is_empty() {
        egress.push(NetworkPolicyEgressRule {
            to: Some(k.egress_cidrs.iter().map(|c| cidr_peer(c)).collect()),
            ports: Some(k.egress_ports.iter().map(|p| tcp(*p)).collect()),
        });
    }
    if target.provider == ProviderKind::Gcp {
        egress.push(NetworkPolicyEgressRule {
            to: Some(vec![cidr_peer("169.254.169.254/32")]),
            ports: Some(vec![tcp(80), tcp(988)]),
        });
    }
    NetworkPolicy {
        metadata: meta(target, NETWORK_POLICY, labels(target)),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(labels(target)),
                ..Default::default()
            }),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress: Some(ingress),
            egress: Some(egress),
        }),
    }
}

/// The track's MCP endpoint inside the cluster. On GKE the stable one is also exposed as the
/// standalone zonal NEG `ramen-<group>-<zone>` that the group's backend service points at.
pub fn service(target: &Target, track: TrackKind) -> Service {
    let mut metadata = meta(target, track.name(), labels(target));
    if target.provider == ProviderKind::Gcp && track == TrackKind::Worker {
        let neg = format!(
            r#"{{"exposed_ports":{{"{MCP_PORT}":{{"name":"ramen-{}-{}"}}}}}}"#,
            target.group, target.zone
        );
        metadata.annotations = Some(BTreeMap::from([("cloud.google.com/neg".to_owned(), neg)]));
    }
    Service {
        metadata,
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            selector: Some(track_labels(target, track)),
            ports: Some(vec![ServicePort {
                name: Some("mcp".into()),
                port: MCP_PORT.into(),
                target_port: Some(IntOrString::String("mcp".into())),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Voluntary disruptions (node drains, upgrades) take one worker of a track at a time.
pub fn disruption_budget(target: &Target, track: TrackKind) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: meta(target, track.name(), labels(target)),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            selector: Some(LabelSelector {
                match_labels: Some(track_labels(target, track)),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The stable track between the worker count and twice it: on the node's in-flight calls
/// (70% of its cap) where a custom-metrics adapter serves them, else on CPU (70%).
pub fn autoscaler(
    target: &Target,
    min: u32,
    max: u32,
    settings: &KubeSettings,
) -> HorizontalPodAutoscaler {
    let metric = if settings.kubernetes.hpa_in_flight_metric {
        let cap = ramen_node_contract::NodeConfig::default().in_flight_cap;
        MetricSpec {
            type_: "Pods".into(),
            pods: Some(PodsMetricSource {
                metric: MetricIdentifier { name: "ramen_mcp_in_flight".into(), selector: None },
                target: MetricTarget {
                    type_: "AverageValue".into(),
                    average_value: Some(Quantity(format!("{}", cap * 7 / 10))),
                    ..Default::default()
                },
            }),
            ..Default::default()
        }
    } else {
        MetricSpec {
            type_: "Resource".into(),
            resource: Some(ResourceMetricSource {
                name: "cpu".into(),
                target: MetricTarget {
                    type_: "Utilization".into(),
                    average_utilization: Some(70),
                    ..Default::default()
                },
            }),
            ..Default::default()
        }
    };
    HorizontalPodAutoscaler {
        metadata: meta(target, HPA, labels(target)),
        spec: Some(HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".into()),
                kind: "Deployment".into(),
                name: TrackKind::Worker.name().into(),
            },
            min_replicas: Some(min.max(1) as i32),
            max_replicas: max.max(min).max(1) as i32,
            metrics: Some(vec![metric]),
            behavior: None,
        }),
        ..Default::default()
    }
}

fn secret(target: &Target, name: &str, data: BTreeMap<&str, Vec<u8>>) -> Secret {
    Secret {
        metadata: meta(target, name, labels(target)),
        type_: Some("Opaque".into()),
        data: Some(data.into_iter().map(|(k, v)| (k.to_owned(), ByteString(v))).collect()),
        ..Default::default()
    }
}

/// What the next restart of a track adopts (the deploy's step 2).
pub fn written_secret(target: &Target, template_json: Vec<u8>) -> Secret {
    secret(target, WRITTEN_SECRET, BTreeMap::from([(TEMPLATE_FILE, template_json)]))
}

/// One config a track runs: the node config its pods start with, and the template it came
/// from (what "keep the config it runs" reads back).
pub fn track_secret(target: &Target, name: &str, node_toml: Vec<u8>, template: Vec<u8>) -> Secret {
    let mut secret =
        secret(target, name, BTreeMap::from([(NODE_FILE, node_toml), (TEMPLATE_FILE, template)]));
    secret.immutable = Some(true);
    secret
}

pub fn policy_secret(target: &Target, policy_toml: Vec<u8>) -> Secret {
    secret(target, POLICY_SECRET, BTreeMap::from([(POLICY_FILE, policy_toml)]))
}

/// The content-addressed name of a track's config Secret.
pub fn track_secret_name(track: TrackKind, node_toml: &[u8], template: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(node_toml);
    hash.update([0]);
    hash.update(template);
    format!("{}-{}", track.name(), &hex::encode(hash.finalize())[..10])
}

/// What varies between two renderings of a track's Deployment.
#[derive(Clone, Debug, PartialEq)]
pub struct TrackSpec {
    pub track: TrackKind,
    /// `None` leaves the count to the autoscaler.
    pub replicas: Option<u32>,
    pub size: SizeClass,
    pub config_secret: String,
    pub commit: String,
    pub restarted_at: String,
}

pub fn deployment(target: &Target, spec: &TrackSpec, settings: &KubeSettings) -> Deployment {
    let labels = track_labels(target, spec.track);
    let annotations = BTreeMap::from([
        (CONFIG_ANNOTATION.to_owned(), spec.config_secret.clone()),
        (COMMIT_ANNOTATION.to_owned(), spec.commit.clone()),
        (RESTARTED_ANNOTATION.to_owned(), spec.restarted_at.clone()),
    ]);
    let volumes = vec![
        secret_volume("config", &spec.config_secret),
        secret_volume("policy", POLICY_SECRET),
        empty_dir("data"),
        empty_dir("tmp"),
    ];
    let mounts = vec![
        mount("config", CONFIG_DIR, true),
        mount("policy", POLICY_DIR, true),
        mount("data", DATA_DIR, false),
        mount("tmp", "/tmp", false),
    ];
    let container = Container {
        name: "node".into(),
        image: Some(settings.kubernetes.worker_image.clone()),
        image_pull_policy: Some(settings.kubernetes.image_pull_policy.clone()),
        command: Some(WORKER_COMMAND.iter().map(|s| (*s).to_owned()).collect()),
        args: Some(vec!["--config".into(), format!("{CONFIG_DIR}/{NODE_FILE}")]),
        ports: Some(vec![
            container_port("mcp", MCP_PORT),
            container_port("admin", ADMIN_PORT),
            container_port("grpc", GRPC_PORT),
        ]),
        env: Some(worker_env(settings)),
        resources: Some(resources(spec.size)),
        readiness_probe: Some(probe("/readyz", 2, 3)),
        liveness_probe: Some(probe("/healthz", 10, 6)),
        security_context: Some(container_security()),
        volume_mounts: Some(mounts),
        ..Default::default()
    };
    Deployment {
        metadata: meta(target, spec.track.name(), self::labels(target)),
        spec: Some(DeploymentSpec {
            replicas: spec.replicas.map(|r| r as i32),
            selector: LabelSelector { match_labels: Some(labels.clone()), ..Default::default() },
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".into()),
                // One new pod at a time, never fewer ready than asked: a track keeps serving.
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::Int(1)),
                    max_unavailable: Some(IntOrString::Int(0)),
                }),
            }),
            revision_history_limit: Some(3),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    annotations: Some(annotations),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some(WORKER_SERVICE_ACCOUNT.into()),
                    automount_service_account_token: Some(false),
                    termination_grace_period_seconds: Some(settings.grace_period_seconds()),
                    security_context: Some(pod_security()),
                    affinity: Some(pinned_to(target.region)),
                    containers: vec![container],
                    volumes: Some(volumes),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The environment builder: the worker image's `--build-env`, once, then gone.
pub fn builder_pod(
    target: &Target,
    name: &str,
    spec_secret: &str,
    settings: &KubeSettings,
    deadline_seconds: i64,
) -> Pod {
    let mut labels = labels(target);
    labels.insert(COMPONENT_LABEL.to_owned(), "environment-builder".to_owned());
    let mut command: Vec<String> = WORKER_COMMAND.iter().map(|s| (*s).to_owned()).collect();
    command.extend(["--build-env".to_owned(), format!("{CONFIG_DIR}/build.toml")]);
    Pod {
        metadata: meta(target, name, labels),
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            active_deadline_seconds: Some(deadline_seconds),
            service_account_name: Some(WORKER_SERVICE_ACCOUNT.into()),
            automount_service_account_token: Some(false),
            security_context: Some(pod_security()),
            affinity: Some(pinned_to(target.region)),
            containers: vec![Container {
                name: "build".into(),
                image: Some(settings.kubernetes.worker_image.clone()),
                image_pull_policy: Some(settings.kubernetes.image_pull_policy.clone()),
                command: Some(command),
                env: Some(vec![
                    // The pod's own scratch volume (the spec's `workdir` is the image's path).
                    env(ramen_node_contract::WORKDIR_VAR, &format!("{DATA_DIR}/build")),
                    env("HOME", DATA_DIR),
                    env("TMPDIR", "/tmp"),
                    env("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
                ]),
                resources: Some(resources(SizeClass::L)),
                security_context: Some(container_security()),
                volume_mounts: Some(vec![
                    mount("config", CONFIG_DIR, true),
                    mount("data", DATA_DIR, false),
                    mount("tmp", "/tmp", false),
                ]),
                ..Default::default()
            }],
            volumes: Some(vec![
                secret_volume("config", spec_secret),
                empty_dir("data"),
                empty_dir("tmp"),
            ]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn builder_secret(target: &Target, name: &str, spec_toml: Vec<u8>) -> Secret {
    let mut secret = secret(target, name, BTreeMap::from([("build.toml", spec_toml)]));
    secret
        .metadata
        .labels
        .get_or_insert_default()
        .insert(COMPONENT_LABEL.to_owned(), "environment-builder".to_owned());
    secret
}

fn worker_env(settings: &KubeSettings) -> Vec<EnvVar> {
    let mut vars = vec![
        field_env(ramen_node_contract::NODE_ID_VAR, "metadata.name"),
        env(ramen_node_contract::WORKDIR_VAR, &format!("{DATA_DIR}/node")),
        env(ramen_node_contract::POLICY_FILE_VAR, &format!("{POLICY_DIR}/{POLICY_FILE}")),
        env("HOME", DATA_DIR),
        env("TMPDIR", "/tmp"),
        env("RAMEN_LOG_FORMAT", "json"),
        // The address-space of a few malloc arenas, not the machine's. The node's own
        // threads are its config's `threads` (one: the Python runtime, single-threaded,
        // is what a larger size gives more CPU to).
        env("MALLOC_ARENA_MAX", "2"),
    ];
    if settings.kubernetes.bind_pod_ip {
        vars.push(field_env(ramen_node_contract::BIND_HOST_VAR, "status.podIP"));
    }
    vars
}

/// Requests equal to limits: the Guaranteed class, so a size means what it says.
fn resources(size: SizeClass) -> ResourceRequirements {
    let amounts = BTreeMap::from([
        ("cpu".to_owned(), Quantity(format!("{}m", size.cpu_millis()))),
        ("memory".to_owned(), Quantity(format!("{}Mi", size.memory_bytes() >> 20))),
    ]);
    ResourceRequirements {
        requests: Some(amounts.clone()),
        limits: Some(amounts),
        ..Default::default()
    }
}

fn probe(path: &str, period: i32, failures: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::String("admin".into()),
            scheme: Some("HTTP".into()),
            ..Default::default()
        }),
        period_seconds: Some(period),
        failure_threshold: Some(failures),
        timeout_seconds: Some(1),
        ..Default::default()
    }
}

fn pod_security() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(10001),
        run_as_group: Some(10001),
        fs_group: Some(10001),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            localhost_profile: None,
        }),
        ..Default::default()
    }
}

fn container_security() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        privileged: Some(false),
        capabilities: Some(Capabilities { drop: Some(vec!["ALL".into()]), add: None }),
        ..Default::default()
    }
}

/// Pods of a placement run in its cloud location only.
fn pinned_to(region: &str) -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Some(vec![NodeSelectorRequirement {
                        key: "topology.kubernetes.io/zone".into(),
                        operator: "In".into(),
                        values: Some(vec![region.to_owned()]),
                    }]),
                    ..Default::default()
                }],
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn container_port(name: &str, port: u16) -> ContainerPort {
    ContainerPort {
        name: Some(name.into()),
        container_port: port.into(),
        protocol: Some("TCP".into()),
        ..Default::default()
    }
}

fn secret_volume(name: &str, secret: &str) -> Volume {
    Volume {
        name: name.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.into()),
            // Owner and fsGroup may read; nobody writes.
            default_mode: Some(0o440),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn empty_dir(name: &str) -> Volume {
    Volume {
        name: name.into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Default::default()
    }
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: Some(read_only),
        ..Default::default()
    }
}

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar { name: name.into(), value: Some(value.into()), value_from: None }
}

fn field_env(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector { field_path: path.into(), api_version: None }),
            ..Default::default()
        }),
    }
}
