//! Node users: a worker node may publish its own load reports and call records, on subjects
//! naming its group and zone, read the acks of its own publishes, and nothing else. The zone-manager mints one user per placement when it writes a
//! node config, with the account's node signing key. That key is *scoped*: the account JWT
//! fixes the permissions of every user it signs (the template below), so the zone-manager
//! holding it can mint load reporters and nothing more, and the server — not ramen — expands
//! the template from the user's `group:` and `zone:` tags.

use hmac::{Hmac, Mac};
use nkeys::{KeyPair, KeyPairType};
use sha2::Sha256;

use super::jwt::{self, Permissions, Rule, ScopedKey};
use super::{AuthError, Credentials};

/// Where every node's load reports go: `ramen.load.v1.node.<group>.<zone>`.
pub const NODE_LOAD_PREFIX: &str = "ramen.load.v1.node";
/// Every node's load reports (what the rebalancer subscribes to).
pub const NODE_LOAD_FILTER: &str = "ramen.load.v1.node.>";
/// Where every node's call records go: `ramen.calls.v1.node.<group>.<zone>` (JetStream).
pub const NODE_CALLS_PREFIX: &str = "ramen.calls.v1.node";
/// Every node's call records: the subjects of [`CALLS_STREAM`].
pub const NODE_CALLS_FILTER: &str = "ramen.calls.v1.node.>";
/// The work-queue stream keeping call records until auth has stored them.
pub const CALLS_STREAM: &str = "RAMEN_CALLS";
/// Its dead-letter stream: batches auth could not store after every attempt.
pub const CALLS_DLQ: &str = "RAMEN_CALLS_DLQ";
/// The role the node signing key carries in the account JWT.
pub const NODE_ROLE: &str = "node";
/// A load report is a few hundred bytes; a batch of call records is kept under this by the
/// node (it splits a larger one).
pub const NODE_MAX_PAYLOAD: i64 = 256 * 1024;

/// The subject a node of `group` in `zone` publishes its load on.
pub fn node_load_subject(group: &str, zone: &str) -> String {
    format!("{NODE_LOAD_PREFIX}.{group}.{zone}")
}

/// `(group, zone)` of a load subject; `None` for anything else.
pub fn parse_node_load_subject(subject: &str) -> Option<(&str, &str)> {
    let rest = subject.strip_prefix(NODE_LOAD_PREFIX)?.strip_prefix('.')?;
    let (group, zone) = rest.split_once('.')?;
    (!group.is_empty() && !zone.is_empty() && !zone.contains('.')).then_some((group, zone))
}

/// The subject a node of `group` in `zone` publishes its call records on.
pub fn node_calls_subject(group: &str, zone: &str) -> String {
    format!("{NODE_CALLS_PREFIX}.{group}.{zone}")
}

/// `(group, zone)` of a call-records subject; `None` for anything else.
pub fn parse_node_calls_subject(subject: &str) -> Option<(&str, &str)> {
    let rest = subject.strip_prefix(NODE_CALLS_PREFIX)?.strip_prefix('.')?;
    let (group, zone) = rest.split_once('.')?;
    (!group.is_empty() && !zone.is_empty() && !zone.contains('.')).then_some((group, zone))
}

/// The user name of the nodes of `group` in `zone`; its inbox is `_INBOX_<name>`.
pub fn node_user_name(group: &str, zone: &str) -> String {
    format!("node.{group}.{zone}")
}

/// The node signing key's scope in the account JWT: publish the placement's load and call
/// subjects; subscribe to the placement's own inbox only, where JetStream's acks of its call
/// records arrive (so a record the stream did not take is counted, not assumed stored).
pub(crate) fn node_scope(key: &KeyPair) -> ScopedKey {
    let placement = "{{tag(group)}}.{{tag(zone)}}";
    let publish =
        vec![format!("{NODE_LOAD_PREFIX}.{placement}"), format!("{NODE_CALLS_PREFIX}.{placement}")];
    let inbox = format!("{}.>", super::inbox_prefix(&format!("node.{placement}")));
    ScopedKey {
        key: key.public_key(),
        role: NODE_ROLE.to_owned(),
        template: Permissions {
            publish: Rule::allow(publish),
            subscribe: Rule::allow(vec![inbox]),
        },
        max_payload: NODE_MAX_PAYLOAD,
    }
}

/// Mints node users with the scoped node signing key.
#[derive(Clone)]
pub struct NodeMinter {
    key: KeyPair,
    account: String,
    seed: [u8; 32],
}

impl NodeMinter {
    /// `signing_seed`: the node signing key (`SA…`, `nats.signing_key`); `account`: the
    /// public key of the account it signs for.
    pub fn new(signing_seed: &str, account: &str) -> Result<NodeMinter, AuthError> {
        let key = KeyPair::from_seed(signing_seed.trim()).map_err(AuthError::key)?;
        if key.key_pair_type() != KeyPairType::Account {
            return Err(AuthError::Invalid("the node signing key must be an account key (SA…)"));
        }
        KeyPair::from_public_key(account).map_err(AuthError::key)?;
        let (_, seed) = nkeys::decode_seed(signing_seed.trim()).map_err(AuthError::key)?;
        Ok(NodeMinter { key, account: account.to_owned(), seed })
    }

    /// The minter of the account `credentials` belong to (the zone-manager's own user).
    pub fn for_account_of(
        signing_seed: &str,
        credentials: &Credentials,
    ) -> Result<NodeMinter, AuthError> {
        NodeMinter::new(signing_seed, &credentials.account()?)
    }

    /// The credentials of the nodes of `group` in `zone`. The same placement always gets the
    /// same credentials (the user key is derived from the signing key and the placement, and
    /// the JWT carries no issue time), so a config rendered again is byte-for-byte the same.
    pub fn mint(&self, group: &str, zone: &str) -> Result<Credentials, AuthError> {
        for (what, value) in [("group", group), ("zone", zone)] {
            if value.is_empty()
                || !value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            {
                return Err(AuthError::Placement { what, value: value.to_owned() });
            }
        }
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.seed).map_err(AuthError::key)?;
        mac.update(format!("ramen node user\0{group}\0{zone}").as_bytes());
        let raw: [u8; 32] = mac.finalize().into_bytes().into();
        let user = KeyPair::new_from_raw(KeyPairType::User, raw).map_err(AuthError::key)?;
        let tags = [format!("group:{group}"), format!("zone:{zone}")];
        let name = node_user_name(group, zone);
        let token = jwt::scoped_user(&self.key, &self.account, &user.public_key(), &name, &tags)?;
        Credentials::new(token, user.seed().map_err(AuthError::key)?)
    }
}

impl std::fmt::Debug for NodeMinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeMinter").field("account", &self.account).finish_non_exhaustive()
    }
}
