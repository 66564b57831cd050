//! A worker node's admin API (`RunnerService`) as the control plane calls it. Nodes are many
//! and come and go, so the address is per call; channels are kept per address.
//!
//! The node does not verify caller tickets (it holds no control-plane key: group code runs
//! beside it). Its admin port is reachable only from the control plane — loopback for the
//! local zone, a NetworkPolicy on Kubernetes — which is what it trusts.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ramen_access::{Caller, TicketKeys};
use ramen_proto::common::v1::{NodePolicy, Snapshot};
use ramen_proto::runner::v1 as pb;
use ramen_proto::runner::v1::runner_service_client::RunnerServiceClient;
use std::sync::Mutex;

use crate::{Signed, UpstreamError, connect_lazy};

const SERVICE: &str = "worker";

#[async_trait::async_trait]
pub trait NodeClient: Send + Sync + 'static {
    /// What the node runs: readiness, loaded commit, the package report of its last load.
    async fn status(&self, caller: &Caller, admin: &str) -> Result<pb::NodeStatus, UpstreamError>;

    /// Loads `snapshot` now (fetch, verify, install, restart the runtime) and reports.
    async fn reload(
        &self,
        caller: &Caller,
        admin: &str,
        snapshot: Snapshot,
        timeout: Duration,
    ) -> Result<pb::ReloadResponse, UpstreamError>;

    /// Replaces the live policy (keys, blocked list, IP rules) without a restart.
    async fn update_policy(
        &self,
        caller: &Caller,
        admin: &str,
        policy: NodePolicy,
    ) -> Result<pb::UpdatePolicyResponse, UpstreamError>;
}

/// [`NodeClient`] over gRPC to `http://<admin>`.
pub struct GrpcNode {
    keys: Arc<TicketKeys>,
    channels: Mutex<HashMap<String, Signed>>,
}

impl GrpcNode {
    pub fn new(keys: Arc<TicketKeys>) -> Self {
        Self { keys, channels: Mutex::new(HashMap::new()) }
    }

    fn client(&self, admin: &str) -> Result<RunnerServiceClient<Signed>, UpstreamError> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        if channels.len() > 1024 {
            channels.clear(); // addresses of workers long gone
        }
        let channel = match channels.get(admin) {
            Some(channel) => channel.clone(),
            None => {
                let channel = connect_lazy(&format!("http://{admin}"), None, self.keys.clone())?;
                channels.insert(admin.to_owned(), channel.clone());
                channel
            }
        };
        Ok(RunnerServiceClient::new(channel))
    }
}

fn failed(admin: &str, status: tonic::Status) -> UpstreamError {
    let mut error = UpstreamError::from_status(SERVICE, status);
    error.message = format!("{admin}: {}", error.message);
    error
}

/// `message` as a request of `caller`, bounded by `timeout`.
fn bounded<T>(caller: &Caller, message: T, timeout: Duration) -> tonic::Request<T> {
    let mut request = caller.request(message);
    request.set_timeout(timeout);
    request
}

/// The answer of one call to the node at `admin`.
fn answer<T>(
    admin: &str,
    result: Result<tonic::Response<T>, tonic::Status>,
) -> Result<T, UpstreamError> {
    result.map(tonic::Response::into_inner).map_err(|s| failed(admin, s))
}

#[async_trait::async_trait]
impl NodeClient for GrpcNode {
    async fn status(&self, caller: &Caller, admin: &str) -> Result<pb::NodeStatus, UpstreamError> {
        let request = bounded(caller, pb::StatusRequest {}, crate::CALL_TIMEOUT);
        answer(admin, self.client(admin)?.status(request).await)
    }

    async fn reload(
        &self,
        caller: &Caller,
        admin: &str,
        snapshot: Snapshot,
        timeout: Duration,
    ) -> Result<pb::ReloadResponse, UpstreamError> {
        let request = bounded(caller, pb::ReloadRequest { snapshot: Some(snapshot) }, timeout);
        answer(admin, self.client(admin)?.reload(request).await)
    }

    async fn update_policy(
        &self,
        caller: &Caller,
        admin: &str,
        policy: NodePolicy,
    ) -> Result<pb::UpdatePolicyResponse, UpstreamError> {
        let message = pb::UpdatePolicyRequest { policy: Some(policy) };
        let request = bounded(caller, message, Duration::from_secs(5));
        answer(admin, self.client(admin)?.update_policy(request).await)
    }
}
