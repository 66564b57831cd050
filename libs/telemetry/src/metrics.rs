use std::borrow::Cow;
use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::{Metric, Registry};

/// The process's Prometheus registry, shared by every service running in it. Metric names
/// are registered with the `ramen_` prefix.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Mutex<Registry>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self { registry: Arc::new(Mutex::new(Registry::with_prefix("ramen"))) }
    }
}

impl Metrics {
    /// Registers `metric` as `ramen_<name>`. Registering the same name twice yields two series
    /// sets in the output, so each service registers its metrics once at start.
    pub fn register(&self, name: &str, help: &str, metric: impl Metric) {
        self.registry.lock().register(name, help, metric);
    }

    /// Registers `metric` as `ramen_<name>` with constant `labels` on every series (a node's
    /// `group` and `zone`, so a fleet-wide scrape can be summed per group and zone).
    pub fn register_labelled(
        &self,
        labels: &[(&str, &str)],
        name: &str,
        help: &str,
        metric: impl Metric,
    ) {
        let labels =
            labels.iter().map(|(k, v)| (Cow::Owned(k.to_string()), Cow::Owned(v.to_string())));
        self.registry.lock().sub_registry_with_labels(labels).register(name, help, metric);
    }

    /// The text exposition format served on `/metrics`.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry.lock());
        out
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;

    use super::*;

    #[test]
    fn registered_metrics_are_encoded_with_prefix() {
        let metrics = Metrics::default();
        let counter = Counter::<u64>::default();
        metrics.register("restarts", "Runtime restarts", counter.clone());
        counter.inc();
        let text = metrics.encode();
        assert!(text.contains("ramen_restarts_total 1"), "{text}");
    }

    #[test]
    fn labelled_metrics_carry_their_constant_labels() {
        let metrics = Metrics::default();
        let counter = Counter::<u64>::default();
        metrics.register_labelled(
            &[("group", "g"), ("zone", "z")],
            "calls",
            "Calls",
            counter.clone(),
        );
        counter.inc();
        let text = metrics.encode();
        assert!(text.contains("ramen_calls_total{group=\"g\",zone=\"z\"} 1"), "{text}");
    }
}
