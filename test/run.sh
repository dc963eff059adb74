#!/usr/bin/env bash
# The test command: installs what the tests need on a fresh Debian 12 machine
# (as root), checks types and style, builds, and runs every test. Ends with a
# line "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(
  iproute2 golang-go golang-github-containerd-ttrpc-dev containernetworking-plugins
  qemu-system-x86 linux-image-amd64 busybox-static cpio gzip zstd
)
missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "test: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

npm ci --no-audit --no-fund
npm run gen
npx tsc --noEmit -p .
npx biome check .
npm run build

mkdir -p dist
set +e
npx bun --bun vitest run --reporter=default --reporter=json --outputFile=dist/vitest.json
status=$?
set -e
if [[ -f dist/vitest.json ]]; then
  node -e '
    const r = require("./dist/vitest.json");
    console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
  '
fi
exit "$status"
