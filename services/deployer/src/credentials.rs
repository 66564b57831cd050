//! Credentials for a group's private repo: its `GITHUB_TOKEN` secret (group- or
//! environment-wide), offered to git as `x-access-token:<token>` through the askpass helper.
//! Or, for a group with a GitHub App installation id, an installation token (`github_app`).

use crate::AppSettings;
use crate::error::Result;
use crate::git::{Credentials, check_repo_url};
use crate::model::GroupRecord;

pub const TOKEN_SECRET: &str = "GITHUB_TOKEN";

impl AppSettings {
    /// `None` for transports that take no token, and for public repos (no secret set).
    pub(crate) async fn repo_credentials(
        &self,
        group: &GroupRecord,
        environment: &str,
    ) -> Result<Option<Credentials>> {
        let transport = check_repo_url(&group.repo_url, self.core.settings.local_mode)?;
        if !transport.takes_token() {
            return Ok(None);
        }
        if group.github_app_installation_id > 0 {
            let creds = self
                .installation_credentials(&group.name, group.github_app_installation_id)
                .await?;
            return Ok(Some(creds));
        }
        let secrets = self.core.auth.resolve_secrets(&group.name, environment, "").await?;
        Ok(secrets
            .into_iter()
            .find(|s| s.name == TOKEN_SECRET)
            .map(|s| Credentials { username: "x-access-token".into(), password: s.value }))
    }
}
