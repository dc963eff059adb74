#!/bin/sh
# install.sh ROOTFS [--netagent PATH] [--mode auto|systemd|init]
#
# Puts netagent in front of the Kata agent in an unpacked guest root
# (osbuilder's rootfs directory, before image-builder or initrd-builder):
#   systemd images (kata-agent.service): netagent.service, enabled in
#     kata-containers.target, and kata-agent.service.d/10-netagent.conf,
#     which moves the agent to unix:///run/kata-agent.sock;
#   agent-as-init images (AGENT_INIT=yes: /sbin/init is the agent): the
#     agent moves to /usr/bin/kata-agent and netagent-init becomes /sbin/init.
# --mode auto (default) tells them apart by kata-agent.service. netagent
# itself goes to /usr/bin/netagent (default PATH: dist/netagent). The image
# also needs iproute2's ip (and iptables for GetIPTables/SetIPTables).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=${1:?usage: install.sh ROOTFS [--netagent PATH] [--mode auto|systemd|init]}
shift
netagent=$here/../../dist/netagent
mode=auto
while [ $# -gt 0 ]; do
	case $1 in
	--netagent) netagent=${2:?--netagent needs a path}; shift 2 ;;
	--mode) mode=${2:?--mode needs auto, systemd or init}; shift 2 ;;
	*) echo "install.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -d "$root" ] || { echo "install.sh: $root is not a directory" >&2; exit 2; }
[ -x "$netagent" ] || { echo "install.sh: $netagent is not an executable (npm run build)" >&2; exit 2; }

unit=
for d in usr/lib/systemd/system lib/systemd/system etc/systemd/system; do
	[ -f "$root/$d/kata-agent.service" ] && unit=$d && break
done
if [ "$mode" = auto ]; then
	if [ -n "$unit" ]; then mode=systemd
	elif [ -f "$root/sbin/init" ] && [ ! -L "$root/sbin/init" ]; then mode=init
	else echo "install.sh: neither kata-agent.service nor an agent as /sbin/init in $root" >&2; exit 1
	fi
fi

install -D -m 0755 "$netagent" "$root/usr/bin/netagent"
install -D -m 0644 "$here/../../docs/front-mode.md" "$root/usr/share/doc/netagent/front-mode.md"
case $mode in
systemd)
	[ -n "$unit" ] || { echo "install.sh: no kata-agent.service in $root" >&2; exit 1; }
	install -D -m 0644 "$here/netagent.service" "$root/usr/lib/systemd/system/netagent.service"
	install -D -m 0644 "$here/10-netagent.conf" "$root/etc/systemd/system/kata-agent.service.d/10-netagent.conf"
	mkdir -p "$root/etc/systemd/system/kata-containers.target.wants"
	ln -sf /usr/lib/systemd/system/netagent.service \
		"$root/etc/systemd/system/kata-containers.target.wants/netagent.service"
	;;
init)
	if [ ! -e "$root/usr/bin/kata-agent" ]; then
		mkdir -p "$root/usr/bin"
		mv "$root/sbin/init" "$root/usr/bin/kata-agent"
	fi
	install -m 0755 "$here/netagent-init" "$root/sbin/init"
	;;
*) echo "install.sh: --mode: expected auto, systemd or init, got $mode" >&2; exit 2 ;;
esac

found_ip=
for p in usr/sbin/ip sbin/ip usr/bin/ip bin/ip; do
	[ -e "$root/$p" ] && [ ! -L "$root/$p" ] && found_ip=$p && break
done
[ -n "$found_ip" ] || echo "install.sh: warning: no iproute2 ip in $root (netagent runs ip -json -batch)" >&2
echo "install.sh: netagent installed in front of the Kata agent ($mode) in $root"
