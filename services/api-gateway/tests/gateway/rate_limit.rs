//! Login / refresh rate limits: tripping and recovering, shared by two gateway processes
//! through a real `redis-server`, per process without it, and bounded through a Redis outage.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use ramen_api_gateway::RateLimits;
use ramen_state::BucketSpec;
use ramen_testkit::{Redis, eventually, free_port};
use reqwest::Method;

use crate::support::{Answer, JWT_SECRET, PASSWORD, Stack};

const GATEWAY: &str = env!("CARGO_BIN_EXE_ramen-api-gateway");

#[tokio::test]
async fn a_login_limit_trips_then_recovers() {
    let limits =
        RateLimits { per_source_account: BucketSpec::new(3, 0.25), ..RateLimits::default() };
    let stack = Stack::start_with(limits, None).await;
    stack.user("ana@example.com", false).await;
    for attempt in 0..3 {
        assert_eq!(
            stack.login("ana@example.com", "wrong password!").await.status,
            401,
            "attempt {attempt}"
        );
    }
    // A slow machine may refill a token between attempts; the bucket still runs dry quickly.
    let mut limited = stack.login("ana@example.com", PASSWORD).await;
    for _ in 0..3 {
        if limited.status == 429 {
            break;
        }
        limited = stack.login("ana@example.com", "wrong password!").await;
    }
    assert_eq!(
        (limited.status.as_u16(), limited.code()),
        (429, "rate_limited"),
        "{}",
        limited.body
    );
    assert!(limited.headers.contains_key("retry-after"));
    assert!(limited.body["error"]["details"]["retry_after_ms"].as_u64().unwrap() > 0);
    // Another account is not affected.
    stack.user("bo@example.com", false).await;
    assert_eq!(stack.login("bo@example.com", PASSWORD).await.status, 200);
    eventually("the bucket refills (one token per 4 s)", Duration::from_secs(15), || async {
        let answer = stack.login("ana@example.com", PASSWORD).await;
        if answer.status == 200 { Ok(()) } else { Err(answer.status) }
    })
    .await;
}

/// A login from `client` (the proxy on loopback names it in `X-Forwarded-For`).
async fn login_from(stack: &Stack, client: &str, email: &str, password: &str) -> Answer {
    let body = serde_json::json!({ "email": email, "password": password });
    let request = stack.http.post(stack.url("/api/auth/login")).header("x-forwarded-for", client);
    stack.send(request.json(&body)).await
}

#[tokio::test]
async fn an_attacker_is_slowed_without_locking_the_owner_out() {
    let limits = RateLimits {
        per_source_account: BucketSpec::new(3, 0.001),
        login_per_address: BucketSpec::new(5, 0.001),
        ..RateLimits::default()
    };
    let stack = Stack::start_proxied(limits).await;
    stack.user("root@example.com", true).await;
    let (attacker, owner) = ("198.51.100.7", "203.0.113.9");
    for attempt in 0..3 {
        let answer = login_from(&stack, attacker, "root@example.com", "a guessed password").await;
        assert_eq!(answer.status, 401, "attempt {attempt}: {}", answer.body);
    }
    let refused = login_from(&stack, attacker, "root@example.com", "a guessed password").await;
    assert_eq!(
        (refused.status.as_u16(), refused.code()),
        (429, "rate_limited"),
        "{}",
        refused.body
    );
    let retry: u64 = refused.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry > 0, "Retry-After: {retry}");
    // Even the right password waits: the attacker's address learns nothing more.
    let right = login_from(&stack, attacker, "root@example.com", PASSWORD).await;
    assert_eq!(right.status, 429);

    // The owner, from elsewhere, is not locked out (a super admin included).
    let own = login_from(&stack, owner, "root@example.com", PASSWORD).await;
    assert_eq!(own.status, 200, "the owner signs in from another address: {}", own.body);

    // Guessing across accounts from one address spends that address's own budget (3 attempts
    // so far; refusals cost nothing): two more accounts, then everything from it waits.
    for email in ["someone@example.com", "third@example.com"] {
        let answer = login_from(&stack, attacker, email, "a guessed password").await;
        assert_eq!(answer.status, 401, "{email}: {}", answer.body);
    }
    let spent = login_from(&stack, attacker, "fourth@example.com", "a guessed password").await;
    assert_eq!((spent.status.as_u16(), spent.code()), (429, "rate_limited"), "{}", spent.body);
    assert!(spent.headers.contains_key("retry-after"));
    // An IPv6 attacker does not get a fresh budget per address of its /64.
    for (i, v6) in ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2::3"].iter().enumerate() {
        let email = format!("v6-{i}@example.com");
        let answer = login_from(&stack, v6, &email, "a guessed password").await;
        assert_eq!(answer.status, 401, "{v6}: {}", answer.body);
    }
    for v6 in ["2001:db8:1:2::4", "2001:db8:1:2:ffff::9"] {
        let answer = login_from(&stack, v6, "root@example.com", "a guessed password").await;
        assert_eq!(answer.status, 401, "{v6}");
    }
    let v6 = login_from(&stack, "2001:db8:1:2::5", "v6-9@example.com", "a guessed password").await;
    assert_eq!(v6.status, 429, "one budget per /64: {}", v6.body);
    assert_eq!(login_from(&stack, owner, "root@example.com", PASSWORD).await.status, 200);
}

#[tokio::test]
async fn a_redis_outage_degrades_without_hanging_requests() {
    let redis = Redis::start().await.unwrap();
    let stack = Stack::start_with(RateLimits::default(), Some(&redis.url())).await;
    stack.user("ana@example.com", false).await;
    assert_eq!(stack.login("ana@example.com", PASSWORD).await.status, 200);
    redis.pause().unwrap();
    for attempt in 0..4 {
        let started = Instant::now();
        let answer = stack.login("ana@example.com", PASSWORD).await;
        let took = started.elapsed();
        assert_eq!(answer.status, 200, "attempt {attempt} during the outage: {}", answer.body);
        assert!(
            took < Duration::from_secs(2).mul_f64(ramen_testkit::patience()),
            "attempt {attempt} took {took:?}: a stalled Redis must not hold requests"
        );
    }
    redis.resume().unwrap();
    assert_eq!(stack.login("ana@example.com", PASSWORD).await.status, 200);
}

/// One `ramen-api-gateway` process in front of the stack's auth service.
struct Process {
    child: Child,
    api: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn gateway_process(stack: &Stack, redis_url: Option<&str>) -> Process {
    let dir = tempfile::tempdir().unwrap();
    let api = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut command = Command::new(GATEWAY);
    for (key, _) in std::env::vars() {
        if key.starts_with("RAMEN_") && !key.starts_with("RAMEN_TEST_") {
            command.env_remove(key);
        }
    }
    command
        .env("RAMEN_NATS_URL", stack.nats.url())
        .env("RAMEN_DATA_DIR", dir.path())
        .env("RAMEN_LISTEN__API", api.to_string())
        .env("RAMEN_LISTEN__ADMIN", format!("127.0.0.1:{}", free_port()))
        .env("RAMEN_ENDPOINTS__AUTH", format!("http://{}", stack.auth_addr))
        .env("RAMEN_JWT_SECRET", JWT_SECRET)
        .env("RAMEN_SECRETS_KEY", base64::engine::general_purpose::STANDARD.encode([5u8; 32]))
        .env("RAMEN_LOG_LEVEL", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(url) = redis_url {
        command.env("RAMEN_REDIS_URL", url);
    }
    let process =
        Process { child: command.spawn().expect("ramen-api-gateway starts"), api, _dir: dir };
    let client = stack.http.clone();
    eventually("the gateway process answers", Duration::from_secs(30), || {
        let client = client.clone();
        async move { client.get(format!("http://{api}/api/info")).send().await.map(|_| ()) }
    })
    .await;
    process
}

/// Alternates wrong-password logins for one account between the processes; the statuses.
async fn alternate(stack: &Stack, processes: &[&Process], attempts: usize) -> Vec<u16> {
    let mut statuses = Vec::new();
    for i in 0..attempts {
        let api = processes[i % processes.len()].api;
        let body =
            serde_json::json!({ "email": "shared@example.com", "password": "not the password" });
        let request =
            stack.http.request(Method::POST, format!("http://{api}/api/auth/login")).json(&body);
        statuses.push(stack.send(request).await.status.as_u16());
    }
    statuses
}

#[tokio::test]
async fn two_gateway_processes_share_buckets_through_redis_and_keep_their_own_without_it() {
    let redis = Redis::start().await.unwrap();
    let stack = Stack::start().await;
    stack.user("shared@example.com", false).await;
    let capacity = RateLimits::default().per_source_account.capacity as usize;

    let (a, b) = (
        gateway_process(&stack, Some(&redis.url())).await,
        gateway_process(&stack, Some(&redis.url())).await,
    );
    let shared = alternate(&stack, &[&a, &b], capacity + 2).await;
    assert!(shared[..capacity].iter().all(|s| *s == 401), "{shared:?}");
    assert_eq!(&shared[capacity..], &[429, 429], "one bucket across both processes: {shared:?}");
    drop((a, b));

    // Without Redis each process limits on its own: twice the attempts before either refuses.
    let (c, d) = (gateway_process(&stack, None).await, gateway_process(&stack, None).await);
    let separate = alternate(&stack, &[&c, &d], capacity + 2).await;
    assert!(separate.iter().all(|s| *s == 401), "memory buckets are per process: {separate:?}");
}
