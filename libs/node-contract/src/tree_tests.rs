//! Links that stay inside a tree are followed, every way out is refused, and reads are
//! bounded: the cases a hostile repo would try.

use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("reqs")).unwrap();
    std::fs::create_dir_all(dir.path().join("src/pkg")).unwrap();
    std::fs::write(dir.path().join("reqs/base.txt"), "mcp==2.3.0\n").unwrap();
    std::fs::write(dir.path().join("src/pkg/__init__.py"), "").unwrap();
    dir
}

fn link(root: &Path, path: &str, target: &str) {
    symlink(target, root.join(path)).unwrap();
}

#[test]
fn links_inside_the_tree_resolve_to_real_paths() {
    let dir = tree();
    let root = dir.path();
    link(root, "requirements.txt", "reqs/base.txt");
    link(root, "pkg", "src/pkg");
    link(root, "src/up", "../reqs");
    link(root, "self", ".");
    link(root, "dangling", "nowhere/at/all");
    assert_eq!(resolve(root, Path::new("requirements.txt")), Ok("reqs/base.txt".into()));
    assert_eq!(resolve(root, Path::new("pkg/__init__.py")), Ok("src/pkg/__init__.py".into()));
    assert_eq!(resolve(root, Path::new("src/up/base.txt")), Ok("reqs/base.txt".into()));
    assert_eq!(resolve(root, Path::new("self/self/pkg")), Ok("src/pkg".into()));
    assert_eq!(resolve(root, Path::new("dangling")), Ok("nowhere/at/all".into()));
}

#[test]
fn every_way_out_is_refused() {
    let dir = tree();
    let root = dir.path();
    link(root, "absolute", "/dev/zero");
    link(root, "climbs", "../outside");
    link(root, "deep", "src/pkg/../../../outside");
    // Through another link: `a` looks harmless, `b` is not.
    link(root, "a", "b");
    link(root, "b", "/etc");
    // `x/..` reads as the root itself, but `x` is the root, so it is the root's parent.
    link(root, "x", ".");
    link(root, "y", "x/..");
    // A missing part, then back into what exists, then out through a link.
    link(root, "z", "missing/../b");
    link(root, "self", ".");
    for path in ["absolute", "climbs", "deep", "a", "b", "y", "z", "a/passwd", "self/.."] {
        assert_eq!(resolve(root, Path::new(path)), Err(Why::Outside), "{path}");
    }
}

#[test]
fn a_loop_of_links_ends() {
    let dir = tree();
    let root = dir.path();
    link(root, "one", "two");
    link(root, "two", "one");
    assert_eq!(resolve(root, Path::new("one")), Err(Why::Loop));
    let refused = Refused::at(root, Path::new("one"), Why::Loop);
    assert!(refused.to_string().starts_with("refused one: a symlink to two that loops"));
}

#[test]
fn a_link_to_dev_zero_is_refused_without_reading_it() {
    let dir = tree();
    link(dir.path(), "requirements.txt", "/dev/zero");
    let err = read_bounded(dir.path(), Path::new("requirements.txt"), 1 << 20).unwrap_err();
    assert_eq!(
        err.to_string(),
        "refused requirements.txt: a symlink to /dev/zero, outside the repo"
    );
}

#[test]
fn reads_follow_links_inside_and_are_bounded() {
    let dir = tree();
    let root = dir.path();
    link(root, "requirements.txt", "reqs/base.txt");
    let read = read_bounded(root, Path::new("requirements.txt"), 1 << 20).unwrap();
    assert_eq!(read.as_deref(), Some(&b"mcp==2.3.0\n"[..]));
    assert_eq!(read_bounded(root, Path::new("ramen.toml"), 1 << 20).unwrap(), None);

    std::fs::write(root.join("big.txt"), vec![b'#'; 1025]).unwrap();
    let err = read_bounded(root, Path::new("big.txt"), 1024).unwrap_err();
    assert_eq!(err.to_string(), "refused big.txt: larger than the limit of 1 KiB");
    std::fs::write(root.join("exact.txt"), vec![b'#'; 1024]).unwrap();
    assert_eq!(read_bounded(root, Path::new("exact.txt"), 1024).unwrap().unwrap().len(), 1024);
}

#[test]
fn special_files_are_refused_without_blocking() {
    let dir = tree();
    let root = dir.path();
    nix::unistd::mkfifo(&root.join("fifo"), nix::sys::stat::Mode::from_bits_truncate(0o600))
        .unwrap();
    link(root, "requirements.txt", "fifo");
    let err = read_bounded(root, Path::new("requirements.txt"), 1 << 20).unwrap_err();
    assert_eq!(err.to_string(), "refused requirements.txt: a fifo, not a regular file");
    let err = read_bounded(root, Path::new("reqs"), 1 << 20).unwrap_err();
    assert_eq!(err.to_string(), "refused reqs: a directory, not a regular file");
}

#[test]
fn limits_read_as_units() {
    assert_eq!(bytes(1 << 20), "1 MiB");
    assert_eq!(bytes(512 << 20), "512 MiB");
    assert_eq!(bytes(64 << 10), "64 KiB");
    assert_eq!(bytes(1000), "1000 bytes");
}

#[test]
fn requirements_are_read_bounded_by_the_node_as_by_the_deployer() {
    let dir = tree();
    assert_eq!(read_requirements(dir.path()).unwrap(), b"", "none: nothing to install");
    link(dir.path(), "requirements.txt", "reqs/base.txt");
    assert_eq!(read_requirements(dir.path()).unwrap(), b"mcp==2.3.0\n");
    std::fs::remove_file(dir.path().join("requirements.txt")).unwrap();
    let big = vec![b'#'; MAX_REQUIREMENTS_BYTES as usize + 1];
    std::fs::write(dir.path().join("requirements.txt"), big).unwrap();
    let refused = read_requirements(dir.path()).unwrap_err().to_string();
    assert_eq!(refused, "refused requirements.txt: larger than the limit of 1 MiB");
}
