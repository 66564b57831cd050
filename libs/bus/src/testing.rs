//! Test support (feature `test-util`): a real nats-server in operator mode with ramen's
//! accounts, so a service's integration tests run with exactly the permissions its user has
//! in production, and a failing call names the permission it lacks.

use ramen_testkit::Nats;

use crate::Bus;
use crate::auth::jwt::{Permissions, Rule};
use crate::auth::{AuthKeys, BusNames, Credentials, NodeMinter, Role};

/// A nats-server in operator mode (JetStream on, store in a temp dir) and its key set.
pub struct OperatorNats {
    pub nats: Nats,
    pub keys: AuthKeys,
}

impl OperatorNats {
    pub async fn start() -> anyhow::Result<OperatorNats> {
        let keys = AuthKeys::generate();
        let nats = Nats::start_with_config(&keys.server_config()?).await?;
        Ok(OperatorNats { nats, keys })
    }

    pub fn url(&self) -> String {
        self.nats.url()
    }

    /// A service's credentials for the default stream and bucket names.
    pub fn credentials(&self, role: Role) -> Credentials {
        self.keys.credentials(role, &BusNames::default()).expect("service credentials")
    }

    /// Connects as a service's user.
    pub async fn connect(&self, role: Role) -> anyhow::Result<Bus> {
        let credentials = self.credentials(role);
        Ok(Bus::connect_as(&self.url(), role.name(), Some(&credentials)).await?)
    }

    /// Connects as a user that may do anything in the ramen account: what a test uses to
    /// arrange and inspect, never what a service under test uses.
    pub async fn connect_unrestricted(&self) -> anyhow::Result<Bus> {
        let everything = Permissions { publish: Rule::default(), subscribe: Rule::default() };
        let credentials = self.keys.user("test-harness", &everything)?;
        Ok(Bus::connect_as(&self.url(), "test-harness", Some(&credentials)).await?)
    }

    pub fn node_minter(&self) -> NodeMinter {
        self.keys.node_minter().expect("node minter")
    }
}
