//! Listing across pages and batched deletion.

use aws_sdk_s3::Client;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use futures::{StreamExt, TryStreamExt};

use crate::BlobError;
use crate::s3_error::map_sdk_error;

/// `DeleteObjects` takes at most this many keys per request.
const DELETE_BATCH: usize = 1000;
/// Batches in flight at once during a prefix delete.
const DELETE_CONCURRENCY: usize = 4;

/// Every key under `prefix`, following continuation tokens to the last page.
pub(super) async fn list_all(
    client: &Client,
    bucket: &str,
    prefix: &str,
) -> Result<Vec<String>, BlobError> {
    let mut request = client.list_objects_v2().bucket(bucket);
    if !prefix.is_empty() {
        request = request.prefix(prefix);
    }
    let mut pages = request.into_paginator().send();
    let mut keys = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| map_sdk_error("list", bucket, e))?;
        keys.extend(page.contents().iter().filter_map(|o| o.key().map(str::to_owned)));
    }
    // S3 already lists in byte order; sorting keeps the contract explicit for other servers.
    keys.sort();
    Ok(keys)
}

/// Deletes `keys` in `DeleteObjects` batches and returns how many were deleted.
pub(super) async fn delete_keys(
    client: &Client,
    bucket: &str,
    keys: Vec<String>,
) -> Result<u64, BlobError> {
    let batches: Vec<Vec<String>> = keys.chunks(DELETE_BATCH).map(<[String]>::to_vec).collect();
    futures::stream::iter(batches)
        .map(|batch| delete_batch(client, bucket, batch))
        .buffer_unordered(DELETE_CONCURRENCY)
        .try_fold(0u64, |total, deleted| async move { Ok(total + deleted) })
        .await
}

async fn delete_batch(client: &Client, bucket: &str, batch: Vec<String>) -> Result<u64, BlobError> {
    let count = batch.len() as u64;
    let objects = batch
        .into_iter()
        .map(|key| ObjectIdentifier::builder().key(key).build())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| BlobError::Backend { op: "delete_prefix", message: e.to_string() })?;
    // Quiet mode: the answer lists only the keys that failed.
    let delete = Delete::builder()
        .set_objects(Some(objects))
        .quiet(true)
        .build()
        .map_err(|e| BlobError::Backend { op: "delete_prefix", message: e.to_string() })?;
    let output = client
        .delete_objects()
        .bucket(bucket)
        .delete(delete)
        .send()
        .await
        .map_err(|e| map_sdk_error("delete_prefix", bucket, e))?;
    if let Some(failed) = output.errors().first() {
        let message = format!(
            "{} of {count} keys not deleted; first {:?}: {} {}",
            output.errors().len(),
            failed.key().unwrap_or_default(),
            failed.code().unwrap_or_default(),
            failed.message().unwrap_or_default(),
        );
        return Err(match failed.code() {
            Some("AccessDenied") => BlobError::Denied { op: "delete_prefix", message },
            Some("InternalError" | "SlowDown") => {
                BlobError::Unavailable { op: "delete_prefix", message }
            }
            _ => BlobError::Backend { op: "delete_prefix", message },
        });
    }
    Ok(count)
}
