#!/bin/sh
# PID 1 of the boot initramfs (image mode), installed as /init.
#
# The real root is a read-only erofs image on a virtio-pmem device, mapped
# with DAX so its file pages are the host's page cache and not guest RAM
# (or, where there is no DAX, on virtio-blk). This init only reaches it:
# loads the modules listed in /etc/boot.modules (dependency order, resolved
# at build time), waits for the device /etc/boot.root names ("DEVICE
# OPTIONS": /dev/pmem0 ro,dax=always, or /dev/vda ro), mounts it with those
# options and switches root to the image's /init (rootfs/init.sh), which
# mounts /proc, /sys, /dev and its tmpfs itself.
# Any failure is printed and powers the VM off: a guest without its root
# must not sit there looking alive.

export PATH=/bin:/sbin
NEWROOT=/newroot
# Under TCG with a busy host the device can take seconds to show up.
WAIT_TENTHS=300

fail() {
	echo "boot: $*; powering off" >/dev/console
	poweroff -f
	exit 1
}

mount -t proc -o nosuid,nodev,noexec proc /proc || fail "cannot mount /proc"
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys || fail "cannot mount /sys"
mount -t devtmpfs -o mode=0755,nosuid devtmpfs /dev || fail "cannot mount /dev"

read -r ROOT_DEV ROOT_OPTIONS </etc/boot.root || fail "cannot read /etc/boot.root"
release=$(uname -r)
while read -r module; do
	[ -n "$module" ] || continue
	insmod "/lib/modules/$release/$module" || fail "insmod $module failed"
done </etc/boot.modules

tenths=0
while [ ! -b "$ROOT_DEV" ]; do
	tenths=$((tenths + 1))
	[ "$tenths" -le "$WAIT_TENTHS" ] || fail "$ROOT_DEV did not appear (is the image attached as boot.json says?)"
	sleep 0.1
done

mount -t erofs -o "$ROOT_OPTIONS" "$ROOT_DEV" "$NEWROOT" || fail "cannot mount $ROOT_DEV (erofs, $ROOT_OPTIONS)"
[ -x "$NEWROOT/init" ] || fail "$NEWROOT/init missing in the image"

# The real init mounts these itself; our stdio is the initramfs's own
# /dev/console node, so /dev is not busy.
umount /dev /sys /proc || fail "cannot unmount the boot API filesystems"
exec switch_root "$NEWROOT" /init
fail "switch_root failed"
