//! In-memory stand-ins for other services, for a service's own tests (the `test-util`
//! feature, enabled from dev-dependencies). Each records what it was asked and answers from a
//! table the test fills; none pretends to be more than that — a test of the real interplay
//! runs the real service.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use parking_lot::Mutex;
use ramen_access::Caller;
use ramen_proto::auth::v1 as auth;
use ramen_proto::common::v1::{KeyHash, NodePolicy, Snapshot};
use ramen_proto::runner::v1 as runner;
use ramen_proto::zone::v1 as zone;

use crate::{AuthClient, NodeClient, NodeTarget, UpstreamError, ZoneClient};

fn unimplemented(service: &'static str, what: &str) -> UpstreamError {
    UpstreamError {
        service,
        code: tonic::Code::Unimplemented,
        message: format!("the fake {service} does not answer {what}"),
        reason: None,
    }
}

/// Auth: a group registry, key hashes and secrets from tables, an audit log that keeps every
/// entry (with the caller that appended it).
#[derive(Default)]
pub struct FakeAuth {
    pub groups: Mutex<Vec<String>>,
    pub purged: Mutex<Vec<String>>,
    /// The keys answered for every scope.
    pub keys: Mutex<Vec<KeyHash>>,
    /// Secret values by name, for every scope.
    pub secrets: Mutex<BTreeMap<String, String>>,
    pub audit: Mutex<Vec<auth::AuditEntry>>,
    /// The service-account rules answered for every group.
    pub service_account_rules: Mutex<Vec<auth::ServiceAccountRule>>,
    /// The bounds answered with them; `None` answers none (an auth from before bounds).
    pub service_account_bounds: Mutex<Option<auth::ServiceAccountBounds>>,
    /// How many times each method was called, by name.
    pub calls: Mutex<HashMap<&'static str, u32>>,
}

impl FakeAuth {
    fn count(&self, method: &'static str) {
        *self.calls.lock().entry(method).or_default() += 1;
    }

    pub fn calls_of(&self, method: &str) -> u32 {
        self.calls.lock().get(method).copied().unwrap_or_default()
    }

    /// The audit actions appended, in order.
    pub fn audit_actions(&self) -> Vec<String> {
        self.audit.lock().iter().map(|e| e.action.clone()).collect()
    }
}

#[async_trait::async_trait]
impl AuthClient for FakeAuth {
    async fn register_group(
        &self,
        _caller: &Caller,
        request: auth::RegisterGroupRequest,
    ) -> Result<auth::RegisterGroupResponse, UpstreamError> {
        self.count("register_group");
        let mut groups = self.groups.lock();
        let created = !groups.contains(&request.group);
        if created {
            groups.push(request.group);
        }
        Ok(auth::RegisterGroupResponse { created })
    }

    async fn purge_group(
        &self,
        _caller: &Caller,
        request: auth::PurgeGroupRequest,
    ) -> Result<auth::PurgeGroupResponse, UpstreamError> {
        self.count("purge_group");
        self.groups.lock().retain(|g| *g != request.group);
        self.purged.lock().push(request.group);
        Ok(auth::PurgeGroupResponse::default())
    }

    async fn list_mcp_key_hashes(
        &self,
        _caller: &Caller,
        _request: auth::ListMcpKeyHashesRequest,
    ) -> Result<auth::ListMcpKeyHashesResponse, UpstreamError> {
        self.count("list_mcp_key_hashes");
        Ok(auth::ListMcpKeyHashesResponse { keys: self.keys.lock().clone(), page: None })
    }

    async fn record_mcp_key_use(
        &self,
        _caller: &Caller,
        request: auth::RecordMcpKeyUseRequest,
    ) -> Result<auth::RecordMcpKeyUseResponse, UpstreamError> {
        self.count("record_mcp_key_use");
        Ok(auth::RecordMcpKeyUseResponse { recorded: request.uses.len() as u32 })
    }

    async fn resolve_secrets(
        &self,
        _caller: &Caller,
        _request: auth::ResolveSecretsRequest,
    ) -> Result<auth::ResolveSecretsResponse, UpstreamError> {
        self.count("resolve_secrets");
        let secrets = self
            .secrets
            .lock()
            .iter()
            .map(|(name, value)| auth::ResolvedSecret {
                name: name.clone(),
                value: value.clone(),
                scope: None,
            })
            .collect();
        Ok(auth::ResolveSecretsResponse { secrets })
    }

    async fn append_audit(
        &self,
        caller: &Caller,
        request: auth::AppendAuditRequest,
    ) -> Result<auth::AuditEntry, UpstreamError> {
        self.count("append_audit");
        let mut entry = request.entry.unwrap_or_default();
        if entry.actor.is_empty() {
            entry.actor = caller.audit_actor().to_owned();
        }
        self.audit.lock().push(entry.clone());
        Ok(entry)
    }

    async fn get_service_account_rules(
        &self,
        _caller: &Caller,
        request: auth::GetServiceAccountRulesRequest,
    ) -> Result<auth::ServiceAccountRules, UpstreamError> {
        self.count("get_service_account_rules");
        let rules = self.service_account_rules.lock().clone();
        let bounds = self.service_account_bounds.lock().clone();
        Ok(auth::ServiceAccountRules { group: request.group, rules, bounds, ..Default::default() })
    }
}

/// The zone-manager as the deploy pipeline sees it: placements made on demand, the last config
/// written per placement, rollouts that are ready unless a track is told to fail, workers with
/// the node admin addresses a [`FakeNodes`] answers for.
#[derive(Default)]
pub struct FakeZones {
    pub zones: Mutex<Vec<zone::Zone>>,
    pub written: Mutex<HashMap<(String, String), zone::NodeConfig>>,
    pub live_policies: Mutex<Vec<zone::UpdateLivePolicyRequest>>,
    /// Every rollout asked, in order.
    pub rollouts: Mutex<Vec<Rollout>>,
    /// Tracks whose rollouts come back not ready, with the reason.
    pub stuck: Mutex<HashMap<i32, String>>,
    pub reports: Mutex<Vec<zone::StorePackageReportRequest>>,
    pub teardowns: Mutex<Vec<(String, String)>>,
    /// Every environment build asked, by zone; the first per snapshot digest "installs".
    pub builds: Mutex<Vec<zone::BuildEnvironmentRequest>>,
    /// When set, every build fails with this (naming a requirement, as pip would).
    pub build_error: Mutex<Option<String>>,
    /// The commit each (group, zone, track) runs since its last restart or scale up.
    pub running: Mutex<HashMap<(String, String, i32), String>>,
}

/// One rollout the fake was asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rollout {
    pub group: String,
    pub zone: String,
    pub track: i32,
    /// `None` for a restart in place, the replicas for a scale.
    pub replicas: Option<u32>,
}

impl FakeZones {
    /// A zone the fake knows (others are NOT_FOUND).
    pub fn with_zone(self, name: &str) -> Self {
        self.zones.lock().push(zone::Zone { name: name.to_owned(), ..zone::Zone::default() });
        self
    }

    /// The admin address of the fake worker of `track` in `group` × `zone`.
    pub fn admin_address(group: &str, zone: &str, track: i32) -> String {
        format!("{group}.{zone}.{track}.fake:7105")
    }

    /// What the fake worker at `admin` runs: (group, zone, track) → commit.
    pub fn commit_at(&self, admin: &str) -> Option<String> {
        let running = self.running.lock();
        running
            .iter()
            .find(|((g, z, t), _)| Self::admin_address(g, z, *t) == admin)
            .map(|(_, commit)| commit.clone())
    }

    /// A track (re)started on the last config written: it runs that config's commit.
    fn started(&self, group: &str, zone: &str, track: i32) {
        let key = (group.to_owned(), zone.to_owned());
        let commit =
            self.written.lock().get(&key).and_then(|c| c.snapshot.clone()).map(|s| s.commit);
        if let Some(commit) = commit {
            self.running.lock().insert((key.0, key.1, track), commit);
        }
    }
}

fn not_found(what: String) -> UpstreamError {
    UpstreamError {
        service: "zone-manager",
        code: tonic::Code::NotFound,
        message: what,
        reason: None,
    }
}

#[async_trait::async_trait]
impl ZoneClient for FakeZones {
    async fn get_zone(
        &self,
        _caller: &Caller,
        request: zone::GetZoneRequest,
    ) -> Result<zone::Zone, UpstreamError> {
        let zones = self.zones.lock();
        let found = zones.iter().find(|z| z.name == request.name).cloned();
        found.ok_or_else(|| not_found(format!("zone `{}`", request.name)))
    }

    async fn list_zones(
        &self,
        _caller: &Caller,
        _request: zone::ListZonesRequest,
    ) -> Result<zone::ListZonesResponse, UpstreamError> {
        Ok(zone::ListZonesResponse { zones: self.zones.lock().clone(), page: None })
    }

    async fn list_zone_summaries(
        &self,
        _caller: &Caller,
        _request: zone::ListZoneSummariesRequest,
    ) -> Result<zone::ListZoneSummariesResponse, UpstreamError> {
        Err(unimplemented("zone-manager", "ListZoneSummaries"))
    }

    async fn ensure_placement(
        &self,
        _caller: &Caller,
        request: zone::EnsurePlacementRequest,
    ) -> Result<zone::Placement, UpstreamError> {
        if !self.zones.lock().iter().any(|z| z.name == request.zone) {
            return Err(not_found(format!("zone `{}`", request.zone)));
        }
        Ok(zone::Placement { group: request.group, zone: request.zone, ..Default::default() })
    }

    async fn list_placements(
        &self,
        _caller: &Caller,
        request: zone::ListPlacementsRequest,
    ) -> Result<zone::ListPlacementsResponse, UpstreamError> {
        let written = self.written.lock();
        let placements = written
            .keys()
            .filter(|(group, _)| *group == request.group)
            .map(|(group, zone)| zone::Placement {
                group: group.clone(),
                zone: zone.clone(),
                ..Default::default()
            })
            .collect();
        Ok(zone::ListPlacementsResponse { placements, page: None })
    }

    async fn build_environment(
        &self,
        _caller: &Caller,
        request: zone::BuildEnvironmentRequest,
    ) -> Result<zone::BuildEnvironmentResponse, UpstreamError> {
        let digest = request.snapshot.as_ref().map(|s| s.digest.clone()).unwrap_or_default();
        let mut builds = self.builds.lock();
        let built = !builds.iter().any(|b| b.snapshot.as_ref().map(|s| &s.digest) == Some(&digest));
        builds.push(request);
        if let Some(error) = self.build_error.lock().clone() {
            let log = vec![format!("ERROR: {error}")];
            return Ok(zone::BuildEnvironmentResponse { log, error, ..Default::default() });
        }
        let environment = ramen_proto::common::v1::PythonEnvironment {
            key: format!("key-of-{digest}"),
            location: "groups/fake/environments/env.tar.gz".into(),
            digest: format!("sha256:{}", "e".repeat(64)),
        };
        let log = vec![if built { "Successfully installed".into() } else { "found".into() }];
        Ok(zone::BuildEnvironmentResponse {
            environment: Some(environment),
            built,
            log,
            error: String::new(),
        })
    }

    async fn write_config(
        &self,
        _caller: &Caller,
        request: zone::WriteConfigRequest,
    ) -> Result<zone::WriteConfigResponse, UpstreamError> {
        let key = (request.group.clone(), request.zone.clone());
        let mut written = self.written.lock();
        written.insert(key, request.config.unwrap_or_default());
        Ok(zone::WriteConfigResponse { policy_version: written.len() as u64, ..Default::default() })
    }

    async fn update_live_policy(
        &self,
        _caller: &Caller,
        request: zone::UpdateLivePolicyRequest,
    ) -> Result<zone::Placement, UpstreamError> {
        let placement = zone::Placement {
            group: request.group.clone(),
            zone: request.zone.clone(),
            ..Default::default()
        };
        self.live_policies.lock().push(request);
        Ok(placement)
    }

    async fn restart_track(
        &self,
        _caller: &Caller,
        request: zone::RestartTrackRequest,
    ) -> Result<zone::TrackRolloutResponse, UpstreamError> {
        self.rollouts.lock().push(Rollout {
            group: request.group.clone(),
            zone: request.zone.clone(),
            track: request.track,
            replicas: None,
        });
        if !self.stuck.lock().contains_key(&request.track) {
            self.started(&request.group, &request.zone, request.track);
        }
        Ok(self.rollout(&request.group, &request.zone, request.track, 1))
    }

    async fn scale_track(
        &self,
        _caller: &Caller,
        request: zone::ScaleTrackRequest,
    ) -> Result<zone::TrackRolloutResponse, UpstreamError> {
        self.rollouts.lock().push(Rollout {
            group: request.group.clone(),
            zone: request.zone.clone(),
            track: request.track,
            replicas: Some(request.replicas),
        });
        Ok(self.rollout(&request.group, &request.zone, request.track, request.replicas))
    }

    async fn list_workers(
        &self,
        _caller: &Caller,
        request: zone::ListWorkersRequest,
    ) -> Result<zone::ListWorkersResponse, UpstreamError> {
        let workers = vec![self.worker(&request.group, &request.zone, request.track)];
        Ok(zone::ListWorkersResponse { workers, page: None })
    }

    async fn teardown(
        &self,
        _caller: &Caller,
        request: zone::TeardownRequest,
    ) -> Result<zone::TeardownResponse, UpstreamError> {
        self.teardowns.lock().push((request.group, request.zone));
        Ok(zone::TeardownResponse::default())
    }

    async fn get_teardown(
        &self,
        _caller: &Caller,
        _request: zone::TeardownRequest,
    ) -> Result<zone::TeardownResponse, UpstreamError> {
        Ok(zone::TeardownResponse::default())
    }

    async fn store_package_report(
        &self,
        _caller: &Caller,
        request: zone::StorePackageReportRequest,
    ) -> Result<zone::StorePackageReportResponse, UpstreamError> {
        self.reports.lock().push(request);
        Ok(zone::StorePackageReportResponse::default())
    }

    async fn set_edge_weights(
        &self,
        _caller: &Caller,
        _request: zone::SetEdgeWeightsRequest,
    ) -> Result<zone::SetEdgeWeightsResponse, UpstreamError> {
        Err(unimplemented("zone-manager", "SetEdgeWeights"))
    }

    async fn list_endpoints(
        &self,
        _caller: &Caller,
        _request: zone::ListEndpointsRequest,
    ) -> Result<zone::ListEndpointsResponse, UpstreamError> {
        Err(unimplemented("zone-manager", "ListEndpoints"))
    }
}

impl FakeZones {
    fn worker(&self, group: &str, zone: &str, track: i32) -> zone::Worker {
        let admin = Self::admin_address(group, zone, track);
        zone::Worker {
            id: format!("{track}-0"),
            group: group.to_owned(),
            zone: zone.to_owned(),
            track,
            state: ramen_proto::common::v1::WorkerState::Ready as i32,
            mcp_address: admin.replace(":7105", ":8000"),
            admin_address: admin,
            ..Default::default()
        }
    }

    fn rollout(
        &self,
        group: &str,
        zone: &str,
        track: i32,
        replicas: u32,
    ) -> zone::TrackRolloutResponse {
        match self.stuck.lock().get(&track) {
            Some(reason) => zone::TrackRolloutResponse {
                ready: false,
                not_ready: vec![zone::NotReady {
                    worker_id: format!("{track}-0"),
                    reason: reason.clone(),
                    ..Default::default()
                }],
                ..Default::default()
            },
            None => zone::TrackRolloutResponse {
                ready: true,
                workers: (0..replicas).map(|_| self.worker(group, zone, track)).collect(),
                ..Default::default()
            },
        }
    }
}

/// Worker nodes: each admin address answers the status the test put there; with
/// [`FakeNodes::behind`], a worker of [`FakeZones`] answers ready on the commit its track was
/// last started on, having loaded [`FakeNodes::packages`] cleanly (a node that has loaded
/// nothing answers not ready).
#[derive(Default)]
pub struct FakeNodes {
    pub zones: Option<std::sync::Arc<FakeZones>>,
    /// The package report a worker of the zones fake loaded.
    pub packages: Mutex<Vec<ramen_proto::common::v1::PackageReport>>,
    pub statuses: Mutex<HashMap<String, runner::NodeStatus>>,
    pub reloads: Mutex<Vec<(String, Snapshot)>>,
    pub policies: Mutex<Vec<(String, NodePolicy)>>,
    /// Status calls per admin address.
    pub status_calls: Mutex<HashMap<String, u32>>,
}

impl FakeNodes {
    /// Nodes whose state follows the workers of `zones`.
    pub fn behind(zones: std::sync::Arc<FakeZones>) -> Self {
        Self { zones: Some(zones), ..Self::default() }
    }
}

impl FakeNodes {
    /// A call's target must be the placement of the fake worker at its address: a caller that
    /// names another would sign its ticket for the wrong audience, which a real node refuses.
    fn check(&self, node: NodeTarget<'_>) -> Result<(), UpstreamError> {
        let Some(zones) = &self.zones else { return Ok(()) };
        let running = zones.running.lock();
        let placement =
            running.keys().find(|(g, z, t)| FakeZones::admin_address(g, z, *t) == node.address);
        match placement {
            Some((group, zone, _))
                if (group.as_str(), zone.as_str()) != (node.group, node.zone) =>
            {
                Err(UpstreamError::from_status(
                    "worker",
                    tonic::Status::unauthenticated(format!(
                        "the caller ticket is meant for \"{}\", not \"{}\"",
                        ramen_access::audience::runner(node.group, node.zone),
                        ramen_access::audience::runner(group, zone),
                    )),
                ))
            }
            _ => Ok(()),
        }
    }
}

#[async_trait::async_trait]
impl NodeClient for FakeNodes {
    async fn status(
        &self,
        _caller: &Caller,
        node: NodeTarget<'_>,
    ) -> Result<runner::NodeStatus, UpstreamError> {
        self.check(node)?;
        let admin = node.address;
        *self.status_calls.lock().entry(admin.to_owned()).or_default() += 1;
        if let Some(status) = self.statuses.lock().get(admin) {
            return Ok(status.clone());
        }
        let commit = self.zones.as_ref().and_then(|z| z.commit_at(admin));
        Ok(match commit {
            Some(commit) => runner::NodeStatus {
                ready: true,
                loaded_commit: commit,
                load_outcome: runner::ReloadOutcome::Ok as i32,
                packages: self.packages.lock().clone(),
                ..Default::default()
            },
            None => runner::NodeStatus::default(),
        })
    }

    async fn reload(
        &self,
        _caller: &Caller,
        node: NodeTarget<'_>,
        snapshot: Snapshot,
        _timeout: Duration,
    ) -> Result<runner::ReloadResponse, UpstreamError> {
        self.check(node)?;
        self.reloads.lock().push((node.address.to_owned(), snapshot));
        Err(unimplemented("worker", "Reload"))
    }

    async fn update_policy(
        &self,
        _caller: &Caller,
        node: NodeTarget<'_>,
        policy: NodePolicy,
    ) -> Result<runner::UpdatePolicyResponse, UpstreamError> {
        self.check(node)?;
        let version = policy.version;
        self.policies.lock().push((node.address.to_owned(), policy));
        Ok(runner::UpdatePolicyResponse { applied: true, version })
    }
}

/// A channel to the service `audience` at `url` for a test that acts as a super admin unless a
/// request names its caller (the test then reads as a user of the service, past the access
/// checks it does not test).
pub fn test_channel(
    url: &str,
    keys: std::sync::Arc<ramen_access::TicketKeys>,
    audience: &str,
) -> crate::Signed {
    let admin = ramen_access::Grants { super_admin: true, ..ramen_access::Grants::default() };
    crate::connect_lazy(url, None, keys, audience)
        .expect("a test endpoint URL")
        .with_default_caller(Caller::user("test-admin", "req-test", admin))
}

/// A caller with super-admin grants, named `actor` (tests that check what was audited as whom).
pub fn super_admin(actor: &str) -> Caller {
    let grants = ramen_access::Grants { super_admin: true, ..ramen_access::Grants::default() };
    Caller::user(actor, "", grants)
}

/// A channel that fills in a user caller's grants the way the api-gateway does (auth's
/// `Authorize` for the user, once per call) before the call is signed: for a service's tests
/// that call it as users, the calls then carry exactly what they carry in production.
#[derive(Clone)]
pub struct AsGateway {
    inner: crate::Signed,
    auth: ramen_proto::auth::v1::auth_service_client::AuthServiceClient<crate::Signed>,
}

impl AsGateway {
    pub fn new(
        inner: crate::Signed,
        auth: ramen_proto::auth::v1::auth_service_client::AuthServiceClient<crate::Signed>,
    ) -> Self {
        Self { inner, auth }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower::Service<http::Request<tonic::body::Body>> for AsGateway {
    type Response = http::Response<tonic::body::Body>;
    type Error = BoxError;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        tower::Service::poll_ready(&mut self.inner, cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: http::Request<tonic::body::Body>) -> Self::Future {
        let mut inner = self.inner.clone();
        let mut auth = self.auth.clone();
        Box::pin(async move {
            if let Some(caller) = request.extensions_mut().get_mut::<Caller>()
                && !caller.actor.is_empty()
                && caller.service().is_none()
                && caller.grants == ramen_access::Grants::default()
            {
                caller.grants = grants_of(&mut auth, &caller.actor).await?;
            }
            tower::ServiceExt::ready(&mut inner).await?;
            Ok(tower::Service::call(&mut inner, request).await?)
        })
    }
}

async fn grants_of(
    auth: &mut ramen_proto::auth::v1::auth_service_client::AuthServiceClient<crate::Signed>,
    user: &str,
) -> Result<ramen_access::Grants, BoxError> {
    let question = ramen_proto::auth::v1::GetGrantsRequest {
        user_id: user.to_owned(),
        session_id: String::new(),
    };
    let gateway = Caller::acting_as(ramen_proto::metadata::ACTOR_EDGE);
    let answer = auth.get_grants(gateway.request(question)).await?.into_inner();
    Ok(crate::auth::grants(&answer))
}
