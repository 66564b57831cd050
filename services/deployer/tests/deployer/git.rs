//! Repo sync: a private repo over a token-protected smart-HTTP server, with the token nowhere
//! it must not be; bad URLs and refs refused with errors that name the problem.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use ramen_proto::common::v1::JobState;
use ramen_proto::deployer::v1 as pb;
use ramen_store::Query;

use crate::gitserver::GitServer;
use crate::repo::Repo;
use crate::setup::{deploy, group_env, start, succeeded};
use crate::support::{MINUTE, World, as_actor, client, job_when, summary, terminal};

const TOKEN: &str = "ghp_ramenTestToken0123456789abcdefXYZ";
const WRONG: &str = "ghp_ramenWrongToken9876543210zyxwvuABC";

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every command line on the machine, sampled until dropped: a token in argv would show.
struct ArgvWatch {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<String>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ArgvWatch {
    fn start(needles: &[&str]) -> ArgvWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (s, found) = (stop.clone(), seen.clone());
        let needles: Vec<String> = needles.iter().map(|n| (*n).to_owned()).collect();
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                    let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
                    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                    if needles.iter().any(|n| cmdline.contains(n.as_str())) {
                        found.lock().push(cmdline);
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        ArgvWatch { stop, seen, thread: Some(thread) }
    }

    fn finish(mut self) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap();
        self.seen.lock().clone()
    }
}

#[tokio::test]
async fn a_private_repo_syncs_over_the_token_path_and_the_token_leaks_nowhere() {
    let logs = Captured::default();
    let writer = logs.clone();
    let _ = tracing_subscriber::fmt()
        .with_env_filter("info,ramen_deployer=trace,ramen_zone_manager=debug,ramen_auth=debug")
        .with_writer(move || writer.clone())
        .try_init();
    let argv = ArgvWatch::start(&[TOKEN, WRONG]);

    let world = World::start().await;
    let node = world.deployer().await;
    let client = client(&node).await;
    let repo = Repo::hello();
    let server = GitServer::start(repo.path(), "private", TOKEN).await;
    group_env(&world, &client, "team", &server.url, &["local-a"]).await;

    // A wrong token: refused by the server, and the error does not carry it.
    world.secret("team", "GITHUB_TOKEN", WRONG).await;
    let refused = deploy(&world, &client, "team", "main").await;
    assert_eq!(refused.state(), JobState::Failed, "{:?}", summary(&refused));
    assert!(refused.error.contains("git fetch failed"), "{}", refused.error);

    world.secret("team", "GITHUB_TOKEN", TOKEN).await;
    let job = deploy(&world, &client, "team", "main").await;
    assert!(succeeded(&job), "{} {:?}", job.error, summary(&job));
    assert_eq!(job.commit, repo.head());

    let seen = argv.finish();
    assert!(seen.is_empty(), "a token showed in a process's argv: {seen:?}");
    for token in [TOKEN, WRONG] {
        for job in [&refused, &job] {
            assert!(!format!("{job:?}").contains(token), "token in a job (error or log)");
        }
        let logs = String::from_utf8_lossy(&logs.0.lock()).into_owned();
        assert!(!logs.contains(token), "token in the process log");
        for collection in world.base.store.collections().await.unwrap() {
            for doc in world.base.store.find(&collection, &Query::new()).await.unwrap() {
                assert!(
                    !doc.doc.to_string().contains(token),
                    "token stored in {collection}/{}",
                    doc.id
                );
            }
        }
        for file in files_under(world.dir.path()) {
            let bytes = std::fs::read(&file).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(token),
                "token written to {}",
                file.display()
            );
        }
    }
    let group = client
        .clone()
        .get_group(as_actor(&world.admin, pb::GetGroupRequest { name: "team".into() }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(group.repo_url, server.url, "stored URL carries no credential");
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() && !path.ends_with("venv") => out.extend(files_under(&path)),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn bad_urls_and_refs_are_refused_with_clear_errors() {
    let world = World::start().await;
    let node = world.deployer().await;
    let client = client(&node).await;
    let cases = [
        ("--upload-pack=touch /tmp/pwned", "must not start with `-`"),
        ("ext::sh -c touch% /tmp/pwned", "must not contain spaces"),
        ("https://user:ghp_secret@github.com/acme/tools", "must not carry credentials"),
        ("https://github.com/acme/../../etc/passwd", "`..`"),
        ("ftp://example.com/repo.git", "use https://"),
        ("http://example.com/repo.git", "loopback"),
    ];
    for (url, needle) in cases {
        let request = pb::CreateGroupRequest {
            name: "team".into(),
            repo_url: url.into(),
            ..Default::default()
        };
        let err = client.clone().create_group(as_actor(&world.admin, request)).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{url}");
        assert!(
            err.message().contains("repo_url") && err.message().contains(needle),
            "{url}: {}",
            err.message()
        );
        assert!(!err.message().contains("ghp_secret"), "{}", err.message());
    }
    let repo = Repo::hello();
    group_env(&world, &client, "team", &repo.url(), &["local-a"]).await;
    for bad in ["--output=/tmp/x", "main..evil", "HEAD@{1}", "a b"] {
        let request = pb::StartDeployRequest {
            group: "team".into(),
            environment: "prod".into(),
            git_ref: bad.into(),
            idempotency_key: String::new(),
        };
        let err = client.clone().start_deploy(as_actor(&world.admin, request)).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{bad}");
        assert!(err.message().contains("git ref"), "{bad}: {}", err.message());
    }
    let env = pb::CreateEnvironmentRequest {
        group: "team".into(),
        name: "dev".into(),
        git_ref: "-x".into(),
        zones: vec!["local-a".into()],
        ..Default::default()
    };
    let err = client.clone().create_environment(as_actor(&world.admin, env)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    let env = pb::CreateEnvironmentRequest {
        group: "team".into(),
        name: "dev".into(),
        zones: vec!["nowhere".into()],
        ..Default::default()
    };
    let err = client.clone().create_environment(as_actor(&world.admin, env)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound, "{}", err.message());
    assert!(err.message().contains("zone `nowhere`"), "{}", err.message());

    // A well-formed ref the repo does not have fails the job, before any worker is touched.
    let id = start(&world, &client, "team", "no-such-branch").await;
    let job = job_when(&client, &world.admin, &id, "the job ends", MINUTE, terminal).await;
    assert_eq!(job.state(), JobState::Failed);
    assert!(
        job.error.contains("\"no-such-branch\" is not a branch, tag or commit"),
        "{}",
        job.error
    );
    assert!(
        world.workers("team", "local-a", ramen_proto::common::v1::Track::Worker).await.is_empty()
    );
}

/// An RSA key pair from the `openssl` CLI: (private PEM, public PEM).
fn rsa_pair() -> (String, String) {
    let private = std::process::Command::new("openssl")
        .args(["genrsa", "2048"])
        .output()
        .expect("openssl runs");
    assert!(private.status.success());
    let mut public = std::process::Command::new("openssl")
        .args(["rsa", "-pubout"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    public.stdin.take().unwrap().write_all(&private.stdout).unwrap();
    let public = public.wait_with_output().unwrap();
    (String::from_utf8(private.stdout).unwrap(), String::from_utf8(public.stdout).unwrap())
}

/// GitHub's installation-token endpoint: checks the App JWT, answers a token.
async fn fake_github(public_pem: String, app_id: i64, installation: i64, token: &str) -> String {
    use axum::http::{HeaderMap, StatusCode};
    let token = token.to_owned();
    let route = move |axum::extract::Path(id): axum::extract::Path<i64>, headers: HeaderMap| {
        let (public_pem, token) = (public_pem.clone(), token.clone());
        async move {
            let bearer = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            let key = jsonwebtoken::DecodingKey::from_rsa_pem(public_pem.as_bytes()).unwrap();
            let validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
            let claims = jsonwebtoken::decode::<serde_json::Value>(bearer, &key, &validation);
            match claims {
                Ok(data) if data.claims["iss"] == app_id && id == installation => (
                    StatusCode::CREATED,
                    axum::Json(
                        serde_json::json!({"token": token, "expires_at": "2099-01-01T00:00:00Z"}),
                    ),
                ),
                _ => (
                    StatusCode::UNAUTHORIZED,
                    axum::Json(serde_json::json!({"message": "bad credentials"})),
                ),
            }
        }
    };
    let app = axum::Router::new()
        .route("/app/installations/{id}/access_tokens", axum::routing::post(route));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

#[tokio::test]
async fn a_github_app_installation_token_clones_a_private_repo() {
    const INSTALLATION_TOKEN: &str = "ghs_ramenInstallationToken0123456789";
    let (private_pem, public_pem) = rsa_pair();
    let world = World::start().await;
    let config = world.deployer_config();
    let mut settings = crate::support::fast(&config);
    settings.github_api_url = fake_github(public_pem, 4242, 77, INSTALLATION_TOKEN).await;
    let node = world.deployer_with(config, settings).await;
    let client = client(&node).await;
    let repo = Repo::hello();
    let server = GitServer::start(repo.path(), "app-private", INSTALLATION_TOKEN).await;
    world.zone("local-a").await;
    let create = pb::CreateGroupRequest {
        name: "team".into(),
        repo_url: server.url.clone(),
        github_app_installation_id: 77,
        ..Default::default()
    };
    client.clone().create_group(as_actor(&world.admin, create)).await.unwrap();
    let env = pb::CreateEnvironmentRequest {
        group: "team".into(),
        name: "prod".into(),
        zones: vec!["local-a".into()],
        ..Default::default()
    };
    client.clone().create_environment(as_actor(&world.admin, env)).await.unwrap();

    // No App configured yet: the job says so.
    let job = deploy(&world, &client, "team", "main").await;
    assert_eq!(job.state(), JobState::Failed);
    assert!(job.error.contains("no App"), "{}", job.error);

    let update = pb::UpdateSettingsRequest {
        github_app_id: Some(4242),
        github_app_private_key: Some(private_pem),
        ..Default::default()
    };
    client.clone().update_settings(as_actor(&world.admin, update)).await.unwrap();
    let job = deploy(&world, &client, "team", "main").await;
    assert!(succeeded(&job), "{} {:?}", job.error, summary(&job));
    for collection in world.base.store.collections().await.unwrap() {
        for doc in world.base.store.find(&collection, &Query::new()).await.unwrap() {
            assert!(
                !doc.doc.to_string().contains(INSTALLATION_TOKEN),
                "token stored in {collection}/{}",
                doc.id
            );
        }
    }
}
