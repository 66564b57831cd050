//! Groups: super admins create and delete them (deletion is the saga in `deletion.rs`);
//! a group's existence is registered with auth first (auth's seam: `RegisterGroup`), then
//! recorded here. Members, the first admin included, are added through auth's `AddMember`.

use ramen_proto::auth::v1::Action;
use ramen_proto::deployer::v1 as pb;
use ramen_store::{Filter, Query, StoreError};

use crate::caller::{Caller, require};
use crate::conversions::{Page, restrictions_in};
use crate::error::{Error, Result};
use crate::git::{check_repo_url, refs::check_ref};
use crate::model::{GroupPhase, GroupRecord, now_ms};
use crate::{Registry, validate};

impl Registry {
    pub async fn create_group(
        &self,
        ctx: &Caller,
        r: pb::CreateGroupRequest,
    ) -> Result<GroupRecord> {
        require(ctx, "", Action::CreateGroup)?;
        validate::dns_label("name", &r.name)?;
        check_repo_url(&r.repo_url, self.core.settings.local_mode)?;
        let default_ref = if r.default_ref.is_empty() { "main".to_owned() } else { r.default_ref };
        check_ref(&default_ref)?;
        worker_image(&r.worker_image)?;
        let now = now_ms();
        let record = GroupRecord {
            name: r.name.clone(),
            repo_url: r.repo_url,
            default_ref,
            worker_image: r.worker_image,
            restrictions: restrictions_in(r.restrictions)?,
            github_app_installation_id: installation_id(r.github_app_installation_id)?,
            status: GroupPhase::Active,
            created_at_ms: now,
            updated_at_ms: now,
            deletion: None,
        };
        if let Some(existing) = self.core.db.groups.get(&r.name).await? {
            return Err(match existing.value.status {
                GroupPhase::Deleting => Error::FailedPrecondition(format!(
                    "group `{}` is being deleted; create it again once GetGroupDeletion says it is gone",
                    r.name
                )),
                GroupPhase::Active => Error::AlreadyExists(format!("group `{}`", r.name)),
            });
        }
        // Auth first: a registration without a record only reserves the name until a retry.
        self.core.auth.register_group(ctx, &r.name).await?;
        match self.core.db.groups.insert(&r.name, &record).await {
            Ok(_) => {}
            Err(StoreError::AlreadyExists { .. }) => {
                return Err(Error::AlreadyExists(format!("group `{}`", r.name)));
            }
            Err(err) => return Err(err.into()),
        }
        self.core
            .audit(
                ctx,
                "group.create",
                &r.name,
                &format!("group/{}", r.name),
                [("repo_url", record.repo_url.clone())],
            )
            .await;
        Ok(record)
    }

    pub async fn get_group(&self, ctx: &Caller, name: &str) -> Result<GroupRecord> {
        validate::dns_label("name", name)?;
        require(ctx, name, Action::ReadGroup)?;
        Ok(self.core.group(name).await?.value)
    }

    /// Every group for a super admin; the caller's groups otherwise.
    pub async fn list_groups(
        &self,
        ctx: &Caller,
        page: Page,
    ) -> Result<(Vec<GroupRecord>, ramen_proto::common::v1::PageInfo)> {
        let filter = match crate::caller::visible_groups(ctx)? {
            Some(names) => Filter::new().is_in("name", names),
            None => Filter::new(),
        };
        let total = self.core.db.groups.count(&filter).await?;
        let query = page.query(Query::new().filter(filter).sort_asc("name"));
        let found = self.core.db.groups.find(&query).await?;
        Ok(page.finish(found.into_iter().map(|g| g.value).collect(), total))
    }

    pub async fn update_group(
        &self,
        ctx: &Caller,
        r: pb::UpdateGroupRequest,
    ) -> Result<GroupRecord> {
        validate::dns_label("name", &r.name)?;
        require(ctx, &r.name, Action::ManageGroup)?;
        if let Some(url) = &r.repo_url {
            check_repo_url(url, self.core.settings.local_mode)?;
        }
        if let Some(git_ref) = &r.default_ref {
            check_ref(git_ref)?;
        }
        if let Some(image) = &r.worker_image {
            worker_image(image)?;
        }
        let restrictions = r.restrictions.map(|r| restrictions_in(Some(r))).transpose()?;
        let installation = r.github_app_installation_id.map(installation_id).transpose()?;
        let (written, ()) = self
            .core
            .db
            .groups
            .modify(&r.name, |g| {
                if g.status == GroupPhase::Deleting {
                    return Err(Error::FailedPrecondition(format!(
                        "group `{}` is being deleted",
                        g.name
                    )));
                }
                if let Some(url) = &r.repo_url {
                    g.repo_url = url.clone();
                }
                if let Some(git_ref) = &r.default_ref {
                    g.default_ref = git_ref.clone();
                }
                if let Some(image) = &r.worker_image {
                    g.worker_image = image.clone();
                }
                if let Some(restrictions) = &restrictions {
                    g.restrictions = restrictions.clone();
                }
                if let Some(id) = installation {
                    g.github_app_installation_id = id;
                }
                g.updated_at_ms = now_ms();
                Ok(())
            })
            .await?;
        self.core.audit(ctx, "group.update", &r.name, &format!("group/{}", r.name), []).await;
        Ok(written.value)
    }
}

/// [`ramen_service::rules::IMAGE_REFERENCE`], the rule the API document states.
fn worker_image(image: &str) -> Result<()> {
    let rule = &ramen_service::rules::IMAGE_REFERENCE;
    if !rule.accepts(image) {
        return Err(Error::invalid(
            "worker_image",
            format!("{} is not {}", ramen_service::validate::quoted(image), rule.what),
        ));
    }
    Ok(())
}

fn installation_id(id: i64) -> Result<i64> {
    if id < 0 {
        return Err(Error::invalid("github_app_installation_id", "must be positive (0 = none)"));
    }
    Ok(id)
}
