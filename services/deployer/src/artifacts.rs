//! Garbage collection of a group's deploy artifacts in the blob store: snapshots
//! (`groups/<group>/snapshots/<commit>.{tar.gz,json}`) and the Python environments built for
//! them (`groups/<group>/environments/<key>.{tar.gz,json}`), run after each successful deploy.
//!
//! Kept: the commits of each environment's last `keep_successes` (3) successful deploys (what
//! runs now, and the rollback targets a redeploy of an older ref finds ready), every commit of
//! a job that is not finished, and of every job created in the last `artifact_grace` (1 h; a deploy that
//! has just resolved its commit may be about to reuse a snapshot it found). An environment is
//! kept while a kept commit uses it: the deploy that uses one records that with a marker
//! `environments/<key>.used-by/<commit>`. An environment with no marker at all (built before
//! markers existed) is kept, so nothing a live worker may still fetch is ever removed on a
//! guess. Anything else is deleted; a later deploy of a deleted commit uploads its snapshot
//! again. Group deletion removes the whole prefix (see `deletion.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ramen_blob::BlobStore;
use ramen_store::{Filter, Query};

use crate::core::Core;
use crate::error::Result;
use crate::jobs::model::{JobRecord, JobState};

const MARKER: &str = ".used-by/";

/// Records that `commit`'s deploys use the environment `key`.
pub async fn mark_used(
    blob: &Arc<dyn BlobStore>,
    group: &str,
    key: &str,
    commit: &str,
) -> Result<()> {
    blob.put(&format!("groups/{group}/environments/{key}{MARKER}{commit}"), Vec::new().into())
        .await?;
    Ok(())
}

/// What one collection removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Collected {
    pub snapshots: Vec<String>,
    pub environments: Vec<String>,
}

/// Deletes what no kept commit needs (see the module docs).
pub async fn collect(core: &Core, group: &str) -> Result<Collected> {
    let jobs = core.db.jobs.find(&Query::new().filter(Filter::new().eq("group", group))).await?;
    let jobs: Vec<JobRecord> = jobs.into_iter().map(|j| j.value).collect();
    let settings = &core.settings;
    let grace_ms = settings.artifact_grace.as_millis() as i64;
    let keep = kept_commits(&jobs, crate::model::now_ms() - grace_ms, settings.keep_successes);
    let mut collected = Collected::default();

    let prefix = format!("groups/{group}/snapshots/");
    let mut snapshots: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for key in core.blob.list(&prefix).await? {
        let name = &key[prefix.len()..];
        let commit = name.strip_suffix(".tar.gz").or_else(|| name.strip_suffix(".json"));
        if let Some(commit) = commit {
            snapshots.entry(commit.to_owned()).or_default().push(key.clone());
        }
    }
    for (commit, keys) in snapshots {
        if keep.contains(&commit) {
            continue;
        }
        // The sidecar first: without it the snapshot counts as absent and is uploaded again.
        for key in &sidecar_first(keys) {
            core.blob.delete(key).await?;
        }
        collected.snapshots.push(commit);
    }

    let prefix = format!("groups/{group}/environments/");
    let mut environments: BTreeMap<String, (Vec<String>, BTreeSet<String>)> = BTreeMap::new();
    for key in core.blob.list(&prefix).await? {
        let name = &key[prefix.len()..];
        let (env, used_by) = match name.split_once(MARKER) {
            Some((env, commit)) => (env, Some(commit)),
            None => match name.strip_suffix(".tar.gz").or_else(|| name.strip_suffix(".json")) {
                Some(env) => (env, None),
                None => continue,
            },
        };
        let entry = environments.entry(env.to_owned()).or_default();
        entry.0.push(key.clone());
        if let Some(commit) = used_by {
            entry.1.insert(commit.to_owned());
        }
    }
    for (env, (keys, used_by)) in environments {
        if used_by.is_empty() || used_by.iter().any(|c| keep.contains(c)) {
            continue;
        }
        // Markers last: an interrupted collection leaves the environment still marked unused.
        let (markers, objects): (Vec<_>, Vec<_>) =
            keys.into_iter().partition(|k| k.contains(MARKER));
        for key in sidecar_first(objects).iter().chain(&markers) {
            core.blob.delete(key).await?;
        }
        collected.environments.push(env);
    }
    Ok(collected)
}

/// `.json` sidecars (written last, read as "complete") before the archives they describe.
fn sidecar_first(mut keys: Vec<String>) -> Vec<String> {
    keys.sort_by_key(|k| !k.ends_with(".json"));
    keys
}

/// The commits a group's jobs keep alive (see the module docs).
fn kept_commits(jobs: &[JobRecord], recent: i64, successes_kept: usize) -> BTreeSet<String> {
    let mut keep: BTreeSet<String> = jobs
        .iter()
        .filter(|j| !j.state.is_terminal() || j.created_at_ms >= recent)
        .map(|j| j.commit.clone())
        .collect();
    let mut by_environment: BTreeMap<&str, Vec<&JobRecord>> = BTreeMap::new();
    for job in jobs.iter().filter(|j| j.state == JobState::Succeeded) {
        by_environment.entry(&job.environment).or_default().push(job);
    }
    for successes in by_environment.values_mut() {
        successes.sort_by_key(|j| std::cmp::Reverse(j.finished_at_ms));
        keep.extend(successes.iter().take(successes_kept).map(|j| j.commit.clone()));
    }
    keep.remove("");
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(env: &str, commit: &str, state: JobState, at: i64) -> JobRecord {
        JobRecord {
            environment: env.into(),
            commit: commit.into(),
            state,
            created_at_ms: at,
            finished_at_ms: at + 1,
            ..JobRecord::default()
        }
    }

    #[test]
    fn the_last_successes_of_each_environment_and_unfinished_or_recent_jobs_are_kept() {
        let hour = 3_600_000;
        let now = 100 * hour;
        let jobs = [
            job("prod", "p1", JobState::Succeeded, hour),
            job("prod", "p2", JobState::Succeeded, 2 * hour),
            job("prod", "p3", JobState::Succeeded, 3 * hour),
            job("prod", "p4", JobState::Succeeded, 4 * hour),
            job("prod", "bad", JobState::Failed, 5 * hour),
            job("dev", "d1", JobState::Succeeded, hour),
            job("dev", "fresh-failure", JobState::Failed, now - 60_000),
            job("dev", "running", JobState::Running, 6 * hour),
            job("dev", "", JobState::Queued, now),
        ];
        let keep = kept_commits(&jobs, now - hour, 3);
        let keep: Vec<&str> = keep.iter().map(String::as_str).collect();
        assert_eq!(keep, ["d1", "fresh-failure", "p2", "p3", "p4", "running"]);
    }
}
