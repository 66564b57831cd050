//! One access token against one resource's expectations.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, Validation};
use parking_lot::Mutex;
use serde::Deserialize;

use crate::keys::Issuers;

/// What a resource accepts.
#[derive(Clone, Debug)]
pub struct Expect {
    /// This resource's URL: a token's `aud` must name it.
    pub resource: String,
    /// The authorization servers whose tokens count.
    pub issuers: Vec<String>,
    /// Scopes of which a token must hold at least one to be let in at all (empty: any token).
    pub scopes: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    pub leeway_seconds: u64,
    /// This resource server's client at the issuer, for RFC 7662 introspection of opaque
    /// tokens; `None` = JWT access tokens only.
    pub introspection_client: Option<(String, String)>,
}

impl Expect {
    /// `resource` accepting tokens of `issuers` holding one of `scopes`, with 30 s of skew.
    pub fn new(resource: &str, issuers: &[String], scopes: &[String]) -> Self {
        Self {
            resource: resource.to_owned(),
            issuers: issuers.to_vec(),
            scopes: scopes.to_vec(),
            leeway_seconds: 30,
            introspection_client: None,
        }
    }
}

/// Who is calling, from a verified token: what rules and tools may use. Never the token.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    pub subject: String,
    pub issuer: String,
    pub scopes: Vec<String>,
    pub groups: Vec<String>,
    /// The roles claim (Entra ID app roles; Keycloak realm roles where mapped to `roles`).
    pub roles: Vec<String>,
    pub email: Option<String>,
    pub name: Option<String>,
    pub client_id: Option<String>,
}

/// Why a request is refused, and the challenge that says so.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// No bearer token: 401 without an error code (RFC 6750 §3.1).
    #[error("no bearer token")]
    Missing,
    /// 401 `invalid_token`: the reason is for the log, the client gets a generic description.
    #[error("invalid token: {0}")]
    Invalid(String),
    /// 403 `insufficient_scope`: a valid token without a scope the request needs.
    #[error("insufficient scope: needs one of {0:?}")]
    InsufficientScope(Vec<String>),
}

impl Rejection {
    pub fn status(&self) -> u16 {
        match self {
            Self::Missing | Self::Invalid(_) => 401,
            Self::InsufficientScope(_) => 403,
        }
    }

    /// The `WWW-Authenticate` value: where the metadata is, the scopes to ask for, and the
    /// error code where there is one.
    pub fn challenge(&self, metadata_url: &str, scopes: &[String]) -> String {
        let quoted = |s: &str| s.replace(['"', '\\'], "");
        let mut value = format!("Bearer resource_metadata=\"{}\"", quoted(metadata_url));
        let wanted = match self {
            Self::InsufficientScope(needed) => needed.as_slice(),
            _ => scopes,
        };
        if !wanted.is_empty() {
            value.push_str(&format!(", scope=\"{}\"", quoted(&wanted.join(" "))));
        }
        match self {
            Self::Missing => {}
            Self::Invalid(_) => value.push_str(
                ", error=\"invalid_token\", error_description=\"the access token is not valid for this resource\"",
            ),
            Self::InsufficientScope(_) => value.push_str(", error=\"insufficient_scope\""),
        }
        value
    }
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
    iss: String,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    roles: Vec<String>,
    email: Option<String>,
    name: Option<String>,
    client_id: Option<String>,
    exp: Option<u64>,
}

/// Tokens verified recently, by SHA-256 of the token, with how long each may be taken again
/// without verifying: a client sends the same token on every call, and a signature check
/// costs far more than a hash. A JWT stays until it expires (nothing revokes one before);
/// an introspected token is asked about again after [`INTROSPECTED_FOR`], so one revoked at
/// the issuer stops working within it.
#[derive(Default)]
struct Verified {
    tokens: HashMap<[u8; 32], (Caller, Instant)>,
}

/// How long an introspection answer is trusted.
pub const INTROSPECTED_FOR: Duration = Duration::from_secs(30);
/// Verified tokens remembered at most (beyond, the expired ones go, then all).
const VERIFIED_CAP: usize = 10_000;

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Algorithms a token may be signed with: asymmetric only. An issuer publishes public keys; a
/// verifier that took HS256 could be handed a token "signed" with a public key used as the
/// shared secret (the algorithm confusion attack).
pub const ALGORITHMS: [Algorithm; 7] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::ES256,
    Algorithm::ES384,
];

/// Verifies access tokens for one resource.
#[derive(Clone)]
pub struct Verifier {
    issuers: Issuers,
    expect: Expect,
    verified: Arc<Mutex<Verified>>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier").field("expect", &self.expect).finish_non_exhaustive()
    }
}

impl Verifier {
    pub fn new(issuers: Issuers, expect: Expect) -> Self {
        Self { issuers, expect, verified: Arc::default() }
    }

    pub fn expect(&self) -> &Expect {
        &self.expect
    }

    /// The caller behind an `Authorization` header value.
    pub async fn verify_header(&self, authorization: Option<&str>) -> Result<Caller, Rejection> {
        let token = bearer(authorization).ok_or(Rejection::Missing)?;
        self.verify(token).await
    }

    /// The caller behind `token`: from the tokens verified recently, or checked now.
    pub async fn verify(&self, token: &str) -> Result<Caller, Rejection> {
        use sha2::Digest;
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        let now = Instant::now();
        if let Some((caller, until)) = self.verified.lock().tokens.get(&digest)
            && now < *until
        {
            return Ok(caller.clone());
        }
        let (caller, expires_at) = self.verify_now(token).await?;
        let remaining = Duration::from_secs(expires_at.saturating_sub(unix_now()));
        let mut verified = self.verified.lock();
        if verified.tokens.len() >= VERIFIED_CAP {
            verified.tokens.retain(|_, (_, until)| now < *until);
            if verified.tokens.len() >= VERIFIED_CAP {
                verified.tokens.clear();
            }
        }
        verified.tokens.insert(digest, (caller.clone(), now + remaining));
        Ok(caller)
    }

    /// The caller and until when (unix seconds) its token may be taken without checking again.
    async fn verify_now(&self, token: &str) -> Result<(Caller, u64), Rejection> {
        let invalid = |why: String| Rejection::Invalid(why);
        let header = match jsonwebtoken::decode_header(token) {
            Ok(header) => header,
            Err(_)
                if token.split('.').count() != 3 && self.expect.introspection_client.is_some() =>
            {
                return self.introspect(token).await;
            }
            Err(e) => return Err(invalid(format!("not a JWT: {e}"))),
        };
        if !ALGORITHMS.contains(&header.alg) {
            return Err(invalid(format!("algorithm {:?} is not accepted", header.alg)));
        }
        // The issuer is read before the signature is checked only to pick whose keys to use;
        // a token naming an issuer not accepted here is refused without any request.
        let issuer = unverified_issuer(token).ok_or_else(|| invalid("no iss claim".into()))?;
        if !self.expect.issuers.iter().any(|i| same_issuer(i, &issuer)) {
            return Err(invalid(format!("issuer {issuer} is not accepted")));
        }
        let kid = header.kid.clone().ok_or_else(|| invalid("no kid in the header".into()))?;
        let (key, alg) =
            self.issuers.key(&issuer, &kid).await.map_err(|e| invalid(e.to_string()))?;
        if alg.is_some_and(|a| a != header.alg) {
            return Err(invalid(format!("key {kid} is not for {:?}", header.alg)));
        }
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[issuer.as_str()]);
        validation.set_audience(&[self.expect.resource.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = self.expect.leeway_seconds;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|e| invalid(e.to_string()))?;
        let claims = data.claims;
        let scopes: Vec<String> = claims.scope.split_whitespace().map(str::to_owned).collect();
        if !self.expect.scopes.is_empty() && !scopes.iter().any(|s| self.expect.scopes.contains(s))
        {
            return Err(Rejection::InsufficientScope(self.expect.scopes.clone()));
        }
        // `exp` is required above; without it nothing would be remembered.
        let expires_at = claims.exp.unwrap_or(0);
        let caller = Caller {
            subject: claims.sub,
            issuer: claims.iss,
            scopes,
            groups: claims.groups,
            roles: claims.roles,
            email: claims.email,
            name: claims.name,
            client_id: claims.client_id,
        };
        Ok((caller, expires_at))
    }
}

impl Verifier {
    /// An opaque token, asked of the accepted issuers that introspect (RFC 7662): it counts
    /// when one answers it active, for this resource, unexpired.
    async fn introspect(&self, token: &str) -> Result<(Caller, u64), Rejection> {
        let invalid = |why: String| Rejection::Invalid(why);
        let client = self.expect.introspection_client.as_ref();
        let client = client.ok_or_else(|| invalid("opaque token".into()))?;
        let mut problems = Vec::new();
        for issuer in &self.expect.issuers {
            let answer = match self.issuers.introspect(issuer, token, client).await {
                Ok(answer) => answer,
                Err(error) => {
                    problems.push(error.to_string());
                    continue;
                }
            };
            if answer["active"] != serde_json::Value::Bool(true) {
                continue;
            }
            let audiences: Vec<&str> = match &answer["aud"] {
                serde_json::Value::String(one) => vec![one.as_str()],
                serde_json::Value::Array(many) => many.iter().filter_map(|a| a.as_str()).collect(),
                _ => Vec::new(),
            };
            if !audiences.contains(&self.expect.resource.as_str()) {
                return Err(invalid(format!(
                    "introspected audience {audiences:?} is not this resource"
                )));
            }
            if answer["iss"].as_str().is_some_and(|iss| !same_issuer(iss, issuer)) {
                return Err(invalid(format!(
                    "introspected issuer {} is not {issuer}",
                    answer["iss"]
                )));
            }
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            let leeway = self.expect.leeway_seconds as i64;
            if answer["exp"].as_i64().is_some_and(|exp| exp + leeway <= now) {
                return Err(invalid("introspected token expired".into()));
            }
            let scope = answer["scope"].as_str().unwrap_or_default();
            let scopes: Vec<String> = scope.split_whitespace().map(str::to_owned).collect();
            if !self.expect.scopes.is_empty()
                && !scopes.iter().any(|s| self.expect.scopes.contains(s))
            {
                return Err(Rejection::InsufficientScope(self.expect.scopes.clone()));
            }
            let text = |key: &str| answer[key].as_str().map(str::to_owned);
            // `sub` is optional in RFC 7662; a client's own token (client credentials) is
            // that client's.
            let subject = text("sub").or_else(|| text("client_id"));
            let caller = Caller {
                subject: subject.ok_or_else(|| invalid("introspection names no subject".into()))?,
                issuer: issuer.clone(),
                scopes,
                groups: serde_json::from_value(answer["groups"].clone()).unwrap_or_default(),
                roles: serde_json::from_value(answer["roles"].clone()).unwrap_or_default(),
                email: text("email"),
                name: text("name"),
                client_id: text("client_id"),
            };
            let trusted_until = unix_now() + INTROSPECTED_FOR.as_secs();
            let expires_at =
                answer["exp"].as_u64().map_or(trusted_until, |exp| exp.min(trusted_until));
            return Ok((caller, expires_at));
        }
        Err(invalid(if problems.is_empty() {
            "the token is not active at any accepted issuer".into()
        } else {
            problems.join("; ")
        }))
    }
}

/// The token of an `Authorization: Bearer …` header value (RFC 6750 §2.1; the scheme is
/// case-insensitive), `None` for any other or an empty one.
pub fn bearer(authorization: Option<&str>) -> Option<&str> {
    authorization
        .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// Two issuer URLs name the same issuer (a trailing slash aside).
pub fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// `iss` of a JWT's payload, unverified.
fn unverified_issuer(token: &str) -> Option<String> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    value["iss"].as_str().map(str::to_owned)
}
