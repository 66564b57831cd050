//! The bus conformance suite against a real `nats-server` (started by `ramen-testkit`).
//! Suite functions take a `&Bus` so they run unchanged against any server; each test starts
//! its own server, so tests run in parallel. Fault tests that kill the server, and the
//! supervisor tests, start theirs explicitly.

#[path = "conformance/dlq.rs"]
mod dlq;
#[path = "conformance/faults.rs"]
mod faults;
#[path = "conformance/kv.rs"]
mod kv;
#[path = "conformance/support.rs"]
mod support;
#[path = "conformance/work.rs"]
mod work;

/// One `#[tokio::test]` per suite function, each on a fresh server.
macro_rules! against_nats {
    ($($module:ident :: $name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() -> anyhow::Result<()> {
            let env = support::Env::start().await?;
            $module::$name(&env.bus).await
        }
    )*};
}

against_nats!(
    work::round_trip_with_typed_headers,
    work::redelivery_after_ack_wait,
    work::nak_with_delay,
    work::in_progress_extends_ack_wait,
    work::term_stops_redelivery,
    work::dedupe_of_republished_msg_id,
    work::core_publish_subscribe,
    work::backlog_counts_pending_and_unacked,
    dlq::handler_dead_letters_on_last_attempt,
    dlq::advisory_dead_letters_unsettled_last_delivery,
    dlq::undecodable_message_is_parked,
    dlq::list_replay_discard,
    kv::create_conflict,
    kv::stale_revision_update_rejected,
    kv::delete_with_revision,
    kv::watch_sees_changes,
    kv::lease_acquire_held_refresh_release,
    kv::lease_expires_without_refresh,
);
