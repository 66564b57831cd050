//! `edge-static`: the MCP edge alone, in front of fixed worker addresses (no control plane),
//! for measuring what the edge adds over calling a node directly. Serves
//! `/mcp/bench/prod` → the `--worker` addresses (one zone).

use std::sync::Arc;

use clap::Parser;
use ramen_bench::ProxyArgs;
// The serving binaries' allocator, as the gateway's edge has it (libs/alloc).
use ramen_alloc as _;
use ramen_edge::{
    Edge, EdgeRoute, EdgeSettings, Route, SessionSealer, StaticDirectory, WorkerRoute, ZoneRoute,
    router,
};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = ProxyArgs::parse();
    let directory = Arc::new(StaticDirectory::default());
    let workers = args
        .workers
        .iter()
        .enumerate()
        .map(|(i, address)| WorkerRoute {
            id: format!("w{i}"),
            address: address.clone(),
            local: if i == 0 { args.local.clone() } else { None },
            weight: 1,
        })
        .collect();
    directory.set(
        "bench",
        "prod",
        Route { zones: vec![ZoneRoute { zone: "local".into(), workers, ..ZoneRoute::default() }] },
    );
    let edge = Arc::new(Edge::new(
        directory,
        SessionSealer::from_secret(b"bench"),
        EdgeSettings::default(),
    ));
    // The listener the gateway's edge runs (ramen_lifecycle: its limits, PollAgain), so the
    // gate measures what serves.
    let stop = tokio_util::sync::CancellationToken::new();
    // The MCP paths ahead of the router, as the gateway serves them.
    let routes =
        ramen_lifecycle::Routes::with_fast_route(router(edge.clone()), EdgeRoute::new(edge));
    let (bound, server) = ramen_lifecycle::serve_http(args.listen, routes, stop).await?;
    #[allow(clippy::print_stdout)]
    {
        println!("listening on {bound}");
    }
    server.await?;
    Ok(())
}
