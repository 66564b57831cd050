//! Redis-only cases: replicas sharing state, and outages (pause, kill, restart).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use ramen_config::{RedisConfig, Secret};
use ramen_state::{BucketSpec, Degrading, RedisSettings, RedisState, SharedState, StateError};
use ramen_testkit::{Redis, eventually, free_port};

/// How long a call may take during an outage: a bound, not a benchmark (the configured
/// timeout is 250 ms).
const OUTAGE_BOUND: Duration = Duration::from_secs(2);

async fn connect(redis: &Redis) -> anyhow::Result<RedisState> {
    Ok(RedisState::connect(RedisSettings::url(redis.url())).await?)
}

/// Runs `call`, asserting it returns within [`OUTAGE_BOUND`].
async fn bounded<T>(what: &str, call: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .unwrap_or_else(|_| panic!("{what} hung"));
    assert!(started.elapsed() < OUTAGE_BOUND, "{what} took {:?}", started.elapsed());
    out
}

fn assert_unavailable<T: std::fmt::Debug>(what: &str, result: Result<T, StateError>) {
    match result {
        Err(e @ StateError::Unavailable { .. }) => assert!(e.is_retryable()),
        other => panic!("{what}: expected Unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn two_gateway_replicas_share_one_bucket() -> anyhow::Result<()> {
    let redis = Redis::start().await?;
    let (replica_a, replica_b) = (connect(&redis).await?, connect(&redis).await?);
    let spec = BucketSpec::new(4, 0.01);
    for replica in [&replica_a, &replica_b, &replica_a, &replica_b] {
        assert!(replica.take_tokens("rl:shared", spec, 1).await?.allowed);
    }
    assert!(!replica_a.take_tokens("rl:shared", spec, 1).await?.allowed);
    assert!(!replica_b.take_tokens("rl:shared", spec, 1).await?.allowed);
    // Short-lived keys are shared too: a state set by one replica is taken once by the other.
    replica_a.set("oauth:s", Bytes::from_static(b"v"), Duration::from_secs(30)).await?;
    assert_eq!(replica_b.take("oauth:s").await?.as_deref(), Some(&b"v"[..]));
    assert!(replica_a.take("oauth:s").await?.is_none());
    bounded("close", replica_a.close()).await;
    assert!(replica_b.take_tokens("rl:shared", spec, 0).await?.allowed, "the other one is open");
    Ok(())
}

#[tokio::test]
async fn paused_redis_fails_fast_then_answers_after_resume() -> anyhow::Result<()> {
    let redis = Redis::start().await?;
    let state = connect(&redis).await?;
    state.set("k", Bytes::from_static(b"v"), Duration::from_secs(60)).await?;
    redis.pause()?;
    let spec = BucketSpec::new(1, 1.0);
    assert_unavailable(
        "take_tokens",
        bounded("take_tokens", state.take_tokens("b", spec, 1)).await,
    );
    assert_unavailable("get", bounded("get", state.get("k")).await);
    let ttl = Duration::from_secs(1);
    assert_unavailable("set", bounded("set", state.set("k2", Bytes::new(), ttl)).await);
    // Not `k`: a call that timed out may still run once the server wakes up.
    assert_unavailable("take", bounded("take", state.take("other")).await);
    assert_unavailable("ping", bounded("ping", state.ping()).await);
    redis.resume()?;
    let value = eventually("redis answers after resume", Duration::from_secs(10), || async {
        state.get("k").await
    })
    .await;
    assert_eq!(value.as_deref(), Some(&b"v"[..]), "the value survived the pause");
    Ok(())
}

#[tokio::test]
async fn degrading_serves_from_memory_while_redis_is_paused() -> anyhow::Result<()> {
    let redis = Redis::start().await?;
    let primary = Arc::new(connect(&redis).await?);
    let state =
        Degrading::new(primary).with_intervals(Duration::from_millis(200), Duration::from_secs(30));
    state.set("in-redis", Bytes::from_static(b"r"), Duration::from_secs(60)).await?;
    assert!(!state.is_degraded());

    redis.pause()?;
    let spec = BucketSpec::new(2, 0.01);
    for allowed in [true, true, false] {
        let decision = bounded("take_tokens", state.take_tokens("rl:x", spec, 1)).await?;
        assert_eq!(decision.allowed, allowed, "the per-replica bucket still limits");
    }
    assert!(state.is_degraded());
    let ttl = Duration::from_secs(60);
    assert!(bounded("set_if_absent", state.set_if_absent("m", Bytes::new(), ttl)).await?);
    // Answered from memory, which never saw the value written to Redis.
    assert!(bounded("get", state.get("in-redis")).await?.is_none());

    redis.resume()?;
    eventually("back on redis", Duration::from_secs(10), || async {
        let value = state.get("in-redis").await.map_err(|e| e.to_string())?;
        if value.is_some() && !state.is_degraded() { Ok(()) } else { Err("degraded".to_owned()) }
    })
    .await;
    Ok(())
}

#[tokio::test]
async fn killed_redis_fails_fast_and_client_recovers_after_restart() -> anyhow::Result<()> {
    let mut redis = Redis::start().await?;
    let state = connect(&redis).await?;
    state.set("k", Bytes::from_static(b"1"), Duration::from_secs(60)).await?;
    redis.kill().await;
    assert_unavailable("get", bounded("get", state.get("k")).await);
    assert_unavailable("ping", bounded("ping", state.ping()).await);
    redis.restart().await?;
    eventually("the client reconnects", Duration::from_secs(10), || async {
        state.set("k", Bytes::from_static(b"2"), Duration::from_secs(60)).await
    })
    .await;
    assert_eq!(state.get("k").await?.as_deref(), Some(&b"2"[..]));
    Ok(())
}

#[tokio::test]
async fn sentinel_with_data_and_sentinel_passwords() -> anyhow::Result<()> {
    let master = Redis::start_with_password("data-pw").await?;
    let sentinel = Redis::start_sentinel(&master, "ramen-master", Some("sentinel-pw")).await?;
    let mut settings = RedisSettings::sentinel(vec![sentinel.addr()], "ramen-master");
    settings.password = Some(Secret::new("data-pw"));
    settings.sentinel_password = Some(Secret::new("sentinel-pw"));
    let state = RedisState::connect(settings.clone()).await?;
    state.set("via-sentinel", Bytes::from_static(b"s"), Duration::from_secs(60)).await?;
    // It landed on the master the Sentinel named.
    let direct = connect(&master).await?;
    assert_eq!(direct.get("via-sentinel").await?.as_deref(), Some(&b"s"[..]));

    settings.sentinel_password = Some(Secret::new("wrong"));
    let refused = RedisState::connect(settings).await?;
    assert!(bounded("ping", refused.ping()).await.is_err(), "a wrong Sentinel password fails");
    Ok(())
}

#[tokio::test]
async fn open_chooses_memory_or_degrading_redis() -> anyhow::Result<()> {
    let memory = ramen_state::open(&RedisConfig::default()).await?;
    memory.set("k", Bytes::from_static(b"m"), Duration::from_secs(5)).await?;
    assert_eq!(memory.get("k").await?.as_deref(), Some(&b"m"[..]));

    let redis = Redis::start().await?;
    let config = RedisConfig { url: Secret::new(redis.url()), ..RedisConfig::default() };
    let shared = ramen_state::open(&config).await?;
    shared.set("k", Bytes::from_static(b"r"), Duration::from_secs(5)).await?;
    assert_eq!(connect(&redis).await?.get("k").await?.as_deref(), Some(&b"r"[..]));

    // Nothing listens there: opening still succeeds, and calls degrade instead of failing.
    let dead = format!("redis://127.0.0.1:{}", free_port());
    let config = RedisConfig { url: Secret::new(dead), ..RedisConfig::default() };
    let degraded = ramen_state::open(&config).await?;
    let decision = bounded("take_tokens", degraded.take_tokens("rl", BucketSpec::new(1, 1.0), 1));
    assert!(decision.await?.allowed);
    assert!(degraded.is_degraded());
    Ok(())
}
