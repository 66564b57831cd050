//! Two rebalancer processes (the real binary) on one NATS: exactly one holds the scheduler
//! lease; SIGKILL it and the other takes over within the bounded time (4/3 of the lease TTL,
//! plus slack for a loaded machine). The server runs in operator mode and the replicas connect
//! with the rebalancer's credentials file (`RAMEN_NATS_CREDS`), as in production.

use std::process::Stdio;
use std::time::{Duration, Instant};

use ramen_bus::KvSpec;
use ramen_bus::auth::Role;
use ramen_bus::testing::OperatorNats;
use ramen_proto::rebalancer::v1 as pb;
use ramen_proto::rebalancer::v1::rebalancer_service_client::RebalancerServiceClient;
use ramen_rebalancer::scheduler::{LEASE_BUCKET, LEASE_KEY};
use ramen_testkit::{eventually, free_port, patience};
use tokio::process::{Child, Command};

const TTL: Duration = Duration::from_secs(2);
/// Both replicas' control-plane key: the test's calls are signed with it, as a peer's would be.
const JWT_SECRET: &str = "leadership-test-signing-secret-0123456789";

struct Replica {
    name: &'static str,
    child: Child,
    port: u16,
}

fn spawn(name: &'static str, nats: &OperatorNats, dir: &std::path::Path) -> Replica {
    let port = free_port();
    let creds = dir.join(format!("{name}.creds"));
    std::fs::write(&creds, nats.credentials(Role::Rebalancer).to_text()).unwrap();
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_ramen-rebalancer"))
        .env("HOSTNAME", name)
        .env("RAMEN_NATS_URL", nats.url())
        .env("RAMEN_NATS_CREDS", &creds)
        .env("RAMEN_JWT_SECRET", JWT_SECRET)
        .env("RAMEN_DATA_DIR", dir.join(name))
        .env("RAMEN_LISTEN__REBALANCER", format!("127.0.0.1:{port}"))
        .env("RAMEN_LISTEN__ADMIN", format!("127.0.0.1:{}", free_port()))
        .env("RAMEN_ENDPOINTS__AUTH", &nowhere)
        .env("RAMEN_ENDPOINTS__ZONE_MANAGER", &nowhere)
        .env("RAMEN_ENDPOINTS__DEPLOYER", &nowhere)
        .env("RAMEN_REBALANCER__LEASE_TTL", "2s")
        .env("RAMEN_LOG__LEVEL", "warn")
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the rebalancer binary starts");
    Replica { name, child, port }
}

async fn is_leader(replica: &Replica) -> Result<bool, String> {
    let keys = std::sync::Arc::new(ramen_access::TicketKeys::from_secrets(JWT_SECRET, ""));
    let url = format!("http://127.0.0.1:{}", replica.port);
    let mut client = RebalancerServiceClient::new(ramen_clients::fakes::test_channel(
        &url,
        keys,
        ramen_access::audience::REBALANCER,
    ));
    let status = client
        .get_scheduler_status(pb::GetSchedulerStatusRequest {})
        .await
        .map_err(|e| e.to_string())?;
    Ok(status.into_inner().is_leader)
}

#[tokio::test]
async fn leadership_moves_when_its_holder_is_killed() {
    let nats = OperatorNats::start().await.expect("nats-server starts");
    let dir = tempfile::tempdir().unwrap();
    let mut replicas =
        vec![spawn("replica-a", &nats, dir.path()), spawn("replica-b", &nats, dir.path())];
    let bus = nats.connect(Role::Rebalancer).await.unwrap();
    let holder = || async {
        let kv = bus
            .kv(&KvSpec { bucket: LEASE_BUCKET.into(), ttl: Some(TTL), ..KvSpec::default() })
            .await
            .map_err(|e| e.to_string())?;
        let entry = kv.get(LEASE_KEY).await.map_err(|e| e.to_string())?.ok_or("nobody holds it")?;
        Ok::<_, String>(String::from_utf8_lossy(&entry.value).into_owned())
    };

    let first =
        eventually("one replica leads and both answer", Duration::from_secs(30), || async {
            let holder = holder().await?;
            let (a, b) = (is_leader(&replicas[0]).await?, is_leader(&replicas[1]).await?);
            if a != b { Ok(holder) } else { Err(format!("a leads: {a}, b leads: {b}")) }
        })
        .await;
    let index = replicas
        .iter()
        .position(|r| first.starts_with(r.name))
        .expect("the holder is one of the replicas");
    assert!(is_leader(&replicas[index]).await.unwrap());

    let mut dead = replicas.remove(index);
    dead.child.start_kill().unwrap();
    dead.child.wait().await.unwrap();
    let killed = Instant::now();
    let survivor = &replicas[0];
    let next = eventually("the survivor takes over", Duration::from_secs(15), || async {
        let holder = holder().await?;
        if holder.starts_with(survivor.name) && is_leader(survivor).await? {
            Ok(holder)
        } else {
            Err(holder)
        }
    })
    .await;
    let took = killed.elapsed();
    assert_ne!(next, first);
    let bound = (TTL * 4 / 3 + Duration::from_secs(2)).mul_f64(patience());
    assert!(took <= bound, "takeover took {took:?}, bound {bound:?}");
}
