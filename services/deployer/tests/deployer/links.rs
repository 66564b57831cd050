//! A repo cannot point the deployer outside itself: a symlink out of the tree is left out of
//! the snapshot and named in the job's log, one the pipeline reads (`requirements.txt`,
//! `ramen.toml`) fails the deploy naming it, in bounded time, and so does a file over its
//! limit; links that stay inside keep working, on the deployer and on the workers.

use std::time::Duration;

use ramen_proto::common::v1::{DeployStep, JobState, StepStatus, Track};
use ramen_proto::deployer::v1 as pb;
use sha2::{Digest, Sha256};

use crate::repo::Repo;
use crate::setup::{deploy, group_env, succeeded};
use crate::support::{World, client, step, summary};

/// A refusal is decided at sync, before any worker: far less than this.
const BOUNDED: Duration = Duration::from_secs(90);

/// Deploys `main` of `repo` to a fresh group and expects the sync to fail within [`BOUNDED`],
/// the job and the step saying `expected`, with no worker started and nothing uploaded.
async fn refused(repo: &Repo, expected: &str) -> pb::DeployJob {
    let world = World::start().await;
    let node = world.deployer().await;
    let client = client(&node).await;
    group_env(&world, &client, "team", &repo.url(), &["local-a"]).await;
    let job = tokio::time::timeout(BOUNDED, deploy(&world, &client, "team", "main"))
        .await
        .expect("the deploy ends in bounded time");
    assert_eq!(job.state(), JobState::Failed, "{} {:?}", job.error, summary(&job));
    assert!(job.error.contains(expected), "{}", job.error);
    let sync = step(&job, "local-a", DeployStep::Sync);
    assert_eq!(sync.status(), StepStatus::Failed, "{sync:?}");
    assert!(sync.error.contains(expected), "{sync:?}");
    assert!(world.workers("team", "local-a", Track::WorkerCanary).await.is_empty());
    let snapshots = world.base.blob.list("groups/team/snapshots/").await.unwrap();
    assert!(snapshots.is_empty(), "nothing uploaded: {snapshots:?}");
    job
}

#[tokio::test]
async fn a_requirements_link_to_dev_zero_is_refused_in_bounded_time() {
    let repo = Repo::hello();
    std::fs::remove_file(repo.path().join("requirements.txt")).unwrap();
    repo.link("requirements.txt", "/dev/zero");
    repo.commit("requirements from /dev/zero");
    refused(&repo, "refused requirements.txt: a symlink to /dev/zero, outside the repo").await;
}

#[tokio::test]
async fn a_manifest_link_out_of_the_repo_is_refused_naming_it() {
    let outside = tempfile::tempdir().unwrap();
    let key = outside.path().join("jwt.key");
    std::fs::write(&key, "namespace = true # a control-plane secret\n").unwrap();
    let repo = Repo::hello();
    repo.link("ramen.toml", &key.display().to_string());
    repo.commit("a manifest from outside");
    let expected = format!("refused ramen.toml: a symlink to {}, outside the repo", key.display());
    let job = refused(&repo, &expected).await;
    assert!(!format!("{job:?}").contains("control-plane secret"));
}

#[tokio::test]
async fn an_oversized_requirements_file_is_refused_naming_the_limit() {
    let repo = Repo::hello();
    let mut text = std::fs::read_to_string(repo.path().join("requirements.txt")).unwrap();
    while text.len() <= 1 << 20 {
        text.push_str("# a comment line to make the file larger than the deployer reads\n");
    }
    repo.write("requirements.txt", &text);
    repo.commit("requirements over the limit");
    refused(&repo, "refused requirements.txt: larger than the limit of 1 MiB").await;
}

/// `notes` imports a module through a link inside the repo (the worker needs the link),
/// `requirements.txt` is a link inside the repo (the deployer reads through it), and one link
/// leads out: it is left out of the snapshot, with a line in the log, and the deploy goes on.
#[tokio::test]
async fn links_inside_the_repo_work_and_a_link_out_is_left_out_with_a_log_line() {
    let repo = Repo::hello();
    let requirements = std::fs::read(repo.path().join("requirements.txt")).unwrap();
    std::fs::remove_file(repo.path().join("requirements.txt")).unwrap();
    repo.write("deps/base.txt", std::str::from_utf8(&requirements).unwrap());
    repo.link("requirements.txt", "deps/base.txt");
    repo.write("shared/welcome.py", "TEXT = 'reached through a link inside the repo'\n");
    repo.link("notes/linked.py", "../shared/welcome.py");
    let notes = repo.path().join("notes/__init__.py");
    let mut text = std::fs::read_to_string(&notes).unwrap();
    text.push_str("\nfrom .linked import TEXT as LINKED  # noqa: E402\n");
    std::fs::write(notes, text).unwrap();
    repo.link("docs/hosts", "/etc/hosts");
    let commit = repo.commit("links in and out");

    let world = World::start().await;
    let node = world.deployer().await;
    let client = client(&node).await;
    group_env(&world, &client, "team", &repo.url(), &["local-a"]).await;
    let job = deploy(&world, &client, "team", "main").await;
    assert!(succeeded(&job), "{} {:?}", job.error, summary(&job));
    let log: Vec<&str> =
        step(&job, "local-a", DeployStep::Sync).log.iter().map(|l| l.text.as_str()).collect();
    assert!(
        log.contains(&"refused docs/hosts: a symlink to /etc/hosts, outside the repo"),
        "{log:?}"
    );

    let blob = &world.base.blob;
    let sidecar = blob.get(&format!("groups/team/snapshots/{commit}.json")).await.unwrap();
    let sidecar: serde_json::Value = serde_json::from_slice(&sidecar.unwrap()).unwrap();
    let hash = format!("sha256:{}", hex::encode(Sha256::digest(&requirements)));
    assert_eq!(sidecar["requirements_hash"], hash.as_str(), "read through the link inside");
    let archive = blob.get(&format!("groups/team/snapshots/{commit}.tar.gz")).await.unwrap();
    let unpacked = tempfile::tempdir().unwrap();
    let dest = unpacked.path().join("snap");
    ramen_node_contract::archive::unpack(&archive.unwrap(), &dest).unwrap();
    assert_eq!(std::fs::read(dest.join("requirements.txt")).unwrap(), requirements);
    assert!(std::fs::read_link(dest.join("notes/linked.py")).is_ok());
    assert!(std::fs::symlink_metadata(dest.join("docs/hosts")).is_err(), "left out");
}
