//! Installation tokens of the GitHub App configured on the Config page: a short JWT (RS256,
//! signed with the App's private key, unsealed only for this) buys a one-hour token for one
//! installation (`POST /app/installations/<id>/access_tokens`), used like a `GITHUB_TOKEN`.
//! The API base is `DeployerSettings::github_api_url` (GitHub Enterprise, tests).

use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Deserialize;

use crate::AppSettings;
use crate::config_settings::app_configured;
use crate::error::{Error, Result};
use crate::git::Credentials;
use crate::model::{APP_KEY_AAD, now_ms};

const SERVICE: &str = "GitHub";

#[derive(Deserialize)]
struct AccessToken {
    token: String,
}

impl AppSettings {
    pub(crate) async fn installation_credentials(
        &self,
        group: &str,
        installation: i64,
    ) -> Result<Credentials> {
        let settings = self.settings_record().await?;
        let sealed = match &settings.github_app_private_key {
            Some(sealed) if app_configured(&settings) => sealed,
            _ => {
                return Err(Error::FailedPrecondition(format!(
                    "group `{group}` uses GitHub App installation {installation} but no App (id and private key) is configured on the Config page"
                )));
            }
        };
        let sealer = self.sealer.as_ref().ok_or_else(|| {
            Error::FailedPrecondition("no secrets key to open the App's private key".into())
        })?;
        let pem = sealer
            .unseal(APP_KEY_AAD, sealed)
            .map_err(|e| Error::FailedPrecondition(format!("the App's private key: {e}")))?;
        let key = EncodingKey::from_rsa_pem(pem.expose().as_bytes()).map_err(|e| {
            Error::FailedPrecondition(format!("the App's private key is not an RSA PEM key: {e}"))
        })?;
        let now = now_ms() / 1000;
        // Backdated a minute for clock drift; GitHub refuses more than ten minutes of validity.
        let claims =
            serde_json::json!({"iat": now - 60, "exp": now + 540, "iss": settings.github_app_id});
        let jwt = jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &key)
            .map_err(|e| Error::Internal(format!("signing the App JWT: {e}")))?;
        let url = format!(
            "{}/app/installations/{installation}/access_tokens",
            self.core.settings.github_api_url.trim_end_matches('/')
        );
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .user_agent("ramen-deployer")
            .build()
            .map_err(|e| Error::Internal(e.to_string()))?;
        let response = http
            .post(&url)
            .bearer_auth(jwt)
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28")
            .send()
            .await
            .map_err(|e| Error::Unavailable {
                service: SERVICE,
                message: e.without_url().to_string(),
            })?;
        let status = response.status();
        if status.is_server_error() || status.as_u16() == 429 {
            return Err(Error::Unavailable {
                service: SERVICE,
                message: format!("installation token: HTTP {status}"),
            });
        }
        if !status.is_success() {
            let body: String =
                response.text().await.unwrap_or_default().chars().take(200).collect();
            return Err(Error::Refused {
                service: SERVICE,
                message: format!("installation {installation} token: HTTP {status}: {body}"),
            });
        }
        let token: AccessToken = response.json().await.map_err(|e| Error::Refused {
            service: SERVICE,
            message: format!("installation token answer: {e}"),
        })?;
        Ok(Credentials { username: "x-access-token".into(), password: token.token })
    }
}
