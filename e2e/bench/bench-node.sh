# Sourced by the node benchmarks (sessions-bench, hostile-bench, overload-bench,
# runtime-kill-bench, drain-bench): builds the release node and load generator, and starts one
# node serving examples/hello-repo on ports the kernel picks, pinned to CPU 0. Set `node_extra`
# (TOML lines) before `start_node` to change its config.
set -euo pipefail
root=$(cd "$here/../.." && pwd)
cache="${RAMEN_CACHE_DIR:-$HOME/.cache/ramen}"
python="$cache/venv/bin/python"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ramen-target}"
"$root/scripts/install-test-servers" >/dev/null
cargo build --release -q -p ramen-runner -p ramen-bench
bin="$CARGO_TARGET_DIR/release"
work=$(mktemp -d)
pids=()
node_pid=""
cleanup() { for p in "${pids[@]}" $node_pid; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
read -r key digest < <("$python" "$here/pack.py" "$root/examples/hello-repo" "$work/blobs" c0ffee)
site=$("$python" -c 'import site; print(site.getsitepackages()[0])')
bench_key="rk_bench_$(date +%s)"
key_hash=$(printf %s "$bench_key" | sha256sum | cut -d' ' -f1)
node_extra=""

start_node() {
  rm -rf "$work/node" "$work/ports.json"
  cat > "$work/node.toml" <<TOML
node_id = "bench"
group = "bench"
zone = "local"
listen = "127.0.0.1:0"
admin = "127.0.0.1:0"
grpc = "127.0.0.1:0"
ports_file = "$work/ports.json"
workdir = "$work/node"
python = "$python"
site_packages = ["$site"]
$node_extra
[blob]
dir = "$work/blobs"
[snapshot]
commit = "c0ffee"
key = "$key"
digest = "$digest"
[policy]
require_key = true
key_hashes = ["$key_hash"]
TOML
  RAMEN_LOG_LEVEL=error taskset -c 0 "$bin/ramen-runner" --config "$work/node.toml" > "$work/node.log" 2>&1 &
  node_pid=$!
  for _ in $(seq 300); do
    [ -s "$work/ports.json" ] && curl -fs "http://$(port_of admin)/readyz" >/dev/null 2>&1 && break
    sleep 0.2
  done
  curl -fs "http://$(port_of admin)/readyz" >/dev/null || { cat "$work/node.log"; exit 1; }
  mcp=$(port_of mcp)
}
stop_node() { kill "$node_pid"; wait "$node_pid" 2>/dev/null || true; node_pid=""; }
port_of() { "$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$work/ports.json" "$1"; }
field() { "$python" -c "import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2], ''))" "$1" "$2"; }
load() { taskset -c 1 "$bin/mcp-load" --url "http://$mcp/mcp" --key "$bench_key" --tool notes.add "$@"; }
