//! What the node enforces on every request: MCP keys and OAuth access tokens (who is
//! calling), the IP allow-list, allowed origins, the blocked/disabled lists and the
//! environment's rules of who may call what. Replaced atomically as a whole when the control
//! plane pushes a new policy, so a request sees either the old one or the new one, never a mix.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use ipnet::IpNet;
use parking_lot::Mutex;
use ramen_call_rules::{AuthMode, Grant, Rules, Who};
pub use ramen_node_contract::{PolicyConfig, PolicyError};
use ramen_node_contract::{key_digest, parse_key_hash, parse_net};
use ramen_oauth_resource::{Expect, Issuers, Rejection, Verifier};
use subtle::ConstantTimeEq;

use crate::{HashMap, HashSet};

/// The issuers' keys, one cache for the process: a pushed policy builds a new verifier, but
/// the keys it already fetched stay.
fn issuers() -> &'static Issuers {
    static ISSUERS: OnceLock<Issuers> = OnceLock::new();
    ISSUERS.get_or_init(Issuers::default)
}

/// Who a request comes from, once authenticated. Never the key or token itself.
#[derive(Clone, Debug)]
pub enum CallerId {
    /// The node takes calls without keys (fixtures).
    Anonymous,
    /// An MCP key: auth's id and name for it (empty for a key written by hand), a digest of
    /// the key (what its sessions are counted and bound by) and its runtime `caller` frame.
    /// Built once per listed key when the policy is compiled and shared by every request
    /// presenting it: a request clones four `Arc`s, not four strings and a JSON document.
    Key { id: Arc<str>, name: Arc<str>, digest: Arc<str>, frame: Arc<str> },
    /// A verified OAuth access token's claims.
    Token(Arc<ramen_oauth_resource::Caller>),
}

impl CallerId {
    pub fn who(&self) -> Who<'_> {
        match self {
            Self::Anonymous => Who::Anonymous,
            Self::Key { id, name, .. } => Who::Key { id, name },
            Self::Token(caller) => Who::Token {
                subject: &caller.subject,
                groups: &caller.groups,
                roles: &caller.roles,
                scopes: &caller.scopes,
            },
        }
    }

    /// Whose a session is (the per-caller cap, and the check that a session's requests come
    /// from the caller that opened it): the key's digest, or the token's issuer and subject —
    /// not the token, which a client refreshes during a session.
    pub fn owner(&self) -> String {
        match self {
            Self::Anonymous => String::new(),
            Self::Key { digest, .. } => digest.to_string(),
            Self::Token(caller) => {
                use sha2::Digest;
                let mut hash = sha2::Sha256::new();
                hash.update(caller.issuer.as_bytes());
                hash.update([0]);
                hash.update(caller.subject.as_bytes());
                format!("t:{}", hex::encode(&hash.finalize()[..12]))
            }
        }
    }

    /// Whether a session opened by `owner` (its [`Self::owner`]) is this caller's: for a key,
    /// without building the owner string on every request.
    pub fn owns(&self, owner: &str) -> bool {
        match self {
            Self::Anonymous => owner.is_empty(),
            Self::Key { digest, .. } => **digest == *owner,
            Self::Token(_) => self.owner() == owner,
        }
    }

    /// The `caller` object of a runtime call frame (docs/packages.md): what a tool may know of
    /// who calls it. `None` for nobody in particular.
    pub fn frame(&self) -> Option<Arc<str>> {
        let value = match self {
            Self::Anonymous => return None,
            Self::Key { frame, .. } => return Some(frame.clone()),
            Self::Token(caller) => serde_json::json!({
                "kind": "oauth",
                "subject": caller.subject,
                "issuer": caller.issuer,
                "name": caller.name,
                "email": caller.email,
                "groups": caller.groups,
                "roles": caller.roles,
                "scopes": caller.scopes,
                "client_id": caller.client_id,
            }),
        };
        Some(value.to_string().into())
    }
}

/// Why a request was not let in.
#[derive(Debug)]
pub enum Unauthenticated {
    /// No live MCP key, on an environment that takes keys only.
    Key,
    /// What the OAuth resource server answers (401 or 403, with its challenge).
    Token(Rejection),
}

/// The key of `Authorization: Bearer <key>`.
/// The compiled policy the request path reads.
#[derive(Debug, Default)]
pub struct Policy {
    pub require_key: bool,
    keys: Vec<CompiledKey>,
    allow: Vec<IpNet>,
    trusted_proxies: Vec<IpNet>,
    blocked: HashSet<String>,
    disabled: HashSet<String>,
    allowed_origins: HashSet<String>,
    pub verbose: bool,
    /// Presented key → its SHA-256, for keys that matched a listed hash: hashing a key is
    /// most of what checking it costs, and a client presents the same key on every call.
    /// Only keys that matched are kept (a stranger cannot fill it) and it goes with the
    /// policy it was filled under, so a pushed policy starts empty. The plaintext keys it
    /// holds are ones this process is handed on every request anyway; the map's hasher is
    /// keyed per process, so how long a lookup takes is nothing a caller can steer.
    key_cache: KeyCache,
    /// Access tokens are verified by this (an environment taking OAuth with an issuer).
    verifier: Option<Verifier>,
    /// The challenge's `resource_metadata` URL and scopes, where OAuth is taken.
    challenge: Option<(String, Vec<String>)>,
    rules: Rules,
    pub source: PolicyConfig,
}

/// [`Policy::key_cache`]'s map, whose `Debug` names how many keys it holds, never the keys.
#[derive(Default)]
struct KeyCache(Mutex<HashMap<Box<str>, [u8; 32]>>);

impl KeyCache {
    fn lock(&self) -> parking_lot::MutexGuard<'_, HashMap<Box<str>, [u8; 32]>> {
        self.0.lock()
    }
}

impl std::fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyCache({} keys)", self.0.lock().len())
    }
}

/// The most presented keys [`Policy::key_cache`] remembers; past it, keys are hashed per
/// request as before.
const KEY_CACHE_CAP: usize = 4096;

#[derive(Debug)]
struct CompiledKey {
    digest: [u8; 32],
    /// Unix ms from which the key is refused; 0 = never.
    expires_at_unix_ms: i64,
    /// Who presents it, as every request of this key carries it.
    caller: CallerId,
}

impl CompiledKey {
    fn new(digest: [u8; 32], expires_at_unix_ms: i64, id: &str, name: &str) -> Self {
        let frame = serde_json::json!({"kind": "key", "key_id": id, "key_name": name});
        let caller = CallerId::Key {
            id: id.into(),
            name: name.into(),
            digest: hex::encode(&digest[..12]).into(),
            frame: frame.to_string().into(),
        };
        Self { digest, expires_at_unix_ms, caller }
    }
}

fn now_unix_ms() -> i64 {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since_epoch.map_or(0, |d| d.as_millis() as i64)
}

fn parse_nets(list: &[String]) -> Result<Vec<IpNet>, PolicyError> {
    list.iter().map(|s| parse_net(s)).collect()
}

impl Policy {
    pub fn compile(config: PolicyConfig) -> Result<Self, PolicyError> {
        let keys = config
            .key_hashes
            .iter()
            .map(|k| {
                let digest = parse_key_hash(&k.sha256_hex)?;
                Ok(CompiledKey::new(digest, k.expires_at_unix_ms, &k.id, &k.name))
            })
            .collect::<Result<_, PolicyError>>()?;
        let auth = &config.auth;
        let oauth = auth.mode.oauth();
        let verifier =
            (oauth && !auth.issuers.is_empty() && !auth.resource.is_empty()).then(|| {
                Verifier::new(
                    issuers().clone(),
                    Expect::new(&auth.resource, &auth.issuers, &auth.scopes),
                )
            });
        if oauth && verifier.is_none() {
            tracing::warn!(resource = %auth.resource, "OAuth is on without an issuer or a resource: every token is refused");
        }
        let challenge = oauth
            .then(|| (ramen_oauth_resource::metadata_url(&auth.resource), auth.scopes.clone()));
        Ok(Self {
            verifier,
            challenge,
            rules: Rules::new(auth.rules.clone()),
            require_key: config.require_key,
            keys,
            allow: parse_nets(&config.ip_allow)?,
            trusted_proxies: parse_nets(&config.trusted_proxies)?,
            blocked: config.blocked.iter().map(|s| s.trim().to_owned()).collect(),
            disabled: config.disabled_packages.iter().map(|s| s.trim().to_owned()).collect(),
            allowed_origins: config
                .allowed_origins
                .iter()
                .map(|s| s.trim_end_matches('/').to_owned())
                .collect(),
            verbose: config.verbose,
            key_cache: KeyCache::default(),
            source: config,
        })
    }

    /// The live key `Authorization: Bearer <key>` names (every hash compared, in constant
    /// time each).
    fn live_key(&self, authorization: Option<&str>) -> Option<CallerId> {
        let key = ramen_oauth_resource::bearer(authorization)?;
        let cached = self.key_cache.lock().get(key).copied();
        let digest = cached.unwrap_or_else(|| key_digest(key));
        let now = now_unix_ms();
        let mut found = None;
        for k in &self.keys {
            let live = k.expires_at_unix_ms == 0 || now < k.expires_at_unix_ms;
            if bool::from(k.digest.ct_eq(&digest)) & live {
                found = Some(k);
            }
        }
        if cached.is_none() && found.is_some() {
            let mut cache = self.key_cache.lock();
            if cache.len() < KEY_CACHE_CAP {
                cache.insert(key.into(), digest);
            }
        }
        found.map(|k| k.caller.clone())
    }

    /// Who is calling: a live MCP key, or (where the environment takes OAuth) a verified
    /// access token for this environment. The listed keys always count: on an environment
    /// taking tokens only the control plane lists none but its deploy's smoke key.
    pub async fn authenticate(
        &self,
        authorization: Option<&str>,
    ) -> Result<CallerId, Unauthenticated> {
        if !self.require_key {
            return Ok(CallerId::Anonymous);
        }
        if let Some(key) = self.live_key(authorization) {
            return Ok(key);
        }
        if self.challenge.is_none() {
            return Err(Unauthenticated::Key);
        }
        let Some(verifier) = &self.verifier else {
            let why = "OAuth has no issuer configured".to_owned();
            return Err(Unauthenticated::Token(
                match ramen_oauth_resource::bearer(authorization) {
                    Some(_) => Rejection::Invalid(why),
                    None => Rejection::Missing,
                },
            ));
        };
        match verifier.verify_header(authorization).await {
            Ok(caller) => Ok(CallerId::Token(Arc::new(caller))),
            Err(rejection) => Err(Unauthenticated::Token(rejection)),
        }
    }

    /// The `WWW-Authenticate` value of a refusal: the OAuth challenge where the environment
    /// takes tokens (RFC 9728 `resource_metadata`, the scopes), else the MCP key one.
    pub fn challenge(&self, refusal: &Unauthenticated) -> String {
        match (refusal, &self.challenge) {
            (Unauthenticated::Token(rejection), Some((metadata, scopes))) => {
                rejection.challenge(metadata, scopes)
            }
            _ => r#"Bearer realm="ramen", error="invalid_token""#.to_owned(),
        }
    }

    pub fn auth_mode(&self) -> AuthMode {
        self.source.auth.mode
    }

    /// What `caller` may use on this environment.
    pub fn grant(&self, caller: &CallerId) -> Grant {
        self.rules.grant(&caller.who())
    }

    /// Whether lists differ between callers (so a 2026-07-28 list is `private`).
    pub fn has_rules(&self) -> bool {
        !self.rules.is_empty()
    }

    /// The caller's address by the rule the edge and the REST API share
    /// ([`ramen_client_addr`]): the socket peer, or — only when the peer is a trusted proxy —
    /// the right-most entry of every `X-Forwarded-For` line that is not itself trusted. A
    /// malformed entry where the client should be is an error (answered 400).
    pub fn client_ip(
        &self,
        peer: IpAddr,
        headers: &http::HeaderMap,
    ) -> Result<IpAddr, ramen_client_addr::ClientAddrError> {
        ramen_client_addr::client_ip(peer, headers, &self.trusted_proxies)
    }

    pub fn ip_ok(&self, client: IpAddr) -> bool {
        self.allow.is_empty()
            || self.allow.iter().any(|n| n.contains(&ramen_client_addr::canonical(client)))
    }

    /// Browsers send `Origin`; non-browser clients send none. A browser origin passes when it
    /// is explicitly allowed, or same-origin on a loopback host (a local tool's own page).
    /// Same-origin alone proves nothing: under DNS rebinding the attacker's page at
    /// `evil.example` (resolved to this node) is same-origin with the `Host` it makes the
    /// browser send, so only a loopback name shows the page is really local.
    pub fn origin_ok(&self, origin: Option<&str>, host: Option<&str>) -> bool {
        let Some(origin) = origin else { return true };
        let origin = origin.trim_end_matches('/');
        if self.allowed_origins.contains(origin) {
            return true;
        }
        let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
        host.is_some_and(|h| h.eq_ignore_ascii_case(origin_host) && is_loopback_host(h))
    }

    /// Whether the package is blocked on the environment or disabled on this zone.
    pub fn package_hidden(&self, package: &str) -> bool {
        self.blocked.contains(package) || self.disabled.contains(package)
    }

    /// Whether a tool is hidden: its package is, or the tool itself is blocked.
    pub fn tool_hidden(&self, package: &str, tool: &str) -> bool {
        self.package_hidden(package) || self.blocked.contains(tool)
    }
}

/// Whether a `Host` value (`name[:port]`, IPv6 in brackets) names the loopback interface.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or(rest, |(ip, _)| ip),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests;
