//! `ramen-zone-manager`: the zone-manager on its own (`ramen serve zone-manager` is the same).
//! `ramen-zone-manager worker --config <file>` runs a worker node, so the service's own binary
//! can be the local zone's worker binary (the default: the current executable).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [command, flag, path] = args.as_slice()
        && command == "worker"
        && flag == "--config"
    {
        return ramen_runner::cli::run(PathBuf::from(path));
    }
    ramen_service::main(
        "zone-manager",
        &[ramen_config::Requirement::Mongo],
        ramen_zone_manager::start,
    )
}
