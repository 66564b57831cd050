//! Who may do what on the bus: one function per service user, each listing exactly the
//! subjects and JetStream/KV API subjects that service's code uses (the comment on each line
//! says which code). Anything not listed is refused by the server, which reports a
//! permissions violation to the client ([`crate::Bus::permission_denials`]).
//!
//! What nobody may do: delete or purge a stream or a bucket (no code does), create or read
//! another service's durable consumer, subscribe to another service's inbox (every user has
//! its own prefix, `_INBOX_<user>`, so JetStream API replies stay with who asked), publish an
//! event another service owns. Nodes are not here: their users come from a scoped signing key
//! ([`super::node_template`]) and may publish their load and call-record subjects and nothing
//! else.

use super::jwt::{Permissions, Rule};

/// The rebalancer's buckets (`services/rebalancer/src/scheduler/mod.rs`).
pub const REBALANCER_LEASE_BUCKET: &str = "ramen-rebalancer-lease";
pub const REBALANCER_STATE_BUCKET: &str = "ramen-rebalancer-state";
/// Auth's durable on the calls stream (`services/auth/src/calls.rs`).
pub const CALLS_DURABLE: &str = "auth-calls";
/// The durable of the dead-letter mover (`advisory.rs`), on `<dlq>_ADVISORIES`.
const MOVER_DURABLE: &str = "ramen-dlq-mover";

/// The configurable stream and bucket names (`nats.*` in `libs/config`).
#[derive(Clone, Debug)]
pub struct BusNames {
    pub jobs_stream: String,
    pub dlq_stream: String,
    pub events_stream: String,
    pub job_locks_bucket: String,
}

impl Default for BusNames {
    fn default() -> Self {
        BusNames {
            jobs_stream: "RAMEN_JOBS".into(),
            dlq_stream: "RAMEN_JOBS_DLQ".into(),
            events_stream: "RAMEN_EVENTS".into(),
            job_locks_bucket: "ramen-job-locks".into(),
        }
    }
}

/// A service user. `ramen up` runs every service in one process on one connection, so it
/// connects as [`Role::ControlPlane`], whose grants are the union of the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Auth,
    Deployer,
    ZoneManager,
    Rebalancer,
    ApiGateway,
    ControlPlane,
}

impl Role {
    pub const SERVICES: [Role; 5] =
        [Role::Auth, Role::Deployer, Role::ZoneManager, Role::Rebalancer, Role::ApiGateway];
    pub const ALL: [Role; 6] = [
        Role::Auth,
        Role::Deployer,
        Role::ZoneManager,
        Role::Rebalancer,
        Role::ApiGateway,
        Role::ControlPlane,
    ];

    /// The user's name: the service's name (`ramen serve <name>`), and its inbox suffix.
    pub fn name(self) -> &'static str {
        match self {
            Role::Auth => "auth",
            Role::Deployer => "deployer",
            Role::ZoneManager => "zone-manager",
            Role::Rebalancer => "rebalancer",
            Role::ApiGateway => "api-gateway",
            Role::ControlPlane => "control-plane",
        }
    }

    pub fn from_name(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.name() == name)
    }

    pub fn permissions(self, names: &BusNames) -> Permissions {
        let mut grants = Grants::new(self.name());
        match self {
            Role::Auth => auth(&mut grants, names),
            Role::Deployer => deployer(&mut grants, names),
            Role::ZoneManager => zone_manager(&mut grants, names),
            Role::Rebalancer => rebalancer(&mut grants, names),
            Role::ApiGateway => {}
            Role::ControlPlane => {
                auth(&mut grants, names);
                deployer(&mut grants, names);
                zone_manager(&mut grants, names);
                rebalancer(&mut grants, names);
            }
        }
        grants.into_permissions()
    }
}

/// The inbox prefix of a user named `name`: replies to its requests (JetStream API answers,
/// publish acks, pulled messages, KV reads) arrive under it, and only it may subscribe there.
pub fn inbox_prefix(name: &str) -> String {
    format!("_INBOX_{name}")
}

/// `services/auth`: publishes its events; stores the nodes' call records.
fn auth(g: &mut Grants, n: &BusNames) {
    g.ensure_stream(&n.events_stream); // events.rs: ramen_service::ensure_event_stream at start
    // calls.rs ingest: ensure_work_stream creates the calls stream, its DLQ and advisories.
    let (calls, calls_dlq) = (super::CALLS_STREAM, super::CALLS_DLQ);
    let advisories = crate::streams::advisory_stream(calls_dlq);
    for stream in [calls, calls_dlq, advisories.as_str()] {
        g.ensure_stream(stream);
    }
    g.durable(calls, CALLS_DURABLE); // calls.rs ingest: pulls every node's batches
    g.publish(&crate::streams::dlq_subject(calls_dlq, ">")); // calls.rs: a batch never stored
    g.publish("ramen.events.v1.audit.appended"); // audit.rs: every audited action
    g.publish("ramen.events.v1.mcp_key.changed"); // keys.rs: key created / revoked
    g.publish("ramen.events.v1.service_account.changed"); // service_account.rs: rules set
}

/// `services/deployer`: the job queue, its dead letters and leases, and its events.
fn deployer(g: &mut Grants, n: &BusNames) {
    let (jobs, dlq) = (n.jobs_stream.as_str(), n.dlq_stream.as_str());
    let advisories = crate::streams::advisory_stream(dlq);
    g.ensure_stream(&n.events_stream); // ports/events.rs: ensure_event_stream at start
    for event in [
        "deploy.requested",    // jobs/submit.rs
        "deploy.step_changed", // jobs/recorder.rs
        "deploy.log",          // jobs/recorder.rs
        "deploy.finished",     // jobs/claim.rs
        "job.cancelled",       // jobs/cancel.rs
        "group.deleted",       // deletion.rs
        "environment.deleted", // environments.rs
        "settings.changed",    // config_settings.rs
    ] {
        g.publish(&format!("ramen.events.v1.{event}"));
    }
    // jobs/mod.rs start_background: ensure_work_stream creates the work stream, its DLQ and
    // the stream keeping its max-deliveries advisories.
    for stream in [jobs, dlq, advisories.as_str()] {
        g.ensure_stream(stream);
    }
    g.publish("ramen.jobs.v1.deploy"); // jobs/submit.rs StartDeploy; jobs/dlq.rs replay
    g.publish(&crate::streams::dlq_subject(dlq, ">")); // dlq.rs park (handler and mover)
    g.durable(jobs, "deployer-jobs"); // jobs/worker.rs pulls; jobs/mod.rs reads its backlog
    g.durable(&advisories, MOVER_DURABLE); // advisory.rs: the dead-letter mover
    g.js(&format!("STREAM.MSG.GET.{jobs}")); // advisory.rs move_one: the exhausted message
    g.js(&format!("STREAM.MSG.DELETE.{jobs}")); // advisory.rs move_one: removed once parked
    g.js(&format!("STREAM.MSG.GET.{dlq}")); // jobs/dlq.rs list / get, jobs/sweeper.rs
    g.js(&format!("STREAM.MSG.DELETE.{dlq}")); // jobs/dlq.rs replay / discard
    g.kv(&n.job_locks_bucket); // jobs/worker.rs Lease per job; cancel.rs, sweeper.rs read it
}

/// `services/zone-manager`: its events, and the events it acts on.
fn zone_manager(g: &mut Grants, n: &BusNames) {
    let events = n.events_stream.as_str();
    g.ensure_stream(events); // lib.rs: ensure_event_stream at start
    g.publish("ramen.events.v1.placement.changed"); // events/publish.rs
    g.publish("ramen.events.v1.worker.changed"); // events/publish.rs, events/workers.rs
    g.publish("ramen.events.v1.zone.deleted"); // teardown/zones.rs
    // events/consume.rs: one durable per event it acts on.
    for durable in [
        "zone-manager-zone-deleted",
        "zone-manager-mcp-key-changed",
        "zone-manager-service-account-changed",
    ] {
        g.durable(events, durable);
    }
}

/// `services/rebalancer`: load reports in, leadership and schedule state in KV, its events.
fn rebalancer(g: &mut Grants, n: &BusNames) {
    g.ensure_stream(&n.events_stream); // lib.rs: ensure_event_stream at start
    g.publish("ramen.events.v1.rebalance.applied"); // events.rs, actions/
    g.publish("ramen.events.v1.scheduler_settings.changed"); // events.rs, scheduler/settings.rs
    g.subscribe("ramen.load.v1.node.>"); // cells/ingest.rs: every node's load reports
    // scheduler/settings.rs: replicas follow each other's settings changes (core subscribe).
    g.subscribe("ramen.events.v1.scheduler_settings.changed");
    g.kv(REBALANCER_LEASE_BUCKET); // scheduler/leader.rs: the leader's lease
    g.kv(REBALANCER_STATE_BUCKET); // scheduler/run.rs: the last scheduled run
}

/// Allow lists under construction, without duplicates.
struct Grants {
    publish: Vec<String>,
    subscribe: Vec<String>,
}

impl Grants {
    fn new(user: &str) -> Grants {
        // Every reply this user waits for arrives under its own inbox prefix (set by
        // `Bus::connect_as` from the user's name).
        Grants { publish: Vec::new(), subscribe: vec![format!("{}.>", inbox_prefix(user))] }
    }

    fn publish(&mut self, subject: &str) {
        if !self.publish.iter().any(|s| s == subject) {
            self.publish.push(subject.to_owned());
        }
    }

    fn subscribe(&mut self, subject: &str) {
        if !self.subscribe.iter().any(|s| s == subject) {
            self.subscribe.push(subject.to_owned());
        }
    }

    /// A JetStream API request (`$JS.API.<api>`).
    fn js(&mut self, api: &str) {
        self.publish(&format!("$JS.API.{api}"));
    }

    /// `create_or_update_stream`: update, create when missing; and reading its info.
    fn ensure_stream(&mut self, stream: &str) {
        for api in ["INFO", "CREATE", "UPDATE"] {
            self.js(&format!("STREAM.{api}.{stream}"));
        }
    }

    /// A durable pull consumer: create it (the filter subject follows its name in the
    /// request subject), read its info, pull, and ack/nak/term its deliveries.
    fn durable(&mut self, stream: &str, durable: &str) {
        self.js(&format!("STREAM.INFO.{stream}"));
        self.js(&format!("CONSUMER.CREATE.{stream}.{durable}"));
        self.js(&format!("CONSUMER.CREATE.{stream}.{durable}.>"));
        self.js(&format!("CONSUMER.INFO.{stream}.{durable}"));
        self.js(&format!("CONSUMER.MSG.NEXT.{stream}.{durable}"));
        self.publish(&format!("$JS.ACK.{stream}.{durable}.>"));
    }

    /// A KV bucket: create/update it (`$JS.API.INFO` reads the account's limits first), read
    /// keys (direct get), write and delete keys (publishes on `$KV.<bucket>.<key>`).
    fn kv(&mut self, bucket: &str) {
        self.js("INFO");
        self.ensure_stream(&format!("KV_{bucket}"));
        self.js(&format!("DIRECT.GET.KV_{bucket}"));
        self.js(&format!("DIRECT.GET.KV_{bucket}.>"));
        self.js(&format!("STREAM.MSG.GET.KV_{bucket}"));
        self.publish(&format!("$KV.{bucket}.>"));
    }

    fn into_permissions(self) -> Permissions {
        let publish =
            if self.publish.is_empty() { Rule::nothing() } else { Rule::allow(self.publish) };
        Permissions { publish, subscribe: Rule::allow(self.subscribe) }
    }
}
