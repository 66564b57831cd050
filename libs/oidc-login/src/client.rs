//! One OpenID provider, as ramen's client there.

use std::time::Duration;

use jsonwebtoken::Validation;
use ramen_oauth_resource::{ALGORITHMS, Issuers, same_issuer, url_form};
use serde_json::Value;

use crate::pkce::{challenge, random_token};

/// Clock skew allowed on an ID token's `exp`, `iat` and `nbf`.
const LEEWAY_SECONDS: u64 = 60;

/// ramen's registration at the provider.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The issuer URL; discovery is read from `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    pub client_id: String,
    /// `None` = a public client: PKCE alone proves the code's redeemer.
    pub client_secret: Option<String>,
    /// Asked for; `openid` is added when missing.
    pub scopes: Vec<String>,
    /// Where the provider sends the browser back (registered at the provider).
    pub redirect_uri: String,
    /// The claim listing the person's groups.
    pub groups_claim: String,
}

/// An authorization request on its way: the URL to send the browser to, and the secrets the
/// callback is checked with (kept by the caller, never shown to the browser but `state`).
#[derive(Clone, Debug)]
pub struct Begun {
    pub authorization_url: String,
    pub state: String,
    pub nonce: String,
    pub verifier: String,
}

/// Who signed in, from a verified ID token (and the userinfo endpoint).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    /// The issuer as discovery names it.
    pub issuer: String,
    pub subject: String,
    pub email: Option<String>,
    /// `Some(true)` only when the provider says so (`email_verified`).
    pub email_verified: bool,
    pub name: Option<String>,
    /// `None` when the provider sent no groups claim at all (Entra ID leaves it out past 200
    /// groups; Google never sends one): not the same as a person in no group.
    pub groups: Option<Vec<String>>,
}

#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The provider could not be reached, or answered what OpenID Connect does not allow.
    #[error("the identity provider {issuer}: {problem}")]
    Provider { issuer: String, problem: String },
    /// The provider refused (an OAuth `error`, at the callback or the token endpoint).
    #[error("the identity provider refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused { error: String, description: Option<String> },
    /// The ID token failed a check: nobody is signed in with it.
    #[error("the identity provider's ID token is not valid here: {0}")]
    IdToken(String),
}

#[derive(Clone, Debug)]
struct Endpoints {
    issuer: String,
    authorization: String,
    token: String,
    userinfo: Option<String>,
}

/// ramen's client at one provider. Discovery is read on first use and kept.
pub struct Client {
    config: ClientConfig,
    http: reqwest::Client,
    issuers: Issuers,
    endpoints: tokio::sync::OnceCell<Endpoints>,
}

impl Client {
    pub fn new(config: ClientConfig) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client");
        Self { config, http, issuers: Issuers::default(), endpoints: Default::default() }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    fn provider_error(&self, problem: impl Into<String>) -> OidcError {
        OidcError::Provider { issuer: self.config.issuer.clone(), problem: problem.into() }
    }

    /// The authorization request: code flow, PKCE S256, fresh state and nonce.
    pub async fn begin(&self) -> Result<Begun, OidcError> {
        let endpoints = self.endpoints().await?;
        let (state, nonce, verifier) = (random_token(), random_token(), random_token());
        let mut scopes = self.config.scopes.clone();
        if !scopes.iter().any(|s| s == "openid") {
            scopes.insert(0, "openid".into());
        }
        let query = url_form(&[
            ("response_type", "code"),
            ("client_id", &self.config.client_id),
            ("redirect_uri", &self.config.redirect_uri),
            ("scope", &scopes.join(" ")),
            ("state", &state),
            ("nonce", &nonce),
            ("code_challenge", &challenge(&verifier)),
            ("code_challenge_method", "S256"),
        ]);
        let separator = if endpoints.authorization.contains('?') { '&' } else { '?' };
        let authorization_url = format!("{}{separator}{query}", endpoints.authorization);
        Ok(Begun { authorization_url, state, nonce, verifier })
    }

    /// The callback's `iss` parameter (RFC 9207), when the provider sends one, must name this
    /// provider: a code from another provider is not redeemed here (mix-up attack).
    pub async fn check_callback_issuer(&self, iss: Option<&str>) -> Result<(), OidcError> {
        let Some(iss) = iss.filter(|i| !i.is_empty()) else { return Ok(()) };
        let endpoints = self.endpoints().await?;
        if same_issuer(iss, &endpoints.issuer) {
            Ok(())
        } else {
            Err(OidcError::IdToken(format!(
                "the callback names issuer {iss}, not {}",
                endpoints.issuer
            )))
        }
    }

    /// Redeems `code` (with the flow's PKCE `verifier`), verifies the ID token against `nonce`,
    /// and reads userinfo for what the ID token leaves out.
    pub async fn finish(
        &self,
        code: &str,
        verifier: &str,
        nonce: &str,
    ) -> Result<Identity, OidcError> {
        let endpoints = self.endpoints().await?;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.config.redirect_uri.as_str()),
            ("code_verifier", verifier),
        ];
        let mut request = self
            .http
            .post(&endpoints.token)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json");
        match &self.config.client_secret {
            Some(secret) => {
                request = request.basic_auth(
                    form_component(&self.config.client_id),
                    Some(form_component(secret)),
                )
            }
            None => form.push(("client_id", self.config.client_id.as_str())),
        }
        let answer =
            request.body(url_form(&form)).send().await.map_err(|e| {
                self.provider_error(format!("token endpoint {}: {e}", endpoints.token))
            })?;
        let status = answer.status();
        let body: Value = answer.json().await.map_err(|e| {
            self.provider_error(format!("token endpoint answered {status} and no JSON: {e}"))
        })?;
        if !status.is_success() {
            return Err(refused(&body).unwrap_or_else(|| {
                self.provider_error(format!("token endpoint answered {status}: {body}"))
            }));
        }
        let id_token = body["id_token"].as_str().ok_or_else(|| {
            self.provider_error(
                "the token endpoint answered no id_token (is `openid` among the scopes?)",
            )
        })?;
        let claims = self.verify_id_token(&endpoints, id_token, nonce).await?;
        let mut identity = self.identity(&endpoints.issuer, &claims)?;
        // Many providers put groups and email only in userinfo (OpenID Connect's default for
        // the code flow); read it when something is missing.
        if let (Some(userinfo), Some(access)) = (&endpoints.userinfo, body["access_token"].as_str())
            && (identity.email.is_none() || identity.groups.is_none() || identity.name.is_none())
        {
            let info = self.userinfo(userinfo, access).await?;
            // OpenID Connect Core §5.3.2: userinfo of another subject must not be used.
            if info["sub"].as_str() != Some(identity.subject.as_str()) {
                return Err(self.provider_error("userinfo names another subject than the ID token"));
            }
            let more = self.identity(&endpoints.issuer, &info)?;
            if identity.email.is_none() {
                identity.email = more.email;
                identity.email_verified = more.email_verified;
            }
            identity.name = identity.name.or(more.name);
            if identity.groups.is_none() {
                identity.groups = more.groups;
            }
        }
        Ok(identity)
    }

    async fn verify_id_token(
        &self,
        endpoints: &Endpoints,
        token: &str,
        nonce: &str,
    ) -> Result<Value, OidcError> {
        let invalid = |why: String| OidcError::IdToken(why);
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| invalid(format!("not a JWT: {e}")))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(invalid(format!("algorithm {:?} is not accepted", header.alg)));
        }
        let kid = header.kid.clone().ok_or_else(|| invalid("no kid in the header".into()))?;
        let (key, alg) =
            self.issuers.key(&endpoints.issuer, &kid).await.map_err(|e| invalid(e.to_string()))?;
        if alg.is_some_and(|a| a != header.alg) {
            return Err(invalid(format!("key {kid} is not for {:?}", header.alg)));
        }
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[endpoints.issuer.as_str()]);
        validation.set_audience(&[self.config.client_id.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECONDS;
        let claims = jsonwebtoken::decode::<Value>(token, &key, &validation)
            .map_err(|e| invalid(e.to_string()))?
            .claims;
        // The nonce ties the token to this browser's request (a token from another flow,
        // replayed, carries another nonce or none).
        if claims["nonce"].as_str() != Some(nonce) {
            return Err(invalid("its nonce is not this sign-in's".into()));
        }
        // OpenID Connect Core §3.1.3.7: with several audiences, `azp` must be this client.
        if claims["aud"].as_array().is_some_and(|a| a.len() > 1)
            && claims["azp"].as_str() != Some(self.config.client_id.as_str())
        {
            return Err(invalid("several audiences and azp is not this client".into()));
        }
        Ok(claims)
    }

    fn identity(&self, issuer: &str, claims: &Value) -> Result<Identity, OidcError> {
        let subject = claims["sub"]
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| OidcError::IdToken("no sub".into()))?;
        let text = |name: &str| {
            claims[name].as_str().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
        };
        // Some providers send `"true"` as a string.
        let email_verified = match &claims["email_verified"] {
            Value::Bool(b) => *b,
            Value::String(s) => s.eq_ignore_ascii_case("true"),
            _ => false,
        };
        let groups = match &claims[self.config.groups_claim.as_str()] {
            Value::Array(items) => {
                Some(items.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            }
            Value::String(one) => Some(vec![one.clone()]),
            _ => None,
        };
        Ok(Identity {
            issuer: issuer.to_owned(),
            subject: subject.to_owned(),
            email: text("email"),
            email_verified,
            name: text("name"),
            groups,
        })
    }

    async fn userinfo(&self, endpoint: &str, access_token: &str) -> Result<Value, OidcError> {
        let answer = self
            .http
            .get(endpoint)
            .bearer_auth(access_token)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| self.provider_error(format!("userinfo {endpoint}: {e}")))?;
        let status = answer.status();
        if !status.is_success() {
            return Err(self.provider_error(format!("userinfo {endpoint} answered {status}")));
        }
        // A provider may answer a signed JWT here; ramen asks for none, so JSON is expected.
        answer.json().await.map_err(|e| self.provider_error(format!("userinfo {endpoint}: {e}")))
    }

    /// Discovery, read once (a failure is not kept: the next sign-in tries again).
    async fn endpoints(&self) -> Result<Endpoints, OidcError> {
        self.endpoints.get_or_try_init(|| self.discover()).await.cloned()
    }

    async fn discover(&self) -> Result<Endpoints, OidcError> {
        let issuer = self.config.issuer.trim_end_matches('/');
        let url = format!("{issuer}/.well-known/openid-configuration");
        let answer = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(|e| self.provider_error(format!("{url}: {e}")))?;
        let status = answer.status();
        if !status.is_success() {
            return Err(self.provider_error(format!("{url} answered {status}")));
        }
        let document: Value =
            answer.json().await.map_err(|e| self.provider_error(format!("{url}: {e}")))?;
        let named = document["issuer"].as_str().unwrap_or_default();
        // OpenID Connect Discovery §4.3: the document must name the issuer it was read for.
        if !same_issuer(named, issuer) {
            return Err(self.provider_error(format!("{url} names issuer {named:?}")));
        }
        let endpoint = |name: &str| document[name].as_str().map(str::to_owned);
        Ok(Endpoints {
            issuer: named.to_owned(),
            authorization: endpoint("authorization_endpoint").ok_or_else(|| {
                self.provider_error(format!("{url} names no authorization_endpoint"))
            })?,
            token: endpoint("token_endpoint")
                .ok_or_else(|| self.provider_error(format!("{url} names no token_endpoint")))?,
            userinfo: endpoint("userinfo_endpoint"),
        })
    }
}

/// An OAuth error answer (`error`, `error_description`).
fn refused(body: &Value) -> Option<OidcError> {
    let error = body["error"].as_str()?;
    Some(OidcError::Refused {
        error: error.to_owned(),
        description: body["error_description"].as_str().map(str::to_owned),
    })
}

/// RFC 6749 §2.3.1: the client id and secret are form-encoded before HTTP Basic.
fn form_component(text: &str) -> String {
    url_form(&[("", text)]).trim_start_matches('=').to_owned()
}
