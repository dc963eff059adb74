#!/usr/bin/env bash
# The host story in namespaces, as root: a private "host" netns, the real CNI
# ptp plugin (with host-local IPAM) wiring a pod netns from it, an agent in a
# guest netns whose veth carries the pod's MAC under another name,
# `netagentctl sync` from the pod into the guest, then `netagentctl diff`:
# the pod's and the guest's tables side by side with a verdict. Every netns
# it makes is deleted on exit. The machine's own namespace is never touched.
#
#   scripts/demo-sync.sh                      guest = a fresh netns + dist/netagent
#   GUEST_ADDR=ADDR scripts/demo-sync.sh      guest = an agent already listening at
#                                             ADDR (e.g. a VM's channel); no guest netns
#   POD_MAC=02:..:01 scripts/demo-sync.sh     give the pod's eth0 this MAC (a VM's NIC)
#   GUEST_READY_FILE=PATH (with GUEST_ADDR)   the guest is up once PATH holds
#                                             "START_MS CHECK_MS" (scripts/vm.ts
#                                             --ready-file), waited for up to
#                                             GUEST_WAIT_S s (30) while GUEST_PID
#                                             lives; then after the diff prints
#                                             "== pod network ready: ..." (QEMU
#                                             start -> EQUAL, beside -> Check)
#
# Exit status: that of `netagentctl diff` (0 equal, 1 different), or the
# failing step's.
set -euo pipefail
cd "$(dirname "$0")/.."

CNI_PATH=${CNI_PATH:-/usr/lib/cni}
SUBNET=${SUBNET:-10.248.246.144/28}
CTL=./dist/netagentctl
if [[ ! -x dist/netagent || ! -x $CTL ]]; then
  [[ -d node_modules ]] || npm ci --no-audit --no-fund
  npm run build
fi
for p in loopback ptp host-local; do
  [[ -x $CNI_PATH/$p ]] || { echo "demo-sync: $CNI_PATH/$p missing (Debian: containernetworking-plugins)" >&2; exit 1; }
done

id=$$
host=nsd-host-$id pod=nsd-pod-$id guest=nsd-guest-$id wire=nsd-wire-$id
tmp=$(mktemp -d /tmp/netagent-demo-sync.XXXXXX)
agent_pid=""
made=()
conf=$tmp/ptp.conf
cni() { # cni ADD|DEL [PLUGIN IFNAME CONF]: the ptp plugin (default), run inside the private host netns
  ip netns exec "$host" env CNI_COMMAND="$1" CNI_CONTAINERID="demo-$id" \
    CNI_NETNS="/run/netns/$pod" CNI_IFNAME="${3:-eth0}" CNI_PATH="$CNI_PATH" \
    "$CNI_PATH/${2:-ptp}" <"${4:-$conf}"
}
cleanup() {
  set +e
  if [[ -n $agent_pid ]]; then kill "$agent_pid" 2>/dev/null; wait "$agent_pid" 2>/dev/null; fi
  [[ -f $tmp/result.json ]] && cni DEL >/dev/null 2>&1
  for ns in "${made[@]}"; do ip netns del "$ns"; done
  rm -rf "$tmp"
}
trap cleanup EXIT
# Polls a condition every 50 ms for up to $1 seconds.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    ((SECONDS < deadline)) || { echo "demo-sync: timed out waiting for: $*" >&2; return 1; }
    sleep 0.05
  done
}
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "private host netns $host, pod netns $pod"
ip netns add "$host"; made+=("$host")
ip netns add "$pod"; made+=("$pod")
ip -n "$host" link set lo up

step "CNI loopback ADD (containerd runs it for every pod: lo up), ptp ADD (host-local IPAM, subnet $SUBNET)"
echo '{"cniVersion":"1.0.0","name":"lo","type":"loopback"}' >"$tmp/lo.conf"
cni ADD loopback lo "$tmp/lo.conf" >/dev/null
cat >"$conf" <<EOF
{"cniVersion":"1.0.0","name":"demo","type":"ptp","ipMasq":false,
 "ipam":{"type":"host-local","subnet":"$SUBNET","routes":[{"dst":"0.0.0.0/0"}],"dataDir":"$tmp/ipam"}}
EOF
cni ADD >"$tmp/result.json"
if [[ -n ${POD_MAC:-} ]]; then ip -n "$pod" link set eth0 address "$POD_MAC"; fi
mac=$(ip -n "$pod" -json link show eth0 | sed -n 's/.*"address":"\([0-9a-f:]*\)".*/\1/p')
# The pod's IPv6 link-local address comes once the veth has carrier; sync copies it.
pod_ll() { ip -n "$pod" -6 addr show dev eth0 scope link | grep -q inet6; }
wait_for 10 pod_ll
echo "pod eth0: $mac"
ip -n "$pod" addr show eth0 | sed 's/^/  /'
echo "pod routes:"
{ ip -n "$pod" route; ip -n "$pod" -6 route; } | sed 's/^/  /'

if [[ -n ${GUEST_ADDR:-} ]]; then
  addr=$GUEST_ADDR
  step "guest: the agent at $addr"
else
  step "guest netns $guest: veth guest0 with the pod's MAC (its peer in $wire, as a VM's NIC has its other end in the VMM), dist/netagent on a unix socket"
  ip netns add "$guest"; made+=("$guest")
  ip netns add "$wire"; made+=("$wire")
  ip -n "$guest" link set lo up
  ip -n "$guest" link add guest0 address "$mac" type veth peer name guest0p netns "$wire"
  ip -n "$wire" link set guest0p up
  ip -n "$guest" link set guest0 up
  addr=unix://$tmp/agent.sock
  ip netns exec "$guest" ./dist/netagent --listen "$addr" 2>"$tmp/agent.log" &
  agent_pid=$!
  wait_for 10 test -S "$tmp/agent.sock"
fi
# The VM runner's own Check must not be raced: the agent channel takes one client at a time.
guest_ready() {
  [[ -s $GUEST_READY_FILE ]] && return 0
  if [[ -n ${GUEST_PID:-} ]] && ! kill -0 "$GUEST_PID" 2>/dev/null; then
    echo "demo-sync: the guest's runner exited before Check answered" >&2
    exit 1
  fi
  return 1
}
if [[ -n ${GUEST_READY_FILE:-} ]]; then
  wait_for "${GUEST_WAIT_S:-30}" guest_ready
  read -r qemu_start_ms check_ms <"$GUEST_READY_FILE"
else
  wait_for 30 "$CTL" --addr "$addr" --timeout 2 check >/dev/null
fi

step "netagentctl sync --netns $pod --addr $addr"
"$CTL" --addr "$addr" sync --netns "$pod"

if [[ -z ${GUEST_ADDR:-} ]]; then
  echo "guest routes (ip -n $guest, independent of the agent):"
  { ip -n "$guest" route; ip -n "$guest" -6 route; } | sed 's/^/  /'
fi

step "netagentctl diff --netns $pod --addr $addr"
set +e
"$CTL" --addr "$addr" diff --netns "$pod"
status=$?
set -e
if [[ -n ${qemu_start_ms:-} ]]; then
  ms=$(($(date +%s%3N) - qemu_start_ms))
  secs() { printf '%d.%02d' $(($1 / 1000)) $(($1 % 1000 / 10)); }
  if ((status == 0)); then
    echo "== pod network ready: $(secs "$ms") s after QEMU start (first Check $(secs "$check_ms") s; sync and diff after it)"
  else
    echo "== pod network not ready: diff not EQUAL $(secs "$ms") s after QEMU start (first Check $(secs "$check_ms") s)"
  fi
fi
exit "$status"
