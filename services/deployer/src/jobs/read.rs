//! Reading jobs: one (with its log), a group's list (newest first, without logs), a watch.

use std::sync::Arc;

use ramen_proto::auth::v1::Action;
use ramen_store::{Filter, Query};

use super::model::{JobRecord, JobState};
use super::watch::{WatchStream, watch};
use crate::Jobs;
use crate::caller::{Caller, require};
use crate::conversions::Page;
use crate::error::Result;
use crate::validate;

impl Jobs {
    pub async fn get_job(&self, ctx: &Caller, job_id: &str) -> Result<JobRecord> {
        let job = self.job(job_id).await?;
        require(ctx, &job.group, Action::ReadGroup)?;
        Ok(job)
    }

    pub async fn list_jobs(
        &self,
        ctx: &Caller,
        group: &str,
        environment: &str,
        states: &[JobState],
        page: Page,
    ) -> Result<(Vec<JobRecord>, ramen_proto::common::v1::PageInfo)> {
        validate::dns_label("group", group)?;
        require(ctx, group, Action::ReadGroup)?;
        let mut filter = Filter::new().eq("group", group);
        if !environment.is_empty() {
            validate::dns_label("environment", environment)?;
            filter = filter.eq("environment", environment);
        }
        if !states.is_empty() {
            let names: Vec<serde_json::Value> =
                states.iter().filter_map(|s| serde_json::to_value(s).ok()).collect();
            filter = filter.is_in("state", names);
        }
        let total = self.core.db.jobs.count(&filter).await?;
        let query = page.query(Query::new().filter(filter).sort_desc("created_at_ms"));
        let found = self.core.db.jobs.find(&query).await?;
        Ok(page.finish(found.into_iter().map(|j| j.value).collect(), total))
    }

    pub async fn watch_job(self: &Arc<Self>, ctx: &Caller, job_id: &str) -> Result<WatchStream> {
        let job = self.get_job(ctx, job_id).await?;
        Ok(watch(self.clone(), job))
    }
}
