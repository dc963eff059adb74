#!/usr/bin/env bash
# The main job: build, start the agent on a unix socket, show it answering.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -d node_modules ]] || npm ci --no-audit --no-fund
npm run build
sock=$(mktemp -u /tmp/netagent-demo.XXXXXX.sock)
./dist/netagent --listen "unix://$sock" &
agent=$!
trap 'kill "$agent" 2>/dev/null; wait "$agent" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.05; done
set -x
./dist/netagentctl --addr "unix://$sock" check
./dist/netagentctl --addr "unix://$sock" version
