//! Clients of the configured clusters, made on first use and kept: a kubeconfig context (the
//! zone-manager outside the cluster; exec plugins such as `gke-gcloud-auth-plugin` or
//! `aws eks get-token` work as with kubectl) or the pod's own service account.

use std::collections::HashMap;

use kube::config::{KubeConfigOptions, Kubeconfig};
use ramen_config::{ClusterAccess, ClusterConfig};
use tokio::sync::Mutex;

use crate::provider::ProviderError;

#[derive(Default)]
pub struct Clusters {
    clients: Mutex<HashMap<String, kube::Client>>,
}

impl Clusters {
    pub async fn client(
        &self,
        name: &str,
        cluster: &ClusterConfig,
    ) -> Result<kube::Client, ProviderError> {
        let mut clients = self.clients.lock().await;
        if let Some(client) = clients.get(name) {
            return Ok(client.clone());
        }
        let client = connect(name, cluster).await?;
        clients.insert(name.to_owned(), client.clone());
        Ok(client)
    }
}

async fn connect(name: &str, cluster: &ClusterConfig) -> Result<kube::Client, ProviderError> {
    let key = format!("kubernetes.clusters.{name}");
    let mut config = match cluster.access {
        ClusterAccess::InCluster => kube::Config::incluster().map_err(|e| {
            ProviderError::Failed(format!(
                "{key}: access = \"in-cluster\" but this process has no in-cluster service account: {e}"
            ))
        })?,
        ClusterAccess::Kubeconfig => {
            let file = match cluster.kubeconfig.as_str() {
                "" => Kubeconfig::read(),
                path => Kubeconfig::read_from(path),
            }
            .map_err(|e| ProviderError::Failed(format!("{key}.kubeconfig: {e}")))?;
            let options = KubeConfigOptions {
                context: (!cluster.context.is_empty()).then(|| cluster.context.clone()),
                ..Default::default()
            };
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| ProviderError::Failed(format!("{key}.context: {e}")))?
        }
    };
    // kube's own retry backs off for up to 15 attempts (minutes of a blocked step); the
    // zone-manager's steps are retried by the saga with their own budget instead, so an
    // outage is reported as `Unavailable` at once. A read that hangs is cut off too.
    config.default_retry = false;
    config.read_timeout = Some(std::time::Duration::from_secs(30));
    config.connect_timeout = Some(std::time::Duration::from_secs(10));
    kube::Client::try_from(config)
        .map_err(|e| ProviderError::Failed(format!("{key}: cannot make a client: {e}")))
}

/// A kube error as the provider reports it: the API's own answer where there is one; outages
/// and the apiserver's "try again" answers are retryable.
pub fn api_error(what: &str, err: kube::Error) -> ProviderError {
    match err {
        kube::Error::Api(status) => {
            let message = format!("{what}: {} ({} {})", status.message, status.code, status.reason);
            match status.code {
                409 if status.reason == "Conflict" => ProviderError::Unavailable(message),
                429 | 500 | 502 | 503 | 504 => ProviderError::Unavailable(message),
                _ => ProviderError::Failed(message),
            }
        }
        other => ProviderError::Unavailable(format!("{what}: the Kubernetes API: {other}")),
    }
}

pub fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404)
}
