//! The allocator of the binaries that serve calls (`ramen`, `ramen-runner`, `api-gateway`,
//! `edge-static`): mimalloc instead of glibc's malloc.
//!
//! Why: a call through the node or the edge allocates and frees a few hundred small blocks
//! (hyper's headers, JSON-RPC strings, tokio tasks and channels). Under callgrind glibc's
//! malloc/free were ~13k of the node's ~72k instructions per `tools/call` and ~13 % of the
//! edge's; mimalloc's thread-local free lists do the same work in a fraction of that (the
//! figures are in docs/benchmarks.md, issue 32's second round of cuts).
//!
//! A binary opts in with `use ramen_alloc as _;` in its `main.rs`: a library crate that is
//! never named is not linked, so the line is what puts the allocator in. Libraries and test
//! binaries keep the system allocator (they do not name this crate).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
