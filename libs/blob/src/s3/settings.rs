//! Connection settings and the SDK client they build.

use std::time::Duration;

use aws_sdk_s3::Client;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use ramen_config::Secret;

/// Where and how to reach the bucket. Timeouts and retries are bounded so that an outage
/// surfaces as [`BlobError::Unavailable`] instead of a hung call.
#[derive(Clone, Debug)]
pub struct S3Settings {
    pub bucket: String,
    pub region: String,
    /// An S3-compatible endpoint (`http://minio:9000`); `None` = AWS, or `AWS_ENDPOINT_URL`
    /// when the standard chain is used.
    pub endpoint: Option<String>,
    /// Path-style addressing (`endpoint/bucket/key`), which most S3-compatible servers need.
    pub force_path_style: bool,
    /// `None` = the standard AWS chain (environment, profile, web identity, instance role).
    pub credentials: Option<StaticCredentials>,
    pub connect_timeout: Duration,
    /// Bound on one HTTP attempt.
    pub attempt_timeout: Duration,
    /// Bound on the whole call, retries included.
    pub operation_timeout: Duration,
    /// Attempts per call, the first included.
    pub max_attempts: u32,
}

impl S3Settings {
    pub fn new(bucket: impl Into<String>, region: impl Into<String>) -> Self {
        Self {
            bucket: bucket.into(),
            region: region.into(),
            endpoint: None,
            force_path_style: false,
            credentials: None,
            connect_timeout: Duration::from_secs(3),
            attempt_timeout: Duration::from_secs(60),
            operation_timeout: Duration::from_secs(180),
            max_attempts: 3,
        }
    }

    pub fn from_config(config: &ramen_config::S3Config) -> Self {
        let mut settings = Self::new(&config.bucket, &config.region);
        settings.endpoint = Some(config.endpoint.clone()).filter(|e| !e.is_empty());
        settings.force_path_style = config.force_path_style;
        settings
    }
}

/// Explicit keys, for S3-compatible servers (and tests) that do not sit behind the AWS chain.
#[derive(Clone, Debug)]
pub struct StaticCredentials {
    pub access_key_id: String,
    pub secret_access_key: Secret,
    pub session_token: Option<Secret>,
}

impl S3Settings {
    /// The SDK client, with bounded timeouts and retries.
    pub(super) async fn client(&self) -> Client {
        let timeouts = TimeoutConfig::builder()
            .connect_timeout(self.connect_timeout)
            .operation_attempt_timeout(self.attempt_timeout)
            .operation_timeout(self.operation_timeout)
            .build();
        let retries = RetryConfig::standard().with_max_attempts(self.max_attempts.max(1));
        let region = Region::new(self.region.clone());
        let mut builder = match &self.credentials {
            // Static keys: skip the standard chain entirely, so nothing probes the instance
            // metadata service on a machine that has none.
            Some(creds) => aws_sdk_s3::Config::builder()
                .behavior_version(BehaviorVersion::latest())
                .credentials_provider(Credentials::new(
                    &creds.access_key_id,
                    creds.secret_access_key.expose(),
                    creds.session_token.as_ref().map(|t| t.expose().to_owned()),
                    None,
                    "ramen-static",
                )),
            None => {
                let shared = aws_config::defaults(BehaviorVersion::latest())
                    .region(region.clone())
                    .load()
                    .await;
                aws_sdk_s3::config::Builder::from(&shared)
            }
        };
        builder = builder
            .region(region)
            .force_path_style(self.force_path_style)
            .timeout_config(timeouts)
            .retry_config(retries);
        if let Some(endpoint) = &self.endpoint {
            builder = builder.endpoint_url(endpoint);
        }
        Client::from_conf(builder.build())
    }
}
