//! Following a mounted policy file (`NodeConfig::policy_file`). The kubelet refreshes a
//! mounted Secret in place (an atomic symlink swap), so re-reading the path every few seconds
//! sees each new version; one that is not newer than the policy in force changes nothing.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::admin::Control;

const POLL: Duration = Duration::from_secs(1);

pub(crate) async fn watch(path: PathBuf, control: Arc<Control>, token: CancellationToken) {
    let mut last: Option<Vec<u8>> = std::fs::read(&path).ok();
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tokio::time::sleep(POLL) => {}
        }
        let Ok(bytes) = std::fs::read(&path) else { continue };
        if last.as_deref() == Some(bytes.as_slice()) {
            continue;
        }
        last = Some(bytes);
        match ramen_node_contract::read_policy(&path) {
            Ok(Some(policy)) => {
                let version = policy.version;
                match control.update_policy(policy) {
                    Ok(true) => tracing::info!(version, "policy file applied"),
                    Ok(false) => {
                        tracing::debug!(version, "policy file not newer than the policy in force")
                    }
                    Err(err) => tracing::warn!(%err, path = %path.display(), "policy file refused"),
                }
            }
            Ok(None) => {}
            Err(err) => tracing::warn!(%err, "policy file unreadable; keeping the policy in force"),
        }
    }
}
