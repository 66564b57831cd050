//! The bus identity of a placement's nodes. Every node config the providers write carries a
//! NATS user minted for its placement, which may publish `ramen.load.v1.node.<group>.<zone>`
//! and nothing else (`ramen_bus::auth::NodeMinter`, with the node signing key of
//! `nats.signing_key`). Without a signing key (a bus without authentication, or a static
//! user/password one) nodes get none, and the URL they get never carries this process's
//! password.

use ramen_bus::auth::NodeMinter;
use ramen_config::Config;
use ramen_node_contract::NodeCredentials;

#[derive(Clone, Debug, Default)]
pub struct NodeBus {
    minter: Option<NodeMinter>,
}

impl NodeBus {
    /// From `nats.signing_key` and the account of this process's own user
    /// (`nats.credentials`). The error is the reason, for the `nats.signing_key` key.
    pub fn from_config(config: &Config) -> Result<NodeBus, String> {
        let value = config.nats.signing_key.expose().trim();
        if value.is_empty() {
            return Ok(NodeBus::default());
        }
        // The seed itself (`SA…`), or the path of a file holding it (a mounted Secret).
        let seed = if value.starts_with("SA") {
            value.to_owned()
        } else {
            std::fs::read_to_string(value)
                .map_err(|err| format!("cannot read the node signing key from {value}: {err}"))?
        };
        let seed = seed.trim();
        let credentials = ramen_service::bus_credentials(config)
            .map_err(|err| err.to_string())?
            .ok_or("needs nats.credentials (RAMEN_NATS_CREDS): the account is read from them")?;
        let minter = NodeMinter::for_account_of(seed, &credentials).map_err(|e| e.to_string())?;
        Ok(NodeBus { minter: Some(minter) })
    }

    pub fn with_minter(minter: NodeMinter) -> NodeBus {
        NodeBus { minter: Some(minter) }
    }

    /// The credentials of `group`'s nodes in `zone`; none without a signing key, or for a
    /// name that is no subject token (never a validated group or zone: DNS labels are).
    pub fn credentials(&self, group: &str, zone: &str) -> NodeCredentials {
        let Some(minter) = &self.minter else { return NodeCredentials::default() };
        match minter.mint(group, zone) {
            Ok(credentials) => NodeCredentials(credentials.to_text()),
            Err(err) => {
                tracing::error!(%err, group, zone, "nodes get no bus credentials: no load reports");
                NodeCredentials::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use ramen_bus::auth::{AuthKeys, BusNames, Credentials, Role};
    use ramen_config::Secret;

    use super::*;

    fn config(keys: &AuthKeys, signing_key: &str) -> Config {
        let mut config = Config::default();
        let own = keys.credentials(Role::ZoneManager, &BusNames::default()).unwrap();
        config.nats.credentials = Secret::new(own.to_text());
        config.nats.signing_key = Secret::new(signing_key);
        config
    }

    #[test]
    fn nodes_get_a_user_of_the_account_for_their_placement() {
        let keys = AuthKeys::generate();
        let seed = keys.node_signing_seed().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("node-signing.nk");
        std::fs::write(&file, format!("{seed}\n")).unwrap();
        for value in [seed.clone(), file.display().to_string()] {
            let bus = NodeBus::from_config(&config(&keys, &value)).unwrap();
            let minted = Credentials::parse(&bus.credentials("docs", "eu-1").0).unwrap();
            assert_eq!(minted.account().unwrap(), keys.account());
            assert_eq!(minted.name(), "node.docs.eu-1");
            assert!(!format!("{:?}", bus.credentials("docs", "eu-1")).contains("BEGIN"));
        }
    }

    #[test]
    fn without_a_signing_key_nodes_get_none_and_a_bad_one_is_named() {
        let keys = AuthKeys::generate();
        let bus = NodeBus::from_config(&config(&keys, "")).unwrap();
        assert!(bus.credentials("docs", "eu-1").is_empty());
        let err = NodeBus::from_config(&config(&keys, "/nowhere/node-signing.nk")).unwrap_err();
        assert!(err.contains("/nowhere/node-signing.nk"), "{err}");
        let mut alone = config(&keys, &keys.node_signing_seed().unwrap());
        alone.nats.credentials = Secret::default();
        let err = NodeBus::from_config(&alone).unwrap_err();
        assert!(err.contains("nats.credentials"), "{err}");
    }
}
