//! The shared-state conformance suite: every case is written once and run against Redis (a
//! real `redis-server`), memory, and the degrading wrapper over Redis. Fault cases (pause,
//! kill, restart) follow, against Redis only.

#[path = "conformance/cases.rs"]
mod cases;
#[path = "conformance/faults.rs"]
mod faults;

use std::sync::Arc;

use ramen_state::{Degrading, MemoryState, RedisSettings, RedisState, SharedState};
use ramen_testkit::Redis;

/// Keeps the server alive for as long as the state is used.
struct Fixture {
    state: Arc<dyn SharedState>,
    _redis: Option<Redis>,
}

async fn redis_fixture() -> anyhow::Result<Fixture> {
    let redis = Redis::start().await?;
    let state = Arc::new(RedisState::connect(RedisSettings::url(redis.url())).await?);
    Ok(Fixture { state, _redis: Some(redis) })
}

async fn memory_fixture() -> anyhow::Result<Fixture> {
    Ok(Fixture { state: Arc::new(MemoryState::new()), _redis: None })
}

async fn degrading_fixture() -> anyhow::Result<Fixture> {
    let redis = Redis::start().await?;
    let primary = Arc::new(RedisState::connect(RedisSettings::url(redis.url())).await?);
    Ok(Fixture { state: Arc::new(Degrading::new(primary)), _redis: Some(redis) })
}

/// Generates `<adapter>::<case>` for each adapter and case.
macro_rules! conformance {
    ($($adapter:ident => $fixture:ident),* ; $cases:tt) => {
        $( conformance!(@adapter $adapter $fixture $cases); )*
    };
    (@adapter $adapter:ident $fixture:ident [$($case:ident),* $(,)?]) => {
        mod $adapter {
            $(
                // Several threads, so concurrent cases (20 takers) really race.
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() -> anyhow::Result<()> {
                    let fixture = super::$fixture().await?;
                    super::cases::$case(fixture.state.clone()).await
                }
            )*
        }
    };
}

conformance!(
    redis => redis_fixture, memory => memory_fixture, degrading => degrading_fixture;
    [
        bucket_allows_capacity_then_refuses,
        bucket_refills_over_time,
        cost_is_taken_whole,
        separate_keys_are_independent,
        values_round_trip_and_overwrite,
        values_expire_after_ttl,
        set_if_absent_only_once,
        take_is_one_time,
        invalid_arguments_are_refused,
        ping_answers,
    ]
);
