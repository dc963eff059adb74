#!/usr/bin/env bash
# Installs the Debian packages netagent's build, demo and tests use, if any
# is missing (Debian 12, as root). Sourced or run by test/run.sh and the demo.
set -euo pipefail
DEBIAN_PACKAGES=(
  iproute2 util-linux procps golang-go golang-github-containerd-ttrpc-dev containernetworking-plugins
  qemu-system-x86 linux-image-amd64 busybox-static cpio gzip zstd lz4 iptables erofs-utils
  linux-libc-dev # the kernel's uapi headers: test/unit/vocabulary.test.ts holds src/net/vocabulary to them
)
missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
