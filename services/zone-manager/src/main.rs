fn main() -> std::process::ExitCode {
    ramen_service::main(
        "zone-manager",
        &[ramen_config::Requirement::Mongo],
        ramen_zone_manager::start,
    )
}
