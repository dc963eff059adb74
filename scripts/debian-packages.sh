#!/usr/bin/env bash
# Installs the Debian packages netagent's build, demo and tests use, if any
# is missing (Debian 12, as root). Sourced or run by test/run.sh and the demo.
# The arm64 guest (npm run rootfs -- --arch arm64) needs arm64 among dpkg's
# architectures, for apt-get download of its packages (never installed here),
# qemu-system-arm for qemu-system-aarch64, and binutils' readelf for the ELF
# reader's test. systemd for systemd-analyze, which checks the front-mode
# unit files (test/interop/kata-image.test.ts).
set -euo pipefail
DEBIAN_PACKAGES=(
  iproute2 util-linux procps golang-go golang-github-containerd-ttrpc-dev containernetworking-plugins
  qemu-system-x86 linux-image-amd64 busybox-static cpio gzip zstd lz4 iptables erofs-utils
  qemu-system-arm binutils kmod systemd
)
update=
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "dpkg --add-architecture arm64"
  dpkg --add-architecture arm64
  update=1
fi
missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})) || [[ -n $update ]]; then
  apt-get update -qq
fi
if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
