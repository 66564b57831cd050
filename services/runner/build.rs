//! Embeds the Python runtime (`runtime/ramen_runtime/*.py`) in the binary, so a worker needs
//! nothing but the `ramen` binary and a Python interpreter.

use std::fmt::Write;
use std::path::PathBuf;

fn main() {
    let root =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("runtime/ramen_runtime");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .expect("runtime/ramen_runtime exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    files.sort();
    let mut out = String::from(
        "/// `(file name, contents)` of every module of the embedded Python runtime.\npub const RUNTIME_FILES: &[(&str, &str)] = &[\n",
    );
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let name = file.file_name().unwrap().to_str().unwrap();
        writeln!(out, "    ({name:?}, include_str!({:?})),", file.display().to_string()).unwrap();
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("runtime_files.rs");
    std::fs::write(dest, out).unwrap();
}
