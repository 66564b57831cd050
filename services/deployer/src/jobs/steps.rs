//! The six steps of a zone (and the canary rollback). Each is idempotent, so a resumed job
//! can run the interrupted one again: the snapshot is content-addressed, the config is
//! rewritten whole, restarts and reloads converge on the same commit.

use std::sync::atomic::{AtomicBool, Ordering};

use ramen_proto::common::v1::{KeyHash, NodePolicy, Snapshot, Track};
use ramen_proto::runner::v1::{NodeStatus, ReloadOutcome};
use ramen_proto::zone::v1 as zpb;

use super::model::{ReviewDecision, ReviewRecord, Step, Stuck, SurfaceChangeRecord};
use super::recorder::{JobRun, StepEnd};
use crate::error::Error;
use crate::git::Credentials;
use crate::model::{EnvironmentRecord, GroupRecord, SurfaceChanges, now_ms};
use crate::snapshot::{self, Source, Synced};

/// How a step did not succeed.
pub(crate) enum StepError {
    /// The step failed for good: the zone fails (with a canary rollback where due).
    Failed(StepEnd),
    /// Stop the job and retry later (an outage, a lost lease).
    Retry(Error),
    /// The zone waits for a review decision: the job parks once no zone has work left.
    Park,
}

impl From<Error> for StepError {
    fn from(err: Error) -> Self {
        if err.is_retryable() || matches!(err, Error::LeaseLost(_)) {
            Self::Retry(err)
        } else {
            Self::Failed(StepEnd { error: err.to_string(), ..StepEnd::default() })
        }
    }
}

fn failed(error: impl Into<String>) -> StepError {
    StepError::Failed(StepEnd { error: error.into(), ..StepEnd::default() })
}

/// What every zone of one run shares.
pub(crate) struct Pipeline {
    pub run: JobRun,
    pub group: GroupRecord,
    pub env: EnvironmentRecord,
    pub git_ref: String,
    pub commit: String,
    pub creds: Option<Credentials>,
    /// Synced once per run, whichever zone gets there first.
    pub snapshot: tokio::sync::OnceCell<Synced>,
    /// One environment build at a time: the first zone installs, the others (on the same
    /// runtime) find its result.
    pub environment_build: tokio::sync::Mutex<()>,
    pub upload_reported: AtomicBool,
    pub smoke_key: String,
}

impl Pipeline {
    pub async fn step(&self, zone: &str, step: Step) -> Result<StepEnd, StepError> {
        match step {
            Step::Sync => self.sync(zone).await,
            Step::WriteConfig => self.write_config(zone).await,
            Step::Canary => self.restart(zone, Track::WorkerCanary).await,
            Step::ReloadSmoke => self.reload_smoke(zone).await,
            Step::Review => self.review(zone).await,
            Step::Stable => self.restart(zone, Track::Worker).await,
            Step::CanaryRollback => self.scale_canary_down(zone).await,
        }
    }

    async fn snapshot(&self) -> Result<&Synced, Error> {
        self.snapshot
            .get_or_try_init(|| async {
                let deployer = &self.run.deployer;
                let scratch = deployer.core.settings.cache_dir.join("scratch");
                std::fs::create_dir_all(&scratch)
                    .map_err(|e| Error::Internal(format!("scratch directory: {e}")))?;
                let source = Source {
                    group: &self.group.name,
                    url: &self.group.repo_url,
                    creds: self.creds.as_ref(),
                    scratch: &scratch,
                };
                snapshot::ensure(&deployer.core.blob, &deployer.core.repos, source, &self.commit)
                    .await
            })
            .await
    }

    async fn sync(&self, zone: &str) -> Result<StepEnd, StepError> {
        let short = &self.commit[..self.commit.len().min(12)];
        self.run
            .log(
                zone,
                Step::Sync,
                format!("{} at {} = commit {}", self.group.repo_url, self.git_ref, self.commit),
            )
            .await?;
        let Synced { snapshot, uploaded, bytes, refused } = self.snapshot().await?;
        let first = *uploaded && !self.upload_reported.swap(true, Ordering::SeqCst);
        // Links out of the repo, left out of the snapshot: named in every zone's log.
        for line in refused {
            self.run.log(zone, Step::Sync, line.clone()).await?;
        }
        self.run
            .log(zone, Step::Sync, format!("snapshot {} ({})", snapshot.location, snapshot.digest))
            .await?;
        let outcome = if first {
            format!("uploaded snapshot of {short} ({bytes} bytes)")
        } else {
            format!("snapshot of {short} already present")
        };
        Ok(StepEnd { outcome, ..StepEnd::default() })
    }

    /// The job's own key (its smoke test's), valid beside auth's keys until the zone is done.
    /// Auth's keys are the zone-manager's to distribute: it asks auth when the config is
    /// written and again whenever a key changes.
    fn smoke_key_hash(&self) -> KeyHash {
        KeyHash {
            key_id: format!("deploy-smoke-{}", self.run.job_id),
            sha256_hex: ramen_node_contract::key_hash(&self.smoke_key),
            expires_at_unix_ms: now_ms() + 6 * 3600 * 1000,
            key_name: "deploy smoke test".into(),
        }
    }

    async fn write_config(&self, zone: &str) -> Result<StepEnd, StepError> {
        let deployer = &self.run.deployer;
        let group = &self.group.name;
        // A cloud zone's resources (identity, route) are ensured here too; an operation the
        // cloud is still running fails the step as unavailable, and it is retried.
        let cloud = match deployer.core.zones.ensure_placement(group, zone).await {
            Ok(placement) if placement.cloud_resources.is_empty() => String::new(),
            Ok(placement) => {
                format!("; cloud resources in place: {}", placement.cloud_resources.join(", "))
            }
            Err(Error::NotFound(what)) => {
                return Err(failed(format!("zone `{zone}` cannot be used: {what}")));
            }
            Err(err) => return Err(err.into()),
        };
        let snapshot = &self.snapshot().await?.snapshot;
        let snapshot = self.environment(zone, snapshot).await?;
        // The clone token is the control plane's: workers never clone, so they never get it.
        let mut secrets = deployer.core.auth.resolve_secrets(group, &self.env.name, zone).await?;
        secrets.retain(|s| s.name != crate::credentials::TOKEN_SECRET);
        let outcome = format!(
            "{} secrets, {} blocked, verbose {}",
            secrets.len(),
            self.env.blocked.len(),
            self.env.verbose
        );
        let config = zpb::NodeConfig {
            environment: self.env.name.clone(),
            policy: Some(NodePolicy {
                blocked: self.env.blocked.clone(),
                auth: Some(
                    deployer
                        .core
                        .settings
                        .mcp_auth
                        .resolve(self.env.auth.as_ref(), group, &self.env.name)
                        .0,
                ),
                // Read at deploy time: a change to the setting applies at the next deploy.
                record_arguments: self.env.record_arguments,
                ..NodePolicy::default()
            }),
            secrets: secrets
                .into_iter()
                .map(|s| zpb::NodeSecret { name: s.name, value: s.value })
                .collect(),
            verbose: self.env.verbose,
            snapshot: Some(snapshot),
            deploy_keys: vec![self.smoke_key_hash()],
            egress_allow: self.group.restrictions.egress_allow.clone(),
        };
        let written = deployer.core.zones.write_config(group, zone, config).await?;
        let keys = written.placement.as_ref().map_or(0, |p| p.key_count);
        Ok(StepEnd {
            outcome: format!("{keys} keys, {outcome}; policy v{}{cloud}", written.policy_version),
            ..StepEnd::default()
        })
    }

    /// The snapshot with its Python environment: built where the zone's workers run, once per
    /// deploy (the first zone installs; the others on the same runtime find it), before any
    /// canary restarts. A failed install fails the step naming the requirement.
    async fn environment(&self, zone: &str, snapshot: &Snapshot) -> Result<Snapshot, StepError> {
        if snapshot.requirements_hash.is_empty() {
            return Ok(snapshot.clone());
        }
        let _one_at_a_time = self.environment_build.lock().await;
        let deployer = &self.run.deployer;
        let timeout = deployer.core.settings.reload_timeout;
        self.run
            .log(zone, Step::WriteConfig, format!("environment for {}", snapshot.requirements_hash))
            .await?;
        let answer = deployer
            .core
            .zones
            .build_environment(&self.group.name, zone, snapshot.clone(), timeout)
            .await?;
        self.run.log_lines(zone, Step::WriteConfig, answer.log).await?;
        if !answer.error.is_empty() {
            return Err(failed(answer.error));
        }
        let Some(environment) = answer.environment else { return Ok(snapshot.clone()) };
        // Before any worker runs on it: the collector keeps what a kept commit uses.
        crate::artifacts::mark_used(
            &deployer.core.blob,
            &self.group.name,
            &environment.key,
            &self.commit,
        )
        .await?;
        let how =
            if answer.built { "installed for this deploy" } else { "present: nothing installed" };
        self.run
            .log(zone, Step::WriteConfig, format!("environment {} {how}", environment.key))
            .await?;
        Ok(Snapshot { environment: Some(environment), ..snapshot.clone() })
    }

    async fn restart(&self, zone: &str, track: Track) -> Result<StepEnd, StepError> {
        let (step, name) = match track {
            Track::WorkerCanary => (Step::Canary, "worker-canary"),
            _ => (Step::Stable, "worker"),
        };
        let deployer = &self.run.deployer;
        let timeout = deployer.core.settings.rollout_timeout;
        self.run
            .log(
                zone,
                step,
                format!("restarting {name} in place (waiting up to {timeout:?} for ready)"),
            )
            .await?;
        let rollout = deployer.core.zones.restart(&self.group.name, zone, track, timeout).await?;
        rollout_end(name, &rollout)
    }

    async fn scale_canary_down(&self, zone: &str) -> Result<StepEnd, StepError> {
        let deployer = &self.run.deployer;
        let rollout = deployer
            .core
            .zones
            .scale(
                &self.group.name,
                zone,
                Track::WorkerCanary,
                0,
                deployer.core.settings.rollout_timeout,
            )
            .await?;
        Ok(StepEnd {
            outcome: format!("worker-canary scaled to 0 ({} left)", rollout.workers.len()),
            ..StepEnd::default()
        })
    }

    /// The canary's restart loaded the snapshot (the node loads the commit its config names
    /// when it starts); this step reads how that went from each ready canary's `Status`, then
    /// reads its surface as an ordinary MCP caller would and compares it with stable's.
    /// Nothing is loaded a second time.
    async fn reload_smoke(&self, zone: &str) -> Result<StepEnd, StepError> {
        let deployer = &self.run.deployer;
        let group = &self.group.name;
        let workers = deployer.core.zones.workers(group, zone, Track::WorkerCanary).await?;
        let ready: Vec<&zpb::Worker> = workers
            .iter()
            .filter(|w| w.state == ramen_proto::common::v1::WorkerState::Ready as i32)
            .collect();
        if ready.is_empty() {
            return Err(failed("no ready worker-canary to smoke-test"));
        }
        let mut report = None;
        for worker in &ready {
            let status = deployer.core.nodes.status(group, zone, &worker.admin_address).await?;
            self.run.log_lines(zone, Step::ReloadSmoke, status.load_log.clone()).await?;
            check_load(&worker.id, &self.commit, &status)?;
            report.get_or_insert(status);
        }
        let status = report.expect("at least one ready worker");
        self.run.set_packages(zone, status.packages.clone()).await?;
        let worker = ready[0];
        let timeout = deployer.core.settings.smoke_timeout;
        let canary = deployer
            .core
            .smoke
            .surface(&worker.mcp_address, &self.smoke_key, timeout)
            .await
            .map_err(|e| failed(format!("smoke test on {}: {e}", worker.id)))?;
        let tools: Vec<&str> = canary.names(ramen_surface::Kind::Tool).collect();
        self.run
            .log(
                zone,
                Step::ReloadSmoke,
                format!("tools/list on {} as an ordinary caller: {}", worker.id, tools.join(", ")),
            )
            .await?;
        let changes = self.compare_with_stable(zone, &canary).await?;
        let pip = if status.pip_ran { "pip ran" } else { "requirements unchanged" };
        let surface = match changes {
            None => String::new(),
            Some(0) => "; surface as stable's".to_owned(),
            Some(n) => format!("; {n} surface change(s) from stable"),
        };
        Ok(StepEnd {
            outcome: format!(
                "{} packages, {} tools; {pip}{surface}",
                status.packages.len(),
                tools.len()
            ),
            ..StepEnd::default()
        })
    }

    /// The canary's surface against what a ready stable worker serves (read with the job's
    /// key, which every node of the placement holds): the difference into the log and onto
    /// the zone's record, for the REVIEW step and the console. `None` when no stable worker
    /// serves yet (a first deploy): there is nothing to compare, and nothing waits.
    async fn compare_with_stable(
        &self,
        zone: &str,
        canary: &ramen_surface::Surface,
    ) -> Result<Option<usize>, StepError> {
        let deployer = &self.run.deployer;
        let workers = deployer.core.zones.workers(&self.group.name, zone, Track::Worker).await?;
        let ready =
            workers.iter().find(|w| w.state == ramen_proto::common::v1::WorkerState::Ready as i32);
        // A stable worker that never loaded a commit (the placement's first) serves nothing.
        let stable = match ready {
            Some(worker) => {
                let status = deployer
                    .core
                    .nodes
                    .status(&self.group.name, zone, &worker.admin_address)
                    .await?;
                (!status.loaded_commit.is_empty()).then_some(worker)
            }
            None => None,
        };
        let Some(stable) = stable else {
            let line = format!(
                "surface: {} items; no stable worker serves yet, so nothing to compare",
                canary.len()
            );
            self.run.log(zone, Step::ReloadSmoke, line).await?;
            self.run.set_surface(zone, Vec::new(), canary.len()).await?;
            return Ok(None);
        };
        let timeout = deployer.core.settings.smoke_timeout;
        let served = deployer
            .core
            .smoke
            .surface(&stable.mcp_address, &self.smoke_key, timeout)
            .await
            .map_err(|e| failed(format!("reading stable's surface on {}: {e}", stable.id)))?;
        let changes = ramen_surface::diff(&served, canary);
        let mut lines = vec![format!(
            "surface: {} items on the canary, {} on stable ({}); {} change(s)",
            canary.len(),
            served.len(),
            stable.id,
            changes.len()
        )];
        lines.extend(
            changes
                .iter()
                .flat_map(|c| c.to_string().lines().map(str::to_owned).collect::<Vec<_>>()),
        );
        self.run.log_lines(zone, Step::ReloadSmoke, lines).await?;
        let records = changes.iter().map(SurfaceChangeRecord::from_change).collect();
        self.run.set_surface(zone, records, canary.len()).await?;
        Ok(Some(changes.len()))
    }

    /// Between RELOAD_SMOKE and STABLE. No surface change, or an environment that allows
    /// them: on at once. Otherwise the job's review decides: approved goes on, rejected or
    /// expired fails the zone (the canary scales to zero, stable stays), and no decision yet
    /// opens the review (once per job) and parks the zone with the canary up.
    async fn review(&self, zone: &str) -> Result<StepEnd, StepError> {
        let job = self.run.current().await?;
        let changed = job.zone(zone).map_or(0, |z| z.surface_changes.len());
        if changed == 0 {
            return Ok(StepEnd { outcome: "no surface change".into(), ..StepEnd::default() });
        }
        if self.env.surface_changes == SurfaceChanges::Allow {
            return Ok(StepEnd {
                outcome: format!(
                    "{changed} surface change(s); environment `{}` allows them without review",
                    self.env.name
                ),
                ..StepEnd::default()
            });
        }
        let review = match job.review {
            Some(review) => review,
            None => {
                let timeout = self.run.deployer.core.settings.review_timeout;
                let review = self.run.open_review(timeout).await?;
                let until = crate::conversions::ts(review.expires_at_ms)
                    .map(|t| t.to_string())
                    .unwrap_or_default();
                let line = format!(
                    "{changed} surface change(s) wait for a group admin: `ramen jobs approve {id}` \
                     or `ramen jobs reject {id}`, or the job's page in the console; \
                     rejected unless decided by {until}",
                    id = job.id
                );
                self.run.log(zone, Step::Review, line).await?;
                review
            }
        };
        let who = |r: &ReviewRecord| {
            if r.reason.is_empty() {
                r.decided_by.clone()
            } else {
                format!("{}: {}", r.decided_by, r.reason)
            }
        };
        match review.decision {
            ReviewDecision::Approved => Ok(StepEnd {
                outcome: format!("{changed} surface change(s) approved by {}", who(&review)),
                ..StepEnd::default()
            }),
            ReviewDecision::Rejected => {
                Err(failed(format!("surface change rejected by {}", who(&review))))
            }
            ReviewDecision::Expired => Err(failed(format!(
                "surface change not reviewed in time (review expired {}): rejected",
                crate::conversions::ts(review.expires_at_ms)
                    .map(|t| t.to_string())
                    .unwrap_or_default()
            ))),
            ReviewDecision::Pending if review.expires_at_ms <= now_ms() => {
                // Past its time while other zones still ran (the sweeper expires parked jobs).
                self.run.deployer.expire_review(&job.id).await?;
                Err(failed("surface change not reviewed in time (review expired): rejected"))
            }
            ReviewDecision::Pending => Err(StepError::Park),
        }
    }

    /// After STABLE: the zone's package report stored, the smoke key dropped.
    pub async fn finish(&self, zone: &str) -> Result<(), Error> {
        let packages =
            self.run.current().await?.zone(zone).map(|z| z.packages.clone()).unwrap_or_default();
        let deployer = &self.run.deployer;
        deployer
            .core
            .zones
            .store_packages(&self.group.name, zone, &self.env.name, &self.commit, packages)
            .await?;
        deployer.core.zones.clear_deploy_keys(&self.group.name, zone).await?;
        Ok(())
    }

    /// Best effort on a failed or cancelled zone: the key is also bounded by its expiry.
    pub async fn drop_smoke_key(&self, zone: &str) {
        let deployer = &self.run.deployer;
        if let Err(err) = deployer.core.zones.clear_deploy_keys(&self.group.name, zone).await {
            tracing::debug!(%zone, error = %err, "smoke key not dropped");
        }
    }
}

fn rollout_end(track: &str, rollout: &zpb::TrackRolloutResponse) -> Result<StepEnd, StepError> {
    if rollout.ready {
        return Ok(StepEnd {
            outcome: format!("{} {track} worker(s) ready", rollout.workers.len()),
            ..StepEnd::default()
        });
    }
    let stuck: Vec<Stuck> = rollout
        .not_ready
        .iter()
        .map(|n| Stuck { worker: n.worker_id.clone(), reason: n.reason.clone() })
        .collect();
    let named: Vec<String> = stuck.iter().map(|s| format!("{}: {}", s.worker, s.reason)).collect();
    let error = format!("{track} not ready: {}", named.join("; "));
    Err(StepError::Failed(StepEnd { outcome: String::new(), error, stuck }))
}

/// The canary runs the deploy's commit and every package loaded.
fn check_load(worker: &str, commit: &str, status: &NodeStatus) -> Result<(), StepError> {
    let tail =
        || status.load_log.iter().rev().take(3).rev().cloned().collect::<Vec<_>>().join(" | ");
    match status.load_outcome() {
        _ if status.loaded_commit != commit => Err(failed(format!(
            "{worker} runs commit `{}`, not `{commit}`",
            if status.loaded_commit.is_empty() { "none" } else { &status.loaded_commit }
        ))),
        ReloadOutcome::Ok => Ok(()),
        ReloadOutcome::PackageErrors => {
            let errors: Vec<String> = status
                .packages
                .iter()
                .filter_map(|p| p.error.as_ref().map(|e| format!("{}: {}", p.name, e.message)))
                .collect();
            Err(failed(format!("{worker}: package load errors: {}", errors.join("; "))))
        }
        ReloadOutcome::PipFailed => {
            Err(failed(format!("{worker}: pip install -r requirements.txt failed: {}", tail())))
        }
        ReloadOutcome::RuntimeFailed | ReloadOutcome::Unspecified => {
            Err(failed(format!("{worker}: the runtime did not start: {}", tail())))
        }
    }
}
