//! The cases of the conformance suite, each taking any [`SharedState`].

use std::sync::Arc;
use std::time::Duration;

use anyhow::ensure;
use bytes::Bytes;
use ramen_state::{BucketSpec, SharedState, StateError};
use ramen_testkit::eventually;

type State = Arc<dyn SharedState>;

fn b(s: &'static str) -> Bytes {
    Bytes::from_static(s.as_bytes())
}

pub async fn bucket_allows_capacity_then_refuses(state: State) -> anyhow::Result<()> {
    // Slow refill, so the calls below cannot earn a token back while they run.
    let spec = BucketSpec::new(5, 0.5);
    for expected_left in (0..5).rev() {
        let decision = state.take_tokens("rl:client-a", spec, 1).await?;
        ensure!(decision.allowed, "call {} of 5 refused: {decision:?}", 5 - expected_left);
        ensure!(decision.remaining == expected_left, "{decision:?}");
        ensure!(decision.retry_after.is_zero());
    }
    let refused = state.take_tokens("rl:client-a", spec, 1).await?;
    ensure!(!refused.allowed && refused.remaining == 0, "{refused:?}");
    // One token at 0.5/s is at most 2 s away, and well over 0.5 s since little time passed.
    let wait = refused.retry_after;
    ensure!(wait > Duration::from_millis(500) && wait <= Duration::from_secs(2), "{wait:?}");
    Ok(())
}

pub async fn bucket_refills_over_time(state: State) -> anyhow::Result<()> {
    let spec = BucketSpec::new(2, 10.0);
    state.take_tokens("rl:refill", spec, 2).await?;
    let refused = state.take_tokens("rl:refill", spec, 2).await?;
    ensure!(!refused.allowed, "{refused:?}");
    ensure!(refused.retry_after <= Duration::from_millis(200), "{refused:?}");
    eventually("the bucket refills", Duration::from_secs(3), || async {
        let decision = state.take_tokens("rl:refill", spec, 2).await.map_err(|e| e.to_string())?;
        if decision.allowed { Ok(()) } else { Err(format!("{decision:?}")) }
    })
    .await;
    Ok(())
}

pub async fn cost_is_taken_whole(state: State) -> anyhow::Result<()> {
    let spec = BucketSpec::new(5, 0.01);
    let first = state.take_tokens("rl:cost", spec, 3).await?;
    ensure!(first.allowed && first.remaining == 2, "{first:?}");
    let second = state.take_tokens("rl:cost", spec, 3).await?;
    ensure!(!second.allowed && second.remaining == 2, "a refused call takes nothing: {second:?}");
    let look = state.take_tokens("rl:cost", spec, 0).await?;
    ensure!(look.allowed && look.remaining == 2, "cost 0 only looks: {look:?}");
    let too_big = state.take_tokens("rl:cost", spec, 6).await;
    ensure!(matches!(too_big, Err(StateError::InvalidArgument(_))), "{too_big:?}");
    Ok(())
}

pub async fn separate_keys_are_independent(state: State) -> anyhow::Result<()> {
    let spec = BucketSpec::new(1, 0.01);
    ensure!(state.take_tokens("rl:one", spec, 1).await?.allowed);
    ensure!(!state.take_tokens("rl:one", spec, 1).await?.allowed);
    ensure!(state.take_tokens("rl:two", spec, 1).await?.allowed, "another key has its own");
    // A value under the same name lives in another namespace.
    state.set("rl:one", b("value"), Duration::from_secs(10)).await?;
    ensure!(!state.take_tokens("rl:one", spec, 1).await?.allowed);
    ensure!(state.get("rl:one").await?.as_deref() == Some(&b"value"[..]));
    Ok(())
}

pub async fn values_round_trip_and_overwrite(state: State) -> anyhow::Result<()> {
    ensure!(state.get("oauth:missing").await?.is_none());
    state.set("oauth:s1", b("first"), Duration::from_secs(30)).await?;
    state.set("oauth:s1", b("second"), Duration::from_secs(30)).await?;
    ensure!(state.get("oauth:s1").await?.as_deref() == Some(&b"second"[..]));
    let binary = Bytes::from((0..=255u8).collect::<Vec<_>>());
    state.set("bin", binary.clone(), Duration::from_secs(30)).await?;
    ensure!(state.get("bin").await? == Some(binary), "binary value changed");
    state.delete("oauth:s1").await?;
    state.delete("oauth:s1").await?;
    ensure!(state.get("oauth:s1").await?.is_none());
    Ok(())
}

pub async fn values_expire_after_ttl(state: State) -> anyhow::Result<()> {
    state.set("csrf:t", b("x"), Duration::from_millis(300)).await?;
    ensure!(state.get("csrf:t").await?.is_some(), "readable before its ttl");
    eventually("the value expires", Duration::from_secs(3), || async {
        match state.get("csrf:t").await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    ensure!(state.set_if_absent("csrf:t", b("y"), Duration::from_secs(5)).await?);
    Ok(())
}

pub async fn set_if_absent_only_once(state: State) -> anyhow::Result<()> {
    let ttl = Duration::from_secs(30);
    ensure!(state.set_if_absent("once", b("first"), ttl).await?);
    ensure!(!state.set_if_absent("once", b("second"), ttl).await?);
    ensure!(state.get("once").await?.as_deref() == Some(&b"first"[..]));
    state.delete("once").await?;
    ensure!(state.set_if_absent("once", b("third"), ttl).await?);
    Ok(())
}

/// 20 concurrent takers of one token: exactly one gets it.
pub async fn take_is_one_time(state: State) -> anyhow::Result<()> {
    state.set("token:1", b("secret"), Duration::from_secs(30)).await?;
    let takers = (0..20).map(|_| {
        let state = state.clone();
        tokio::spawn(async move { state.take("token:1").await })
    });
    let mut winners = 0;
    for taker in futures::future::join_all(takers).await {
        if let Some(value) = taker?? {
            ensure!(value == b("secret"));
            winners += 1;
        }
    }
    ensure!(winners == 1, "{winners} takers got the one-time token");
    ensure!(state.get("token:1").await?.is_none());
    ensure!(state.take("token:1").await?.is_none());
    Ok(())
}

pub async fn invalid_arguments_are_refused(state: State) -> anyhow::Result<()> {
    let invalid = |r: Result<(), StateError>| matches!(r, Err(StateError::InvalidArgument(_)));
    ensure!(invalid(state.set("", b("x"), Duration::from_secs(1)).await));
    ensure!(invalid(state.set("k", b("x"), Duration::ZERO).await));
    ensure!(invalid(state.get(&"k".repeat(1025)).await.map(drop)));
    let spec = BucketSpec::new(0, 1.0);
    ensure!(invalid(state.take_tokens("rl:x", spec, 0).await.map(drop)));
    ensure!(invalid(state.take_tokens("rl:x", BucketSpec::new(1, -1.0), 1).await.map(drop)));
    ensure!(!state.is_degraded(), "a bad call is not an outage");
    Ok(())
}

pub async fn ping_answers(state: State) -> anyhow::Result<()> {
    state.ping().await?;
    Ok(())
}
