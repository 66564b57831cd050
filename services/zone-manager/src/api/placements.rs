//! Placements: creation, listing, count, size, IP rules, config and live policy, teardown.

use ramen_proto::zone::v1 as pb;
use tonic::{Request, Response, Status};

use super::conversions::{self as conv, size_from_proto};
use super::zones::teardown;
use super::{ZoneApi, caller};
use crate::error::Result;
use crate::manager::LivePolicy;

fn target(zone: &str) -> String {
    format!("placement/{zone}")
}

impl ZoneApi {
    pub(super) async fn do_ensure_placement(
        &self,
        request: Request<pb::EnsurePlacementRequest>,
    ) -> Result<Response<pb::Placement>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let result = self.manager.ensure_placement(&caller, &r.group, &r.zone).await;
        let placement =
            self.audited(&caller, "placement.ensure", &r.group, target(&r.zone), result).await?;
        Ok(Response::new(conv::placement(&placement)))
    }

    pub(super) async fn do_get_placement(
        &self,
        request: Request<pb::GetPlacementRequest>,
    ) -> Result<Response<pb::Placement>, Status> {
        let r = request.into_inner();
        Ok(Response::new(conv::placement(&self.manager.placement(&r.group, &r.zone).await?)))
    }

    pub(super) async fn do_list_placements(
        &self,
        request: Request<pb::ListPlacementsRequest>,
    ) -> Result<Response<pb::ListPlacementsResponse>, Status> {
        let r = request.into_inner();
        let page = crate::store::page(r.page.as_ref())?;
        let (placements, page) = self.manager.list_placements(&r.group, &r.zone, page).await?;
        let placements = placements.iter().map(conv::placement).collect();
        Ok(Response::new(pb::ListPlacementsResponse { placements, page: Some(page) }))
    }

    pub(super) async fn do_set_worker_count(
        &self,
        request: Request<pb::SetWorkerCountRequest>,
    ) -> Result<Response<pb::Placement>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let result = self.manager.set_worker_count(&caller, &r.group, &r.zone, r.count).await;
        let placement = self
            .audited(&caller, "placement.set_worker_count", &r.group, target(&r.zone), result)
            .await?;
        Ok(Response::new(conv::placement(&placement)))
    }

    pub(super) async fn do_set_size(
        &self,
        request: Request<pb::SetSizeRequest>,
    ) -> Result<Response<pb::Placement>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let result = async {
            let size = size_from_proto("size", r.size)?;
            self.manager.set_size(&caller, &r.group, &r.zone, size).await
        }
        .await;
        let placement =
            self.audited(&caller, "placement.set_size", &r.group, target(&r.zone), result).await?;
        Ok(Response::new(conv::placement(&placement)))
    }

    pub(super) async fn do_set_ip_rules(
        &self,
        request: Request<pb::SetIpRulesRequest>,
    ) -> Result<Response<pb::SetIpRulesResponse>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let result = self.manager.set_ip_rules(&caller, &r.group, &r.zone, &r.cidrs).await;
        let change = self
            .audited(&caller, "placement.set_ip_rules", &r.group, target(&r.zone), result)
            .await?;
        Ok(Response::new(pb::SetIpRulesResponse {
            placement: Some(conv::placement(&change.placement)),
            normalized: change.normalized,
            rolled: change.rolled,
        }))
    }

    pub(super) async fn do_write_config(
        &self,
        request: Request<pb::WriteConfigRequest>,
    ) -> Result<Response<pb::WriteConfigResponse>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let result = async {
            let config = r
                .config
                .clone()
                .ok_or_else(|| crate::error::Error::invalid("config", "is required"))?;
            let policy = config.policy.clone().unwrap_or_default();
            if !policy.key_hashes.is_empty() {
                return Err(crate::error::Error::invalid(
                    "config.policy.key_hashes",
                    "keys come from auth, asked by the zone-manager; send a deploy's own keys as `deploy_keys`",
                ));
            }
            let live = LivePolicy {
                blocked: Some(policy.blocked),
                key_hashes: None,
                deploy_keys: Some(config.deploy_keys.clone()),
                auth: policy.auth,
                record_arguments: Some(policy.record_arguments),
            };
            let template = conv::template(config)?;
            self.manager.write_config(&caller, &r.group, &r.zone, template, live).await
        }
        .await;
        let placement = self
            .audited(&caller, "placement.write_config", &r.group, target(&r.zone), result)
            .await?;
        let policy_version = placement.policy_version;
        Ok(Response::new(pb::WriteConfigResponse {
            placement: Some(conv::placement(&placement)),
            policy_version,
        }))
    }

    pub(super) async fn do_update_live_policy(
        &self,
        request: Request<pb::UpdateLivePolicyRequest>,
    ) -> Result<Response<pb::Placement>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let live = LivePolicy {
            blocked: r.blocked.map(|b| b.values),
            key_hashes: r.key_hashes.map(|k| k.keys),
            deploy_keys: r.clear_deploy_keys.then(Vec::new),
            auth: r.auth,
            record_arguments: None,
        };
        let result = self.manager.update_live_policy(&caller, &r.group, &r.zone, live).await;
        let placement = self
            .audited(&caller, "placement.update_policy", &r.group, target(&r.zone), result)
            .await?;
        Ok(Response::new(conv::placement(&placement)))
    }

    pub(super) async fn do_set_package(
        &self,
        request: Request<pb::SetPackageEnabledRequest>,
        enabled: bool,
    ) -> Result<Response<pb::Placement>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let result =
            self.manager.set_package_enabled(&caller, &r.group, &r.zone, &r.package, enabled).await;
        let action = if enabled { "package.enable" } else { "package.disable" };
        let placement = self
            .audited(&caller, action, &r.group, format!("package/{}/{}", r.zone, r.package), result)
            .await?;
        Ok(Response::new(conv::placement(&placement)))
    }

    pub(super) async fn do_teardown(
        &self,
        request: Request<pb::TeardownRequest>,
    ) -> Result<Response<pb::TeardownResponse>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let result = self.manager.teardown(&caller, &r.group, &r.zone).await;
        let what = if r.zone.is_empty() { "placement/*".to_owned() } else { target(&r.zone) };
        let progress = self.audited(&caller, "placement.teardown", &r.group, what, result).await?;
        Ok(Response::new(pb::TeardownResponse {
            placements: progress.iter().map(teardown).collect(),
        }))
    }

    pub(super) async fn do_get_teardown(
        &self,
        request: Request<pb::TeardownRequest>,
    ) -> Result<Response<pb::TeardownResponse>, Status> {
        let r = request.into_inner();
        let progress = self.manager.teardowns_of(&r.group, &r.zone).await?;
        Ok(Response::new(pb::TeardownResponse {
            placements: progress.iter().map(teardown).collect(),
        }))
    }
}
