//! `ramen-zone-manager`: the zone-manager on its own (`ramen serve zone-manager` is the same).
//! Its local zone starts workers with `ramen-runner` from the same directory, unless
//! `zone.worker_binary` names another.

fn main() -> std::process::ExitCode {
    ramen_service::main(
        "zone-manager",
        &[ramen_config::Requirement::Mongo, ramen_config::Requirement::NatsSigningKey],
        ramen_zone_manager::start,
    )
}
