fn main() -> std::process::ExitCode {
    ramen_service::main("api-gateway", &[], ramen_api_gateway::start)
}
