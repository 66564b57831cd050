//! `ramen-runner --config <node.toml>`: one worker node. (`ramen worker` is the same thing in
//! the all-in-one binary.)

fn main() -> std::process::ExitCode {
    ramen_runner::cli::main()
}
