fn main() -> std::process::ExitCode {
    ramen_service::main(
        "deployer",
        &[ramen_config::Requirement::Mongo, ramen_config::Requirement::S3],
        ramen_deployer::start,
    )
}
