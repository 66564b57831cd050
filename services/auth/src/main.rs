fn main() -> std::process::ExitCode {
    ramen_service::main("auth", &[ramen_config::Requirement::Mongo], ramen_auth::start)
}
