//! Upgrading the JetStream store of a server that ran without authentication. nats-server
//! keeps each account's streams under `<store>/jetstream/<account>`: `$G` (the global
//! account) without authentication, the ramen account's public key in operator mode. Before
//! the first start in operator mode the global account's directory becomes the ramen
//! account's, so a `ramen up` data dir from before keeps its jobs, dead letters, events and
//! leases.

use std::path::Path;

use crate::error::{BusError, Result};

const GLOBAL_ACCOUNT: &str = "$G";

/// Moves `$G`'s streams to `account` when `account` has none yet. Returns whether it did.
pub(crate) fn adopt_global_account(store_dir: &Path, account: &str) -> Result<bool> {
    let jetstream = store_dir.join("jetstream");
    let global = jetstream.join(GLOBAL_ACCOUNT);
    let target = jetstream.join(account);
    if !global.is_dir() {
        return Ok(false);
    }
    if target.exists() {
        tracing::warn!(
            global = %global.display(),
            account,
            "the store holds streams of both the unauthenticated server and the ramen account; \
             keeping the account's and leaving the others unused"
        );
        return Ok(false);
    }
    std::fs::rename(&global, &target).map_err(|err| {
        BusError::io(format!("moving {} to {}", global.display(), target.display()), err)
    })?;
    tracing::info!(
        account,
        "JetStream store from before authentication moved to the ramen account"
    );
    Ok(true)
}
