//! Environments (group admins): a git ref deployed to a set of zones, with a verbose flag and
//! a blocked list. Blocked-list edits reach running nodes live; a zone no environment of the
//! group uses any more is torn down (the record goes once its teardowns are done: `sweep`).

use std::collections::BTreeSet;

use ramen_proto::auth::v1::Action;
use ramen_proto::deployer::v1 as pb;
use ramen_proto::events::v1::EnvironmentDeleted;
use ramen_store::{Filter, Query, StoreError};

use crate::caller::{Caller, require};
use crate::conversions::Page;
use crate::error::{Error, Result};
use crate::git::refs::check_ref;
use crate::model::{EnvironmentRecord, GroupRecord, SurfaceChanges, environment_id, now_ms};
use crate::{Registry, mcp_auth, validate};

impl Registry {
    pub async fn create_environment(
        &self,
        ctx: &Caller,
        r: pb::CreateEnvironmentRequest,
    ) -> Result<EnvironmentRecord> {
        validate::dns_label("group", &r.group)?;
        validate::dns_label("name", &r.name)?;
        require(ctx, &r.group, Action::ManageEnvironments)?;
        let group = self.core.active_group(&r.group).await?;
        let git_ref = if r.git_ref.is_empty() { group.default_ref.clone() } else { r.git_ref };
        check_ref(&git_ref)?;
        let zones = self.check_zones(&group, &r.zones).await?;
        let auth = r
            .auth
            .as_ref()
            .map(|a| mcp_auth::checked(a, &self.core.settings.mcp_auth))
            .transpose()?;
        let now = now_ms();
        let record = EnvironmentRecord {
            group: r.group.clone(),
            name: r.name.clone(),
            git_ref,
            zones,
            verbose: r.verbose,
            blocked: validate::blocked(&r.blocked)?,
            auth,
            surface_changes: crate::conversions::surface_changes_in(r.surface_changes)?
                .unwrap_or_else(|| SurfaceChanges::default_for(&r.name)),
            record_arguments: r.record_arguments,
            created_at_ms: now,
            updated_at_ms: now,
            ..EnvironmentRecord::default()
        };
        match self.core.db.environments.insert(&environment_id(&r.group, &r.name), &record).await {
            Ok(_) => {}
            Err(StoreError::AlreadyExists { .. }) => {
                return Err(Error::AlreadyExists(format!(
                    "environment `{}` of group `{}`",
                    r.name, r.group
                )));
            }
            Err(err) => return Err(err.into()),
        }
        self.core
            .audit(
                ctx,
                "environment.create",
                &r.group,
                &format!("env/{}", r.name),
                [
                    ("git_ref", record.git_ref.clone()),
                    ("zones", record.zones.join(",")),
                    ("auth", auth_summary(&record, &self.core.settings.mcp_auth)),
                    ("surface_changes", surface_word(record.surface_changes).to_owned()),
                    ("record_arguments", record.record_arguments.to_string()),
                ],
            )
            .await;
        Ok(record)
    }

    pub async fn get_environment(
        &self,
        ctx: &Caller,
        group: &str,
        name: &str,
    ) -> Result<EnvironmentRecord> {
        validate::dns_label("group", group)?;
        require(ctx, group, Action::ReadGroup)?;
        self.core.environment(group, name).await
    }

    /// One group's environments, or (group empty) those of every group the caller belongs to.
    pub async fn list_environments(
        &self,
        ctx: &Caller,
        group: &str,
        page: Page,
    ) -> Result<(Vec<EnvironmentRecord>, ramen_proto::common::v1::PageInfo)> {
        let filter = if group.is_empty() {
            match crate::caller::visible_groups(ctx)? {
                Some(groups) => Filter::new().is_in("group", groups),
                None => Filter::new(),
            }
        } else {
            validate::dns_label("group", group)?;
            require(ctx, group, Action::ReadGroup)?;
            Filter::new().eq("group", group)
        };
        let total = self.core.db.environments.count(&filter).await?;
        let query = page.query(Query::new().filter(filter).sort_asc("group").sort_asc("name"));
        let found = self.core.db.environments.find(&query).await?;
        Ok(page.finish(found.into_iter().map(|e| e.value).collect(), total))
    }

    pub async fn update_environment(
        &self,
        ctx: &Caller,
        r: pb::UpdateEnvironmentRequest,
    ) -> Result<EnvironmentRecord> {
        validate::dns_label("group", &r.group)?;
        require(ctx, &r.group, Action::ManageEnvironments)?;
        let group = self.core.active_group(&r.group).await?;
        let before = self.core.environment(&r.group, &r.name).await?;
        if let Some(git_ref) = &r.git_ref {
            check_ref(git_ref)?;
        }
        let zones = match &r.zones {
            Some(list) => Some(self.check_zones(&group, &list.values).await?),
            None => None,
        };
        let blocked = r.blocked.as_ref().map(|b| validate::blocked(&b.values)).transpose()?;
        let auth = r
            .auth
            .as_ref()
            .map(|a| mcp_auth::checked(a, &self.core.settings.mcp_auth))
            .transpose()?;
        let surface = crate::conversions::surface_changes_in(r.surface_changes)?;
        let id = environment_id(&r.group, &r.name);
        let changes = Changes {
            zones: zones.as_ref(),
            blocked: blocked.as_ref(),
            auth: auth.as_ref(),
            surface,
        };
        let (written, ()) =
            self.core.db.environments.modify(&id, |e| apply(e, &r, &changes)).await?;
        let env = written.value;
        let blocked_changed = blocked.is_some() && blocked.as_ref() != Some(&before.blocked);
        let auth_changed = auth.is_some() && env.auth != before.auth;
        if blocked_changed || auth_changed {
            self.push_policy(&env, blocked_changed, auth_changed).await?;
        }
        let dropped: Vec<String> =
            before.zones.iter().filter(|z| !env.zones.contains(z)).cloned().collect();
        let released = self.unused_zones(&env.group, &env.name, &dropped).await?;
        for zone in &released {
            self.core.zones.teardown(&env.group, zone).await?;
        }
        self.core
            .audit(
                ctx,
                "environment.update",
                &env.group,
                &format!("env/{}", env.name),
                [
                    ("released_zones", released.join(",")),
                    (
                        "surface_changes",
                        if surface.is_some_and(|s| s != before.surface_changes) {
                            surface_word(env.surface_changes).to_owned()
                        } else {
                            String::new()
                        },
                    ),
                    (
                        "record_arguments",
                        match r.record_arguments {
                            Some(on) if on != before.record_arguments => on.to_string(),
                            _ => String::new(),
                        },
                    ),
                    (
                        "auth",
                        if auth_changed {
                            auth_summary(&env, &self.core.settings.mcp_auth)
                        } else {
                            String::new()
                        },
                    ),
                ],
            )
            .await;
        Ok(env)
    }

    /// Marks the environment deleting, starts the teardown of the zones no other environment of
    /// the group uses, and publishes `EnvironmentDeleted`; the record goes once they are done.
    pub async fn delete_environment(
        &self,
        ctx: &Caller,
        group: &str,
        name: &str,
    ) -> Result<Vec<String>> {
        validate::dns_label("group", group)?;
        require(ctx, group, Action::ManageEnvironments)?;
        let env = self.core.environment(group, name).await?;
        if let Some(live) = self.core.live_job(group, name).await? {
            return Err(Error::FailedPrecondition(format!(
                "deploy {} of environment `{name}` is {:?}; cancel it first",
                live.id, live.state
            )));
        }
        let released = self.unused_zones(group, name, &env.zones).await?;
        let id = environment_id(group, name);
        let marked = released.clone();
        self.core
            .db
            .environments
            .modify(&id, |e| {
                e.deleting = true;
                e.released_zones = marked.clone();
                e.updated_at_ms = now_ms();
                Ok::<_, Error>(())
            })
            .await?;
        for zone in &released {
            self.core.zones.teardown(group, zone).await?;
        }
        let event = EnvironmentDeleted {
            meta: Some(crate::ports::events::meta(ctx)),
            group: group.to_owned(),
            environment: name.to_owned(),
            released_zones: released.clone(),
        };
        self.core.events.publish(&event).await;
        self.core
            .audit(
                ctx,
                "environment.delete",
                group,
                &format!("env/{name}"),
                [("released_zones", released.join(","))],
            )
            .await;
        self.finish_environment_deletions().await?;
        Ok(released)
    }

    /// Removes the records of deleted environments whose teardowns are done (and their jobs).
    pub(crate) async fn finish_environment_deletions(&self) -> Result<()> {
        let deleting = self.core.db.environments.find(&Query::new().eq("deleting", true)).await?;
        for env in deleting.into_iter().map(|e| e.value) {
            let mut pending = false;
            for zone in &env.released_zones {
                let progress = self.core.zones.teardown_progress(&env.group, zone).await?;
                pending |= progress
                    .iter()
                    .any(|p| p.state != ramen_proto::zone::v1::TeardownState::Done as i32);
            }
            if pending {
                continue;
            }
            let jobs =
                Filter::new().eq("group", env.group.as_str()).eq("environment", env.name.as_str());
            self.core.db.jobs.delete_many(&jobs).await?;
            self.core.db.environments.delete(&environment_id(&env.group, &env.name), None).await?;
            tracing::info!(group = %env.group, environment = %env.name, "environment deleted");
        }
        Ok(())
    }

    /// Each zone exists (any zone that exists may be attached) and the group may use it.
    async fn check_zones(&self, group: &GroupRecord, zones: &[String]) -> Result<Vec<String>> {
        let zones = validate::zones(zones)?;
        for zone in &zones {
            // 404: the request is well formed, the zone it names is not there.
            if self.core.zones.zone(zone).await?.is_none() {
                return Err(Error::NotFound(format!(
                    "zone `{zone}` (named in `zones`; a super admin creates zones)"
                )));
            }
            let allowed = &group.restrictions.allowed_zones;
            // 403: well formed, and the group's restrictions say no.
            if !allowed.is_empty() && !allowed.contains(zone) {
                return Err(Error::PermissionDenied(format!(
                    "zones: group `{}` may not use zone `{zone}` (allowed: {})",
                    group.name,
                    allowed.join(", ")
                )));
            }
        }
        Ok(zones)
    }

    /// Of `zones`, those no other environment of the group deploys to.
    async fn unused_zones(
        &self,
        group: &str,
        except: &str,
        zones: &[String],
    ) -> Result<Vec<String>> {
        let others = self.core.db.environments.find(&Query::new().eq("group", group)).await?;
        let used: BTreeSet<String> = others
            .into_iter()
            .filter(|e| e.value.name != except && !e.value.deleting)
            .flat_map(|e| e.value.zones)
            .collect();
        Ok(zones.iter().filter(|z| !used.contains(*z)).cloned().collect())
    }

    /// The blocked list and/or the MCP authentication, live on every zone of the environment
    /// that has a placement.
    async fn push_policy(&self, env: &EnvironmentRecord, blocked: bool, auth: bool) -> Result<()> {
        let resolved = auth.then(|| {
            self.core.settings.mcp_auth.resolve(env.auth.as_ref(), &env.group, &env.name).0
        });
        for zone in &env.zones {
            let blocked = blocked.then(|| env.blocked.clone());
            match self
                .core
                .zones
                .live_policy(&env.group, zone, blocked, None, resolved.clone())
                .await
            {
                Ok(_) | Err(Error::NotFound(_)) => {}
                Err(Error::FailedPrecondition(_)) => {} // nothing deployed there yet
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }
}

/// An update's checked fields (`None`: left as they are).
struct Changes<'a> {
    zones: Option<&'a Vec<String>>,
    blocked: Option<&'a Vec<String>>,
    auth: Option<&'a ramen_proto::common::v1::McpAuth>,
    surface: Option<SurfaceChanges>,
}

/// An update's set fields onto the record (unset ones are left as they are).
fn apply(
    e: &mut EnvironmentRecord,
    r: &pb::UpdateEnvironmentRequest,
    changes: &Changes<'_>,
) -> Result<()> {
    if e.deleting {
        return Err(Error::FailedPrecondition(format!(
            "environment `{}` is being deleted",
            e.name
        )));
    }
    if let Some(git_ref) = &r.git_ref {
        e.git_ref = git_ref.clone();
    }
    if let Some(verbose) = r.verbose {
        e.verbose = verbose;
    }
    if let Some(record) = r.record_arguments {
        e.record_arguments = record;
    }
    if let Some(zones) = changes.zones {
        e.zones = zones.clone();
    }
    if let Some(blocked) = changes.blocked {
        e.blocked = blocked.clone();
    }
    if let Some(auth) = changes.auth {
        e.auth = Some(auth.clone());
    }
    if let Some(surface) = changes.surface {
        e.surface_changes = surface;
    }
    e.updated_at_ms = now_ms();
    Ok(())
}

pub(crate) fn surface_word(s: SurfaceChanges) -> &'static str {
    match s {
        SurfaceChanges::Allow => "allow",
        SurfaceChanges::Review => "review",
    }
}

/// What the audit log keeps of an auth change: the mode, issuers, scopes, how many rules, the
/// rate (never more: rules may name people).
fn auth_summary(env: &EnvironmentRecord, defaults: &mcp_auth::McpAuthDefaults) -> String {
    let (auth, inherited) = defaults.resolve(env.auth.as_ref(), &env.group, &env.name);
    let mode = auth.mode().as_str_name().trim_start_matches("MCP_AUTH_MODE_").to_ascii_lowercase();
    format!(
        "mode={mode}{} issuers={} scopes={} rules={} calls_per_second={}",
        if inherited { " (platform default)" } else { "" },
        auth.issuers.join(","),
        auth.scopes.join(","),
        auth.rules.len(),
        auth.calls_per_second
    )
}
