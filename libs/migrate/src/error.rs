use std::path::PathBuf;

use ramen_blob::BlobError;
use ramen_store::StoreError;

/// Why a migration stopped. Every variant that stops before writing says so; one that stops
/// part-way is safe to re-run (nothing is written twice, and the rest is copied).
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(
        "{} is not a `ramen up` data directory: there is no store at {} (pass the data dir \
         `ramen up` ran with: --data-dir, or RAMEN_DATA_DIR when it was set)",
        data_dir.display(),
        store.display()
    )]
    NotADataDir { data_dir: PathBuf, store: PathBuf },

    #[error(
        "the store in {} is open in another process: stop `ramen up` on this data dir first \
         (nothing was written)",
        data_dir.display()
    )]
    SourceInUse { data_dir: PathBuf },

    #[error(
        "the target is the source data dir {} itself: set RAMEN_MONGO_URI and RAMEN_S3_BUCKET \
         (in the environment or the --config file) for a cloud target",
        data_dir.display()
    )]
    TargetIsSource { data_dir: PathBuf },

    #[error(
        "RAMEN_SECRETS_KEY is not set: the sealed secrets are copied sealed, so the target \
         needs the key `ramen up` sealed them with{}; nothing was written",
        key_file.as_ref().map(|f| format!(" (generated into {}: export RAMEN_SECRETS_KEY=\"$(cat {})\")", f.display(), f.display())).unwrap_or_default()
    )]
    SecretsKeyUnset { key_file: Option<PathBuf> },

    #[error(
        "RAMEN_SECRETS_KEY (key id `{configured}`) does not open {count} sealed value(s) of the \
         source, sealed with key id(s) {found} (first: {example}); {hint}. Nothing was written"
    )]
    WrongSecretsKey { count: u64, configured: String, found: String, example: String, hint: String },

    #[error(
        "{} deploy job(s) are not finished: {}. Their work lives in the NATS of `ramen up`, \
         which does not move: start `ramen up` again and let them finish (or cancel them: \
         `ramen jobs -g <group> <id> --cancel`), then migrate. Nothing was written",
        jobs.len(),
        jobs.join(", ")
    )]
    UnfinishedJobs { jobs: Vec<String> },

    #[error("reading {what} of the source: {source}")]
    SourceStore { what: String, source: StoreError },

    #[error("writing to the target, {what}: {source}")]
    TargetStore { what: String, source: StoreError },

    #[error("reading blob `{key}` of the source: {source}")]
    SourceBlob { key: String, source: BlobError },

    #[error("the target blob store{}: {source}", if key.is_empty() { String::new() } else { format!(", object `{key}`") })]
    TargetBlob { key: String, source: BlobError },
}

impl MigrateError {
    pub(crate) fn source_store(what: impl Into<String>, source: StoreError) -> Self {
        Self::SourceStore { what: what.into(), source }
    }

    /// A target write that failed. A unique index refusing a copied document means the target
    /// holds data of its own that disagrees with the source; say that, not just the index.
    pub(crate) fn target_write(coll: &str, id: &str, source: StoreError) -> Self {
        let what = match &source {
            StoreError::UniqueViolation { .. } => format!(
                "{coll}/{id} (the target already holds another document with the same unique \
                 values: was a stack started on the target before the migration? Migrate into \
                 an empty database)"
            ),
            _ => format!("{coll}/{id}"),
        };
        Self::TargetStore { what, source }
    }
}
