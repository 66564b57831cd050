//! The auto-rebalance scheduler follows the Config settings (`SettingsChanged` on the bus) and
//! audits each run, and each rebalance it starts, as actor `scheduler`.

use std::time::Duration;

use ramen_proto::rebalancer::v1 as pb;
use ramen_testkit::eventually;

use crate::gcp::{compute, gcp_harness, report_load};
use crate::gcp_standin::ComputeStandIn;

async fn status(h: &crate::support::Harness) -> pb::SchedulerStatus {
    h.client
        .clone()
        .get_scheduler_status(pb::GetSchedulerStatusRequest {})
        .await
        .unwrap()
        .into_inner()
}

#[tokio::test]
async fn runs_when_turned_on_and_every_run_is_audited_as_scheduler() {
    let standin = ComputeStandIn::start(compute(0)).await;
    let h = gcp_harness(&standin).await;
    let _nodes = report_load(&h).await;
    let before = status(&h).await;
    assert!(!before.enabled, "off until the settings say otherwise");
    eventually("this replica leads", Duration::from_secs(10), || async {
        let s = status(&h).await;
        if s.is_leader && s.leader == h.rebalancer.rebalancer.replica { Ok(()) } else { Err(s) }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(h.audit("scheduler", "").await.is_empty(), "nothing runs while it is off");

    h.settings(true, 1).await;
    let runs = eventually("two scheduled runs", Duration::from_secs(15), || async {
        let runs = h.audit("scheduler", "rebalancer.scheduled_run").await;
        if runs.len() >= 2 { Ok(runs) } else { Err(runs.len()) }
    })
    .await;
    assert!(runs.iter().all(|r| r.actor == "scheduler" && r.details["actions"] == "1"), "{runs:?}");
    let rebalances = h.audit("scheduler", "placement.rebalance").await;
    assert!(rebalances.len() >= 2, "{rebalances:?}");
    assert!(
        rebalances.iter().all(|e| e.group == "team" && e.details["applied"] == "true"),
        "{rebalances:?}"
    );
    let scalers = standin.scalers("ramen-team");
    assert!((scalers[0].1 - 0.111).abs() < 1e-3, "{scalers:?}");

    let s = status(&h).await;
    assert!(s.enabled && s.is_leader, "{s:?}");
    assert_eq!(s.interval, Some(Duration::from_secs(1).try_into().unwrap()));
    assert_eq!(s.last_run_actions, 1);
    assert!(s.last_run_at.is_some() && s.next_run_at.is_some(), "{s:?}");
    let listed = h
        .client
        .clone()
        .list_rebalance_actions(pb::ListRebalanceActionsRequest {
            group: "team".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(listed.actions.len() >= 2 && listed.actions.iter().all(|a| a.actor == "scheduler"));
    let created: Vec<(i64, i32)> = listed
        .actions
        .iter()
        .map(|a| a.created_at.map(|t| (t.seconds, t.nanos)).unwrap())
        .collect();
    assert!(created.windows(2).all(|w| w[0] >= w[1]), "newest first: {created:?}");

    // Off again: the runs stop.
    h.settings(false, 1).await;
    eventually("turned off", Duration::from_secs(5), || async {
        if status(&h).await.enabled { Err(()) } else { Ok(()) }
    })
    .await;
    let settled = h.audit("scheduler", "rebalancer.scheduled_run").await.len();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(h.audit("scheduler", "rebalancer.scheduled_run").await.len(), settled);
}

/// The settings the deployer held before the rebalancer owned them, for the carry-over test.
struct LegacySettings;

#[async_trait::async_trait]
impl ramen_rebalancer::ports::SettingsPort for LegacySettings {
    async fn get(
        &self,
    ) -> Result<ramen_rebalancer::ports::SchedulerSettings, ramen_rebalancer::ports::PortError>
    {
        Ok(ramen_rebalancer::ports::SchedulerSettings {
            enabled: true,
            interval: Duration::from_secs(120),
        })
    }
}

/// The auto-rebalance settings are the rebalancer's: carried over once from the deployer when
/// none are stored, then changed through `UpdateSchedulerSettings` (super admins), stored, and
/// in force at once; a period under 10 s is refused naming the field.
#[tokio::test]
async fn the_scheduler_settings_are_owned_here_carried_over_once_and_validated() {
    let zones = std::sync::Arc::new(crate::support::StaticZones::default());
    let h = crate::support::Harness::start(zones, |_, ports| {
        ports.settings = std::sync::Arc::new(LegacySettings);
    })
    .await;
    let mut client = h.client.clone();
    let carried =
        eventually("the deployer's settings carried over", Duration::from_secs(10), || {
            let mut client = client.clone();
            async move {
                let s = client
                    .get_scheduler_settings(pb::GetSchedulerSettingsRequest {})
                    .await
                    .map_err(|e| e.to_string())?
                    .into_inner();
                if s.enabled && s.interval_seconds == 120 { Ok(s) } else { Err(format!("{s:?}")) }
            }
        })
        .await;
    assert_eq!(carried.updated_by, "carried over from the deployer");
    assert!(status(&h).await.enabled);

    let off =
        pb::UpdateSchedulerSettingsRequest { enabled: Some(false), interval_seconds: Some(30) };
    let stored = client.update_scheduler_settings(off).await.unwrap().into_inner();
    assert_eq!(
        (stored.enabled, stored.interval_seconds, stored.updated_by.as_str()),
        (false, 30, "test-admin")
    );
    let now = status(&h).await;
    assert!(!now.enabled, "in force at once: {now:?}");
    assert_eq!(now.interval, Some(prost_types::Duration { seconds: 30, nanos: 0 }));
    let record = h.platform.store.get("rebalancer_settings", "scheduler").await.unwrap().unwrap();
    assert_eq!(record.doc["interval_seconds"], 30, "stored in the rebalancer's own collection");

    let too_fast =
        pb::UpdateSchedulerSettingsRequest { interval_seconds: Some(1), ..Default::default() };
    let refused = client.update_scheduler_settings(too_fast).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(refused.message().contains("auto_rebalance_interval_seconds"), "{}", refused.message());

    let member = ramen_access::Caller::user("u-member", "", ramen_access::Grants::default());
    let denied = client
        .update_scheduler_settings(member.request(pb::UpdateSchedulerSettingsRequest::default()))
        .await
        .unwrap_err();
    assert_eq!(denied.code(), tonic::Code::PermissionDenied);
}
