//! CPU cost of checking a caller at the edge: an OAuth access token (JWT, RS256) against an MCP
//! key, per request, measured as this process's CPU time (getrusage) over many checks — the
//! same on a quiet and a busy machine, unlike wall-clock.
//!
//! A real OpenID provider (npm `oidc-provider` through `ramen_testkit::OidcProvider`) issues the
//! token; the issuer's keys are fetched once (discovery and JWKS), as on a running edge.
//! Three rows: a key checked against an environment's key set (the KeyBook's comparison: SHA-256
//! and one constant-time compare per key), a token the verifier has seen (the steady state: a
//! client sends the same token on every call), and a token verified in full (signature, claims)
//! each time — what the first call of each token costs.
//!
//!     cargo run --release -p ramen-bench --bin token-bench -- [checks]

use std::time::Duration;

use ramen_oauth_resource::{Expect, Issuers, Verifier};
use ramen_testkit::{OidcOptions, OidcProvider};

fn cpu() -> Duration {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .expect("getrusage");
    let time = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec() as u64) + Duration::from_micros(t.tv_usec() as u64)
    };
    time(usage.user_time()) + time(usage.system_time())
}

/// CPU per call of `check`, run `n` times.
async fn per_call<F, Fut>(n: u32, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let before = cpu();
    for _ in 0..n {
        check().await;
    }
    (cpu() - before) / n
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let n: u32 = std::env::args().nth(1).map_or(Ok(20_000), |a| a.parse())?;
    let provider = OidcProvider::start(OidcOptions::default()).await?;
    let resource = "http://127.0.0.1:8080/mcp/g/prod";
    let token = provider.machine_token(resource, "mcp:tools").await?;
    let expect = Expect::new(resource, &[provider.issuer()], &["mcp:tools".to_owned()]);
    let issuers = Issuers::default();
    let verifier = Verifier::new(issuers.clone(), expect.clone());
    verifier.verify(&token).await.map_err(|e| anyhow::anyhow!("{e}"))?; // keys fetched

    // 50 keys in the environment's set, the presented one last (every hash is compared anyway).
    let key = "rk_bench_key_0123456789abcdef0123456789abcdef";
    let set: Vec<[u8; 32]> = (0..49)
        .map(|i| ramen_node_contract::key_digest(&format!("rk_other_{i}")))
        .chain([ramen_node_contract::key_digest(key)])
        .collect();
    let key_check = per_call(n, || async {
        use subtle::ConstantTimeEq;
        let digest = ramen_node_contract::key_digest(std::hint::black_box(key));
        let found = set.iter().fold(false, |f, k| f | bool::from(k.ct_eq(&digest)));
        assert!(found);
    })
    .await;
    let seen = per_call(n, || async {
        verifier.verify(std::hint::black_box(&token)).await.expect("valid");
    })
    .await;
    let full = per_call(n / 10, || async {
        // A fresh verifier remembers no token; the issuer's keys stay fetched.
        let fresh = Verifier::new(issuers.clone(), expect.clone());
        fresh.verify(std::hint::black_box(&token)).await.expect("valid");
    })
    .await;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let table = format!(
        "check                               CPU per call\n\
         MCP key (50 keys in the set)          {:>8.2} µs\n\
         JWT seen before (steady state)        {:>8.2} µs\n\
         JWT verified in full (RS256, claims)  {:>8.2} µs",
        us(key_check),
        us(seen),
        us(full)
    );
    #[allow(clippy::print_stdout)]
    {
        println!("{table}");
    }
    Ok(())
}
