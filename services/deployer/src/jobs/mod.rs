//! Deploy jobs as durable JetStream work. See `docs/architecture.md` ("Deployer") for the
//! state machine. In short:
//! - `submit`: `StartDeploy` stores the job (QUEUED) and publishes a `DeployWork` item on
//!   `RAMEN_JOBS` with the job id as `Nats-Msg-Id`.
//! - `worker`: a durable pull consumer shared by every deployer; a delivery is claimed with a
//!   KV lease and a fenced write on the job record, run by `pipeline` (per zone: `steps`)
//!   while a heartbeat refreshes the lease and sends `InProgress`, then settled.
//! - `sweeper`: orphans (lease gone, no holder) → FAILED_RESUMABLE; items the mover parked →
//!   DEAD_LETTERED; jobs whose work item never made it → republished.
//! - `review`: a changed surface parks the job (REVIEW) until a group admin decides or the
//!   review expires;
//! - `dlq`: list, inspect, replay and discard dead letters; `watch`: `WatchJob`.

mod cancel;
mod claim;
mod dlq;
pub mod model;
mod pipeline;
mod read;
mod recorder;
mod review;
mod steps;
mod submit;
mod sweeper;
mod watch;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use ramen_bus::{ConsumerSpec, Kv, KvSpec, Subject, WorkStreamSpec};
use ramen_proto::event::Event;
use ramen_proto::events::v1::DeployWork;
use ramen_service::Platform;

pub use crate::ports::smoke::{smoke_key, surface, tools_list};
pub use dlq::DeadLetterView;
pub use watch::WatchStream;

use crate::{Deployer, Jobs, StartError};

/// The durable consumer every deployer replica shares.
pub const WORK_DURABLE: &str = "deployer-jobs";

pub(crate) fn work_subject() -> Subject<DeployWork> {
    ramen_service::subject::<DeployWork>()
}

/// `job.<id>` in the lease bucket.
pub(crate) fn lease_key(job_id: &str) -> String {
    format!("job.{job_id}")
}

/// The lease bucket (TTL = the lease TTL), opened once per deployer.
pub(crate) async fn lease_bucket(deployer: &Jobs) -> Result<Kv, ramen_bus::BusError> {
    let open = || async {
        let spec = KvSpec {
            bucket: deployer.core.nats.kv_bucket.clone(),
            ttl: Some(deployer.core.settings.lease_ttl),
            ..KvSpec::default()
        };
        deployer.core.bus.kv(&spec).await
    };
    deployer.leases.get_or_try_init(open).await.cloned()
}

/// How often the work consumer's backlog is read into `ramen_deploy_queue_*`.
const BACKLOG_POLL: Duration = Duration::from_secs(10);

/// Polls the work consumer's backlog into the queue gauges (what a KEDA or HPA rule on the
/// deployer reads). A failed poll keeps the last figures and is retried next period.
fn spawn_backlog_gauge(jobs: &Arc<Jobs>, platform: &Platform) {
    let jobs = jobs.clone();
    platform.tasks.spawn("deploy-queue-backlog", move |stop| async move {
        let stream = jobs.core.nats.stream.clone();
        loop {
            match jobs.core.bus.consumer_backlog(&stream, WORK_DURABLE).await {
                Ok(backlog) => {
                    jobs.metrics.queue_pending.set(backlog.pending as i64);
                    jobs.metrics.queue_ack_pending.set(backlog.ack_pending as i64);
                }
                Err(err) => tracing::debug!(%err, "reading the deploy queue backlog failed"),
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(BACKLOG_POLL) => {}
            }
        }
    });
}

/// Streams, lease bucket and consumer; then the job worker, the dead-letter mover, the orphan
/// sweeper and any group deletion left unfinished.
pub(crate) async fn start_background(
    deployer: &Arc<Deployer>,
    platform: &Platform,
) -> Result<(), StartError> {
    let jobs = &deployer.jobs;
    let nats = &jobs.core.nats;
    let bus = &jobs.core.bus;
    bus.ensure_work_stream(&WorkStreamSpec {
        name: nats.stream.clone(),
        subjects: vec![DeployWork::SUBJECT.to_owned()],
        max_age: nats.max_age,
        max_payload: nats.max_payload,
        duplicate_window: Duration::from_secs(120),
        dlq_name: nats.dlq_stream.clone(),
        dlq_max_age: nats.dlq_max_age,
        replicas: 1,
    })
    .await?;
    let kv = lease_bucket(jobs).await?;
    let spec = ConsumerSpec {
        stream: nats.stream.clone(),
        durable: WORK_DURABLE.to_owned(),
        filter_subject: String::new(),
        ack_wait: jobs.core.settings.ack_wait,
        max_deliver: jobs.core.settings.max_deliver,
        max_ack_pending: jobs.core.settings.max_ack_pending,
    };
    let consumer = bus.work_consumer(spec, &work_subject()).await?;
    let mover = bus.dead_letter_mover(&nats.stream).await?;
    let crashed = jobs.crashed.clone();
    platform.tasks.spawn(mover.name(), move |stop| async move {
        tokio::select! {
            () = mover.run(stop) => {}
            () = crashed.cancelled() => {}
        }
    });
    worker::spawn(jobs, platform, consumer, kv.clone());
    spawn_backlog_gauge(jobs, platform);
    sweeper::spawn(deployer, platform, kv);
    Ok(())
}
