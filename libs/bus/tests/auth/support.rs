use std::time::Duration;

use ramen_bus::Bus;
use ramen_testkit::eventually;

/// Publishes `subject` as core NATS (no reply awaited) and waits until the server's refusal
/// reaches the connection.
pub async fn refused_publish(bus: &Bus, subject: &str) {
    bus.client().publish(subject.to_owned(), "{}".into()).await.expect("queued");
    bus.client().flush().await.expect("flushed");
    assert_refused(bus, "publish", subject).await;
}

/// Waits until the server reported refusing `action` (`publish` / `subscription`) on `subject`.
pub async fn assert_refused(bus: &Bus, action: &str, subject: &str) {
    let wanted =
        format!("permissions violation for {action} to \"{subject}\"").to_ascii_lowercase();
    eventually(
        &format!("the server refuses {action} to {subject}"),
        Duration::from_secs(10),
        || {
            let denials = bus.permission_denials();
            let found = denials.iter().any(|d| d.to_ascii_lowercase().contains(&wanted));
            async move { if found { Ok(()) } else { Err(format!("refusals so far: {denials:?}")) } }
        },
    )
    .await;
}
