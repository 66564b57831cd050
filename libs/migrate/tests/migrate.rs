//! `ramen migrate to-cloud`'s copy, on real stores: a `ramen up` data dir (embedded store and
//! blob directory) into an embedded target always, into S3 on a real `moto_server`, and into
//! MongoDB when `RAMEN_TEST_MONGO_URI` is set.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use ramen_blob::{BlobStore, LocalDirStore, S3Settings, S3Store, StaticCredentials};
use ramen_config::{Config, Secret};
use ramen_crypto::seal::{Sealer, SecretValue};
use ramen_migrate::{MigrateError, Options, Progress, Source, Target, migrate};
use ramen_store::{CollectionSpec, DocumentStore, EmbeddedStore, Query, StoreConfig};
use serde_json::{Value, json};

const KEY: [u8; 32] = [7; 32];
const OTHER_KEY: [u8; 32] = [9; 32];

/// A data dir as `ramen up` leaves it: a few services' collections, two sealed secrets (one
/// nested in an array, as a group's token list could be), snapshots and an environment.
async fn seed(data_dir: &Path) -> anyhow::Result<()> {
    let store = EmbeddedStore::open(data_dir.join("store")).await?;
    let sealer = Sealer::new(&KEY, None);
    store.ensure_collection(&CollectionSpec::new("auth_users").unique("email", ["email"])).await?;
    store.insert("auth_users", "u1", &json!({"email": "a@example.com", "role": "admin"})).await?;
    store.insert("auth_users", "u2", &json!({"email": "b@example.com", "role": "member"})).await?;
    let sealed = serde_json::to_value(sealer.seal("g/*/*/TOKEN", &SecretValue::new("ghp_x")))?;
    store.insert("auth_secrets", "g/*/*/TOKEN", &json!({"group": "g", "sealed": sealed})).await?;
    let nested = serde_json::to_value(sealer.seal("g/app", &SecretValue::new("key-2")))?;
    store.insert("deployer_apps", "g", &json!({"tokens": [{"sealed": nested}]})).await?;
    for i in 0..30 {
        store
            .insert("deployer_jobs", &format!("job-{i:02}"), &json!({"n": i, "state": "succeeded"}))
            .await?;
    }
    store.ensure_collection(&CollectionSpec::new("zones_empty")).await?;
    let local =
        json!({"group": "g", "zone": "local-a", "provider": "local", "environment": "prod"});
    store.insert("zone_placements", "g/local-a", &local).await?;
    let cloud = json!({"group": "g", "zone": "gke-a", "provider": "gcp", "environment": "prod"});
    store.insert("zone_placements", "g/gke-a", &cloud).await?;
    let blobs = LocalDirStore::open(data_dir.join("blobs"))?;
    blobs.put("groups/g/snapshots/abc.tar.gz", Bytes::from_static(b"snapshot-abc")).await?;
    blobs.put("groups/g/snapshots/def.tar.gz", Bytes::from(vec![1u8; 300_000])).await?;
    blobs.put("groups/g/environments/e1.tar.zst", Bytes::from_static(b"venv")).await?;
    Ok(())
}

/// A seeded data dir `up` and an empty directory `cloud` for a target, in one temp dir.
async fn seeded() -> anyhow::Result<(tempfile::TempDir, PathBuf, PathBuf)> {
    let dir = tempfile::tempdir()?;
    let (data, out) = (dir.path().join("up"), dir.path().join("cloud"));
    seed(&data).await?;
    Ok((dir, data, out))
}

/// [`seeded`], opened: the source and an empty embedded target.
async fn seeded_with_embedded_target() -> anyhow::Result<(tempfile::TempDir, Source, Target)> {
    let (dir, data, out) = seeded().await?;
    let source = Source::open(&data).await?;
    let target = embedded_target(&out).await?;
    Ok((dir, source, target))
}

fn embedded_target(dir: &Path) -> impl std::future::Future<Output = anyhow::Result<Target>> {
    let dir = dir.to_owned();
    async move {
        let store = Arc::new(EmbeddedStore::open(dir.join("store")).await?);
        let blob = Arc::new(LocalDirStore::open(dir.join("blobs"))?);
        Ok(Target::new(store, blob, "test target"))
    }
}

/// Every document of `a` is in `b` with the same body.
async fn same_documents(a: &dyn DocumentStore, b: &dyn DocumentStore) -> anyhow::Result<usize> {
    let mut count = 0;
    for coll in a.collections().await? {
        let left = a.find(&coll, &Query::default()).await?;
        let right = b.find(&coll, &Query::default()).await?;
        let bodies = |docs: &[ramen_store::Stored]| -> Vec<(String, Value)> {
            docs.iter().map(|d| (d.id.clone(), d.doc.clone())).collect()
        };
        assert_eq!(bodies(&left), bodies(&right), "collection {coll}");
        count += left.len();
    }
    Ok(count)
}

async fn same_blobs(a: &dyn BlobStore, b: &dyn BlobStore) -> anyhow::Result<usize> {
    let keys = a.list("").await?;
    assert_eq!(keys, b.list("").await?);
    for key in &keys {
        assert_eq!(a.get(key).await?, b.get(key).await?, "object {key}");
    }
    Ok(keys.len())
}

fn quiet(_: Progress) {}

fn sealer() -> Sealer {
    Sealer::new(&KEY, None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_everything_and_a_second_run_writes_nothing() -> anyhow::Result<()> {
    let (_dir, source, target) = seeded_with_embedded_target().await?;
    let seen = Mutex::new(Vec::new());
    let record = |p: Progress| seen.lock().unwrap().push(p);
    let report = migrate(&source, &target, &sealer(), &Options::default(), &record).await?;

    assert_eq!(report.sealed, 2);
    assert_eq!(report.blobs.written, 3);
    assert_eq!(report.blobs.bytes, 12 + 300_000 + 4);
    let docs = report.documents();
    assert_eq!((docs.total, docs.written, docs.unchanged), (36, 36, 0));
    let names: Vec<&str> = report.collections.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "auth_secrets",
            "auth_users",
            "deployer_apps",
            "deployer_jobs",
            "zone_placements",
            "zones_empty"
        ]
    );
    assert_eq!(same_documents(source.store().as_ref(), target.store().as_ref()).await?, 36);
    assert_eq!(same_blobs(source.blob().as_ref(), target.blob().as_ref()).await?, 3);
    assert!(
        target.store().as_ref().collections().await?.contains(&"zones_empty".to_owned()),
        "empty collections exist too"
    );
    let redeploy = ramen_migrate::LocalPlacement {
        group: "g".into(),
        environment: "prod".into(),
        zone: "local-a".into(),
    };
    assert_eq!(report.redeploy, [redeploy], "only the local zone's workers stay behind");
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.first(), Some(&Progress::KeyChecked { sealed: 2 }));
    assert!(seen.contains(&Progress::Blobs { done: 3, total: 3 }), "{seen:?}");

    // The sealed values arrive as they were and open with the same key.
    let stored = target.store().as_ref().get("auth_secrets", "g/*/*/TOKEN").await?.unwrap();
    let sealed = serde_json::from_value(stored.doc["sealed"].clone())?;
    assert_eq!(sealer().unseal("g/*/*/TOKEN", &sealed)?.expose(), "ghp_x");

    let again = migrate(&source, &target, &sealer(), &Options::default(), &quiet).await?;
    assert_eq!((again.blobs.written, again.blobs.unchanged), (0, 3));
    assert_eq!((again.documents().written, again.documents().unchanged), (0, 36));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_reports_and_writes_nothing() -> anyhow::Result<()> {
    let (_dir, source, target) = seeded_with_embedded_target().await?;
    let dry = Options { dry_run: true, ..Options::default() };
    let report = migrate(&source, &target, &sealer(), &dry, &quiet).await?;
    assert_eq!(
        (report.blobs.written, report.documents().written),
        (3, 36),
        "what would be written"
    );
    assert_eq!(target.store().collections().await?, Vec::<String>::new());
    assert_eq!(target.blob().list("").await?, Vec::<String>::new());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_secrets_key_stops_it_before_anything_is_written() -> anyhow::Result<()> {
    let (_dir, data, out) = seeded().await?;
    // The key `ramen up` generated, where it keeps it.
    std::fs::create_dir_all(data.join("keys"))?;
    std::fs::write(data.join("keys/secrets.key"), base64_of(&KEY))?;
    let source = Source::open(&data).await?;
    let target = embedded_target(&out).await?;
    let wrong = Sealer::new(&OTHER_KEY, None);
    let err = migrate(&source, &target, &wrong, &Options::default(), &quiet).await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, MigrateError::WrongSecretsKey { count: 2, .. }), "{message}");
    assert!(message.contains(wrong.current_key_id()), "names the configured key: {message}");
    assert!(message.contains(sealer().current_key_id()), "names the sealing key: {message}");
    assert!(message.contains("keys/secrets.key"), "points at the key that opens them: {message}");
    assert!(message.contains("Nothing was written"), "{message}");
    assert_eq!(target.store().collections().await?, Vec::<String>::new());
    assert_eq!(target.blob().list("").await?, Vec::<String>::new());

    // After a rotation the previous key still counts as one that opens them.
    let rotated = Sealer::new(&OTHER_KEY, Some(&KEY));
    migrate(&source, &target, &rotated, &Options::default(), &quiet).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfinished_deploy_job_stops_it_before_anything_is_written() -> anyhow::Result<()> {
    let (_dir, data, out) = seeded().await?;
    let source = Source::open(&data).await?;
    let job = |state: &str| json!({"group": "g", "environment": "prod", "state": state});
    source.store().put("deployer_deploy_jobs", "j1", &job("succeeded")).await?;
    source.store().put("deployer_deploy_jobs", "j2", &job("failed_resumable")).await?;
    let target = embedded_target(&out).await?;
    let err = migrate(&source, &target, &sealer(), &Options::default(), &quiet).await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, MigrateError::UnfinishedJobs { .. }), "{message}");
    assert!(
        message.contains("j2 (g/prod, failed_resumable)") && !message.contains("j1"),
        "{message}"
    );
    assert_eq!(target.store().collections().await?, Vec::<String>::new(), "nothing written");

    source.store().put("deployer_deploy_jobs", "j2", &job("cancelled")).await?;
    migrate(&source, &target, &sealer(), &Options::default(), &quiet).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_run_resumes_with_what_is_missing_or_stale() -> anyhow::Result<()> {
    let (_dir, source, target) = seeded_with_embedded_target().await?;
    // What a run that stopped part-way leaves: some objects, some documents, one stale.
    target.blob().put("groups/g/snapshots/abc.tar.gz", Bytes::from_static(b"snapshot-abc")).await?;
    for i in 0..10 {
        let doc = source.store().get("deployer_jobs", &format!("job-{i:02}")).await?.unwrap().doc;
        target.store().put("deployer_jobs", &format!("job-{i:02}"), &doc).await?;
    }
    target
        .store()
        .put("auth_users", "u1", &json!({"email": "a@example.com", "role": "member"}))
        .await?;

    let report =
        migrate(&source, &target, &sealer(), &Options { concurrency: 3, dry_run: false }, &quiet)
            .await?;
    assert_eq!((report.blobs.written, report.blobs.unchanged), (2, 1));
    let jobs = &report.collections.iter().find(|(n, _)| n == "deployer_jobs").unwrap().1;
    assert_eq!((jobs.written, jobs.unchanged), (20, 10));
    let users = &report.collections.iter().find(|(n, _)| n == "auth_users").unwrap().1;
    assert_eq!((users.written, users.unchanged), (2, 0), "the stale copy is replaced");
    same_documents(source.store().as_ref(), target.store().as_ref()).await?;
    same_blobs(source.blob().as_ref(), target.blob().as_ref()).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_with_its_own_conflicting_data_is_named() -> anyhow::Result<()> {
    let (_dir, source, target) = seeded_with_embedded_target().await?;
    // A cloud stack started on the target first: auth created its own admin.
    target
        .store()
        .ensure_collection(&CollectionSpec::new("auth_users").unique("email", ["email"]))
        .await?;
    target.store().insert("auth_users", "bootstrap", &json!({"email": "a@example.com"})).await?;
    let err = migrate(&source, &target, &sealer(), &Options::default(), &quiet).await.unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("auth_users/u1") && message.contains("Migrate into an empty database"),
        "{message}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_source_must_be_a_data_dir_that_nothing_else_has_open() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let err = Source::open(&dir.path().join("nowhere")).await.err().unwrap();
    assert!(matches!(err, MigrateError::NotADataDir { .. }), "{err}");
    assert!(!dir.path().join("nowhere").exists(), "nothing is created where no data dir was");

    let data = dir.path().join("up");
    seed(&data).await?;
    // `ramen up` holds the store open while it runs.
    let running = EmbeddedStore::open(data.join("store")).await?;
    let err = Source::open(&data).await.err().unwrap();
    assert!(matches!(err, MigrateError::SourceInUse { .. }), "{err}");
    assert!(err.to_string().contains("stop `ramen up`"), "{err}");
    drop(running);
    Source::open(&data).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_target_in_the_source_data_dir_is_refused() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("up");
    seed(&data).await?;
    let source = Source::open(&data).await?;
    let figment = Config::figment(None)
        .merge(("data_dir", data.display().to_string()))
        .merge(("mongo.uri", ""))
        .merge(("s3.bucket", ""));
    let config = Config::from_figment(figment)?;
    let err = Target::open(&config, &source).await.err().unwrap();
    assert!(matches!(err, MigrateError::TargetIsSource { .. }), "{err}");
    assert!(err.to_string().contains("RAMEN_MONGO_URI"), "{err}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blobs_go_to_s3() -> anyhow::Result<()> {
    let moto = ramen_testkit::Moto::start().await?;
    let mut settings = S3Settings::new("ramen-migrated", "us-east-1");
    settings.endpoint = Some(moto.endpoint());
    settings.force_path_style = true;
    settings.credentials = Some(StaticCredentials {
        access_key_id: "testing".into(),
        secret_access_key: Secret::new("testing"),
        session_token: None,
    });
    let s3 = S3Store::connect(settings).await?;
    s3.ensure_bucket().await?;
    let (_dir, data, out) = seeded().await?;
    let source = Source::open(&data).await?;
    let target =
        Target::new(Arc::new(EmbeddedStore::open(out.join("store")).await?), Arc::new(s3), "S3");
    let report = migrate(&source, &target, &sealer(), &Options::default(), &quiet).await?;
    assert_eq!(report.blobs.written, 3);
    assert_eq!(same_blobs(source.blob().as_ref(), target.blob().as_ref()).await?, 3);
    let again = migrate(&source, &target, &sealer(), &Options::default(), &quiet).await?;
    assert_eq!((again.blobs.written, again.blobs.unchanged), (0, 3));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_go_to_mongodb_when_one_is_given() -> anyhow::Result<()> {
    let uri = std::env::var("RAMEN_TEST_MONGO_URI").unwrap_or_default();
    if uri.trim().is_empty() {
        eprintln!(
            "documents_go_to_mongodb_when_one_is_given: SKIPPED (RAMEN_TEST_MONGO_URI is not set; \
             MongoDB cannot be installed on this machine)"
        );
        return Ok(());
    }
    let db = format!("ramen_migrate_{}", std::process::id());
    let mongo = ramen_store::open(&StoreConfig::Mongo { uri, db }).await?;
    let (_dir, data, out) = seeded().await?;
    let source = Source::open(&data).await?;
    let target =
        Target::new(mongo.clone(), Arc::new(LocalDirStore::open(out.join("blobs"))?), "MongoDB");
    let report = migrate(&source, &target, &sealer(), &Options::default(), &quiet).await?;
    assert_eq!(report.documents().written, 36);
    assert_eq!(same_documents(source.store().as_ref(), mongo.as_ref()).await?, 36);
    let again = migrate(&source, &target, &sealer(), &Options::default(), &quiet).await?;
    assert_eq!(again.documents().written, 0);
    for coll in mongo.collections().await? {
        mongo.delete_many(&coll, &Default::default()).await?;
    }
    Ok(())
}

fn base64_of(key: &[u8; 32]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(key)
}
