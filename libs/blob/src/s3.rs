//! S3 and S3-compatible servers (MinIO in compose, moto in tests) via `aws-sdk-s3`.

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;

use crate::s3_error::map_sdk_error;
use crate::{BlobError, BlobStore, validate_delete_prefix, validate_key, validate_prefix};

mod bulk;
mod settings;

pub use settings::{S3Settings, StaticCredentials};

pub struct S3Store {
    client: Client,
    bucket: String,
    region: String,
}

impl S3Store {
    /// Builds the client; nothing is sent until the first call (see [`BlobStore::ping`]).
    pub async fn connect(settings: S3Settings) -> Result<Self, BlobError> {
        let client = settings.client().await;
        Ok(Self { client, bucket: settings.bucket, region: settings.region })
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Creates the bucket when missing (dev and tests; production buckets come from infra).
    pub async fn ensure_bucket(&self) -> Result<(), BlobError> {
        let mut request = self.client.create_bucket().bucket(&self.bucket);
        // us-east-1 is the one region that rejects an explicit location constraint.
        if self.region != "us-east-1" {
            use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration};
            let constraint = BucketLocationConstraint::from(self.region.as_str());
            request = request.create_bucket_configuration(
                CreateBucketConfiguration::builder().location_constraint(constraint).build(),
            );
        }
        match request.send().await {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_bucket_already_owned_by_you()) => {
                Ok(())
            }
            Err(e) => Err(map_sdk_error("ensure_bucket", &self.bucket, e)),
        }
    }

    fn err<E>(&self, op: &'static str, e: aws_sdk_s3::error::SdkError<E, HttpResponse>) -> BlobError
    where
        E: aws_sdk_s3::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        map_sdk_error(op, &self.bucket, e)
    }
}

#[async_trait]
impl BlobStore for S3Store {
    async fn put(&self, key: &str, body: Bytes) -> Result<(), BlobError> {
        validate_key(key)?;
        let request = self.client.put_object().bucket(&self.bucket).key(key);
        request.body(ByteStream::from(body)).send().await.map_err(|e| self.err("put", e))?;
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>, BlobError> {
        validate_key(key)?;
        let output = match self.client.get_object().bucket(&self.bucket).key(key).send().await {
            Ok(output) => output,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(None),
            Err(e) => return Err(self.err("get", e)),
        };
        let body = output.body.collect().await.map_err(|e| BlobError::Unavailable {
            op: "get",
            message: format!("reading the body of {key:?}: {e}"),
        })?;
        Ok(Some(body.into_bytes()))
    }

    async fn exists(&self, key: &str) -> Result<bool, BlobError> {
        validate_key(key)?;
        match self.client.head_object().bucket(&self.bucket).key(key).send().await {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Ok(false),
            Err(e) => Err(self.err("exists", e)),
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        validate_prefix(prefix)?;
        bulk::list_all(&self.client, &self.bucket, prefix).await
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        validate_key(key)?;
        // S3 answers 204 for a missing key too, so this is idempotent as is.
        let request = self.client.delete_object().bucket(&self.bucket).key(key);
        request.send().await.map_err(|e| self.err("delete", e))?;
        Ok(())
    }

    async fn delete_prefix(&self, prefix: &str) -> Result<u64, BlobError> {
        validate_delete_prefix(prefix)?;
        let keys = bulk::list_all(&self.client, &self.bucket, prefix).await?;
        bulk::delete_keys(&self.client, &self.bucket, keys).await
    }

    async fn ping(&self) -> Result<(), BlobError> {
        let request = self.client.head_bucket().bucket(&self.bucket);
        request.send().await.map_err(|e| self.err("ping", e))?;
        Ok(())
    }
}
