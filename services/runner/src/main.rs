//! `ramen-runner --config <node.toml>`: one worker node. (`ramen worker` is the same thing in
//! the all-in-one binary.)

// The serving binaries' allocator (mimalloc): see libs/alloc.
use ramen_alloc as _;

fn main() -> std::process::ExitCode {
    ramen_runner::cli::main()
}
