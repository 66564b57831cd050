//! Who is calling an environment through the edge, and whether it may: MCP keys (the
//! [`KeyBook`]) and OAuth 2.1 access tokens (`ramen-oauth-resource`) as the environment's
//! auth mode says, the protected resource metadata clients discover the authorization server
//! from, the rules of who may call what where the edge can apply them before any node, and the
//! per-caller rate limit.
//!
//! The nodes check the same again (a node is reachable without the edge by code beside it),
//! so the edge's part is to refuse early and cheaply: a client without a token learns where to
//! get one here, and a flood from one caller stops here.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use ramen_call_rules::{AuthMode, Rules, Who};
use ramen_node_contract::NodeAuth;
use ramen_oauth_resource::{Caller, Expect, Issuers, Rejection, Verifier};

use crate::keys::{KeyBook, KeyVerdict};

/// An environment's authentication as the edge applies it (from the deployer's resolved
/// setting: mode, issuers, scopes, resource, rules and rate).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EdgeAuth {
    pub auth: NodeAuth,
    /// `auth.rules`, ready to decide.
    pub rules: Rules,
    /// Per caller, 0 = unlimited.
    pub calls_per_second: u32,
}

impl EdgeAuth {
    pub fn new(auth: NodeAuth, calls_per_second: u32) -> Self {
        Self { rules: Rules::new(auth.rules.clone()), auth, calls_per_second }
    }

    pub fn from_wire(auth: Option<&ramen_proto::common::v1::McpAuth>) -> Self {
        Self::new(NodeAuth::from_wire(auth), auth.map_or(0, |a| a.calls_per_second))
    }

    /// The RFC 9728 document, where the environment takes tokens.
    pub fn metadata(&self) -> Option<serde_json::Value> {
        let auth = &self.auth;
        (auth.mode.oauth() && !auth.resource.is_empty())
            .then(|| ramen_oauth_resource::metadata(&auth.resource, &auth.issuers, &auth.scopes))
    }
}

/// Who a request comes from, as far as the edge knows.
#[derive(Clone, Debug)]
pub enum EdgeCaller {
    Key {
        id: String,
        name: String,
        /// The key's digest, what the rate limit counts by (empty where the environment has
        /// no rate limit).
        digest: String,
    },
    Token(Caller),
    /// A key auth could not be asked about: the node decides. Limited by its digest.
    Unchecked {
        digest: String,
    },
}

impl EdgeCaller {
    /// Rules apply to a caller the edge knows.
    pub fn who(&self) -> Option<Who<'_>> {
        match self {
            Self::Key { id, name, .. } => Some(Who::Key { id, name }),
            Self::Token(caller) => Some(Who::Token {
                subject: &caller.subject,
                groups: &caller.groups,
                roles: &caller.roles,
                scopes: &caller.scopes,
            }),
            Self::Unchecked { .. } => None,
        }
    }

    /// What the rate limit counts by: the key, or the token's issuer and subject (a client
    /// refreshing its token stays the same caller).
    fn limit_key(&self) -> String {
        match self {
            Self::Key { digest, .. } | Self::Unchecked { digest } => format!("k:{digest}"),
            Self::Token(caller) => format!("t:{}\u{0}{}", caller.issuer, caller.subject),
        }
    }
}

/// Why the edge refuses a request before any node.
#[derive(Debug)]
pub enum Refused {
    /// No live MCP key on an environment taking keys only: 401.
    Key,
    /// The OAuth refusal (401 or 403) and the challenge to send with it.
    Token { rejection: Rejection, challenge: String },
}

/// The key digest of a bearer value (never kept: only what counts by it).
fn digest(bearer: &str) -> String {
    hex::encode(&ramen_node_contract::key_digest(bearer)[..12])
}

/// MCP keys are minted by auth as `rk_<random>`; anything else presented where tokens are
/// taken is a token, so a JWT never costs a key lookup (nor a key a token verification).
const KEY_PREFIX: &str = "rk_";

/// The edge's verifiers (one per environment taking tokens, kept while its setting stays the
/// same, so the tokens it verified stay remembered) and rate limits.
#[derive(Default)]
pub struct Gate {
    issuers: Issuers,
    verifiers: Mutex<HashMap<(String, String), Verifier>>,
    limits: Mutex<HashMap<(String, String, String), Bucket>>,
}

impl Gate {
    /// Authenticates a request to `group`/`environment` as `auth` says. With no key book the
    /// edge leaves keys to the nodes.
    pub async fn authenticate(
        &self,
        (group, environment): (&str, &str),
        auth: &EdgeAuth,
        keys: Option<&KeyBook>,
        authorization: Option<&str>,
    ) -> Result<EdgeCaller, Refused> {
        let mode = auth.auth.mode;
        let presented = ramen_oauth_resource::bearer(authorization);
        let is_key = presented.is_some_and(|b| b.starts_with(KEY_PREFIX));
        // The digest is what a rate limit counts by, and only that: an environment without
        // one skips the SHA-256 and its hex (~4.7k instructions a proxied call).
        let limit_digest = || match presented {
            Some(bearer) if auth.calls_per_second > 0 => digest(bearer),
            _ => String::new(),
        };
        if mode == AuthMode::Keys || (mode == AuthMode::Both && is_key) {
            let Some(keys) = keys else {
                return Ok(EdgeCaller::Unchecked { digest: limit_digest() });
            };
            return match keys.check(group, environment, authorization).await {
                KeyVerdict::Valid { id, name } => {
                    Ok(EdgeCaller::Key { id, name, digest: limit_digest() })
                }
                KeyVerdict::Refused if mode == AuthMode::Keys => Err(Refused::Key),
                KeyVerdict::Refused => {
                    Err(self.token_refusal(auth, Rejection::Invalid("unknown MCP key".into())))
                }
                KeyVerdict::Unknowable(reason) => {
                    tracing::warn!(%reason, %group, %environment, "edge cannot check MCP keys; the node will");
                    Ok(EdgeCaller::Unchecked { digest: limit_digest() })
                }
            };
        }
        let Some(verifier) = self.verifier((group, environment), &auth.auth) else {
            let why = Rejection::Invalid("OAuth has no issuer configured".into());
            let rejection = if presented.is_some() { why } else { Rejection::Missing };
            return Err(self.token_refusal(auth, rejection));
        };
        match verifier.verify_header(authorization).await {
            Ok(caller) => Ok(EdgeCaller::Token(caller)),
            Err(rejection) => {
                if let Rejection::Invalid(why) = &rejection {
                    tracing::debug!(%why, %group, %environment, "access token refused at the edge");
                }
                Err(self.token_refusal(auth, rejection))
            }
        }
    }

    fn token_refusal(&self, auth: &EdgeAuth, rejection: Rejection) -> Refused {
        let metadata = ramen_oauth_resource::metadata_url(&auth.auth.resource);
        let challenge = rejection.challenge(&metadata, &auth.auth.scopes);
        Refused::Token { rejection, challenge }
    }

    /// The environment's verifier: the one it had while its setting is unchanged.
    fn verifier(&self, (group, environment): (&str, &str), auth: &NodeAuth) -> Option<Verifier> {
        if auth.issuers.is_empty() || auth.resource.is_empty() {
            return None;
        }
        let key = (group.to_owned(), environment.to_owned());
        let mut verifiers = self.verifiers.lock();
        let same = |v: &Verifier| {
            let e = v.expect();
            e.resource == auth.resource && e.issuers == auth.issuers && e.scopes == auth.scopes
        };
        if let Some(verifier) = verifiers.get(&key).filter(|v| same(v)) {
            return Some(verifier.clone());
        }
        let verifier = Verifier::new(
            self.issuers.clone(),
            Expect::new(&auth.resource, &auth.issuers, &auth.scopes),
        );
        verifiers.insert(key, verifier.clone());
        Some(verifier)
    }

    /// Takes one call from `caller`'s allowance on the environment: `Err(wait)` when it has
    /// none left (a token bucket holding one second of calls, refilled continuously).
    pub fn admit(
        &self,
        (group, environment): (&str, &str),
        caller: &EdgeCaller,
        per_second: u32,
    ) -> Result<(), Duration> {
        if per_second == 0 {
            return Ok(());
        }
        let now = Instant::now();
        let rate = f64::from(per_second);
        let mut limits = self.limits.lock();
        if limits.len() >= LIMITS_CAP {
            // Full buckets hold nothing worth keeping: a caller seen again starts full anyway.
            limits.retain(|_, b| b.level(now, rate) < rate);
        }
        let key = (group.to_owned(), environment.to_owned(), caller.limit_key());
        let bucket = limits.entry(key).or_insert(Bucket { tokens: rate, at: now });
        bucket.tokens = bucket.level(now, rate);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / rate))
        }
    }
}

/// Callers with a bucket at most (beyond, the full ones are dropped).
const LIMITS_CAP: usize = 100_000;

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn level(&self, now: Instant, rate: f64) -> f64 {
        (self.tokens + now.duration_since(self.at).as_secs_f64() * rate).min(rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_gets_its_rate_and_no_more_and_others_are_not_slowed() {
        let gate = Gate::default();
        let env = ("g", "e");
        let alice = EdgeCaller::Key { id: "1".into(), name: "a".into(), digest: "aa".into() };
        let bob = EdgeCaller::Key { id: "2".into(), name: "b".into(), digest: "bb".into() };
        for _ in 0..5 {
            gate.admit(env, &alice, 5).unwrap();
        }
        let wait = gate.admit(env, &alice, 5).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(200), "{wait:?}");
        gate.admit(env, &bob, 5).expect("another caller has its own allowance");
        gate.admit(("g", "other"), &alice, 5).expect("another environment counts apart");
        gate.admit(env, &alice, 0).expect("0 is unlimited");
    }

    /// Keys the edge cannot check (no key book) are limited by their digest, each apart; an
    /// environment with no rate limit computes none.
    #[tokio::test]
    async fn keys_are_limited_apart_by_their_digest() {
        let gate = Gate::default();
        let env = ("g", "e");
        let limited = EdgeAuth::new(NodeAuth::default(), 1);
        let caller = |auth: &EdgeAuth, key: &'static str| {
            let gate = &gate;
            let auth = auth.clone();
            async move {
                gate.authenticate(env, &auth, None, Some(&format!("Bearer {key}"))).await.unwrap()
            }
        };
        let (alice, bob) = (caller(&limited, "rk_alice").await, caller(&limited, "rk_bob").await);
        assert_ne!(alice.limit_key(), bob.limit_key(), "two keys, two allowances");
        gate.admit(env, &alice, 1).unwrap();
        assert!(gate.admit(env, &alice, 1).is_err(), "alice's allowance is spent");
        gate.admit(env, &bob, 1).expect("bob's is his own");
        let unlimited = EdgeAuth::new(NodeAuth::default(), 0);
        let EdgeCaller::Unchecked { digest } = caller(&unlimited, "rk_alice").await else {
            panic!("a key with no key book is left to the node");
        };
        assert!(digest.is_empty(), "no rate limit, no digest: {digest}");
    }

    #[test]
    fn a_refreshed_token_is_the_same_caller() {
        let token = |scopes: &[&str]| {
            EdgeCaller::Token(Caller {
                subject: "alice".into(),
                issuer: "https://idp".into(),
                scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
                ..Caller::default()
            })
        };
        assert_eq!(token(&["a"]).limit_key(), token(&["b"]).limit_key());
        let gate = Gate::default();
        gate.admit(("g", "e"), &token(&["a"]), 1).unwrap();
        assert!(gate.admit(("g", "e"), &token(&["b"]), 1).is_err());
    }

    #[test]
    fn metadata_only_where_tokens_are_taken() {
        let mut node_auth =
            NodeAuth { resource: "https://mcp.example/mcp/g/e".into(), ..NodeAuth::default() };
        assert!(EdgeAuth::new(node_auth.clone(), 0).metadata().is_none(), "keys only");
        node_auth.mode = AuthMode::Both;
        node_auth.issuers = vec!["https://idp".into()];
        let metadata = EdgeAuth::new(node_auth, 0).metadata().unwrap();
        assert_eq!(metadata["resource"], "https://mcp.example/mcp/g/e");
        assert_eq!(metadata["authorization_servers"][0], "https://idp");
    }
}
