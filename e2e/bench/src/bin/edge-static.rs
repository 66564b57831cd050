//! `edge-static`: the MCP edge alone, in front of fixed worker addresses (no control plane),
//! for measuring what the edge adds over calling a node directly. Serves
//! `/mcp/bench/prod` → the `--worker` addresses (one zone).

use std::net::SocketAddr;
use std::sync::Arc;

use clap::Parser;
// The serving binaries' allocator, as the gateway's edge has it (libs/alloc).
use ramen_alloc as _;
use ramen_edge::{
    Edge, EdgeSettings, Route, SessionSealer, StaticDirectory, WorkerRoute, ZoneRoute, router,
};

#[derive(Parser)]
struct Args {
    #[arg(long)]
    listen: SocketAddr,
    /// `host:port` of a worker's MCP endpoint; repeat for several.
    #[arg(long = "worker", required = true)]
    workers: Vec<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let directory = Arc::new(StaticDirectory::default());
    let workers = args
        .workers
        .iter()
        .enumerate()
        .map(|(i, address)| WorkerRoute {
            id: format!("w{i}"),
            address: address.clone(),
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
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    // With `--listen 127.0.0.1:0` the caller learns the port from this line (the cost gate).
    let bound = listener.local_addr()?;
    #[allow(clippy::print_stdout)]
    {
        println!("listening on {bound}");
    }
    axum::serve(listener, router(edge).into_make_service_with_connect_info::<SocketAddr>()).await?;
    Ok(())
}
