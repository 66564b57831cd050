//! `RebalancerService` over gRPC. Each call's caller (verified from its ticket) is checked with
//! the one rule; `ListLoadCells` answers only the groups the caller may see.

pub mod conversions;
mod paging;

use std::sync::Arc;

use ramen_proto::rebalancer::v1 as pb;
use ramen_proto::rebalancer::v1::rebalancer_service_server::RebalancerService;
use tonic::{Request, Response, Status};

use ramen_access::rule::Action;

use crate::actions::Rebalancer;
use crate::error::Error;
use crate::model::Caller;
use crate::scheduler::Scheduler;
use conversions as conv;
use paging::page;

pub struct RebalancerApi {
    rebalancer: Arc<Rebalancer>,
    scheduler: Arc<Scheduler>,
}

impl RebalancerApi {
    pub fn new(rebalancer: Arc<Rebalancer>, scheduler: Arc<Scheduler>) -> Self {
        Self { rebalancer, scheduler }
    }
}

/// The caller the serving layer verified; `unknown` in the audit log when it names none.
fn caller<T>(request: &Request<T>) -> Caller {
    Caller::from_request_or(request, "unknown")
}

fn allow(caller: &Caller, group: &str, action: Action) -> Result<(), Status> {
    caller.require(group, action).map_err(Status::from)
}

fn signed_in(caller: &Caller) -> Result<(), Status> {
    match caller.actor.is_empty() || caller.actor == "unknown" {
        true => Err(Status::unauthenticated("sign in first: the call names no caller")),
        false => Ok(()),
    }
}

type Answer<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl RebalancerService for RebalancerApi {
    async fn list_load_cells(
        &self,
        request: Request<pb::ListLoadCellsRequest>,
    ) -> Answer<pb::ListLoadCellsResponse> {
        let caller = caller(&request);
        signed_in(&caller)?;
        let visible = caller.visible_groups();
        let r = request.into_inner();
        let page = page(r.page.as_ref())?;
        let snapshot = self.rebalancer.cells.snapshot();
        let wanted =
            |list: &[String], name: &str| list.is_empty() || list.iter().any(|n| n == name);
        let may_see = |group: &str| visible.as_ref().is_none_or(|v| v.iter().any(|g| g == group));
        let matching: Vec<_> = snapshot
            .cells
            .values()
            .filter(|c| may_see(&c.group))
            .filter(|c| wanted(&r.groups, &c.group) && wanted(&r.zones, &c.zone))
            .collect();
        let (cells, info) = page.slice(matching);
        let cells = cells
            .into_iter()
            .map(|c| conv::cell(c, &self.rebalancer.cells.nodes(&c.group, &c.zone)))
            .collect();
        Ok(Response::new(pb::ListLoadCellsResponse { cells, page: Some(info) }))
    }

    async fn get_load_cell(
        &self,
        request: Request<pb::GetLoadCellRequest>,
    ) -> Answer<pb::LoadCell> {
        let caller = caller(&request);
        let r = request.into_inner();
        allow(&caller, &r.group, Action::ReadGroup)?;
        let snapshot = self.rebalancer.cells.snapshot();
        let cell = snapshot.cells.get(&(r.group.clone(), r.zone.clone()));
        let cell =
            cell.ok_or_else(|| Error::NotFound(format!("load cell {} × {}", r.group, r.zone)))?;
        Ok(Response::new(conv::cell(cell, &self.rebalancer.cells.nodes(&r.group, &r.zone))))
    }

    async fn rebalance(
        &self,
        request: Request<pb::RebalanceRequest>,
    ) -> Answer<pb::RebalanceResponse> {
        let caller = caller(&request);
        let r = request.into_inner();
        allow(&caller, &r.group, Action::ZoneActions)?;
        let (id, record) = self.rebalancer.rebalance(&caller, &r.group, &r.zone).await?;
        Ok(Response::new(conv::response(&id, &record)))
    }

    async fn get_rebalance_action(
        &self,
        request: Request<pb::GetRebalanceActionRequest>,
    ) -> Answer<pb::RebalanceAction> {
        let caller = caller(&request);
        let id = request.into_inner().action_id;
        if id.is_empty() {
            return Err(Error::invalid("action_id", "required").into());
        }
        let record = self.rebalancer.actions.get(&id).await.map_err(Error::from)?;
        let not_found = || Error::NotFound(format!("rebalance action `{id}`"));
        let record = record.ok_or_else(not_found)?;
        // A caller who may not read the group learns nothing, not even that the action exists.
        if caller.require(&record.group, Action::ReadGroup).is_err() {
            return Err(not_found().into());
        }
        Ok(Response::new(conv::action(&id, &record)))
    }

    async fn list_rebalance_actions(
        &self,
        request: Request<pb::ListRebalanceActionsRequest>,
    ) -> Answer<pb::ListRebalanceActionsResponse> {
        let caller = caller(&request);
        let r = request.into_inner();
        let action = if r.group.is_empty() { Action::Admin } else { Action::ReadGroup };
        allow(&caller, &r.group, action)?;
        let page = page(r.page.as_ref())?;
        let found = self
            .rebalancer
            .actions
            .list(&r.group, &r.zone, page.offset, page.size + 1)
            .await
            .map_err(Error::from)?;
        let (found, info) = page.finish(found, 0);
        let actions = found.iter().map(|(id, record)| conv::action(id, record)).collect();
        Ok(Response::new(pb::ListRebalanceActionsResponse { actions, page: Some(info) }))
    }

    async fn get_scheduler_settings(
        &self,
        request: Request<pb::GetSchedulerSettingsRequest>,
    ) -> Answer<pb::SchedulerSettings> {
        allow(&caller(&request), "", Action::Admin)?;
        Ok(Response::new(conv::scheduler_settings(&self.scheduler.settings_record().await?)))
    }

    async fn update_scheduler_settings(
        &self,
        request: Request<pb::UpdateSchedulerSettingsRequest>,
    ) -> Answer<pb::SchedulerSettings> {
        let caller = caller(&request);
        allow(&caller, "", Action::Admin)?;
        let r = request.into_inner();
        let change = crate::scheduler::SettingsChange {
            enabled: r.enabled,
            interval_seconds: r.interval_seconds,
        };
        let record = self.scheduler.update_settings(&caller, change).await?;
        Ok(Response::new(conv::scheduler_settings(&record)))
    }

    async fn get_scheduler_status(
        &self,
        request: Request<pb::GetSchedulerStatusRequest>,
    ) -> Answer<pb::SchedulerStatus> {
        signed_in(&caller(&request))?;
        Ok(Response::new(conv::scheduler(&self.scheduler.status().await)))
    }
}
