//! A confined child, for real: each test starts programs under a [`Confinement`] and checks
//! what the kernel lets them do. Each attack is first shown to work unconfined, so a test that
//! passes proves the confinement, not a broken command.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ramen_sandbox::{Confinement, Support};

fn kernel_confines() {
    let support = Support::probe();
    assert!(
        support.complete() && support.scopes(),
        "these tests need Landlock ABI >= 6 (files, TCP, scopes); this kernel: {}",
        support.describe()
    );
}

fn run(confinement: Option<&Confinement>, program: &str, args: &[&str]) -> Output {
    let mut command = Command::new(program);
    command.args(args).env_clear().env("PATH", "/usr/bin:/bin");
    if let Some(confinement) = confinement {
        confinement.prepare().expect("ruleset").apply(&mut command);
    }
    command.output().expect("the child starts")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let granted = dir.path().join("granted");
    let secret = dir.path().join("secret");
    for (sub, text) in [(&granted, "hello"), (&secret, "the control plane's key")] {
        std::fs::create_dir_all(sub).unwrap();
        std::fs::write(sub.join("file"), text).unwrap();
    }
    (dir, granted, secret)
}

#[test]
fn a_confined_child_reads_only_beneath_its_grants() {
    kernel_confines();
    let (_dir, granted, secret) = tree();
    let secret_file = secret.join("file");
    let secret_file = secret_file.to_str().unwrap();
    let attack = run(None, "cat", &[secret_file]);
    assert_eq!(String::from_utf8_lossy(&attack.stdout), "the control plane's key");

    let confinement = Confinement::system().read(&granted);
    let refused = run(Some(&confinement), "cat", &[secret_file]);
    assert!(!refused.status.success(), "read a file outside its grants");
    assert!(stderr(&refused).contains("Permission denied"), "{}", stderr(&refused));
    let listing = run(Some(&confinement), "ls", &[secret.to_str().unwrap()]);
    assert!(!listing.status.success(), "listed a directory outside its grants");

    let allowed = run(Some(&confinement), "cat", &[granted.join("file").to_str().unwrap()]);
    assert!(allowed.status.success(), "{}", stderr(&allowed));
    assert_eq!(String::from_utf8_lossy(&allowed.stdout), "hello");
}

#[test]
fn a_confined_child_writes_only_beneath_its_scratch() {
    kernel_confines();
    let (dir, granted, _secret) = tree();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let confinement = Confinement::system().read(&granted).write(&scratch);
    let target = |p: &Path| format!("echo x > {}", p.display());

    for outside in [granted.join("new"), granted.join("file"), dir.path().join("new")] {
        let refused = run(Some(&confinement), "sh", &["-c", &target(&outside)]);
        assert!(!refused.status.success(), "wrote {}", outside.display());
    }
    assert_eq!(std::fs::read_to_string(granted.join("file")).unwrap(), "hello");
    let written = run(Some(&confinement), "sh", &["-c", &target(&scratch.join("f"))]);
    assert!(written.status.success(), "{}", stderr(&written));
    assert_eq!(std::fs::read_to_string(scratch.join("f")).unwrap(), "x\n");
    let devnull = run(Some(&confinement), "sh", &["-c", "echo x > /dev/null"]);
    assert!(devnull.status.success(), "{}", stderr(&devnull));
}

/// Python's `socket.create_connection`, as group code would reach the bus.
fn connect(confinement: Option<&Confinement>, port: u16) -> Output {
    let script = format!(
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n    print('connected')\nexcept OSError as e:\n    print(type(e).__name__, e.errno)\n"
    );
    run(confinement, &python(), &["-c", &script])
}

fn python() -> String {
    let path = std::env::var_os("PATH").unwrap();
    std::env::split_paths(&path)
        .map(|dir| dir.join("python3"))
        .find(|p| p.is_file())
        .expect("python3 on PATH")
        .display()
        .to_string()
}

#[test]
fn tcp_connects_go_only_to_granted_ports() {
    kernel_confines();
    let bus = TcpListener::bind("127.0.0.1:0").unwrap();
    let web = TcpListener::bind("127.0.0.1:0").unwrap();
    let (bus_port, web_port) = (bus.local_addr().unwrap().port(), web.local_addr().unwrap().port());
    let attack = connect(None, bus_port);
    assert_eq!(String::from_utf8_lossy(&attack.stdout).trim(), "connected", "{}", stderr(&attack));

    let confinement = Confinement::system().python(Path::new(&python())).connect_ports([web_port]);
    let refused = connect(Some(&confinement), bus_port);
    assert_eq!(
        String::from_utf8_lossy(&refused.stdout).trim(),
        "PermissionError 13",
        "{}",
        stderr(&refused)
    );
    let allowed = connect(Some(&confinement), web_port);
    assert_eq!(
        String::from_utf8_lossy(&allowed.stdout).trim(),
        "connected",
        "{}",
        stderr(&allowed)
    );
}

#[test]
fn the_parents_environment_and_memory_are_out_of_reach_even_through_proc() {
    kernel_confines();
    let parent = std::process::id();
    let environ = format!("/proc/{parent}/environ");
    let mem = format!("/proc/{parent}/maps");
    let attack = run(None, "cat", &[&environ]);
    assert!(
        attack.status.success(),
        "unconfined, the parent's environ is readable: {}",
        stderr(&attack)
    );

    // /proc granted on purpose: what refuses is Landlock's ptrace rule, not a missing grant.
    let confinement = Confinement::system().read("/proc");
    for file in [&environ, &mem] {
        let refused = run(Some(&confinement), "cat", &[file]);
        assert!(!refused.status.success(), "read {file}");
        assert!(stderr(&refused).contains("Permission denied"), "{}", stderr(&refused));
    }
}

#[test]
fn signals_to_processes_outside_the_sandbox_are_refused() {
    kernel_confines();
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = victim.id().to_string();
    let refused = run(Some(&Confinement::system()), "kill", &["-TERM", &pid]);
    assert!(!refused.status.success(), "signalled a process outside its domain");
    assert!(victim.try_wait().unwrap().is_none(), "the victim died");
    let attack = run(None, "kill", &["-TERM", &pid]);
    assert!(attack.status.success(), "{}", stderr(&attack));
    let _ = victim.wait();
}

#[test]
fn a_confined_child_holds_no_capability_and_gains_none() {
    kernel_confines();
    let confinement = Confinement::system().read("/proc");
    let status = run(Some(&confinement), "cat", &["/proc/self/status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        let line = text.lines().find(|l| l.starts_with(set)).unwrap_or_else(|| panic!("{text}"));
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
    let nnp = text.lines().find(|l| l.starts_with("NoNewPrivs")).unwrap();
    assert!(nnp.ends_with('1'), "{nnp}");
}

#[test]
fn the_same_prepared_command_confines_every_spawn() {
    kernel_confines();
    let (_dir, _granted, secret) = tree();
    let mut command = Command::new("cat");
    command.arg(secret.join("file")).env_clear();
    Confinement::system().prepare().unwrap().apply(&mut command);
    for _ in 0..2 {
        let output = command.output().unwrap();
        assert!(!output.status.success());
    }
}
