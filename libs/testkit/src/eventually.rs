use std::future::Future;
use std::time::Duration;

/// Multiplier for every deadline in the test suite, from `RAMEN_TEST_PATIENCE` (default 1).
/// Raise it on a slow machine instead of editing deadlines.
pub fn patience() -> f64 {
    std::env::var("RAMEN_TEST_PATIENCE").ok().and_then(|v| v.parse().ok()).unwrap_or(1.0)
}

/// Polls `check` until it returns `Ok`, or fails with the last error once `deadline` (scaled
/// by [`patience`]) has passed. Use instead of sleeping for "some time".
pub async fn eventually<T, E, F, Fut>(what: &str, deadline: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Debug,
{
    let deadline = deadline.mul_f64(patience());
    let started = tokio::time::Instant::now();
    let mut wait = Duration::from_millis(10);
    loop {
        match check().await {
            Ok(value) => return value,
            Err(err) if started.elapsed() >= deadline => {
                panic!("eventually: {what} did not hold within {deadline:?}; last error: {err:?}")
            }
            Err(_) => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_millis(250));
            }
        }
    }
}
