//! A worker node's admin API (`RunnerService`) as the control plane calls it. Nodes are many
//! and come and go, so the address is per call; channels are kept per address.
//!
//! Every call carries a ticket signed for the node's placement (`runner:<group>/<zone>`, a
//! one-minute ticket): the node verifies it with the placement's key, which the zone-manager
//! writes into the node's config. A node holds no control-plane key, so a ticket lifted from
//! one is good at that placement's nodes for a minute and nowhere else.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ramen_access::{Caller, TicketKeys};
use ramen_proto::common::v1::{NodePolicy, Snapshot};
use ramen_proto::runner::v1 as pb;
use ramen_proto::runner::v1::runner_service_client::RunnerServiceClient;
use tonic::transport::Channel;

use crate::channel::unsigned;
use crate::{Signed, UpstreamError};

const SERVICE: &str = "worker";

/// A node as the control plane calls it: the placement it serves (whose audience its tickets
/// are signed for) and the address of its `RunnerService`.
#[derive(Clone, Copy, Debug)]
pub struct NodeTarget<'a> {
    pub group: &'a str,
    pub zone: &'a str,
    /// `host:port` of the node's `RunnerService`.
    pub address: &'a str,
}

#[async_trait::async_trait]
pub trait NodeClient: Send + Sync + 'static {
    /// What the node runs: readiness, loaded commit, the package report of its last load.
    async fn status(
        &self,
        caller: &Caller,
        node: NodeTarget<'_>,
    ) -> Result<pb::NodeStatus, UpstreamError>;

    /// Loads `snapshot` now (fetch, verify, install, restart the runtime) and reports.
    async fn reload(
        &self,
        caller: &Caller,
        node: NodeTarget<'_>,
        snapshot: Snapshot,
        timeout: Duration,
    ) -> Result<pb::ReloadResponse, UpstreamError>;

    /// Replaces the live policy (keys, blocked list, IP rules) without a restart.
    async fn update_policy(
        &self,
        caller: &Caller,
        node: NodeTarget<'_>,
        policy: NodePolicy,
    ) -> Result<pb::UpdatePolicyResponse, UpstreamError>;
}

/// [`NodeClient`] over gRPC to `http://<address>`.
pub struct GrpcNode {
    keys: Arc<TicketKeys>,
    channels: Mutex<HashMap<String, Channel>>,
}

impl GrpcNode {
    pub fn new(keys: Arc<TicketKeys>) -> Self {
        Self { keys, channels: Mutex::new(HashMap::new()) }
    }

    /// A client signing for `node`'s placement. The connection is kept per address; the
    /// audience is chosen per call, so an address reused by another placement's node (a
    /// loopback port freed and taken again) never gets a ticket meant for the first.
    fn client(&self, node: NodeTarget<'_>) -> Result<RunnerServiceClient<Signed>, UpstreamError> {
        let channel = {
            let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
            if channels.len() > 1024 {
                channels.clear(); // addresses of workers long gone
            }
            match channels.get(node.address) {
                Some(channel) => channel.clone(),
                None => {
                    let channel = unsigned(&format!("http://{}", node.address), None)?;
                    channels.insert(node.address.to_owned(), channel.clone());
                    channel
                }
            }
        };
        let audience = ramen_access::audience::runner(node.group, node.zone);
        Ok(RunnerServiceClient::new(Signed::new(channel, &self.keys, &audience)))
    }
}

fn failed(address: &str, status: tonic::Status) -> UpstreamError {
    let mut error = UpstreamError::from_status(SERVICE, status);
    error.message = format!("{address}: {}", error.message);
    error
}

/// `message` as a request of `caller`, bounded by `timeout`.
fn bounded<T>(caller: &Caller, message: T, timeout: Duration) -> tonic::Request<T> {
    let mut request = caller.request(message);
    request.set_timeout(timeout);
    request
}

/// The answer of one call to the node at `address`.
fn answer<T>(
    address: &str,
    result: Result<tonic::Response<T>, tonic::Status>,
) -> Result<T, UpstreamError> {
    result.map(tonic::Response::into_inner).map_err(|s| failed(address, s))
}

#[async_trait::async_trait]
impl NodeClient for GrpcNode {
    async fn status(
        &self,
        caller: &Caller,
        node: NodeTarget<'_>,
    ) -> Result<pb::NodeStatus, UpstreamError> {
        let request = bounded(caller, pb::StatusRequest {}, crate::CALL_TIMEOUT);
        answer(node.address, self.client(node)?.status(request).await)
    }

    async fn reload(
        &self,
        caller: &Caller,
        node: NodeTarget<'_>,
        snapshot: Snapshot,
        timeout: Duration,
    ) -> Result<pb::ReloadResponse, UpstreamError> {
        let request = bounded(caller, pb::ReloadRequest { snapshot: Some(snapshot) }, timeout);
        answer(node.address, self.client(node)?.reload(request).await)
    }

    async fn update_policy(
        &self,
        caller: &Caller,
        node: NodeTarget<'_>,
        policy: NodePolicy,
    ) -> Result<pb::UpdatePolicyResponse, UpstreamError> {
        let message = pb::UpdatePolicyRequest { policy: Some(policy) };
        let request = bounded(caller, message, Duration::from_secs(5));
        answer(node.address, self.client(node)?.update_policy(request).await)
    }
}
