//! The rebalancer's settings, resolved and checked once from `rebalancer.*` in the config.

use std::time::Duration;

use ramen_config::RebalancerConfig;

/// A key of the `rebalancer` section that cannot be used, and why.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration `rebalancer.{key}`: {reason}")]
pub struct SettingsError {
    pub key: &'static str,
    pub reason: String,
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub report_interval: Duration,
    /// A node is live while its last report is younger than this.
    pub liveness: Duration,
    pub forget_after: Duration,
    pub recompute_interval: Duration,
    pub placement_refresh: Duration,
    pub weight_floor: u32,
    pub retry_deadline: Duration,
    pub retry_interval: Duration,
    pub lease_ttl: Duration,
    pub settings_refresh: Duration,
    pub scale_up_after: Duration,
    pub scale_down_after: Duration,
    pub scale_timeout: Duration,
}

impl Settings {
    pub fn from_config(config: &RebalancerConfig) -> Result<Self, SettingsError> {
        let err = |key, reason: &str| SettingsError { key, reason: reason.to_owned() };
        let at_least = |key, value: Duration, min: Duration| {
            if value < min { Err(err(key, &format!("must be at least {min:?}"))) } else { Ok(()) }
        };
        let ms = Duration::from_millis;
        at_least("report_interval", config.report_interval, ms(100))?;
        at_least("recompute_interval", config.recompute_interval, ms(50))?;
        at_least("placement_refresh", config.placement_refresh, ms(100))?;
        at_least("retry_interval", config.retry_interval, ms(10))?;
        at_least("retry_deadline", config.retry_deadline, config.retry_interval)?;
        at_least("lease_ttl", config.lease_ttl, Duration::from_secs(1))?;
        at_least("settings_refresh", config.settings_refresh, ms(100))?;
        at_least("scale_timeout", config.scale_timeout, Duration::from_secs(1))?;
        if config.liveness_intervals == 0 {
            return Err(err("liveness_intervals", "must be at least 1"));
        }
        if !(1..=1000).contains(&config.weight_floor_permille) {
            return Err(err("weight_floor_permille", "must be within 1..=1000"));
        }
        let liveness = config.report_interval * config.liveness_intervals;
        if config.forget_after < liveness {
            return Err(err("forget_after", "must be at least the liveness window"));
        }
        Ok(Self {
            report_interval: config.report_interval,
            liveness,
            forget_after: config.forget_after,
            recompute_interval: config.recompute_interval,
            placement_refresh: config.placement_refresh,
            weight_floor: config.weight_floor_permille,
            retry_deadline: config.retry_deadline,
            retry_interval: config.retry_interval,
            lease_ttl: config.lease_ttl,
            settings_refresh: config.settings_refresh,
            scale_up_after: config.scale_up_after,
            scale_down_after: config.scale_down_after,
            scale_timeout: config.scale_timeout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_defaults_validate() {
        let settings = Settings::from_config(&RebalancerConfig::default()).unwrap();
        assert_eq!(settings.liveness, Duration::from_secs(6));
        assert_eq!(settings.weight_floor, 100);
    }

    #[test]
    fn bad_values_name_their_key() {
        let mut config = RebalancerConfig { weight_floor_permille: 0, ..Default::default() };
        let err = Settings::from_config(&config).unwrap_err();
        assert_eq!(err.key, "weight_floor_permille");
        config.weight_floor_permille = 100;
        config.lease_ttl = Duration::from_millis(10);
        let err = Settings::from_config(&config).unwrap_err();
        assert!(err.to_string().contains("rebalancer.lease_ttl"), "{err}");
    }
}
