//! The configuration reference: every key of [`Config`] with its `RAMEN_*` variable, its
//! default and what it does. `docs/configuration.md` holds [`markdown_table`]'s output; a test
//! fails when the two differ, or when a key has no description, so the page cannot drift from
//! the model. Regenerate it with `cargo run -q -p ramen-config --example config-reference`.

use figment::providers::Serialized;
use figment::value::Value;
use figment::{Figment, Provider};

use crate::Config;

/// One configuration key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    /// The environment variable that sets it (the runbook's flat alias where there is one).
    pub env: String,
    /// The dotted key in `ramen.toml`.
    pub key: String,
    /// The built-in default, rendered for the page (`—` for empty).
    pub default: String,
    pub about: &'static str,
}

/// Every leaf key of the model, sorted by key.
pub fn variables() -> Vec<Variable> {
    let figment = Figment::from(Serialized::defaults(Config::default()));
    let mut leaves = Vec::new();
    if let Ok(data) = figment.data() {
        for dict in data.values() {
            for (key, value) in dict {
                flatten(key, value, &mut leaves);
            }
        }
    }
    leaves
        .into_iter()
        .map(|(key, default)| Variable {
            env: env_name(&key),
            default: if key == "data_dir" { DATA_DIR_DEFAULT.to_owned() } else { default },
            about: about(&key).unwrap_or(""),
            key,
        })
        .collect()
}

/// The page's table.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| variable | `ramen.toml` key | default | what it does |\n|---|---|---|---|\n",
    );
    for v in variables() {
        out.push_str(&format!("| `{}` | `{}` | {} | {} |\n", v.env, v.key, v.default, v.about));
    }
    out
}

/// Keys described in [`ABOUT`] that are not in the model (a renamed or removed field).
pub fn stale_descriptions() -> Vec<&'static str> {
    let keys: Vec<String> = variables().into_iter().map(|v| v.key).collect();
    ABOUT.iter().map(|(k, _)| *k).filter(|k| !keys.iter().any(|key| key == k)).collect()
}

// The default depends on the environment of whoever renders it.
const DATA_DIR_DEFAULT: &str = "`$XDG_DATA_HOME/ramen`, else `~/.local/share/ramen`";

fn env_name(key: &str) -> String {
    let alias = crate::ALIASES.iter().find(|(_, nested)| *nested == key).map(|(flat, _)| *flat);
    let name = alias.map_or_else(|| key.replace('.', "__"), str::to_owned);
    format!("RAMEN_{}", name.to_ascii_uppercase())
}

fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Dict(_, dict) if !dict.is_empty() => {
            for (key, value) in dict {
                flatten(&format!("{prefix}.{key}"), value, out);
            }
        }
        other => out.push((prefix.to_owned(), render(other))),
    }
}

fn render(value: &Value) -> String {
    match value {
        Value::String(_, s) if s.is_empty() => "—".to_owned(),
        Value::String(_, s) => format!("`{s}`"),
        Value::Char(_, c) => format!("`{c}`"),
        Value::Bool(_, b) => format!("`{b}`"),
        Value::Num(_, n) => match (n.to_u128(), n.to_i128(), n.to_f64()) {
            (Some(u), _, _) => format!("`{u}`"),
            (None, Some(i), _) => format!("`{i}`"),
            (None, None, Some(f)) => format!("`{f}`"),
            (None, None, None) => "—".to_owned(),
        },
        Value::Empty(..) => "—".to_owned(),
        Value::Dict(..) => "none".to_owned(),
        Value::Array(_, items) if items.is_empty() => "none".to_owned(),
        Value::Array(_, items) => {
            let items: Vec<String> =
                items.iter().map(render).map(|s| s.trim_matches('`').to_owned()).collect();
            format!("`{}`", items.join(", "))
        }
    }
}

fn about(key: &str) -> Option<&'static str> {
    ABOUT.iter().find(|(k, _)| *k == key).map(|(_, about)| *about)
}

/// What each key does. Kept beside the model; the test names any key left out.
const ABOUT: &[(&str, &str)] = &[
    ("auth.access_ttl", "Lifetime of an access token (at least 10s)"),
    (
        "auth.bootstrap_admin_email",
        "Email of the super admin created on the first start of an empty user collection (the one-time password is logged once)",
    ),
    (
        "auth.jwt_previous_secret",
        "The previous signing key, still accepted while tokens signed with it expire (a rotation)",
    ),
    (
        "auth.jwt_secret",
        "HS256 key of access tokens and service tickets, at least 32 bytes; required in cloud mode, generated into the data dir locally",
    ),
    ("auth.refresh_ttl", "Lifetime of a refresh token (a signed-in session)"),
    (
        "auth.secrets_key",
        "AES-256-GCM key sealing group secrets: 32 bytes, base64; required in cloud mode, generated into the data dir locally",
    ),
    (
        "auth.secrets_previous_key",
        "The previous sealing key, opening values not yet resealed (`ramen admin reseal`)",
    ),
    (
        "data_dir",
        "Local state: embedded store, blob directory, the supervised NATS's store, generated keys, local workers' directories",
    ),
    (
        "drain.mode",
        "On SIGTERM: `complete` finishes in-flight work (up to the timeout), `interrupt` stops it and hands it back",
    ),
    (
        "calls.retention",
        "How long call records (every `tools/call`, `resources/read`, `prompts/get` a node answered) are kept. A change applies when auth restarts, to records already stored too (MongoDB: the TTL index is changed in place, or rebuilt where the user lacks `dbAdmin`)",
    ),
    (
        "deploy.review_timeout",
        "How long a deploy whose tool surface changed waits for a group admin's review before it expires as a rejection",
    ),
    ("drain.timeout", "Ceiling on a `complete` drain; keep the pods' grace period above it"),
    (
        "drain.linger",
        "Workers: after the drain, how long a node keeps answering while clients still hold connections to it (it stops once none is open); on a cloud zone, at least the load balancer's time to see a pod's readiness fail",
    ),
    (
        "endpoints.auth",
        "gRPC address of auth as the other services reach it; empty = this host's `listen.auth`",
    ),
    ("endpoints.deployer", "gRPC address of the deployer; empty = `listen.deployer`"),
    ("endpoints.rebalancer", "gRPC address of the rebalancer; empty = `listen.rebalancer`"),
    ("endpoints.zone_manager", "gRPC address of the zone-manager; empty = `listen.zone_manager`"),
    (
        "gateway.secure_cookies",
        "Session cookies carry `Secure`; unset = on in cloud mode, off locally",
    ),
    (
        "gateway.trusted_proxies",
        "Comma-separated CIDRs of proxies whose `X-Forwarded-For` the gateway believes for the client address",
    ),
    (
        "mcp_auth.default_mode",
        "How MCP clients authenticate on environments that do not say: `keys`, `oauth` or `both`; empty = `keys`",
    ),
    (
        "mcp_auth.issuers",
        "Comma-separated OAuth issuer URLs whose access tokens count on environments naming none",
    ),
    (
        "mcp_auth.public_url",
        "The URL MCP clients reach the edge at; resources are `<public_url>/mcp/<group>/<environment>`; empty = `http://` + `listen.api`",
    ),
    (
        "mcp_auth.scopes",
        "Comma-separated scopes advertised (a token needs one) on environments naming none",
    ),
    (
        "sso.issuer",
        "People sign in with this OpenID provider (the console and `ramen login --sso`); empty = no single sign-on",
    ),
    ("sso.client_id", "ramen's client at the provider"),
    (
        "sso.client_secret",
        "The client's secret (`client_secret_basic`); empty = a public client, PKCE alone",
    ),
    ("sso.scopes", "Comma-separated scopes asked for; `openid` is always added"),
    ("sso.display_name", "The console's button says \"Sign in with <display_name>\""),
    (
        "sso.public_url",
        "The URL people reach the console at; the provider's redirect URI is `<public_url>/api/auth/sso/callback`; empty = `http://` + `listen.api`",
    ),
    ("sso.groups_claim", "The ID-token / userinfo claim listing the person's groups"),
    (
        "sso.super_admin_groups",
        "Comma-separated provider groups whose members are super admins, granted and taken away at each sign-in",
    ),
    (
        "sso.memberships",
        "Comma-separated `<provider group>=<ramen group>:<admin|member>` memberships given (and taken back) at each sign-in",
    ),
    (
        "sso.trust_email",
        "Link a first sign-in to the account of the same email even without `email_verified` (Entra ID)",
    ),
    (
        "sso.password_sign_in",
        "`false` = local passwords sign no one in: single sign-on only (needs `sso.issuer`)",
    ),
    (
        "kubernetes.aws_endpoint",
        "IAM, ELBv2 and WAFv2 endpoint of AWS zones' cloud resources; empty = AWS (or `AWS_ENDPOINT_URL`)",
    ),
    ("kubernetes.bind_pod_ip", "Workers bind the pod IP rather than every address"),
    (
        "kubernetes.gcp_anonymous",
        "Send no credentials to `kubernetes.gcp_endpoint` (a local stand-in); otherwise Application Default Credentials",
    ),
    (
        "kubernetes.gcp_endpoint",
        "Compute, IAM and Resource Manager endpoint of GCP zones' cloud resources; empty = Google's APIs",
    ),
    (
        "kubernetes.clusters",
        "Clusters by name (`[kubernetes.clusters.<name>]` tables in `ramen.toml`: provider, region, access, …; see the operator guide)",
    ),
    (
        "kubernetes.control_plane_namespace",
        "Namespace of the control plane: the only source allowed to a worker's admin and gRPC ports",
    ),
    (
        "kubernetes.egress_cidrs",
        "Where workers may connect beyond DNS and the bus (the blob store, what the group's code calls)",
    ),
    ("kubernetes.egress_ports", "Ports of `egress_cidrs` workers may reach"),
    (
        "kubernetes.hpa_in_flight_metric",
        "Scale the stable track on `ramen_mcp_in_flight` (needs a custom-metrics adapter); false = on CPU",
    ),
    ("kubernetes.image_pull_policy", "`IfNotPresent`, `Always` or `Never` for the worker image"),
    ("kubernetes.nats_url", "The bus as workers reach it (load reports); empty = `nats.url`"),
    (
        "kubernetes.pip_args",
        "Extra `pip install` arguments of the environment builder pod (an index URL)",
    ),
    (
        "kubernetes.poll_interval",
        "How often a rollout or teardown re-reads the cluster while it waits",
    ),
    ("kubernetes.python", "The worker image's interpreter"),
    (
        "kubernetes.route_sync_interval",
        "How often cloud placements' load-balancer targets are re-synced with their pods (pods replaced outside a rollout); 0s = only at rollouts",
    ),
    (
        "kubernetes.site_packages",
        "Directories of the worker image every environment sees (a preinstalled MCP SDK)",
    ),
    (
        "kubernetes.trusted_proxies",
        "Load-balancer proxies whose `X-Forwarded-For` the nodes believe",
    ),
    (
        "kubernetes.worker_image",
        "The worker image: the Rust node and the Python runtime (`deploy/worker.Dockerfile`)",
    ),
    (
        "listen.admin",
        "`/healthz`, `/readyz` and `/metrics` of the process; never expose it publicly",
    ),
    ("listen.api", "The api-gateway: REST API, console and the MCP edge"),
    ("listen.auth", "auth's gRPC"),
    ("listen.deployer", "The deployer's gRPC"),
    ("listen.rebalancer", "The rebalancer's gRPC"),
    ("listen.zone_manager", "The zone-manager's gRPC"),
    ("log.format", "`pretty` or `json` (one object per line)"),
    (
        "log.level",
        "`error`, `warn`, `info`, `debug` or `trace`, or a filter (`info,ramen_deployer=debug`); `RUST_LOG` wins",
    ),
    (
        "mode",
        "`local` (`ramen up`: embedded adapters allowed, keys generated) or `cloud` (every external dependency and key required)",
    ),
    ("mongo.db", "The MongoDB database of every collection"),
    (
        "mongo.uri",
        "`mongodb://…` (with `?replicaSet=`); unset = the embedded store in the data dir (local mode only)",
    ),
    (
        "nats.ack_wait",
        "How long a claimed deploy may go without a heartbeat before JetStream redelivers it",
    ),
    (
        "nats.binary",
        "`nats-server` for `ramen up`'s supervised child; empty = `PATH`, then a copy installed into the data dir",
    ),
    (
        "nats.credentials",
        "This process's NATS user: a `.creds` file path or its content (`ramen nats-auth init` writes one per service); required in cloud mode unless `nats.url` carries a user and password; `ramen up` generates its own",
    ),
    ("nats.dlq_max_age", "How long dead-lettered deploy work is kept"),
    ("nats.dlq_stream", "The dead-letter stream of deploy work"),
    ("nats.events_stream", "The stream of domain events (deploys, keys, groups, zones)"),
    ("nats.kv_bucket", "The KV bucket of job leases"),
    (
        "nats.max_ack_pending",
        "Fleet-wide ceiling on deploy jobs delivered and not yet acknowledged",
    ),
    ("nats.max_age", "How long undelivered deploy work is kept"),
    ("nats.max_deliver", "Deliveries of a deploy job before it is dead-lettered"),
    ("nats.max_payload", "Largest message the streams accept, in bytes"),
    (
        "nats.signing_key",
        "The account's node signing key (nkey seed `SA…`, or the path of `node-signing.nk` from `ramen nats-auth init`): the zone-manager mints each placement's load-report user with it; required for the zone-manager in cloud mode with `nats.credentials`",
    ),
    ("nats.stream", "The work stream of deploy jobs"),
    (
        "nats.url",
        "The JetStream server (`nats://host:4222`); required in cloud mode, unset locally = `ramen up` runs its own",
    ),
    ("rebalancer.aws.endpoint", "ELBv2 endpoint; empty = AWS (or `AWS_ENDPOINT_URL`)"),
    (
        "rebalancer.aws.region",
        "Region of the target groups; empty = the zone's region without its letter",
    ),
    ("rebalancer.forget_after", "How long a silent node stays in a load cell's breakdown"),
    (
        "rebalancer.gcp.anonymous",
        "Send no credentials (a local stand-in); otherwise Application Default Credentials",
    ),
    ("rebalancer.gcp.endpoint", "Compute API endpoint; empty = `https://compute.googleapis.com`"),
    ("rebalancer.gcp.project", "The project of the backend services the weights go to"),
    ("rebalancer.lease_ttl", "Lease bounding how long a dead scheduler holder blocks a takeover"),
    (
        "rebalancer.liveness_intervals",
        "Report intervals without a report after which a node counts as down",
    ),
    (
        "rebalancer.placement_refresh",
        "How often zones and placements are re-read from the zone-manager",
    ),
    (
        "rebalancer.recompute_interval",
        "How often every load cell is recomputed (and the autoscaler evaluated)",
    ),
    ("rebalancer.report_interval", "How often nodes report their load"),
    (
        "rebalancer.retry_deadline",
        "How long a rebalance the load balancer has not applied keeps being retried",
    ),
    ("rebalancer.retry_interval", "First pause between background retries (doubles up to 30 s)"),
    (
        "rebalancer.scale_down_after",
        "Sustained `low` before the autoscaler removes a stable worker",
    ),
    (
        "rebalancer.scale_timeout",
        "How long one autoscaler step may wait for the workers to be ready",
    ),
    ("rebalancer.scale_up_after", "Sustained `high` before the autoscaler adds a stable worker"),
    (
        "rebalancer.settings_refresh",
        "How often the Config page's settings are re-read (besides their change event)",
    ),
    (
        "rebalancer.weight_floor_permille",
        "Lowest weight (‰) a rebalance gives any zone or worker, so none is cut off",
    ),
    ("redis.master_name", "Sentinel master name; required with `sentinel_addrs`"),
    ("redis.password", "Password of Redis / Valkey"),
    ("redis.sentinel_addrs", "Comma-separated `host:port` Sentinels; wins over `url`"),
    ("redis.sentinel_password", "Password of the Sentinels; empty = `password`"),
    (
        "redis.timeout",
        "Bound on every shared-state call, so an outage degrades (logins, rate limits) instead of blocking",
    ),
    (
        "redis.url",
        "`redis://[:pass@]host:port[/db]` of the replicas' shared state; unset = in memory (one replica)",
    ),
    (
        "s3.bucket",
        "The bucket of snapshots and built environments; unset = the data dir's blob directory (local mode only)",
    ),
    (
        "s3.endpoint",
        "An S3-compatible endpoint (MinIO); empty = AWS. Credentials come from the AWS default chain",
    ),
    ("s3.force_path_style", "Path-style addressing, which most S3-compatible servers need"),
    ("s3.region", "The bucket's region"),
    ("zone.max_worker_count", "Largest worker count a placement may ask for"),
    (
        "zone.memory_limits",
        "Apply each size's memory limit to local workers (`prlimit --as`) where available",
    ),
    (
        "zone.pip_args",
        "Extra `pip install` arguments of local environment builds (an index URL, `--find-links`)",
    ),
    ("zone.python", "Interpreter local workers' environments are created from"),
    (
        "zone.restart_timeout",
        "How long a restarted or scaled local worker may take to become ready",
    ),
    (
        "zone.sandbox",
        "`on`: local workers confine their group's code (Landlock; one group per host where the kernel cannot); `off`: unconfined",
    ),
    (
        "zone.site_packages",
        "Directories every local worker's environment sees (a preinstalled MCP SDK)",
    ),
    (
        "zone.teardown_retention",
        "How long a finished teardown stays visible before its record is removed",
    ),
    (
        "zone.trusted_proxies",
        "Proxies (the local MCP edge) whose `X-Forwarded-For` local workers believe",
    ),
    (
        "zone.venv_without_pip",
        "Create local environments without pip (fast); only when `site_packages` provide it",
    ),
    ("zone.worker_binary", "Binary started for each local worker; empty = the running `ramen`"),
];
