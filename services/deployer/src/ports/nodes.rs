//! A worker node's admin API as the deploy pipeline uses it: what the canary loaded.

use std::sync::Arc;

use ramen_clients::NodeClient;
use ramen_proto::runner::v1::NodeStatus;

use crate::caller::deployer;
use crate::error::Result;

#[derive(Clone)]
pub struct Nodes(pub Arc<dyn NodeClient>);

impl Nodes {
    /// The node's status, with the report of the load its restart made.
    pub async fn status(&self, admin_address: &str) -> Result<NodeStatus> {
        Ok(self.0.status(&deployer(), admin_address).await?)
    }
}
