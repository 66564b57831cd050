//! A worker node's admin API as the deploy pipeline uses it: what the canary loaded.

use std::sync::Arc;

use ramen_clients::{NodeClient, NodeTarget};
use ramen_proto::runner::v1::NodeStatus;

use crate::caller::deployer;
use crate::error::Result;

#[derive(Clone)]
pub struct Nodes(pub Arc<dyn NodeClient>);

impl Nodes {
    /// The status of the node of `group` × `zone` at `admin_address`, with the report of the
    /// load its restart made.
    pub async fn status(&self, group: &str, zone: &str, admin_address: &str) -> Result<NodeStatus> {
        let node = NodeTarget { group, zone, address: admin_address };
        Ok(self.0.status(&deployer(), node).await?)
    }
}
