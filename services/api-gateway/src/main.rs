// The serving binaries' allocator (mimalloc): see libs/alloc.
use ramen_alloc as _;

fn main() -> std::process::ExitCode {
    ramen_service::main("api-gateway", &[], ramen_api_gateway::start)
}
