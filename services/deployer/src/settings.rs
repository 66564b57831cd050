//! The deployer's knobs, derived from the shared configuration (`nats.*`, `drain.*`,
//! `zone.restart_timeout`); tests tighten them through [`DeployerSettings`] directly.

use std::path::PathBuf;
use std::time::Duration;

use ramen_config::{Config, DrainMode, Mode};

#[derive(Clone, Debug)]
pub struct DeployerSettings {
    pub local_mode: bool,
    /// Mirrors, askpass helper and scratch space.
    pub cache_dir: PathBuf,
    /// Jobs one deployer process runs at once (the fleet ceiling is `max_ack_pending`).
    pub jobs_per_process: usize,
    /// Zones of one job deployed at once.
    pub zone_parallelism: usize,
    pub ack_wait: Duration,
    pub max_deliver: i64,
    pub max_ack_pending: i64,
    /// The KV lease TTL; at most the ack-wait, so a dead holder's lease is gone by the time
    /// its work item is redelivered.
    pub lease_ttl: Duration,
    /// Lease refresh + `InProgress`, a third of the shorter of lease TTL and ack-wait.
    pub heartbeat: Duration,
    /// Redelivery delay after a retryable failure.
    pub retry_delay: Duration,
    pub rollout_timeout: Duration,
    pub reload_timeout: Duration,
    pub smoke_timeout: Duration,
    /// How long a surface review waits for a decision before it expires as a rejection.
    pub review_timeout: Duration,
    pub git_timeout: Duration,
    pub sweep_interval: Duration,
    pub drain_mode: DrainMode,
    /// `complete` drain: how long a held job may still run before it is checkpointed and handed
    /// back; a little under the process's drain timeout so the checkpoint fits inside it.
    pub drain_cap: Duration,
    /// 32-byte key the per-job smoke keys are derived from (the secrets key).
    pub smoke_secret: Vec<u8>,
    /// GitHub's REST API, for App installation tokens (GitHub Enterprise: its `/api/v3`).
    pub github_api_url: String,
    /// Deploy artifacts (snapshots, environments) of a job this recent are kept whatever its
    /// state; see `artifacts.rs`.
    pub artifact_grace: Duration,
    /// Successful deploys per environment whose artifacts are kept (live + rollback targets).
    pub keep_successes: usize,
    /// How MCP clients authenticate where an environment does not say, and the public URL.
    pub mcp_auth: crate::mcp_auth::McpAuthDefaults,
}

impl DeployerSettings {
    pub fn from_config(config: &Config) -> Self {
        let ack_wait = config.nats.ack_wait.max(Duration::from_secs(2));
        let lease_ttl = ack_wait.min(Duration::from_secs(30));
        let drain = config.drain.timeout;
        let margin = (drain / 5).min(Duration::from_secs(10));
        let smoke_secret = ramen_config::decode_secrets_key(&config.auth.secrets_key)
            .map(|k| k.to_vec())
            // No key configured (a bare test config): per-process keys still work for jobs
            // this process finishes; a resumed job re-writes its config step anyway.
            .unwrap_or_else(|_| uuid::Uuid::new_v4().as_bytes().repeat(2));
        Self {
            local_mode: config.mode == Mode::Local,
            cache_dir: config.data_dir.join("deployer"),
            jobs_per_process: 4,
            zone_parallelism: 4,
            ack_wait,
            max_deliver: config.nats.max_deliver,
            max_ack_pending: config.nats.max_ack_pending,
            lease_ttl,
            heartbeat: lease_ttl.min(ack_wait) / 3,
            retry_delay: Duration::from_secs(10),
            rollout_timeout: config.zone.restart_timeout,
            reload_timeout: Duration::from_secs(600),
            smoke_timeout: Duration::from_secs(30),
            review_timeout: config.deploy.review_timeout,
            git_timeout: Duration::from_secs(300),
            sweep_interval: Duration::from_secs(15),
            drain_mode: config.drain.mode,
            drain_cap: drain.saturating_sub(margin),
            smoke_secret,
            github_api_url: "https://api.github.com".into(),
            artifact_grace: Duration::from_secs(3600),
            keep_successes: 3,
            mcp_auth: crate::mcp_auth::McpAuthDefaults::from_config(config),
        }
    }
}
