use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use anyhow::bail;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use ramen_bus::{Bus, BusError, NatsSupervisor, PublishOptions, SupervisorConfig};
use ramen_testkit::{Nats, eventually};

use crate::support::{consumer, expect_next, job, subject, work_stream};

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn survives_server_restart() -> anyhow::Result<()> {
    let mut nats = Nats::start().await?;
    let bus = Bus::connect(&nats.url(), "restart-test").await?;
    work_stream(&bus, "restart").await?;
    let mut worker = consumer(&bus, "restart", Duration::from_secs(5), 5).await?;
    let subject = subject("restart").child("a");
    bus.publish(&subject, &job(1), PublishOptions::with_msg_id("before")).await?;

    nats.kill().await;
    assert!(bus.ping(Duration::from_millis(500)).await.is_err(), "ping answered by a dead server");
    nats.restart().await?;

    eventually("client reconnects", 15 * SECOND, || bus.ping(SECOND)).await;
    eventually("publish after restart", 20 * SECOND, || async {
        bus.publish(&subject, &job(2), PublishOptions::with_msg_id("after")).await
    })
    .await;
    // The durable consumer resumes where it was: the message stored before the kill first,
    // then the one published after the restart.
    let mut seen = Vec::new();
    for _ in 0..2 {
        let delivery = expect_next(&mut worker, 30 * SECOND).await?;
        seen.push(delivery.payload.id);
        delivery.ack().await?;
    }
    assert_eq!(seen, vec![1, 2]);
    Ok(())
}

fn alive(pid: u32) -> bool {
    kill(Pid::from_raw(pid as i32), None).is_ok()
}

#[tokio::test]
async fn supervisor_restarts_its_child_and_shuts_down_cleanly() -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let config = SupervisorConfig {
        data_dir: data.path().to_owned(),
        binary: Some(Nats::binary()?),
        port: None,
        auth: None,
    };
    let supervisor = NatsSupervisor::start(config).await?;
    let bus = Bus::connect(&supervisor.url(), "supervisor-test").await?;
    bus.ping(5 * SECOND).await?;
    work_stream(&bus, "supervised").await?; // JetStream is on, with its store in data_dir
    assert!(data.path().join("nats").is_dir());

    let first = supervisor.pid().expect("a running child");
    kill(Pid::from_raw(first as i32), Signal::SIGKILL)?;
    let second = eventually("child restarted", 20 * SECOND, || async {
        match supervisor.pid() {
            Some(pid) if pid != first && supervisor.restarts() == 1 => Ok(pid),
            other => bail!("pid {other:?}, restarts {}", supervisor.restarts()),
        }
    })
    .await;
    eventually("bus reconnects to the restarted child", 20 * SECOND, || bus.ping(SECOND)).await;
    eventually("stream survived the crash", 10 * SECOND, || async {
        bus.jetstream().get_stream("SUPERVISED").await.map(|_| ())
    })
    .await;

    supervisor.shutdown().await;
    assert!(!alive(first) && !alive(second), "nats-server left running after shutdown");
    Ok(())
}

#[tokio::test]
async fn supervisor_refuses_a_too_old_binary() -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let fake = data.path().join("nats-server");
    std::fs::write(&fake, "#!/bin/sh\necho 'nats-server: v2.9.10'\n")?;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755))?;
    let config = SupervisorConfig {
        data_dir: data.path().to_owned(),
        binary: Some(fake),
        port: None,
        auth: None,
    };
    match NatsSupervisor::start(config).await {
        Err(BusError::NatsServer(message)) => {
            assert!(message.contains("2.9") && message.contains("2.10"), "{message}");
        }
        Err(other) => bail!("unexpected error {other:?}"),
        Ok(_) => bail!("a 2.9 nats-server was accepted"),
    }
    Ok(())
}

#[tokio::test]
async fn supervisor_refuses_a_taken_port() -> anyhow::Result<()> {
    let squatter = Nats::start().await?;
    let data = tempfile::tempdir()?;
    let config = SupervisorConfig {
        data_dir: data.path().to_owned(),
        binary: Some(Nats::binary()?),
        port: Some(squatter.port),
        auth: None,
    };
    match NatsSupervisor::start(config).await {
        Err(BusError::NatsServer(message)) => assert!(message.contains("in use"), "{message}"),
        Err(other) => bail!("unexpected error {other:?}"),
        Ok(_) => bail!("started beside another server on the same port"),
    }
    Ok(())
}
