//! The issuers' signing keys: discovery (RFC 8414, then OpenID Connect Discovery), the JWKS,
//! cached per issuer and fetched again for a key id not seen yet.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::JwkSet;
use parking_lot::Mutex;

/// A key set is read again at most this often for an unknown key id: a flood of tokens naming
/// made-up keys costs the issuer one request per this, not one per token.
pub const REFRESH_FLOOR: Duration = Duration::from_secs(10);
/// A key set older than this is read again before use, so removed keys stop verifying.
const MAX_AGE: Duration = Duration::from_secs(600);

#[derive(Clone)]
struct Discovered {
    jwks_uri: String,
    /// RFC 7662, when the issuer has one.
    introspection: Option<String>,
}

struct Cached {
    jwks_uri: String,
    keys: HashMap<String, (DecodingKey, Option<jsonwebtoken::Algorithm>)>,
    fetched: Instant,
}

/// The keys of every issuer a verifier accepts, shared by all the resources that accept it.
#[derive(Clone)]
pub struct Issuers {
    http: reqwest::Client,
    cache: Arc<Mutex<HashMap<String, Cached>>>,
    /// What discovery found per issuer (its JWKS and introspection endpoints).
    discovered: Arc<Mutex<HashMap<String, Discovered>>>,
    /// Serialises fetches (one discovery or JWKS read at a time per process is plenty).
    fetching: Arc<tokio::sync::Mutex<()>>,
    refresh_floor: Duration,
}

impl Default for Issuers {
    fn default() -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client");
        Self {
            http,
            cache: Arc::default(),
            discovered: Arc::default(),
            fetching: Arc::default(),
            refresh_floor: REFRESH_FLOOR,
        }
    }
}

/// Why a key could not be had: the token is refused either way, the reason goes to the log.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("issuer {issuer}: {problem}")]
    Unreachable { issuer: String, problem: String },
    #[error("issuer {issuer} has no key {kid:?}")]
    Unknown { issuer: String, kid: String },
}

impl Issuers {
    /// With another floor between two reads of a key set for an unknown key id.
    pub fn with_refresh_floor(mut self, floor: Duration) -> Self {
        self.refresh_floor = floor;
        self
    }

    /// The key `kid` of `issuer` (and the algorithm it is for, when the JWKS says).
    pub async fn key(
        &self,
        issuer: &str,
        kid: &str,
    ) -> Result<(DecodingKey, Option<jsonwebtoken::Algorithm>), KeyError> {
        if let Some(found) = self.cached(issuer, kid, false) {
            return Ok(found);
        }
        let _one = self.fetching.lock().await;
        // Someone else may have fetched while this waited.
        if let Some(found) = self.cached(issuer, kid, false) {
            return Ok(found);
        }
        let recent =
            self.cache.lock().get(issuer).is_some_and(|c| c.fetched.elapsed() < self.refresh_floor);
        if !recent && let Err(error) = self.fetch(issuer).await {
            // An issuer that cannot be reached does not take down keys already known: a key
            // past its age still verifies until the issuer answers again.
            return self.cached(issuer, kid, true).ok_or(error);
        }
        self.cached(issuer, kid, true)
            .ok_or_else(|| KeyError::Unknown { issuer: issuer.to_owned(), kid: kid.to_owned() })
    }

    fn cached(
        &self,
        issuer: &str,
        kid: &str,
        stale_ok: bool,
    ) -> Option<(DecodingKey, Option<jsonwebtoken::Algorithm>)> {
        let cache = self.cache.lock();
        let cached = cache.get(issuer)?;
        if !stale_ok && cached.fetched.elapsed() > MAX_AGE {
            return None;
        }
        cached.keys.get(kid).cloned()
    }

    async fn fetch(&self, issuer: &str) -> Result<(), KeyError> {
        let failed = |problem: String| KeyError::Unreachable { issuer: issuer.to_owned(), problem };
        let known = self.cache.lock().get(issuer).map(|c| c.jwks_uri.clone());
        let jwks_uri = match known {
            Some(uri) => uri,
            None => self.discovered(issuer).await.map_err(failed)?.jwks_uri,
        };
        let set: JwkSet = self
            .get_json(&jwks_uri)
            .await
            .and_then(|v| serde_json::from_value(v).map_err(|e| format!("JWKS {jwks_uri}: {e}")))
            .map_err(failed)?;
        let mut keys = HashMap::new();
        for jwk in &set.keys {
            let Some(kid) = jwk.common.key_id.clone() else { continue };
            match DecodingKey::from_jwk(jwk) {
                Ok(key) => {
                    let alg = jwk
                        .common
                        .key_algorithm
                        .and_then(|a| a.to_string().parse::<jsonwebtoken::Algorithm>().ok());
                    keys.insert(kid, (key, alg));
                }
                Err(error) => tracing::warn!(%error, issuer, kid, "a JWKS key ramen cannot use"),
            }
        }
        self.cache
            .lock()
            .insert(issuer.to_owned(), Cached { jwks_uri, keys, fetched: Instant::now() });
        Ok(())
    }

    /// RFC 7662 introspection of an opaque `token` at `issuer`, authenticating as `client`
    /// (`client_secret_basic`); answers the issuer's JSON (`active`, `aud`, `scope`, ...).
    pub async fn introspect(
        &self,
        issuer: &str,
        token: &str,
        client: &(String, String),
    ) -> Result<serde_json::Value, KeyError> {
        let failed = |problem: String| KeyError::Unreachable { issuer: issuer.to_owned(), problem };
        let endpoint = self.discovered(issuer).await.map_err(failed)?.introspection;
        let endpoint = endpoint.ok_or_else(|| failed("no introspection_endpoint".into()))?;
        let form: String = url_form(&[("token", token), ("token_type_hint", "access_token")]);
        let answer = self
            .http
            .post(&endpoint)
            .basic_auth(&client.0, Some(&client.1))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .map_err(|e| failed(format!("{endpoint}: {e}")))?;
        if !answer.status().is_success() {
            return Err(failed(format!("{endpoint}: {}", answer.status())));
        }
        answer.json().await.map_err(|e| failed(format!("{endpoint}: {e}")))
    }

    /// What discovery says of `issuer`, read once.
    async fn discovered(&self, issuer: &str) -> Result<Discovered, String> {
        if let Some(found) = self.discovered.lock().get(issuer) {
            return Ok(found.clone());
        }
        let found = self.discover(issuer).await?;
        self.discovered.lock().insert(issuer.to_owned(), found.clone());
        Ok(found)
    }

    /// The issuer's endpoints: RFC 8414 metadata first, then OpenID Connect Discovery; the
    /// document must name the same issuer (a mix-up defence both specify).
    async fn discover(&self, issuer: &str) -> Result<Discovered, String> {
        let base = issuer.trim_end_matches('/');
        let (origin, path) =
            crate::split_origin(base).ok_or_else(|| format!("{issuer} is not a URL"))?;
        let candidates = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{base}/.well-known/openid-configuration"),
        ];
        let mut problems = Vec::new();
        for url in candidates {
            match self.get_json(&url).await {
                Ok(document) => {
                    if document["issuer"].as_str().map(|i| i.trim_end_matches('/')) != Some(base) {
                        problems.push(format!("{url} names issuer {}", document["issuer"]));
                        continue;
                    }
                    let jwks_uri = document["jwks_uri"]
                        .as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("{url} names no jwks_uri"))?;
                    let introspection =
                        document["introspection_endpoint"].as_str().map(str::to_owned);
                    return Ok(Discovered { jwks_uri, introspection });
                }
                Err(problem) => problems.push(problem),
            }
        }
        Err(problems.join("; "))
    }

    async fn get_json(&self, url: &str) -> Result<serde_json::Value, String> {
        let answer = self.http.get(url).send().await.map_err(|e| format!("{url}: {e}"))?;
        if !answer.status().is_success() {
            return Err(format!("{url}: {}", answer.status()));
        }
        answer.json().await.map_err(|e| format!("{url}: {e}"))
    }
}

/// `application/x-www-form-urlencoded` of `pairs` (also a URL's query).
pub fn url_form(pairs: &[(&str, &str)]) -> String {
    let encode = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    pairs.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect::<Vec<_>>().join("&")
}
