//! Members added by the email of someone without an account yet. A group admin must not learn
//! from `AddMember` which emails have a ramen account, so adding one without an account answers
//! exactly as adding one with: the email gets a *reserved* user id (UUIDv7, like any), the
//! membership is made for that id, and the account created later for the email takes that id —
//! so the membership holds from its first sign-in, and lists, role changes and removal treat
//! both alike. A reservation grants nothing by itself: nobody can sign in as an id without an
//! account.

use std::collections::HashMap;

use ramen_store::{Query, StoreError};

use crate::Auth;
use crate::error::AuthError;
use crate::model::{PendingAccountRecord, new_id, now_ms};

impl Auth {
    /// The id reserved for `email` (validated, lowercased), reserving one if there is none.
    pub(crate) async fn reserve_id(&self, email: &str) -> Result<String, AuthError> {
        if let Some(found) = self.db.pending.get(email).await? {
            return Ok(found.value.user_id);
        }
        let record = PendingAccountRecord { user_id: new_id(), created_at_ms: now_ms() };
        match self.db.pending.insert(email, &record).await {
            Ok(_) => Ok(record.user_id),
            // Another admin reserved it meanwhile: theirs is the id.
            Err(StoreError::AlreadyExists { .. }) => {
                let found = self.db.pending.get(email).await?;
                found.map(|f| f.value.user_id).ok_or_else(|| {
                    AuthError::Unavailable("a reservation vanished while read; retry".into())
                })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The id a new account for `email` takes: its reservation's, or a new one.
    pub(crate) async fn id_for_new_account(&self, email: &str) -> Result<String, AuthError> {
        Ok(self.db.pending.get(email).await?.map_or_else(new_id, |r| r.value.user_id))
    }

    /// Drops the reservation once its account exists (a failure only leaves a stale row).
    pub(crate) async fn account_created(&self, email: &str) {
        if let Err(error) = self.db.pending.delete(email, None).await {
            tracing::warn!(%error, "dropping a used account reservation failed");
        }
    }

    /// The emails of reserved ids among `ids` (for member lists).
    pub(crate) async fn pending_emails(
        &self,
        ids: Vec<String>,
    ) -> Result<HashMap<String, String>, AuthError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let found = self.db.pending.find(&Query::new().is_in("user_id", ids)).await?;
        Ok(found.into_iter().map(|r| (r.value.user_id, r.id)).collect())
    }
}
