#!/usr/bin/env bash
# `make demo-relay`: a nats-server with JetStream on a free port of 127.0.0.1, in a temporary directory, for
# `tripwatch relay demo`; the server and its directory go when the demo ends, whatever its outcome.
set -euo pipefail
tripwatch=${1:-.build/debug/tripwatch}
command -v nats-server >/dev/null 2>&1 || { echo "nats-server missing: run make deps" >&2; exit 1; }
dir=$(mktemp -d -t demo-relay.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
nats-server --addr 127.0.0.1 --port "$port" --jetstream --store_dir "$dir/store" --log "$dir/nats.log" &
server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.1
done
"$tripwatch" relay demo --nats "nats://127.0.0.1:$port" ${DEMO_RELAY_ARGS:-}
