//! `ramen migrate to-cloud`: moves a team that started on `ramen up` to the split services
//! without losing anything. It copies the data dir's embedded store (every service's
//! collections: groups, environments, keys, sealed secrets, jobs, audit, …) and its blob
//! directory (snapshots and built environments) into the store and blob store a service with
//! the target configuration would open — MongoDB and S3 in cloud mode.
//!
//! - **Nothing is written before the secrets key is checked**: every sealed value in the
//!   source must be under a key the target's `RAMEN_SECRETS_KEY` (or its previous key) opens,
//!   since sealed values are copied as they are, never unsealed.
//! - **Idempotent and resumable**: each document and object is compared with the target's copy
//!   and written only when it differs (upsert / PUT overwrite), so a second run writes nothing
//!   and a run after an interruption writes only what is still missing.
//! - **The source is only read**, and only while nothing else has it open: the embedded store
//!   is locked by the `ramen up` that runs on it, which the migration refuses.
//!
//! The bus (NATS) is not copied: the new stack starts with an empty one. A deploy job that is
//! not finished has its work item there, so the migration refuses while one is open.

mod copy;
mod error;
mod sealed;
mod source;
mod target;

use ramen_crypto::seal::Sealer;

pub use error::MigrateError;
pub use sealed::{SealedScan, scan_sealed};
pub use source::Source;
pub use target::Target;

/// How to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Compare and report, write nothing.
    pub dry_run: bool,
    /// Documents or objects copied at once.
    pub concurrency: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self { dry_run: false, concurrency: 8 }
    }
}

/// What a run reports as it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The secrets key opens every sealed value (`sealed` of them).
    KeyChecked { sealed: u64 },
    /// `done` of `total` objects of the blob store compared (and written where they differed).
    Blobs { done: u64, total: u64 },
    /// One collection finished.
    Collection { name: String, tally: Tally },
}

/// Counts for one part of the copy. In a dry run `written` counts what would be written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub total: u64,
    pub written: u64,
    pub unchanged: u64,
    /// Bytes of the written objects (blobs only).
    pub bytes: u64,
}

impl Tally {
    fn add(&mut self, written: Option<u64>) {
        self.total += 1;
        match written {
            Some(bytes) => {
                self.written += 1;
                self.bytes += bytes;
            }
            None => self.unchanged += 1,
        }
    }
}

/// What a finished run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub sealed: u64,
    pub blobs: Tally,
    /// Per collection, sorted by name.
    pub collections: Vec<(String, Tally)>,
    /// Deployed environments on local zones, which need a deploy on the new stack.
    pub redeploy: Vec<LocalPlacement>,
}

/// An environment deployed on a local zone. Its workers were processes of the host `ramen up`
/// ran on, started from files in that data dir: they do not move with the store, and the
/// zone-manager of the new stack starts them again on the environment's next deploy.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LocalPlacement {
    pub group: String,
    pub environment: String,
    pub zone: String,
}

impl Report {
    /// Documents over all collections.
    pub fn documents(&self) -> Tally {
        let mut sum = Tally::default();
        for (_, tally) in &self.collections {
            sum.total += tally.total;
            sum.written += tally.written;
            sum.unchanged += tally.unchanged;
        }
        sum
    }
}

/// Checks the secrets key, then copies the blobs (first, so a service started on a half
/// migrated target never sees an environment whose snapshot is missing), then every
/// collection.
pub async fn migrate(
    source: &Source,
    target: &Target,
    sealer: &Sealer,
    options: &Options,
    progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<Report, MigrateError> {
    refuse_unfinished_jobs(source).await?;
    let scan = scan_sealed(source.store.as_ref()).await?;
    scan.check(sealer, source.key_file().as_deref())?;
    progress(Progress::KeyChecked { sealed: scan.sealed() });
    let concurrency = options.concurrency.max(1);
    let blobs = copy::blobs(
        source.blob.as_ref(),
        target.blob.as_ref(),
        options.dry_run,
        concurrency,
        progress,
    )
    .await?;
    let mut collections = Vec::new();
    for name in source.collections().await? {
        let tally = copy::collection(
            source.store.as_ref(),
            target.store.as_ref(),
            &name,
            options.dry_run,
            concurrency,
        )
        .await?;
        progress(Progress::Collection { name: name.clone(), tally: tally.clone() });
        collections.push((name, tally));
    }
    let redeploy = local_placements(source).await?;
    Ok(Report { sealed: scan.sealed(), blobs, collections, redeploy })
}

/// Deploy jobs (the deployer's `deployer_deploy_jobs`) that are not finished. Their work item
/// and lease live in `ramen up`'s NATS, which does not move: copied, such a job would stay
/// open on the new stack and its unique "one open job per environment" index would refuse
/// every later deploy of the environment.
async fn refuse_unfinished_jobs(source: &Source) -> Result<(), MigrateError> {
    const FINISHED: [&str; 4] = ["succeeded", "failed", "cancelled", "dead_lettered"];
    let docs =
        source.store.find("deployer_deploy_jobs", &ramen_store::Query::default()).await.map_err(
            |source| MigrateError::source_store("collection deployer_deploy_jobs", source),
        )?;
    let open: Vec<String> = docs
        .iter()
        .filter(|d| !FINISHED.contains(&d.doc["state"].as_str().unwrap_or("")))
        .map(|d| {
            let field = |f: &str| d.doc[f].as_str().unwrap_or("?").to_owned();
            format!("{} ({}/{}, {})", d.id, field("group"), field("environment"), field("state"))
        })
        .collect();
    if open.is_empty() { Ok(()) } else { Err(MigrateError::UnfinishedJobs { jobs: open }) }
}

/// The zone-manager's placements (collection `zone_placements`) on `local` zones that have
/// an environment deployed.
async fn local_placements(source: &Source) -> Result<Vec<LocalPlacement>, MigrateError> {
    let query = ramen_store::Query::default().eq("provider", "local");
    let docs = source
        .store
        .find("zone_placements", &query)
        .await
        .map_err(|source| MigrateError::source_store("collection zone_placements", source))?;
    let text = |doc: &serde_json::Value, field: &str| doc[field].as_str().unwrap_or("").to_owned();
    let mut found: Vec<LocalPlacement> = docs
        .iter()
        .map(|d| LocalPlacement {
            group: text(&d.doc, "group"),
            environment: text(&d.doc, "environment"),
            zone: text(&d.doc, "zone"),
        })
        .filter(|p| !p.environment.is_empty())
        .collect();
    found.sort();
    Ok(found)
}
