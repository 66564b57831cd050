use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Secret;

/// Where ramen runs: `local` (one machine, embedded adapters, generated keys) or `cloud`
/// (MongoDB, S3, external NATS, Redis; secrets from the environment).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Local,
    Cloud,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Pretty,
    Json,
}

/// What happens to in-flight work on SIGTERM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DrainMode {
    /// Stop taking new work, let the current work finish (bounded by the drain timeout).
    #[default]
    Complete,
    /// Cancel the current work at once (checkpointed where the work supports it).
    Interrupt,
}

/// Whether local workers confine their group's code (`ramen_sandbox`: Landlock, no
/// capabilities). `off` is an operator's explicit choice to run groups unconfined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Confine; where the kernel cannot (no Landlock, or no TCP rules), a host serves one
    /// group only.
    #[default]
    On,
    /// Run group code unconfined, and let several groups share the host anyway.
    Off,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub mode: Mode,
    /// Local mode's state: store, blobs, NATS store, generated keys, zone working dirs.
    pub data_dir: PathBuf,
    pub log: LogConfig,
    pub listen: Listen,
    pub endpoints: Endpoints,
    pub nats: NatsConfig,
    pub mongo: MongoConfig,
    pub s3: S3Config,
    pub redis: RedisConfig,
    pub auth: AuthConfig,
    pub drain: DrainConfig,
    pub deploy: DeployConfig,
    pub calls: CallsConfig,
    pub zone: ZoneConfig,
    pub gateway: GatewayConfig,
    pub mcp_auth: McpAuthConfig,
    pub sso: SsoConfig,
    pub rebalancer: RebalancerConfig,
    pub kubernetes: crate::KubernetesConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            mode: Mode::Local,
            data_dir: default_data_dir(),
            log: LogConfig::default(),
            listen: Listen::default(),
            endpoints: Endpoints::default(),
            nats: NatsConfig::default(),
            mongo: MongoConfig::default(),
            s3: S3Config::default(),
            redis: RedisConfig::default(),
            auth: AuthConfig::default(),
            drain: DrainConfig::default(),
            deploy: DeployConfig::default(),
            calls: CallsConfig::default(),
            zone: ZoneConfig::default(),
            gateway: GatewayConfig::default(),
            mcp_auth: McpAuthConfig::default(),
            sso: SsoConfig::default(),
            rebalancer: RebalancerConfig::default(),
            kubernetes: crate::KubernetesConfig::default(),
        }
    }
}

fn default_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME") {
        return PathBuf::from(dir).join("ramen");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".local/share/ramen"),
        None => PathBuf::from(".ramen"),
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct LogConfig {
    pub format: LogFormat,
    /// An `EnvFilter` directive; `RUST_LOG` wins when set.
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self { format: LogFormat::Pretty, level: "info".into() }
    }
}

/// The addresses each service listens on. In `ramen up` every service runs in one process,
/// so each needs its own port; in cloud mode a pod uses the one of its service.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Listen {
    /// api-gateway: REST API, console and the MCP edge (`/mcp/...`).
    pub api: SocketAddr,
    pub auth: SocketAddr,
    pub deployer: SocketAddr,
    pub zone_manager: SocketAddr,
    pub rebalancer: SocketAddr,
    /// `/healthz`, `/readyz` and `/metrics` of the process (never exposed publicly).
    pub admin: SocketAddr,
}

impl Default for Listen {
    fn default() -> Self {
        let at = |port| SocketAddr::from(([127, 0, 0, 1], port));
        Self {
            api: at(8080),
            auth: at(7101),
            deployer: at(7102),
            zone_manager: at(7103),
            rebalancer: at(7104),
            admin: at(9090),
        }
    }
}

/// Where services reach each other's gRPC APIs. Empty = derived from [`Listen`] (one host).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Endpoints {
    pub auth: String,
    pub deployer: String,
    pub zone_manager: String,
    pub rebalancer: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct NatsConfig {
    /// External JetStream server. Unset in local mode = ramen starts its own `nats-server`.
    pub url: String,
    /// This process's NATS user: a `.creds` file path, or the file's content.
    pub credentials: Secret,
    /// The node signing key (an nkey seed `SA…`, or a file holding it) the zone-manager mints
    /// node users with.
    pub signing_key: Secret,
    /// `nats-server` binary for the supervised child; empty = `PATH`, then the data dir's venv.
    pub binary: String,
    pub stream: String,
    pub kv_bucket: String,
    pub dlq_stream: String,
    pub events_stream: String,
    /// Fleet-wide ceiling on delivered-but-unacked jobs on the durable consumer.
    pub max_ack_pending: i64,
    /// Deliveries before a job is parked on the dead-letter stream.
    pub max_deliver: i64,
    #[serde(with = "humantime_serde")]
    pub ack_wait: Duration,
    #[serde(with = "humantime_serde")]
    pub max_age: Duration,
    #[serde(with = "humantime_serde")]
    pub dlq_max_age: Duration,
    pub max_payload: i32,
}

impl NatsConfig {
    /// Whether connecting authenticates: a NATS user's credentials, or a user and password
    /// in the URL (`nats://user:pass@host:4222`).
    pub fn has_credentials(&self) -> bool {
        !self.credentials.is_empty() || self.url.split(',').any(|url| userinfo_end(url).is_some())
    }

    /// The URL without a user and password, for processes that must not see them (nodes).
    pub fn url_without_userinfo(&self) -> String {
        let strip = |url: &str| match userinfo_end(url) {
            Some(at) => {
                let scheme = url.find("://").map_or(0, |i| i + 3);
                format!("{}{}", &url[..scheme], &url[at + 1..])
            }
            None => url.to_owned(),
        };
        self.url.split(',').map(strip).collect::<Vec<_>>().join(",")
    }
}

/// The position of the `@` ending a URL's user info, if it has one.
fn userinfo_end(url: &str) -> Option<usize> {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..].find('/').map_or(url.len(), |i| start + i);
    url[start..end].rfind('@').map(|at| start + at)
}

impl Default for NatsConfig {
    fn default() -> Self {
        Self {
            url: String::new(),
            credentials: Secret::default(),
            signing_key: Secret::default(),
            binary: String::new(),
            stream: "RAMEN_JOBS".into(),
            kv_bucket: "ramen-job-locks".into(),
            dlq_stream: "RAMEN_JOBS_DLQ".into(),
            events_stream: "RAMEN_EVENTS".into(),
            max_ack_pending: 64,
            max_deliver: 8,
            ack_wait: Duration::from_secs(60),
            max_age: Duration::from_secs(7 * 24 * 3600),
            dlq_max_age: Duration::from_secs(30 * 24 * 3600),
            max_payload: 1024 * 1024,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct MongoConfig {
    /// Unset = the embedded store in the data directory (local mode only).
    pub uri: Secret,
    pub db: String,
}

impl Default for MongoConfig {
    fn default() -> Self {
        Self { uri: Secret::default(), db: "ramen".into() }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct S3Config {
    /// Unset bucket = a local directory in the data directory (local mode only).
    pub bucket: String,
    /// S3-compatible endpoint (MinIO, moto); empty = AWS.
    pub endpoint: String,
    pub region: String,
    /// Path-style addressing, needed by most S3-compatible servers.
    pub force_path_style: bool,
}

impl Default for S3Config {
    fn default() -> Self {
        Self {
            bucket: String::new(),
            endpoint: String::new(),
            region: "us-east-1".into(),
            force_path_style: true,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct RedisConfig {
    /// `redis://[:pass@]host:port[/db]`; unset (and no sentinels) = in-memory state.
    pub url: Secret,
    /// Comma-separated `host:port` Sentinels; wins over `url` when set.
    pub sentinel_addrs: String,
    pub master_name: String,
    pub password: Secret,
    /// Defaults to `password`.
    pub sentinel_password: Secret,
    /// Bound on every call, so an outage degrades instead of blocking.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self {
            url: Secret::default(),
            sentinel_addrs: String::new(),
            master_name: String::new(),
            password: Secret::default(),
            sentinel_password: Secret::default(),
            timeout: Duration::from_millis(250),
        }
    }
}

impl RedisConfig {
    pub fn sentinels(&self) -> Vec<String> {
        self.sentinel_addrs
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    pub fn is_configured(&self) -> bool {
        !self.url.is_empty() || !self.sentinels().is_empty()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct AuthConfig {
    /// HS256 key for access tokens (at least 32 bytes). Local mode generates one.
    pub jwt_secret: Secret,
    /// Previous signing key, still accepted for verification during a rotation.
    pub jwt_previous_secret: Secret,
    /// AES-256-GCM key for sealed secrets: exactly 32 bytes, base64. Local mode generates one.
    pub secrets_key: Secret,
    /// Previous sealing key (for `ramen admin reseal` after a rotation).
    pub secrets_previous_key: Secret,
    /// Creates a super admin on the first boot of an empty user collection.
    pub bootstrap_admin_email: String,
    #[serde(with = "humantime_serde")]
    pub access_ttl: Duration,
    #[serde(with = "humantime_serde")]
    pub refresh_ttl: Duration,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            jwt_secret: Secret::default(),
            jwt_previous_secret: Secret::default(),
            secrets_key: Secret::default(),
            secrets_previous_key: Secret::default(),
            bootstrap_admin_email: String::new(),
            access_ttl: Duration::from_secs(15 * 60),
            refresh_ttl: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct DrainConfig {
    pub mode: DrainMode,
    /// Ceiling on a `complete` drain; past it, remaining work is cancelled or handed back.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// Workers: after the drain, how long a node keeps answering while its clients still hold
    /// connections to it (it stops once none is open). The edge closes its own within 2 s; a
    /// cloud load balancer may go on routing to a pod until it sees readiness fail.
    #[serde(with = "humantime_serde")]
    pub linger: Duration,
}

impl Default for DrainConfig {
    fn default() -> Self {
        Self {
            mode: DrainMode::Complete,
            timeout: Duration::from_secs(30),
            linger: Duration::from_secs(3),
        }
    }
}

/// The api-gateway's HTTP edge as clients reach it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct GatewayConfig {
    /// Session cookies carry `Secure` (clients reach the gateway over TLS, usually terminated by
    /// the load balancer). Unset = on in cloud mode, off locally (plain http://127.0.0.1).
    pub secure_cookies: Option<bool>,
    /// Comma-separated CIDRs of proxies (the load balancer) whose `X-Forwarded-For` is believed
    /// for the client address; empty = the socket peer is the client.
    pub trusted_proxies: String,
}

impl GatewayConfig {
    pub fn trusted_proxies(&self) -> Vec<String> {
        self.trusted_proxies
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// How MCP clients authenticate where an environment does not say (the platform default),
/// and the public URL the MCP endpoints' OAuth resource identifiers are built on. Read by the
/// deployer (which resolves each environment's setting for its nodes) and the api-gateway.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct McpAuthConfig {
    /// `keys`, `oauth` or `both`; empty = `keys`.
    pub default_mode: String,
    /// Comma-separated issuer URLs whose access tokens count on environments naming none.
    pub issuers: String,
    /// Comma-separated scopes advertised (and required, one of them) on environments naming
    /// none.
    pub scopes: String,
    /// The URL MCP clients reach the edge at (`https://mcp.example.com`): an environment's
    /// resource is `<public_url>/mcp/<group>/<environment>`. Empty = `http://` + `listen.api`
    /// (an unspecified address as 127.0.0.1).
    pub public_url: String,
}

fn comma_list(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

impl McpAuthConfig {
    pub fn issuers(&self) -> Vec<String> {
        comma_list(&self.issuers)
    }

    pub fn scopes(&self) -> Vec<String> {
        comma_list(&self.scopes)
    }

    /// The edge's public URL without a trailing slash.
    pub fn public_url(&self, listen_api: SocketAddr) -> String {
        if !self.public_url.trim().is_empty() {
            return self.public_url.trim().trim_end_matches('/').to_owned();
        }
        let ip = if listen_api.ip().is_unspecified() {
            std::net::IpAddr::from([127, 0, 0, 1])
        } else {
            listen_api.ip()
        };
        format!("http://{}", SocketAddr::new(ip, listen_api.port()))
    }
}

/// People signing in with the organisation's OpenID provider (the console and
/// `ramen login --sso`), the mapping of its groups to ramen's roles, and whether local
/// passwords still sign anyone in. Read by auth (which runs the flow) and the api-gateway.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct SsoConfig {
    /// The provider's issuer URL (discovery at `<issuer>/.well-known/openid-configuration`);
    /// empty = no single sign-on.
    pub issuer: String,
    /// ramen's client at the provider.
    pub client_id: String,
    /// Its secret (`client_secret_basic`); empty = a public client, PKCE alone.
    pub client_secret: Secret,
    /// Comma-separated scopes asked for; `openid` is always added.
    pub scopes: String,
    /// The console's button says "Sign in with <display_name>".
    pub display_name: String,
    /// The URL people reach the console and API at; the redirect URI registered at the
    /// provider is `<public_url>/api/auth/sso/callback`. Empty = `http://` + `listen.api`.
    pub public_url: String,
    /// The ID-token / userinfo claim listing the person's groups.
    pub groups_claim: String,
    /// Comma-separated provider groups whose members are super admins (granted and taken
    /// away at each single sign-on; a super admin made by hand stays one).
    pub super_admin_groups: String,
    /// Comma-separated `<provider group>=<ramen group>:<admin|member>`: memberships a person
    /// is given at each single sign-on, and loses (those it gave) when no longer matched.
    pub memberships: String,
    /// Link a first single sign-on to the existing account of the same email even when the
    /// provider does not say `email_verified` (Entra ID never does).
    pub trust_email: bool,
    /// `false` = local passwords sign no one in: single sign-on only.
    pub password_sign_in: bool,
}

impl Default for SsoConfig {
    fn default() -> Self {
        Self {
            issuer: String::new(),
            client_id: String::new(),
            client_secret: Secret::default(),
            scopes: "openid,email,profile".into(),
            display_name: String::new(),
            public_url: String::new(),
            groups_claim: "groups".into(),
            super_admin_groups: String::new(),
            memberships: String::new(),
            trust_email: false,
            password_sign_in: true,
        }
    }
}

/// One entry of [`SsoConfig::memberships`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SsoMembership {
    pub provider_group: String,
    pub group: String,
    /// `admin` or `member`.
    pub role: String,
}

impl SsoConfig {
    pub fn enabled(&self) -> bool {
        !self.issuer.trim().is_empty()
    }

    pub fn scopes(&self) -> Vec<String> {
        comma_list(&self.scopes)
    }

    pub fn super_admin_groups(&self) -> Vec<String> {
        comma_list(&self.super_admin_groups)
    }

    /// The button's words.
    pub fn button(&self) -> String {
        match self.display_name.trim() {
            "" => "Sign in with single sign-on".into(),
            name => format!("Sign in with {name}"),
        }
    }

    /// The redirect URI: `<public_url>/api/auth/sso/callback`.
    pub fn redirect_uri(&self, listen_api: SocketAddr) -> String {
        let public = McpAuthConfig { public_url: self.public_url.clone(), ..Default::default() };
        format!("{}/api/auth/sso/callback", public.public_url(listen_api))
    }

    /// The parsed [`SsoConfig::memberships`]; the error names the entry.
    pub fn memberships(&self) -> Result<Vec<SsoMembership>, String> {
        comma_list(&self.memberships)
            .into_iter()
            .map(|entry| {
                let parsed = entry.split_once('=').and_then(|(provider_group, target)| {
                    let (group, role) = target.rsplit_once(':')?;
                    let (provider_group, group, role) =
                        (provider_group.trim(), group.trim(), role.trim());
                    let ok = !provider_group.is_empty()
                        && !group.is_empty()
                        && matches!(role, "admin" | "member");
                    ok.then(|| SsoMembership {
                        provider_group: provider_group.into(),
                        group: group.into(),
                        role: role.into(),
                    })
                });
                parsed.ok_or_else(|| {
                    format!("{entry:?} is not `<provider group>=<ramen group>:<admin|member>`")
                })
            })
            .collect()
    }
}

/// The deploy pipeline's own settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct DeployConfig {
    /// How long a surface review waits for a group admin before it expires as a rejection.
    #[serde(with = "humantime_serde")]
    pub review_timeout: Duration,
}

impl Default for DeployConfig {
    fn default() -> Self {
        Self { review_timeout: Duration::from_secs(24 * 3600) }
    }
}

/// Call records (every MCP call a node answered; stored by auth).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct CallsConfig {
    /// How long a call record is kept (a TTL index in MongoDB, a purge in the embedded store).
    #[serde(with = "humantime_serde")]
    pub retention: Duration,
}

impl Default for CallsConfig {
    fn default() -> Self {
        Self { retention: Duration::from_secs(30 * 24 * 3600) }
    }
}

/// The zone-manager's local zone provider: how it runs each worker as a child process.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct ZoneConfig {
    /// Binary started for each local worker: `<binary> worker --config <node.toml>`, or
    /// `<binary> --config <node.toml>` when it is `ramen-runner`. Empty = the current executable.
    pub worker_binary: String,
    /// Interpreter each worker's virtualenv is created from.
    pub python: String,
    /// Directories made visible in every worker's virtualenv (a preinstalled MCP SDK).
    pub site_packages: Vec<String>,
    /// Extra `pip install` arguments (an index URL, `--no-index --find-links ...`).
    pub pip_args: Vec<String>,
    /// Create worker virtualenvs without pip (fast); only when `site_packages` provide pip.
    pub venv_without_pip: bool,
    /// How long a restarted or scaled worker may take to become ready.
    #[serde(with = "humantime_serde")]
    pub restart_timeout: Duration,
    /// Apply each size's memory limit to local workers (`prlimit --as`) where available.
    pub memory_limits: bool,
    /// Proxies (the local MCP edge) whose `X-Forwarded-For` the workers believe.
    pub trusted_proxies: Vec<String>,
    /// Largest worker count a placement may ask for.
    pub max_worker_count: u32,
    /// How long a finished teardown stays visible before its record is removed.
    #[serde(with = "humantime_serde")]
    pub teardown_retention: Duration,
    /// Confine local workers' group code (`on`), or not (`off`).
    pub sandbox: SandboxMode,
}

impl Default for ZoneConfig {
    fn default() -> Self {
        Self {
            worker_binary: String::new(),
            python: "python3".into(),
            site_packages: Vec::new(),
            pip_args: Vec::new(),
            venv_without_pip: false,
            restart_timeout: Duration::from_secs(180),
            memory_limits: true,
            trusted_proxies: vec!["127.0.0.1/32".into(), "::1/128".into()],
            max_worker_count: 50,
            teardown_retention: Duration::from_secs(3600),
            sandbox: SandboxMode::On,
        }
    }
}

/// The rebalancer: load cells, Rebalance, the auto-rebalance scheduler and the autoscaler.
/// Whether the scheduler runs and how often are Config settings (the deployer's), not here.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct RebalancerConfig {
    /// How often nodes report their load (the runner's `load_report_interval`).
    #[serde(with = "humantime_serde")]
    pub report_interval: Duration,
    /// Report intervals without a report after which a node no longer counts (cell `down`).
    pub liveness_intervals: u32,
    /// How long a silent node stays in a cell's per-node breakdown.
    #[serde(with = "humantime_serde")]
    pub forget_after: Duration,
    /// How often every cell is recomputed (and the autoscaler evaluated).
    #[serde(with = "humantime_serde")]
    pub recompute_interval: Duration,
    /// How often zones and placements are re-read from the zone-manager.
    #[serde(with = "humantime_serde")]
    pub placement_refresh: Duration,
    /// Lowest weight (permille) a rebalance gives any target, so no zone or worker is cut off.
    pub weight_floor_permille: u32,
    /// How long a rebalance the load balancer has not applied yet keeps being retried.
    #[serde(with = "humantime_serde")]
    pub retry_deadline: Duration,
    /// First pause between background retries (doubles up to 30 s).
    #[serde(with = "humantime_serde")]
    pub retry_interval: Duration,
    /// KV lease bounding how long a dead scheduler holder blocks a takeover.
    #[serde(with = "humantime_serde")]
    pub lease_ttl: Duration,
    /// How often the Config settings are re-read (besides the `SettingsChanged` event).
    #[serde(with = "humantime_serde")]
    pub settings_refresh: Duration,
    /// Sustained `high` before the autoscaler adds a stable worker.
    #[serde(with = "humantime_serde")]
    pub scale_up_after: Duration,
    /// Sustained `low` before the autoscaler removes one.
    #[serde(with = "humantime_serde")]
    pub scale_down_after: Duration,
    /// How long one autoscaler `ScaleTrack` may wait for the workers to be ready.
    #[serde(with = "humantime_serde")]
    pub scale_timeout: Duration,
    pub aws: RebalancerAwsConfig,
    pub gcp: RebalancerGcpConfig,
}

impl Default for RebalancerConfig {
    fn default() -> Self {
        Self {
            report_interval: Duration::from_secs(2),
            liveness_intervals: 3,
            forget_after: Duration::from_secs(300),
            recompute_interval: Duration::from_secs(2),
            placement_refresh: Duration::from_secs(15),
            weight_floor_permille: 100,
            retry_deadline: Duration::from_secs(600),
            retry_interval: Duration::from_secs(2),
            lease_ttl: Duration::from_secs(15),
            settings_refresh: Duration::from_secs(60),
            scale_up_after: Duration::from_secs(60),
            scale_down_after: Duration::from_secs(600),
            scale_timeout: Duration::from_secs(180),
            aws: RebalancerAwsConfig::default(),
            gcp: RebalancerGcpConfig::default(),
        }
    }
}

/// ELBv2 (target-group weights). Credentials come from the standard AWS chain.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RebalancerAwsConfig {
    /// Empty = the zone's region without its availability-zone letter (`us-east-1a` → `us-east-1`).
    pub region: String,
    /// Empty = AWS (or `AWS_ENDPOINT_URL`); a stand-in such as moto in tests.
    pub endpoint: String,
}

/// Compute Engine backend services (capacity scaler).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RebalancerGcpConfig {
    pub project: String,
    /// Empty = `https://compute.googleapis.com`; a stand-in in tests.
    pub endpoint: String,
    /// Send no credentials (a local stand-in); otherwise Application Default Credentials.
    pub anonymous: bool,
}

impl Config {
    /// The gRPC endpoint of a service: the configured one, or this host's listen address.
    pub fn endpoint(&self, service: ServiceName) -> String {
        let (configured, listen) = match service {
            ServiceName::Auth => (&self.endpoints.auth, self.listen.auth),
            ServiceName::Deployer => (&self.endpoints.deployer, self.listen.deployer),
            ServiceName::ZoneManager => (&self.endpoints.zone_manager, self.listen.zone_manager),
            ServiceName::Rebalancer => (&self.endpoints.rebalancer, self.listen.rebalancer),
        };
        if configured.is_empty() {
            let host = if listen.ip().is_unspecified() {
                "127.0.0.1".to_owned()
            } else {
                listen.ip().to_string()
            };
            format!("http://{host}:{}", listen.port())
        } else {
            configured.clone()
        }
    }
}

/// Services that other services call over gRPC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceName {
    Auth,
    Deployer,
    ZoneManager,
    Rebalancer,
}
