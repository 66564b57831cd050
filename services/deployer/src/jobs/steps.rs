//! The five steps of a zone (and the canary rollback). Each is idempotent, so a resumed job
//! can run the interrupted one again: the snapshot is content-addressed, the config is
//! rewritten whole, restarts and reloads converge on the same commit.

use std::sync::atomic::{AtomicBool, Ordering};

use ramen_proto::common::v1::{KeyHash, NodePolicy, Snapshot, Track};
use ramen_proto::runner::v1::ReloadOutcome;
use ramen_proto::zone::v1 as zpb;

use super::model::{Step, Stuck};
use super::recorder::{JobRun, StepEnd};
use crate::error::Error;
use crate::git::Credentials;
use crate::model::{EnvironmentRecord, GroupRecord, now_ms};
use crate::ports::zones::reload;
use crate::snapshot::{self, Source, Synced};

/// How a step did not succeed.
pub(crate) enum StepError {
    /// The step failed for good: the zone fails (with a canary rollback where due).
    Failed(StepEnd),
    /// Stop the job and retry later (an outage, a lost lease).
    Retry(Error),
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
    pub snapshot: tokio::sync::OnceCell<(Snapshot, bool, u64)>,
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
            Step::Stable => self.restart(zone, Track::Worker).await,
            Step::CanaryRollback => self.scale_canary_down(zone).await,
        }
    }

    async fn snapshot(&self) -> Result<&(Snapshot, bool, u64), Error> {
        self.snapshot
            .get_or_try_init(|| async {
                let deployer = &self.run.deployer;
                let scratch = deployer.settings.cache_dir.join("scratch");
                std::fs::create_dir_all(&scratch)
                    .map_err(|e| Error::Internal(format!("scratch directory: {e}")))?;
                let source = Source {
                    group: &self.group.name,
                    url: &self.group.repo_url,
                    creds: self.creds.as_ref(),
                    scratch: &scratch,
                };
                let Synced { snapshot, uploaded, bytes } =
                    snapshot::ensure(&deployer.blob, &deployer.repos, source, &self.commit).await?;
                Ok((snapshot, uploaded, bytes))
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
        let (snapshot, uploaded, bytes) = self.snapshot().await?;
        let first = *uploaded && !self.upload_reported.swap(true, Ordering::SeqCst);
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

    /// The keys valid on this environment × zone, plus the job's smoke key.
    async fn keys(&self, zone: &str, with_smoke: bool) -> Result<Vec<KeyHash>, Error> {
        let mut keys =
            self.run.deployer.auth.key_hashes(&self.group.name, &self.env.name, zone).await?;
        if with_smoke {
            keys.push(KeyHash {
                key_id: format!("deploy-smoke-{}", self.run.job_id),
                sha256_hex: ramen_runner::hash_key(&self.smoke_key),
                expires_at_unix_ms: now_ms() + 6 * 3600 * 1000,
            });
        }
        Ok(keys)
    }

    async fn write_config(&self, zone: &str) -> Result<StepEnd, StepError> {
        let deployer = &self.run.deployer;
        let group = &self.group.name;
        match deployer.zones.ensure_placement(group, zone).await {
            Ok(_) => {}
            Err(Error::NotFound(what)) => {
                return Err(failed(format!("zone `{zone}` cannot be used: {what}")));
            }
            Err(err) => return Err(err.into()),
        }
        let keys = self.keys(zone, true).await?;
        // The clone token is the control plane's: workers never clone, so they never get it.
        let mut secrets = deployer.auth.resolve_secrets(group, &self.env.name, zone).await?;
        secrets.retain(|s| s.name != crate::credentials::TOKEN_SECRET);
        let (snapshot, _, _) = self.snapshot().await?;
        let outcome = format!(
            "{} keys, {} secrets, {} blocked, verbose {}",
            keys.len() - 1,
            secrets.len(),
            self.env.blocked.len(),
            self.env.verbose
        );
        let config = zpb::NodeConfig {
            environment: self.env.name.clone(),
            policy: Some(NodePolicy {
                blocked: self.env.blocked.clone(),
                key_hashes: keys,
                ..NodePolicy::default()
            }),
            secrets: secrets
                .into_iter()
                .map(|s| zpb::NodeSecret { name: s.name, value: s.value })
                .collect(),
            verbose: self.env.verbose,
            snapshot: Some(snapshot.clone()),
        };
        let written = deployer.zones.write_config(group, zone, config).await?;
        Ok(StepEnd {
            outcome: format!("{outcome}; policy v{}", written.policy_version),
            ..StepEnd::default()
        })
    }

    async fn restart(&self, zone: &str, track: Track) -> Result<StepEnd, StepError> {
        let (step, name) = match track {
            Track::WorkerCanary => (Step::Canary, "worker-canary"),
            _ => (Step::Stable, "worker"),
        };
        let deployer = &self.run.deployer;
        let timeout = deployer.settings.rollout_timeout;
        self.run
            .log(
                zone,
                step,
                format!("restarting {name} in place (waiting up to {timeout:?} for ready)"),
            )
            .await?;
        let rollout = deployer.zones.restart(&self.group.name, zone, track, timeout).await?;
        rollout_end(name, &rollout)
    }

    async fn scale_canary_down(&self, zone: &str) -> Result<StepEnd, StepError> {
        let deployer = &self.run.deployer;
        let rollout = deployer
            .zones
            .scale(
                &self.group.name,
                zone,
                Track::WorkerCanary,
                0,
                deployer.settings.rollout_timeout,
            )
            .await?;
        Ok(StepEnd {
            outcome: format!("worker-canary scaled to 0 ({} left)", rollout.workers.len()),
            ..StepEnd::default()
        })
    }

    async fn reload_smoke(&self, zone: &str) -> Result<StepEnd, StepError> {
        let deployer = &self.run.deployer;
        let group = &self.group.name;
        // Again: a key change since WRITE_CONFIG re-pushes the hashes from auth, without it.
        deployer.zones.live_policy(group, zone, None, Some(self.keys(zone, true).await?)).await?;
        let (snapshot, _, _) = self.snapshot().await?;
        let workers = deployer.zones.workers(group, zone, Track::WorkerCanary).await?;
        let ready: Vec<&zpb::Worker> = workers
            .iter()
            .filter(|w| w.state == ramen_proto::common::v1::WorkerState::Ready as i32)
            .collect();
        if ready.is_empty() {
            return Err(failed("no ready worker-canary to reload"));
        }
        let mut report = None;
        for worker in &ready {
            let answer =
                reload(&worker.admin_address, snapshot.clone(), deployer.settings.reload_timeout)
                    .await?;
            self.run.log_lines(zone, Step::ReloadSmoke, answer.log.clone()).await?;
            check_reload(&worker.id, &answer)?;
            report.get_or_insert(answer);
        }
        let answer = report.expect("at least one ready worker");
        self.run.set_packages(zone, answer.packages.clone()).await?;
        let worker = ready[0];
        let tools = super::smoke::tools_list(
            &worker.mcp_address,
            &self.smoke_key,
            deployer.settings.smoke_timeout,
        )
        .await
        .map_err(|e| failed(format!("smoke test on {}: {e}", worker.id)))?;
        self.run
            .log(
                zone,
                Step::ReloadSmoke,
                format!("tools/list on {} as an ordinary caller: {}", worker.id, tools.join(", ")),
            )
            .await?;
        let pip = if answer.pip_ran { "pip ran" } else { "requirements unchanged" };
        Ok(StepEnd {
            outcome: format!("{} packages, {} tools; {pip}", answer.packages.len(), tools.len()),
            ..StepEnd::default()
        })
    }

    /// After STABLE: the zone's package report stored, the smoke key dropped.
    pub async fn finish(&self, zone: &str) -> Result<(), Error> {
        let packages =
            self.run.current().await?.zone(zone).map(|z| z.packages.clone()).unwrap_or_default();
        let deployer = &self.run.deployer;
        deployer
            .zones
            .store_packages(&self.group.name, zone, &self.env.name, &self.commit, packages)
            .await?;
        let keys = self.keys(zone, false).await?;
        deployer.zones.live_policy(&self.group.name, zone, None, Some(keys)).await?;
        Ok(())
    }

    /// Best effort on a failed or cancelled zone: the key is also bounded by its expiry.
    pub async fn drop_smoke_key(&self, zone: &str) {
        let deployer = &self.run.deployer;
        let result = match self.keys(zone, false).await {
            Ok(keys) => deployer
                .zones
                .live_policy(&self.group.name, zone, None, Some(keys))
                .await
                .map(|_| ()),
            Err(err) => Err(err),
        };
        if let Err(err) = result {
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

fn check_reload(
    worker: &str,
    answer: &ramen_proto::runner::v1::ReloadResponse,
) -> Result<(), StepError> {
    match answer.outcome() {
        ReloadOutcome::Ok => Ok(()),
        ReloadOutcome::PackageErrors => {
            let errors: Vec<String> = answer
                .packages
                .iter()
                .filter_map(|p| p.error.as_ref().map(|e| format!("{}: {}", p.name, e.message)))
                .collect();
            Err(failed(format!("{worker}: package load errors: {}", errors.join("; "))))
        }
        ReloadOutcome::PipFailed => {
            let tail =
                answer.log.iter().rev().take(3).rev().cloned().collect::<Vec<_>>().join(" | ");
            Err(failed(format!("{worker}: pip install -r requirements.txt failed: {tail}")))
        }
        ReloadOutcome::RuntimeFailed | ReloadOutcome::Unspecified => {
            let tail =
                answer.log.iter().rev().take(3).rev().cloned().collect::<Vec<_>>().join(" | ");
            Err(failed(format!("{worker}: the runtime did not start: {tail}")))
        }
    }
}
