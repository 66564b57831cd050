fn main() -> std::process::ExitCode {
    ramen_service::main("rebalancer", &[ramen_config::Requirement::Mongo], ramen_rebalancer::start)
}
