//! What to connect to, and the translation into a `fred` client configuration with bounded
//! timeouts and an endless reconnect policy.

use std::time::Duration;

use fred::prelude::{Builder, Config, ReconnectPolicy, Server, ServerConfig};
use fred::types::config::UnresponsiveConfig;
use ramen_config::{RedisConfig, Secret};

use crate::StateError;

/// Bound on every call unless configured otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(250);

#[derive(Clone, Debug)]
pub enum RedisTarget {
    /// `redis://[[user]:password@]host:port[/db]`.
    Url(Secret),
    /// Sentinels (`host:port` each) that name the current master of `master_name`.
    Sentinel { addrs: Vec<String>, master_name: String },
}

#[derive(Clone, Debug)]
pub struct RedisSettings {
    pub target: RedisTarget,
    /// Password of the data nodes (wins over one in the URL).
    pub password: Option<Secret>,
    /// Password of the Sentinels themselves.
    pub sentinel_password: Option<Secret>,
    /// Bound on every call; past it the call fails with `Unavailable`.
    pub timeout: Duration,
    /// Bound on opening a connection (TCP + handshake), and on the first wait in `connect`.
    pub connect_timeout: Duration,
    /// Prepended to every key, so one Redis can serve several deployments.
    pub key_prefix: String,
}

impl RedisSettings {
    pub fn new(target: RedisTarget) -> Self {
        Self {
            target,
            password: None,
            sentinel_password: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: Duration::from_secs(2),
            key_prefix: "ramen:".into(),
        }
    }

    pub fn url(url: impl Into<String>) -> Self {
        Self::new(RedisTarget::Url(Secret::new(url)))
    }

    pub fn sentinel(addrs: Vec<String>, master_name: impl Into<String>) -> Self {
        Self::new(RedisTarget::Sentinel { addrs, master_name: master_name.into() })
    }

    /// Sentinels win over a URL when both are set; the Sentinel password defaults to the data
    /// nodes' password.
    pub fn from_config(config: &RedisConfig) -> Result<Self, StateError> {
        let sentinels = config.sentinels();
        let mut settings = if !sentinels.is_empty() {
            if config.master_name.is_empty() {
                return Err(StateError::Config(
                    "redis.master_name is required with redis.sentinel_addrs".into(),
                ));
            }
            Self::sentinel(sentinels, &config.master_name)
        } else if !config.url.is_empty() {
            Self::new(RedisTarget::Url(config.url.clone()))
        } else {
            return Err(StateError::Config("neither redis.url nor redis.sentinel_addrs".into()));
        };
        let non_empty = |s: &Secret| Some(s.clone()).filter(|s| !s.is_empty());
        settings.password = non_empty(&config.password);
        settings.sentinel_password =
            non_empty(&config.sentinel_password).or_else(|| settings.password.clone());
        settings.timeout = config.timeout;
        Ok(settings)
    }

    pub(super) fn builder(&self) -> Result<Builder, StateError> {
        let mut config = match &self.target {
            RedisTarget::Url(url) => Config::from_url(url.expose())
                .map_err(|e| StateError::Config(format!("redis.url: {}", e.details())))?,
            RedisTarget::Sentinel { addrs, master_name } => Config {
                server: ServerConfig::Sentinel {
                    hosts: addrs.iter().map(|a| parse_addr(a)).collect::<Result<_, _>>()?,
                    service_name: master_name.clone(),
                    username: None,
                    password: self.sentinel_password.as_ref().map(|p| p.expose().to_owned()),
                },
                ..Config::default()
            },
        };
        if let Some(password) = &self.password {
            config.password = Some(password.expose().to_owned());
        }
        // Redis may be down when a gateway starts: keep reconnecting instead of failing, and
        // let calls degrade meanwhile.
        config.fail_fast = false;
        let mut builder = Builder::from_config(config);
        builder
            .with_connection_config(|c| {
                c.connection_timeout = self.connect_timeout;
                c.internal_command_timeout = self.connect_timeout;
                // A connection that stops answering (a frozen server, a silent network drop)
                // is closed and reopened rather than waited on.
                c.unresponsive = UnresponsiveConfig {
                    max_timeout: Some((self.timeout * 4).max(Duration::from_secs(1))),
                    interval: Duration::from_millis(250),
                };
            })
            .with_performance_config(|p| p.default_command_timeout = self.timeout)
            // Forever (0), 50 ms doubling to 2 s: recovers within ~2 s of Redis coming back.
            .set_policy(ReconnectPolicy::new_exponential(0, 50, 2000, 2));
        Ok(builder)
    }
}

fn parse_addr(addr: &str) -> Result<Server, StateError> {
    let bad = || StateError::Config(format!("redis.sentinel_addrs: {addr:?} is not host:port"));
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let port = port.parse().map_err(|_| bad())?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(bad());
    }
    Ok(Server::new(host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_picks_sentinels_over_url_and_defaults_the_sentinel_password() {
        let mut config = RedisConfig {
            url: Secret::new("redis://127.0.0.1:6379"),
            sentinel_addrs: "10.0.0.1:26379, 10.0.0.2:26379".into(),
            master_name: "mymaster".into(),
            password: Secret::new("data-pw"),
            ..RedisConfig::default()
        };
        let settings = RedisSettings::from_config(&config).unwrap();
        let RedisTarget::Sentinel { addrs, master_name } = &settings.target else { panic!() };
        assert_eq!(addrs, &["10.0.0.1:26379", "10.0.0.2:26379"]);
        assert_eq!(master_name, "mymaster");
        assert_eq!(settings.sentinel_password.unwrap().expose(), "data-pw");
        assert_eq!(settings.timeout, DEFAULT_TIMEOUT);

        config.master_name.clear();
        assert!(matches!(RedisSettings::from_config(&config), Err(StateError::Config(_))));
    }

    #[test]
    fn malformed_addresses_and_urls_are_config_errors() {
        assert!(parse_addr("host-without-port").is_err());
        assert!(parse_addr(":26379").is_err());
        assert_eq!(parse_addr("[::1]:26379").unwrap().port, 26379);
        let settings = RedisSettings::url("redis://127.0.0.1:not-a-port");
        assert!(matches!(settings.builder(), Err(StateError::Config(_))));
    }
}
