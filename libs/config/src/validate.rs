use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use rand::RngCore;

use crate::{Config, ConfigError, Mode, Secret};

/// Something a particular service cannot run without in cloud mode, beyond the base trio
/// (`RAMEN_JWT_SECRET`, `RAMEN_SECRETS_KEY`, `RAMEN_NATS_URL`) every cloud process needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requirement {
    Mongo,
    S3,
    /// The node signing key (the zone-manager mints node users with it).
    NatsSigningKey,
}

pub const MIN_JWT_SECRET_BYTES: usize = 32;
pub const SECRETS_KEY_BYTES: usize = 32;

impl Config {
    pub(crate) fn validate(&self, needs: &[Requirement]) -> Result<(), ConfigError> {
        if self.data_dir.as_os_str().is_empty() {
            return Err(ConfigError::invalid("data_dir", "must not be empty"));
        }
        let nats = &self.nats;
        let mode = self.mcp_auth.default_mode.trim();
        if !matches!(mode, "" | "keys" | "oauth" | "both") {
            return Err(ConfigError::invalid(
                "mcp_auth.default_mode",
                format!("{mode:?} is not one of keys, oauth, both"),
            ));
        }
        let public_url = self.mcp_auth.public_url.trim();
        let web = public_url.starts_with("https://") || public_url.starts_with("http://");
        if !(public_url.is_empty() || web) {
            return Err(ConfigError::invalid(
                "mcp_auth.public_url",
                format!("{public_url:?} is not an http(s) URL"),
            ));
        }
        self.validate_sso()?;
        if nats.max_deliver < 1 {
            return Err(ConfigError::invalid("nats.max_deliver", "must be at least 1"));
        }
        if nats.max_ack_pending < 1 {
            return Err(ConfigError::invalid("nats.max_ack_pending", "must be at least 1"));
        }
        if nats.ack_wait.as_millis() < 1000 {
            return Err(ConfigError::invalid("nats.ack_wait", "must be at least 1s"));
        }
        if nats.max_payload < 1024 {
            return Err(ConfigError::invalid("nats.max_payload", "must be at least 1024 bytes"));
        }
        for (key, name) in [
            ("nats.stream", &nats.stream),
            ("nats.dlq_stream", &nats.dlq_stream),
            ("nats.events_stream", &nats.events_stream),
            ("nats.kv_bucket", &nats.kv_bucket),
        ] {
            if name.is_empty()
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(ConfigError::invalid(
                    key,
                    format!("{name:?} is not a valid JetStream name (letters, digits, `_`, `-`)"),
                ));
            }
        }
        if !self.redis.sentinels().is_empty() && self.redis.master_name.is_empty() {
            return Err(ConfigError::invalid(
                "redis.master_name",
                "required with redis.sentinel_addrs (RAMEN_REDIS_MASTER_NAME)",
            ));
        }
        if self.redis.timeout.is_zero() {
            return Err(ConfigError::invalid("redis.timeout", "must be above zero"));
        }
        if self.deploy.review_timeout.is_zero() {
            return Err(ConfigError::invalid(
                "deploy.review_timeout",
                "must be above zero (a review nobody can answer rejects every surface change)",
            ));
        }
        if self.calls.retention.as_secs() < 60 {
            return Err(ConfigError::invalid(
                "calls.retention",
                "must be at least 1m (records younger than that would vanish before anyone reads them)",
            ));
        }
        if self.auth.access_ttl.as_secs() < 10 {
            return Err(ConfigError::invalid("auth.access_ttl", "must be at least 10s"));
        }
        self.validate_listen()?;
        self.kubernetes.validate()?;
        self.validate_keys(needs)
    }

    fn validate_sso(&self) -> Result<(), ConfigError> {
        let sso = &self.sso;
        let web = |url: &str| url.starts_with("https://") || url.starts_with("http://");
        if !sso.enabled() {
            if !sso.password_sign_in {
                return Err(ConfigError::invalid(
                    "sso.password_sign_in",
                    "false needs sso.issuer: without single sign-on no one could sign in",
                ));
            }
            return Ok(());
        }
        if !web(sso.issuer.trim()) {
            return Err(ConfigError::invalid(
                "sso.issuer",
                format!("{:?} is not an http(s) URL", sso.issuer),
            ));
        }
        if sso.client_id.trim().is_empty() {
            return Err(ConfigError::invalid("sso.client_id", "is needed with sso.issuer"));
        }
        let public_url = sso.public_url.trim();
        if !(public_url.is_empty() || web(public_url)) {
            return Err(ConfigError::invalid(
                "sso.public_url",
                format!("{public_url:?} is not an http(s) URL"),
            ));
        }
        if public_url.is_empty() && self.mode == crate::Mode::Cloud {
            return Err(ConfigError::invalid(
                "sso.public_url",
                "is needed in cloud mode: the provider sends people back to it",
            ));
        }
        if sso.groups_claim.trim().is_empty() {
            return Err(ConfigError::invalid("sso.groups_claim", "must not be empty"));
        }
        sso.memberships().map_err(|why| ConfigError::invalid("sso.memberships", why))?;
        Ok(())
    }

    fn validate_listen(&self) -> Result<(), ConfigError> {
        let l = &self.listen;
        let all = [
            ("listen.api", l.api),
            ("listen.auth", l.auth),
            ("listen.deployer", l.deployer),
            ("listen.zone_manager", l.zone_manager),
            ("listen.rebalancer", l.rebalancer),
            ("listen.admin", l.admin),
        ];
        let mut seen = HashMap::new();
        for (key, addr) in all {
            if addr.port() == 0 {
                continue; // an ephemeral port never collides
            }
            if let Some(other) = seen.insert(addr, key) {
                return Err(ConfigError::invalid(key, format!("{addr} is also used by {other}")));
            }
        }
        Ok(())
    }

    /// Checks the keys that are set; cloud mode additionally requires them (see [`Self::require_cloud`]).
    fn validate_keys(&self, needs: &[Requirement]) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        let cloud = self.mode == Mode::Cloud;
        jwt_problem(&self.auth.jwt_secret, cloud, "RAMEN_JWT_SECRET", &mut problems);
        secrets_key_problem(&self.auth.secrets_key, cloud, "RAMEN_SECRETS_KEY", &mut problems);
        if !self.auth.jwt_previous_secret.is_empty() {
            jwt_problem(
                &self.auth.jwt_previous_secret,
                true,
                "RAMEN_JWT_PREVIOUS_SECRET",
                &mut problems,
            );
        }
        if !self.auth.secrets_previous_key.is_empty() {
            secrets_key_problem(
                &self.auth.secrets_previous_key,
                true,
                "RAMEN_SECRETS_PREVIOUS_KEY",
                &mut problems,
            );
        }
        if cloud && self.nats.url.is_empty() {
            problems.push("RAMEN_NATS_URL (the JetStream server, nats://host:4222)".to_owned());
        }
        if cloud && !self.nats.url.is_empty() && !self.nats.has_credentials() {
            problems.push(
                "RAMEN_NATS_CREDS (this service's NATS user: a .creds file or its content, \
                 one per service from `ramen nats-auth init`; or a user and password in \
                 the NATS URL)"
                    .to_owned(),
            );
        }
        if let Err(ConfigError::MissingForCloud(more)) = self.require_cloud(needs) {
            problems.extend(more);
        }
        if problems.is_empty() { Ok(()) } else { Err(ConfigError::MissingForCloud(problems)) }
    }

    /// Cloud-mode requirements of one service beyond the base trio.
    pub fn require_cloud(&self, needs: &[Requirement]) -> Result<(), ConfigError> {
        if self.mode != Mode::Cloud {
            return Ok(());
        }
        let mut problems = Vec::new();
        for need in needs {
            match need {
                Requirement::Mongo if self.mongo.uri.is_empty() => {
                    problems.push("RAMEN_MONGO_URI (mongodb://...)".to_owned())
                }
                Requirement::S3 if self.s3.bucket.is_empty() => {
                    problems.push("RAMEN_S3_BUCKET (the bucket for group snapshots)".to_owned())
                }
                // With a static user/password server there is nothing to sign node users with.
                Requirement::NatsSigningKey
                    if !self.nats.credentials.is_empty() && self.nats.signing_key.is_empty() =>
                {
                    problems.push(
                        "RAMEN_NATS_SIGNING_KEY (the node signing key, node-signing.nk from \
                         `ramen nats-auth init`: each placement's nodes get a NATS user that \
                         may publish only their load reports)"
                            .to_owned(),
                    )
                }
                _ => {}
            }
        }
        if problems.is_empty() { Ok(()) } else { Err(ConfigError::MissingForCloud(problems)) }
    }

    /// Local mode: create the data directory and generate the signing and sealing keys into it
    /// (mode 0600) the first time, so a restart keeps sessions and secrets readable.
    pub(crate) fn prepare_local(&mut self) -> Result<(), ConfigError> {
        let dir = self.data_dir.clone();
        let keys = dir.join("keys");
        let io = |source| ConfigError::DataDir { path: dir.display().to_string(), source };
        fs::DirBuilder::new().recursive(true).mode(0o700).create(&keys).map_err(io)?;
        if self.auth.jwt_secret.is_empty() {
            self.auth.jwt_secret = load_or_generate(&keys.join("jwt.key"), 48).map_err(io)?;
        }
        if self.auth.secrets_key.is_empty() {
            self.auth.secrets_key =
                load_or_generate(&keys.join("secrets.key"), SECRETS_KEY_BYTES).map_err(io)?;
        }
        Ok(())
    }
}

fn jwt_problem(secret: &Secret, required: bool, var: &str, problems: &mut Vec<String>) {
    if secret.is_empty() {
        if required {
            problems.push(format!(
                "{var} (at least {MIN_JWT_SECRET_BYTES} bytes; `openssl rand -base64 48`)"
            ));
        }
    } else if secret.expose().len() < MIN_JWT_SECRET_BYTES {
        problems.push(format!(
            "{var} is {} bytes; it must be at least {MIN_JWT_SECRET_BYTES}",
            secret.expose().len()
        ));
    }
}

fn secrets_key_problem(secret: &Secret, required: bool, var: &str, problems: &mut Vec<String>) {
    if secret.is_empty() {
        if required {
            problems.push(format!(
                "{var} (exactly {SECRETS_KEY_BYTES} bytes, base64; `openssl rand -base64 32`)"
            ));
        }
        return;
    }
    match B64.decode(secret.expose().trim()) {
        Ok(bytes) if bytes.len() == SECRETS_KEY_BYTES => {}
        Ok(bytes) => problems.push(format!(
            "{var} decodes to {} bytes; it must be exactly {SECRETS_KEY_BYTES}",
            bytes.len()
        )),
        Err(_) => problems.push(format!("{var} is not valid base64")),
    }
}

/// Decodes a base64 secrets key into its 32 bytes (validated at load, so this only fails on a
/// key that was never validated).
pub fn decode_secrets_key(secret: &Secret) -> Result<[u8; SECRETS_KEY_BYTES], ConfigError> {
    let bytes = B64
        .decode(secret.expose().trim())
        .map_err(|_| ConfigError::invalid("auth.secrets_key", "not valid base64"))?;
    bytes
        .try_into()
        .map_err(|_| ConfigError::invalid("auth.secrets_key", "must decode to exactly 32 bytes"))
}

fn load_or_generate(path: &Path, bytes: usize) -> std::io::Result<Secret> {
    if let Ok(existing) = fs::read_to_string(path) {
        return Ok(Secret::new(existing.trim()));
    }
    let mut raw = vec![0u8; bytes];
    rand::rngs::OsRng.fill_bytes(&mut raw);
    let encoded = B64.encode(raw);
    let mut file = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(encoded.as_bytes())?;
    Ok(Secret::new(encoded))
}
