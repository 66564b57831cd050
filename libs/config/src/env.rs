use figment::providers::Env;
use figment::value::{Uncased, UncasedStr};

/// Flat environment names operators know from the runbook, mapped to nested keys.
/// Anything else uses `__` for nesting (`RAMEN_DRAIN__MODE=interrupt`).
pub const ALIASES: &[(&str, &str)] = &[
    ("jwt_secret", "auth.jwt_secret"),
    ("jwt_previous_secret", "auth.jwt_previous_secret"),
    ("secrets_key", "auth.secrets_key"),
    ("secrets_previous_key", "auth.secrets_previous_key"),
    ("bootstrap_admin_email", "auth.bootstrap_admin_email"),
    ("nats_url", "nats.url"),
    ("nats_creds", "nats.credentials"),
    ("nats_signing_key", "nats.signing_key"),
    ("nats_stream", "nats.stream"),
    ("nats_kv_bucket", "nats.kv_bucket"),
    ("nats_dlq_stream", "nats.dlq_stream"),
    ("nats_max_ack_pending", "nats.max_ack_pending"),
    ("nats_max_deliver", "nats.max_deliver"),
    ("nats_ack_wait", "nats.ack_wait"),
    ("nats_max_age", "nats.max_age"),
    ("nats_dlq_max_age", "nats.dlq_max_age"),
    ("nats_max_payload", "nats.max_payload"),
    ("mongo_uri", "mongo.uri"),
    ("mongo_db", "mongo.db"),
    ("s3_endpoint", "s3.endpoint"),
    ("s3_bucket", "s3.bucket"),
    ("s3_region", "s3.region"),
    ("redis_url", "redis.url"),
    ("redis_sentinel_addrs", "redis.sentinel_addrs"),
    ("redis_master_name", "redis.master_name"),
    ("redis_password", "redis.password"),
    ("redis_sentinel_password", "redis.sentinel_password"),
    ("drain_mode", "drain.mode"),
    ("drain_timeout", "drain.timeout"),
    ("drain_linger", "drain.linger"),
    ("log_format", "log.format"),
    ("log_level", "log.level"),
];

/// `RAMEN_*` variables, except the test harness's own `RAMEN_TEST_*` and `RAMEN_CONFIG`.
// A closure, not `map_key` itself: `Env::map` needs the higher-ranked signature it infers.
#[allow(clippy::redundant_closure)]
pub(crate) fn provider() -> Env {
    Env::prefixed("RAMEN_")
        .filter(|key| !key.as_str().starts_with("test_") && key.as_str() != "config")
        .map(|key| map_key(key))
}

pub(crate) fn map_key(key: &UncasedStr) -> Uncased<'_> {
    let lower = key.as_str().to_ascii_lowercase();
    if lower.contains("__") {
        return lower.replace("__", ".").into();
    }
    match ALIASES.iter().find(|(flat, _)| *flat == lower) {
        Some((_, nested)) => (*nested).into(),
        None => lower.into(),
    }
}
