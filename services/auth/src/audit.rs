//! The audit log: append-only (inserted, never updated or deleted, not even by PurgeGroup),
//! queried newest first by group, actor, time range and action prefix.

use std::collections::BTreeMap;
use std::time::Duration;

use ramen_proto::auth::v1::Action;
use ramen_proto::common::v1::{AuditOutcome, PageInfo, PageRequest};
use ramen_proto::events::v1::AuditAppended;
use ramen_store::{Query, StoreError};

use crate::error::AuthError;
use crate::events::meta;
use crate::model::{AuditRecord, new_id, now_ms};
use crate::{Auth, paging};
use ramen_access::Caller;

/// Best-effort events never hold a request longer than this.
const EVENT_DEADLINE: Duration = Duration::from_secs(1);

#[derive(Clone, Debug, Default)]
pub struct AuditQuery {
    pub group: String,
    pub actor: String,
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    pub action_prefix: String,
    pub page: Option<PageRequest>,
}

impl Auth {
    /// Appends an entry; a retried append with the same id returns the stored one.
    pub async fn append_audit(
        &self,
        id: Option<String>,
        entry: AuditRecord,
    ) -> Result<(String, AuditRecord), AuthError> {
        if entry.actor.trim().is_empty() {
            return Err(AuthError::invalid(
                "entry.actor",
                "must name a user id or a service actor",
            ));
        }
        if entry.action.trim().is_empty() || entry.action.len() > 128 {
            return Err(AuthError::invalid(
                "entry.action",
                "must be a dotted verb such as `environment.create`",
            ));
        }
        let id = id.filter(|id| !id.trim().is_empty()).unwrap_or_else(new_id);
        if id.len() > 128 {
            return Err(AuthError::invalid("entry.id", "must be at most 128 characters"));
        }
        match self.db.audit.insert(&id, &entry).await {
            Ok(_) => {}
            Err(StoreError::AlreadyExists { .. }) => {
                let stored = self
                    .db
                    .audit
                    .get(&id)
                    .await?
                    .ok_or_else(|| AuthError::NotFound(format!("audit entry `{id}`")))?;
                return Ok((id, stored.value));
            }
            Err(e) => return Err(e.into()),
        }
        self.announce(&id, &entry).await;
        Ok((id, entry))
    }

    async fn announce(&self, id: &str, entry: &AuditRecord) {
        let caller = Caller::new(entry.actor.clone(), entry.request_id.clone());
        let event = AuditAppended {
            meta: Some(meta(&caller)),
            entry_id: id.to_owned(),
            at_unix_ms: entry.at_ms,
            actor: entry.actor.clone(),
            action: entry.action.clone(),
            group: entry.group.clone(),
            target: entry.target.clone(),
            outcome: entry.outcome,
            request_id: entry.request_id.clone(),
            details: entry.details.clone().into_iter().collect(),
        };
        match tokio::time::timeout(EVENT_DEADLINE, self.events.publish(&event)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(%error, entry = id, "audit entry stored; its event was not published")
            }
            Err(_) => {
                tracing::warn!(entry = id, "audit entry stored; publishing its event timed out")
            }
        }
    }

    /// Records the outcome of one of auth's own mutating actions. Never fails the action: an
    /// audit write that fails is logged as an error.
    pub(crate) async fn audited<T>(
        &self,
        caller: &Caller,
        action: &str,
        group: &str,
        target: &str,
        details: BTreeMap<String, String>,
        result: Result<T, AuthError>,
    ) -> Result<T, AuthError> {
        let outcome = match &result {
            Ok(_) => AuditOutcome::Success,
            Err(
                AuthError::Denied(_)
                | AuthError::PasswordChangeRequired
                | AuthError::Unauthenticated(_)
                | AuthError::BadCredentials
                // A group the caller may not see reads as missing: a refusal all the same.
                | AuthError::GroupNotFound(_),
            ) => AuditOutcome::Denied,
            Err(_) => AuditOutcome::Failure,
        };
        let mut details = details;
        if let Err(error) = &result {
            details.insert("error".into(), error.to_string());
        }
        let entry = AuditRecord {
            at_ms: now_ms(),
            actor: caller.audit_actor().to_owned(),
            action: action.to_owned(),
            group: group.to_owned(),
            target: target.to_owned(),
            outcome: outcome as i32,
            request_id: caller.request_id.clone(),
            details,
        };
        if let Err(error) = self.append_audit(None, entry).await {
            tracing::error!(%error, action, group, target, "could not write an audit entry");
        }
        result
    }

    pub async fn query_audit(
        &self,
        caller: &Caller,
        query: AuditQuery,
    ) -> Result<(Vec<(String, AuditRecord)>, PageInfo), AuthError> {
        let action = if query.group.is_empty() { Action::Admin } else { Action::ReadGroup };
        self.require(caller, &query.group, action).await?;
        let mut page = paging::parse_pinned(query.page.as_ref())?;
        let until = page.until_ms.or(query.until_ms).unwrap_or(now_ms() + 1);
        page.until_ms = Some(until);
        let mut find = Query::new()
            .lt("at_ms", until)
            .sort_desc("at_ms")
            .skip(page.offset)
            .limit(page.probe());
        if !query.group.is_empty() {
            find = find.eq("group", query.group.as_str());
        }
        if !query.actor.is_empty() {
            find = find.eq("actor", query.actor.as_str());
        }
        if let Some(since) = query.since_ms {
            find = find.gte("at_ms", since);
        }
        if !query.action_prefix.is_empty() {
            // Every string starting with the prefix sorts inside [prefix, prefix + U+10FFFF).
            find = find
                .gte("action", query.action_prefix.as_str())
                .lt("action", format!("{}\u{10FFFF}", query.action_prefix));
        }
        let mut entries: Vec<_> =
            self.db.audit.find(&find).await?.into_iter().map(|v| (v.id, v.value)).collect();
        let info = page.finish(&mut entries);
        Ok((entries, info))
    }
}

/// Details of an audit entry, from pairs.
pub fn details<const N: usize>(pairs: [(&str, String); N]) -> BTreeMap<String, String> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}
