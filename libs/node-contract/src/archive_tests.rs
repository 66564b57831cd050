//! Packing is deterministic and round-trips, keeps the links that stay inside and leaves out
//! the others; unpacking refuses any archive whose links (symbolic or hard) lead out.

use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;
use crate::tree::Why;

#[test]
fn packing_is_deterministic_and_round_trips() {
    let tree = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tree.path().join("pkg/.git")).unwrap();
    std::fs::write(tree.path().join("pkg/__init__.py"), "x = 1\n").unwrap();
    std::fs::write(tree.path().join("pkg/.git/HEAD"), "ref").unwrap();
    std::fs::write(tree.path().join("requirements.txt"), "").unwrap();
    let first = pack_dir(tree.path()).unwrap();
    assert_eq!(digest(&first), digest(&pack_dir(tree.path()).unwrap()));
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("snap");
    unpack(&first, &dest).unwrap();
    assert_eq!(std::fs::read_to_string(dest.join("pkg/__init__.py")).unwrap(), "x = 1\n");
    assert!(!dest.join("pkg/.git").exists(), ".git is not packed");
}

#[test]
fn links_inside_are_packed_and_links_out_are_left_out() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("jwt.key"), "control-plane key").unwrap();
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    std::fs::create_dir_all(root.join("src/notes")).unwrap();
    std::fs::create_dir_all(root.join("reqs")).unwrap();
    std::fs::write(root.join("src/notes/__init__.py"), "x = 1\n").unwrap();
    std::fs::write(root.join("reqs/base.txt"), "mcp==2.3.0\n").unwrap();
    symlink("reqs/base.txt", root.join("requirements.txt")).unwrap();
    symlink("src/notes", root.join("notes")).unwrap();
    symlink(outside.path().join("jwt.key"), root.join("ramen.toml")).unwrap();
    symlink("/dev/zero", root.join("src/zero")).unwrap();
    symlink("../../outside", root.join("src/up")).unwrap();
    symlink("ramen.toml", root.join("chain")).unwrap();
    symlink("loop-b", root.join("loop-a")).unwrap();
    symlink("loop-a", root.join("loop-b")).unwrap();

    let packed = pack_tree(root).unwrap();
    let mut refused: Vec<(String, Why)> =
        packed.refused.iter().map(|r| (r.path.display().to_string(), r.why)).collect();
    refused.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        refused,
        [
            ("chain".into(), Why::Outside),
            ("loop-a".into(), Why::Loop),
            ("loop-b".into(), Why::Loop),
            ("ramen.toml".into(), Why::Outside),
            ("src/up".into(), Why::Outside),
            ("src/zero".into(), Why::Outside),
        ]
    );
    let zero = packed.refused.iter().find(|r| r.path == Path::new("src/zero")).unwrap();
    assert_eq!(zero.to_string(), "refused src/zero: a symlink to /dev/zero, outside the repo");
    assert_eq!(digest(&packed.archive), digest(&pack_dir(root).unwrap()), "deterministic");

    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("snap");
    unpack(&packed.archive, &dest).unwrap();
    assert_eq!(std::fs::read_to_string(dest.join("requirements.txt")).unwrap(), "mcp==2.3.0\n");
    assert_eq!(std::fs::read_link(dest.join("notes")).unwrap(), Path::new("src/notes"));
    assert_eq!(std::fs::read_to_string(dest.join("notes/__init__.py")).unwrap(), "x = 1\n");
    for gone in ["ramen.toml", "src/zero", "src/up", "chain", "loop-a", "loop-b"] {
        assert!(std::fs::symlink_metadata(dest.join(gone)).is_err(), "{gone} was packed");
    }
}

/// An archive entry for the tests: (path, kind, link target or file contents).
type Entry<'a> = (&'a str, tar::EntryType, &'a str);

/// A gzipped tar of `entries`.
fn archive(entries: &[Entry]) -> Vec<u8> {
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(encoder);
    for (path, kind, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(*kind);
        header.set_mode(0o644);
        if kind.is_file() {
            header.set_size(data.len() as u64);
            header.set_cksum();
            tar.append_data(&mut header, path, data.as_bytes()).unwrap();
        } else {
            header.set_size(0);
            tar.append_link(&mut header, path, data).unwrap();
        }
    }
    tar.into_inner().unwrap().finish().unwrap()
}

#[test]
fn unpacking_refuses_links_that_lead_out() {
    use tar::EntryType::{Link, Regular, Symlink};
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "control-plane key").unwrap();
    let secret = secret.display().to_string();
    let cases: Vec<(Vec<Entry>, String)> = vec![
        (
            vec![("ok.py", Regular, "x = 1\n"), ("ramen.toml", Symlink, &secret)],
            format!("refused ramen.toml: a symlink to {secret}, outside the repo"),
        ),
        (
            vec![("pkg/up", Symlink, "../../etc/passwd")],
            "refused pkg/up: a symlink to ../../etc/passwd, outside the repo".into(),
        ),
        (
            vec![("x", Symlink, "."), ("y", Symlink, "x/..")],
            "refused y: a symlink to x/.., outside the repo".into(),
        ),
        (
            vec![("a", Symlink, "b"), ("b", Symlink, "a")],
            "refused a: a symlink to b that loops".into(),
        ),
        (
            vec![("dir", Symlink, "/tmp"), ("dir/evil", Symlink, "x")],
            "entry dir/evil: lies under something that is not a directory".into(),
        ),
        (
            vec![("notes/__init__.py", Regular, "x = 1\n"), ("notes", Symlink, "/etc")],
            "entry notes: is in the archive twice".into(),
        ),
        (
            vec![("stolen", Link, &secret)],
            "entry stolen: a hard link, which a snapshot never holds".into(),
        ),
        (
            vec![("ok.py", Regular, ""), ("same", Link, "ok.py")],
            "entry same: a hard link, which a snapshot never holds".into(),
        ),
    ];
    for (entries, expected) in cases {
        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("snap");
        let err = unpack(&archive(&entries), &dest).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{entries:?}");
        assert!(err.to_string().starts_with(&expected), "{entries:?}: {err}");
        assert!(!dest.exists(), "{entries:?}: a refused archive leaves nothing");
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret")).unwrap(),
        "control-plane key"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1, "nothing written outside");
}

#[test]
fn unpacking_keeps_links_that_stay_inside() {
    use tar::EntryType::{Regular, Symlink};
    let entries = [
        ("reqs/base.txt", Regular, "mcp==2.3.0\n"),
        ("requirements.txt", Symlink, "reqs/base.txt"),
        ("deep/down/link", Symlink, "../../reqs"),
        ("dangling", Symlink, "not/there"),
    ];
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("snap");
    unpack(&archive(&entries), &dest).unwrap();
    assert_eq!(std::fs::read_to_string(dest.join("requirements.txt")).unwrap(), "mcp==2.3.0\n");
    assert_eq!(
        std::fs::read_to_string(dest.join("deep/down/link/base.txt")).unwrap(),
        "mcp==2.3.0\n"
    );
    assert_eq!(std::fs::read_link(dest.join("dangling")).unwrap(), Path::new("not/there"));
}
