//! Exclusive ownership of a key in a KV bucket whose `ttl` (max age) bounds how long a
//! crashed holder keeps it.
//!
//! The holder must [`refresh`](Lease::refresh) well inside the bucket TTL: a heartbeat at a
//! third of the TTL or less leaves room for two missed beats and a slow server. A lease not
//! refreshed within the TTL lapses, and another holder's `acquire` then succeeds; the old
//! holder learns it on its next refresh, which fails with [`LeaseError::Lost`] because every
//! write is checked against the revision this holder last wrote.

use bytes::Bytes;

use crate::error::BusError;
use crate::kv::Kv;

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Someone else holds the lease. Try again later (retryable).
    #[error("lease `{key}` is held by `{holder}`")]
    Held { key: String, holder: String },
    /// The lease was taken over or expired; stop the work it guarded (terminal for the holder).
    #[error("lease `{key}` was lost")]
    Lost { key: String },
    #[error(transparent)]
    Bus(#[from] BusError),
}

impl LeaseError {
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Held { .. } => true,
            Self::Lost { .. } => false,
            Self::Bus(err) => err.is_retryable(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Lease {
    kv: Kv,
    key: String,
    holder: String,
    revision: u64,
}

impl Lease {
    /// Takes `key` for `holder`. A holder that finds its own id (it restarted with the same
    /// id before the lease lapsed) takes the lease over instead of waiting for the TTL.
    pub async fn acquire(kv: &Kv, key: &str, holder: &str) -> Result<Lease, LeaseError> {
        let value = Bytes::copy_from_slice(holder.as_bytes());
        let lease = |revision| Lease {
            kv: kv.clone(),
            key: key.to_owned(),
            holder: holder.to_owned(),
            revision,
        };
        match kv.create(key, value.clone()).await {
            Ok(revision) => Ok(lease(revision)),
            Err(BusError::AlreadyExists { .. }) => {
                let Some(current) = kv.get(key).await? else {
                    // Lapsed between the two calls; let the caller retry rather than loop here.
                    return Err(LeaseError::Held { key: key.to_owned(), holder: String::new() });
                };
                let current_holder = String::from_utf8_lossy(&current.value).into_owned();
                if current_holder != holder {
                    return Err(LeaseError::Held { key: key.to_owned(), holder: current_holder });
                }
                let revision = kv
                    .update(key, value, current.revision)
                    .await
                    .map_err(|err| lost_or(key, err))?;
                Ok(lease(revision))
            }
            Err(err) => Err(err.into()),
        }
    }

    /// Extends the lease by another TTL. [`LeaseError::Lost`] when it lapsed or was taken.
    pub async fn refresh(&mut self) -> Result<(), LeaseError> {
        let value = Bytes::copy_from_slice(self.holder.as_bytes());
        self.revision = self
            .kv
            .update(&self.key, value, self.revision)
            .await
            .map_err(|err| lost_or(&self.key, err))?;
        Ok(())
    }

    /// Gives the lease up, only if still held by this holder.
    pub async fn release(self) -> Result<(), LeaseError> {
        self.kv.delete(&self.key, Some(self.revision)).await.map_err(|err| lost_or(&self.key, err))
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn holder(&self) -> &str {
        &self.holder
    }

    pub fn revision(&self) -> u64 {
        self.revision
    }
}

fn lost_or(key: &str, err: BusError) -> LeaseError {
    match err {
        BusError::WrongRevision { .. } => LeaseError::Lost { key: key.to_owned() },
        other => LeaseError::Bus(other),
    }
}
