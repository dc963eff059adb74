#!/usr/bin/env bash
# The main job, on one machine, as root: build the agent and the guest image,
# boot the guest under QEMU, let the real CNI ptp plugin wire a pod netns
# (from a private host netns), mirror the pod into the guest with
# `netagentctl sync` as a containerd shim would, and print the pod's and the
# guest's tables side by side with a verdict. Then stop the VM and delete
# every netns it made. The machine's own network namespace is never touched.
#
#   bash scripts/demo.sh            the main job, explained step by step
#   bash scripts/demo.sh --quiet    the same work; prints the runner's choice of
#                                   accelerator, the side-by-side tables, the
#                                   verdict and the pod-network-ready time
#                                   (everything, on failure)
#   NETAGENT_ACCEL=auto|kvm|tcg     the accelerator (default auto: KVM only when
#                                   it really runs a guest, else TCG)
#
# Exit status: 0 when the verdict is EQUAL, else non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
"") ;;
--quiet)
  # Same script, output to a log; on success only the accelerator line and
  # the diff (from its heading to the verdict) are shown.
  out=$(mktemp /tmp/netagent-demo.XXXXXX.log)
  status=0
  bash "$0" >"$out" 2>&1 || status=$?
  if ((status == 0)) && grep -q "^verdict: EQUAL" "$out"; then
    grep -E "^== (acceleration|KVM guest given up):" "$out" || true
    sed -n '/== netagentctl diff/,$p' "$out" | sed -n '/== netagentctl diff/,/^verdict:/p'
    grep -E "^== pod network ready:" "$out" || true
  else
    cat "$out"
    echo "demo: failed (exit status $status)" >&2
    ((status != 0)) || status=1
  fi
  rm -f "$out"
  exit "$status"
  ;;
*)
  echo "usage: bash scripts/demo.sh [--quiet]" >&2
  exit 2
  ;;
esac

bash scripts/debian-packages.sh
[[ -d node_modules ]] || npm ci --no-audit --no-fund
npm run rootfs

MAC=02:00:00:00:0a:01
log=$(mktemp /tmp/netagent-demo-vm.XXXXXX.log)
ready=$(mktemp -u /tmp/netagent-demo-ready.XXXXXX)
console_log=$(mktemp /tmp/netagent-demo-console.XXXXXX.log)
bun=node_modules/.bin/bun
"$bun" scripts/vm.ts --mac "$MAC" --timeout 600 --ready-file "$ready" \
  --console-log "$console_log" 2>"$log" &
vm=$!
stop_vm() {
  local status=$?
  kill -TERM "$vm" 2>/dev/null || true
  wait "$vm" 2>/dev/null || true
  cat "$log" >&2
  # The guest's serial console says why a failed demo's guest misbehaved.
  if ((status != 0)); then
    echo "== the guest's serial console (last 60 lines)" >&2
    tail -n 60 "$console_log" >&2 || true
  fi
  rm -f "$log" "$ready" "$console_log"
}
trap stop_vm EXIT

# The pod is wired while the guest boots, as a runtime's CNI runs before its
# sandbox is up; demo-sync.sh syncs it once the runner has seen Check answer
# (the ready file) and prints QEMU start -> EQUAL beside QEMU start -> Check.
echo "== booting the guest (QEMU: about 1 s with KVM, 20-60 s under TCG)"
addr=""
for _ in $(seq 100); do
  addr=$(sed -n 's/^vm: agent: //p' "$log" | head -1)
  [[ -z $addr ]] || break
  kill -0 "$vm" 2>/dev/null || break
  sleep 0.1
done
[[ -n $addr ]] || { echo "demo: the VM runner did not start QEMU" >&2; exit 1; }
# The runner's own words on which accelerator it chose and why (and a fallback).
sed -n 's/^vm: \(acceleration: .*\)/== \1/p; s/^vm: \(KVM guest given up: .*\)/== \1/p' "$log"
echo "== guest agent at $addr"

echo "== the pod, and sync into the guest"
GUEST_ADDR=$addr GUEST_READY_FILE=$ready GUEST_PID=$vm GUEST_WAIT_S=600 POD_MAC=$MAC \
  bash scripts/demo-sync.sh
