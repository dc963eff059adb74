#!/usr/bin/env bash
# The main job, on one machine, as root: build the agent and the guest image,
# boot the guest under QEMU, let the real CNI ptp plugin wire a pod netns
# (from a private host netns), mirror the pod into the guest with
# `netagentctl sync` as a containerd shim would, and print the pod's and the
# guest's tables side by side with a verdict. Then stop the VM and delete
# every netns it made. The machine's own network namespace is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/debian-packages.sh
[[ -d node_modules ]] || npm ci --no-audit --no-fund
npm run rootfs

MAC=02:00:00:00:0a:01
log=$(mktemp /tmp/netagent-demo-vm.XXXXXX.log)
bun=node_modules/.bin/bun
"$bun" scripts/vm.ts --mac "$MAC" 2>"$log" &
vm=$!
stop_vm() {
  kill -TERM "$vm" 2>/dev/null || true
  wait "$vm" 2>/dev/null || true
  cat "$log" >&2
  rm -f "$log"
}
trap stop_vm EXIT

echo "== booting the guest (QEMU; TCG is slow: ~10-20 s)"
addr=""
for _ in $(seq 600); do
  if grep -q "drive it:" "$log"; then
    addr=$(sed -n 's/^vm: agent: //p' "$log" | head -1)
    break
  fi
  kill -0 "$vm" 2>/dev/null || break
  sleep 0.5
done
[[ -n $addr ]] || { echo "demo: the guest did not come up" >&2; exit 1; }
echo "== guest agent at $addr"
./dist/netagentctl --addr "$addr" version

echo "== the pod, and sync into the guest"
GUEST_ADDR=$addr POD_MAC=$MAC bash scripts/demo-sync.sh
