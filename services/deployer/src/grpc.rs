//! `DeployerService`: each RPC takes the caller the serving layer verified from its ticket,
//! hands over to the domain (which applies the one rule to it) and converts the answer.

use std::sync::Arc;

use ramen_proto::common::v1 as common;
use ramen_proto::deployer::v1 as pb;
use ramen_proto::deployer::v1::deployer_service_server::DeployerService;
use tonic::{Request, Response, Status};

use crate::Deployer;
use crate::caller::Caller;
use crate::config_settings;
use crate::conversions as conv;
use crate::jobs::{DeadLetterView, WatchStream};

pub struct DeployerGrpc(pub Arc<Deployer>);

impl DeployerGrpc {
    fn auth_defaults(&self) -> &crate::mcp_auth::McpAuthDefaults {
        &self.0.registry.core.settings.mcp_auth
    }
}

type Answer<T> = Result<Response<T>, Status>;

fn split<T>(request: Request<T>) -> (Caller, T) {
    (Caller::from_request(&request), request.into_inner())
}

fn ok<T>(value: T) -> Answer<T> {
    Ok(Response::new(value))
}

fn dead_letter(v: DeadLetterView) -> pb::DeadLetter {
    pb::DeadLetter {
        sequence: v.sequence,
        job_id: v.job_id,
        group: v.group,
        environment: v.environment,
        reason: v.reason,
        deliveries: v.deliveries,
        parked_at: conv::ts(v.parked_at_ms),
        payload_json: v.payload_json,
        last_error: v.last_error,
    }
}

#[tonic::async_trait]
impl DeployerService for DeployerGrpc {
    async fn create_group(&self, request: Request<pb::CreateGroupRequest>) -> Answer<pb::Group> {
        let (ctx, r) = split(request);
        ok(conv::group(&self.0.registry.create_group(&ctx, r).await?))
    }

    async fn get_group(&self, request: Request<pb::GetGroupRequest>) -> Answer<pb::Group> {
        let (ctx, r) = split(request);
        ok(conv::group(&self.0.registry.get_group(&ctx, &r.name).await?))
    }

    async fn list_groups(
        &self,
        request: Request<pb::ListGroupsRequest>,
    ) -> Answer<pb::ListGroupsResponse> {
        let (ctx, r) = split(request);
        let (groups, page) =
            self.0.registry.list_groups(&ctx, conv::page(r.page.as_ref())?).await?;
        ok(pb::ListGroupsResponse {
            groups: groups.iter().map(conv::group).collect(),
            page: Some(page),
        })
    }

    async fn update_group(&self, request: Request<pb::UpdateGroupRequest>) -> Answer<pb::Group> {
        let (ctx, r) = split(request);
        ok(conv::group(&self.0.registry.update_group(&ctx, r).await?))
    }

    async fn delete_group(
        &self,
        request: Request<pb::DeleteGroupRequest>,
    ) -> Answer<pb::GroupDeletion> {
        let (ctx, r) = split(request);
        ok(conv::deletion(&r.name, &self.0.registry.delete_group(&ctx, &r.name).await?))
    }

    async fn get_group_deletion(
        &self,
        request: Request<pb::GetGroupDeletionRequest>,
    ) -> Answer<pb::GroupDeletion> {
        let (ctx, r) = split(request);
        ok(conv::deletion(&r.name, &self.0.registry.group_deletion(&ctx, &r.name).await?))
    }

    async fn create_environment(
        &self,
        request: Request<pb::CreateEnvironmentRequest>,
    ) -> Answer<pb::Environment> {
        let (ctx, r) = split(request);
        let env = self.0.registry.create_environment(&ctx, r).await?;
        ok(conv::environment(&env, self.auth_defaults()))
    }

    async fn get_environment(
        &self,
        request: Request<pb::GetEnvironmentRequest>,
    ) -> Answer<pb::Environment> {
        let (ctx, r) = split(request);
        let env = self.0.registry.get_environment(&ctx, &r.group, &r.name).await?;
        ok(conv::environment(&env, self.auth_defaults()))
    }

    async fn list_environments(
        &self,
        request: Request<pb::ListEnvironmentsRequest>,
    ) -> Answer<pb::ListEnvironmentsResponse> {
        let (ctx, r) = split(request);
        let (envs, page) =
            self.0.registry.list_environments(&ctx, &r.group, conv::page(r.page.as_ref())?).await?;
        ok(pb::ListEnvironmentsResponse {
            environments: envs.iter().map(|e| conv::environment(e, self.auth_defaults())).collect(),
            page: Some(page),
        })
    }

    async fn update_environment(
        &self,
        request: Request<pb::UpdateEnvironmentRequest>,
    ) -> Answer<pb::Environment> {
        let (ctx, r) = split(request);
        let env = self.0.registry.update_environment(&ctx, r).await?;
        ok(conv::environment(&env, self.auth_defaults()))
    }

    async fn delete_environment(
        &self,
        request: Request<pb::DeleteEnvironmentRequest>,
    ) -> Answer<pb::DeleteEnvironmentResponse> {
        let (ctx, r) = split(request);
        let released_zones = self.0.registry.delete_environment(&ctx, &r.group, &r.name).await?;
        ok(pb::DeleteEnvironmentResponse { released_zones })
    }

    async fn start_deploy(
        &self,
        request: Request<pb::StartDeployRequest>,
    ) -> Answer<pb::StartDeployResponse> {
        let (ctx, r) = split(request);
        let (job, deduplicated) = self.0.jobs.start_deploy(&ctx, r).await?;
        // The job itself, so the caller needs no GetJob after starting it.
        let stored = conv::job(&job, true);
        ok(pb::StartDeployResponse { job_id: job.id, deduplicated, job: Some(stored) })
    }

    async fn get_job(&self, request: Request<pb::GetJobRequest>) -> Answer<pb::DeployJob> {
        let (ctx, r) = split(request);
        ok(conv::job(&self.0.jobs.get_job(&ctx, &r.job_id).await?, true))
    }

    async fn list_jobs(
        &self,
        request: Request<pb::ListJobsRequest>,
    ) -> Answer<pb::ListJobsResponse> {
        let (ctx, r) = split(request);
        let states: Vec<_> = r
            .states
            .iter()
            .filter_map(|s| common::JobState::try_from(*s).ok())
            .filter_map(conv::job_state_in)
            .collect();
        let page = conv::page(r.page.as_ref())?;
        let (jobs, page) =
            self.0.jobs.list_jobs(&ctx, &r.group, &r.environment, &states, page).await?;
        ok(pb::ListJobsResponse {
            jobs: jobs.iter().map(|j| conv::job(j, false)).collect(),
            page: Some(page),
        })
    }

    async fn cancel_job(&self, request: Request<pb::CancelJobRequest>) -> Answer<pb::DeployJob> {
        let (ctx, r) = split(request);
        ok(conv::job(&self.0.jobs.cancel_job(&ctx, &r.job_id, &r.reason).await?, true))
    }

    async fn decide_review(
        &self,
        request: Request<pb::DecideReviewRequest>,
    ) -> Answer<pb::DeployJob> {
        let (ctx, r) = split(request);
        let job = self.0.jobs.decide_review(&ctx, &r.job_id, r.approve, &r.reason).await?;
        ok(conv::job(&job, true))
    }

    type WatchJobStream = WatchStream;

    async fn watch_job(
        &self,
        request: Request<pb::WatchJobRequest>,
    ) -> Answer<Self::WatchJobStream> {
        let (ctx, r) = split(request);
        ok(self.0.jobs.watch_job(&ctx, &r.job_id).await?)
    }

    async fn list_dead_letters(
        &self,
        request: Request<pb::ListDeadLettersRequest>,
    ) -> Answer<pb::ListDeadLettersResponse> {
        let (ctx, r) = split(request);
        let (letters, page) =
            self.0.jobs.list_dead_letters(&ctx, conv::page(r.page.as_ref())?).await?;
        ok(pb::ListDeadLettersResponse {
            dead_letters: letters.into_iter().map(dead_letter).collect(),
            page: Some(page),
        })
    }

    async fn get_dead_letter(
        &self,
        request: Request<pb::GetDeadLetterRequest>,
    ) -> Answer<pb::DeadLetter> {
        let (ctx, r) = split(request);
        ok(dead_letter(self.0.jobs.get_dead_letter(&ctx, r.sequence).await?))
    }

    async fn replay_dead_letter(
        &self,
        request: Request<pb::ReplayDeadLetterRequest>,
    ) -> Answer<pb::ReplayDeadLetterResponse> {
        let (ctx, r) = split(request);
        ok(pb::ReplayDeadLetterResponse {
            job_id: self.0.jobs.replay_dead_letter(&ctx, r.sequence).await?,
        })
    }

    async fn discard_dead_letter(
        &self,
        request: Request<pb::DiscardDeadLetterRequest>,
    ) -> Answer<pb::DiscardDeadLetterResponse> {
        let (ctx, r) = split(request);
        self.0.jobs.discard_dead_letter(&ctx, r.sequence).await?;
        ok(pb::DiscardDeadLetterResponse {})
    }

    async fn get_settings(&self, request: Request<pb::GetSettingsRequest>) -> Answer<pb::Settings> {
        let (ctx, _) = split(request);
        ok(config_settings::to_proto(&self.0.app.get_settings(&ctx).await?))
    }

    async fn update_settings(
        &self,
        request: Request<pb::UpdateSettingsRequest>,
    ) -> Answer<pb::Settings> {
        let (ctx, r) = split(request);
        ok(config_settings::to_proto(&self.0.app.update_settings(&ctx, r).await?))
    }
}
