//! Compiles every `.proto` under `proto/ramen/` with `protox` (pure Rust), so building ramen
//! never needs a system `protoc`.

use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let mut files = Vec::new();
    collect(&root.join("ramen"), &mut files)?;
    files.sort();

    // tonic-prost-build 0.14 no longer emits rerun lines for protox inputs, so say them here
    // (otherwise an edited .proto would not rebuild).
    println!("cargo:rerun-if-changed=ramen");
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }

    let descriptors = protox::compile(&files, [&root])?;
    tonic_prost_build::configure()
        .build_client(cfg!(feature = "client"))
        .build_server(cfg!(feature = "server"))
        .compile_fds(descriptors)?;
    Ok(())
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
    Ok(())
}
