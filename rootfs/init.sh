#!/bin/sh
# PID 1 of the netagent guest image (installed as /init, run by busybox sh):
# of the initramfs, or of the read-only root image that the boot
# initramfs (boot-init.sh) switched to.
#
# Mounts the API filesystems, loads the modules listed in /etc/init.modules
# (in dependency order, resolved at build time from modules.dep: the agent's
# transport and virtio_net), brings lo up, sets the hostname, loads
# /etc/init.modules.late in the background (then writes
# /run/init.modules.done), and supervises two children:
#   - netagent, respawned whenever it exits (it reads agent.server_addr= and
#     agent.log= from /proc/cmdline itself); not started with init.noagent;
#     its log goes to the console, or to /run/netagent.log when the console
#     is the debug shell's;
#   - a root shell on the serial console, only with agent.debug_console;
# and, in an image built with --front, starts /etc/init.upstream first.
# Switches (agent.debug_console, init.noagent, init.nojit) are on when bare
# or set to 1/y/yes/true/on; any other value is off (see cmdline_flag).
# SIGTERM (reboot), SIGUSR1 (halt) and SIGUSR2 (poweroff) all power off:
# the agent gets SIGTERM and its grace period, then everything else is
# killed, filesystems are synced and the VM is switched off.
# As PID 1 this shell also reaps orphans: ash's `wait` calls waitpid(-1).

export PATH=/sbin:/bin:/usr/sbin:/usr/bin
AGENT=/usr/bin/netagent
# iproute2, by path: this busybox runs its own applets before searching PATH.
IP=/sbin/ip
AGENT_LOG=/run/netagent.log

log() {
	echo "init: $*" >/dev/console
	# Kept in dmesg too; level 7 so the console does not print it twice.
	echo "<7>init: $*" >/dev/kmsg 2>/dev/null
}

# The kernel command line, split as the kernel splits it (linux
# lib/cmdline.c next_arg; the agent's src/agent/config/kernel-cmdline.ts has the
# same rules and test/unit/kernel-cmdline.test.ts runs one table of cases
# through both): words split at unquoted white space, a double quote
# toggles quoting, `p="a b"` and `"p=a b"` are both p = `a b`, a bare `--`
# ends the parameters. So `x="a agent.debug_console"` is one parameter x.
CMDLINE_FILE=/proc/cmdline

# cmdline_get NAME: the last NAME on the command line. Status 0 with its
# value printed for NAME=value, 2 for a bare NAME, 1 when absent.
cmdline_get() {
	awk -v name="$1" '
	function space(c) { return c != "" && index(" \t\n\v\f\r\240", c) > 0 }
	# Lines joined again, without the newline /proc/cmdline adds at the end.
	{ text = (NR > 1 ? text "\n" : "") $0 }
	END {
		n = length(text); p = 1; found = 1
		while (p <= n && space(substr(text, p, 1))) p++
		while (p <= n) {
			inq = 0; quoted = 0
			if (substr(text, p, 1) == "\"") { p++; inq = 1; quoted = 1 }
			eq = 0
			for (i = p; i <= n; i++) {
				c = substr(text, i, 1)
				if (space(c) && !inq) break
				if (!eq && c == "=" && i > p) eq = i
				if (c == "\"") inq = !inq
			}
			# The word is [p, i); it ends before e.
			e = i; lastq = i > p && substr(text, i - 1, 1) == "\""
			if (!eq) {
				if (quoted && lastq) e = i - 1
				key = substr(text, p, e - p); has = 0; val = ""
			} else {
				vs = eq + 1
				if (substr(text, vs, 1) == "\"") { vs++; if (lastq) e = i - 1 }
				if (quoted && lastq) e = i - 1
				key = substr(text, p, eq - p); has = 1
				val = e > vs ? substr(text, vs, e - vs) : ""
			}
			if (!has && key == "--") break
			if (key == name) { found = has ? 0 : 2; value = val }
			p = i
			while (p <= n && space(substr(text, p, 1))) p++
		}
		if (found == 0) printf "%s", value
		exit found
	}' "$CMDLINE_FILE"
}

# cmdline_flag NAME: NAME is switched on. On: a bare NAME, or the value 1,
# y, yes, true or on (any case). Anything else (0, no, false, off, empty,
# unknown words) is off: a switch that opens a root shell fails closed.
cmdline_flag() {
	flag_value=$(cmdline_get "$1")
	case $? in
	2) return 0 ;;
	0) ;;
	*) return 1 ;;
	esac
	case $flag_value in
	1 | [yY] | [yY][eE][sS] | [tT][rR][uU][eE] | [oO][nN]) return 0 ;;
	esac
	return 1
}

# run_agent OUT JIT: becomes netagent (exec: same PID), output appended to
# OUT, with a clean environment holding only PATH and the JIT switch. The
# kernel hands init every NAME=value word of its command line it does not
# understand, so init's environment is the command line's: none of it may
# reach the agent (BUN_*, LD_*, NETAGENT_*, ...). Through setsid (in place:
# this subshell leads no group), so the agent leads its own session and
# process group, where every ip it starts stays: should it die mid-change,
# the next one finds what it left by that group. With the JIT off the agent
# cannot make the group itself (bun:ffi needs the JIT).
run_agent() {
	exec env -i PATH="$PATH" BUN_JSC_useJIT="$2" setsid "$AGENT" </dev/null >>"$1" 2>&1
}

# supervise_agent: runs netagent until told to stop; a run that ends is
# logged and followed by the next one at once, unless the agent keeps dying
# young, in which case the pause doubles up to 5 s so a crash loop cannot
# eat the CPU. A restarted agent first puts back a network change its
# predecessor died in the middle of (its record in /run/netagent, docs/network-calls.md
# "A crash mid-change"), and only then answers.
supervise_agent() {
	stopping=
	pid=
	trap 'stopping=1; [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null' TERM
	if cmdline_flag agent.debug_console; then out=$AGENT_LOG; else out=/dev/console; fi
	# init.nojit turns JavaScriptCore's JIT off: under TCG every JIT-compiled
	# page is new guest code QEMU must translate again in each process, which
	# doubles the agent's start-up (and so its respawn time). The VM runner
	# sets it when there is no KVM; with KVM the JIT speeds large updates.
	if cmdline_flag init.nojit; then jit=0; else jit=1; fi
	runs=0
	pause=0
	while [ -z "$stopping" ]; do
		runs=$((runs + 1))
		read -r up _ </proc/uptime
		started=${up%.*}
		run_agent "$out" "$jit" &
		pid=$!
		log "netagent started (pid $pid, run $runs)"
		# wait returns early when the TERM trap fires; wait again for the exit.
		while :; do
			wait "$pid"
			status=$?
			kill -0 "$pid" 2>/dev/null || break
		done
		pid=
		[ -n "$stopping" ] && break
		read -r up _ </proc/uptime
		if [ $((${up%.*} - started)) -ge 5 ]; then
			pause=0
		elif [ "$pause" = 0 ]; then
			pause=0.2
		else
			pause=$(awk "BEGIN { p = $pause * 2; print (p > 5 ? 5 : p) }")
		fi
		if [ "$pause" = 0 ]; then
			log "netagent exited (status $status), respawning"
		else
			log "netagent exited (status $status), respawning in ${pause}s"
			sleep "$pause"
		fi
	done
	log "netagent stopped (status $status)"
}

# debug_shell: a root login shell on the serial console, started again
# whenever it exits. setsid + cttyhack make the tty its controlling terminal,
# so ^C reaches the foreground command and not init. The console is the
# command line's last console= (ttyS0 on x86, ttyAMA0 on arm64's -M virt).
debug_shell() {
	tty=$(cmdline_get console) || tty=ttyS0
	CONSOLE_TTY=/dev/${tty%%,*}
	while :; do
		setsid cttyhack sh -l <"$CONSOLE_TTY" >"$CONSOLE_TTY" 2>&1
		sleep 0.2
	done
}

shutdown() {
	trap '' TERM USR1 USR2
	log "$1: powering off"
	if [ -n "$agent_sup" ]; then
		kill -TERM "$agent_sup" 2>/dev/null
		# The agent drains calls in flight for up to 5 s; do not wait forever.
		(sleep 8 && kill -KILL "$agent_sup" 2>/dev/null) &
		wait "$agent_sup"
	fi
	kill -TERM -1 2>/dev/null
	sleep 0.3
	kill -KILL -1 2>/dev/null
	sync
	log "power off"
	poweroff -f
}

# Only PID 1 goes on: sourced by a test (or run by mistake on a host), this
# file defines its functions and stops before touching anything.
[ "$$" = 1 ] || return 0 2>/dev/null || exit 0

mount -t proc -o nosuid,nodev,noexec proc /proc
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
mount -t devtmpfs -o mode=0755,nosuid devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620 devpts /dev/pts
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
# The root may be the read-only image (image mode): whatever is written
# goes to tmpfs. Costs nothing until something is written.
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /var
exec </dev/console >/dev/console 2>&1

release=$(uname -r)
# load_modules LIST: insmod every module LIST names, in its order.
load_modules() {
	while read -r module; do
		[ -n "$module" ] || continue
		# In image mode the boot initramfs has loaded some already (virtio_pci).
		name=${module##*/}
		name=${name%%.ko*}
		# busybox ash's ${//}: a $(echo | tr) per module cost a fork and an
		# exec each, on the way to the agent's start and the shell's.
		[ -d "/sys/module/${name//-/_}" ] && continue
		insmod "/lib/modules/$release/$module" || log "insmod $module failed"
	done <"$1"
}
# Only what the agent's transport and the pod's links need (virtio, the
# console ports, vsock, virtio_net) is loaded before the agent starts; the
# rest (the netfilter stack, for Get/SetIPTables only) is loaded beside it,
# at low priority, so the first Check does not wait for it. MODULES_DONE
# appears once every module is in: the agent's iptables calls wait for it
# (bounded) in an image that has the late list.
MODULES_LATE=/etc/init.modules.late
MODULES_DONE=/run/init.modules.done
load_modules /etc/init.modules

"$IP" link set lo up || log "cannot bring lo up"
hostname -F /etc/hostname

# The agent behind netagent in front mode, when the image has one
# (npm run rootfs -- --front STANDIN: the tests' stand-in upstream); netagent
# waits for it to listen (netagent.upstream= in boot.json's cmdline).
if [ -x /etc/init.upstream ]; then
	/etc/init.upstream </dev/null >>/run/upstream.out 2>&1 &
	log "upstream started (pid $!)"
fi

if [ -f "$MODULES_LATE" ]; then
	(
		load_modules "$MODULES_LATE"
		: >"$MODULES_DONE"
		read -r up _ </proc/uptime
		log "all modules loaded after ${up}s"
	) &
	renice -n 19 -p $! >/dev/null 2>&1
else
	: >"$MODULES_DONE"
fi

agent_sup=
if cmdline_flag init.noagent; then
	log "init.noagent: not starting netagent"
else
	supervise_agent &
	agent_sup=$!
fi
if cmdline_flag agent.debug_console; then
	debug_shell &
fi
trap 'shutdown SIGTERM' TERM
trap 'shutdown SIGUSR1' USR1
trap 'shutdown SIGUSR2' USR2
read -r up _ </proc/uptime
log "up after ${up}s"

# PID 1 must never exit. With no child left, wait returns at once: sleep then.
while :; do
	wait
	sleep 1
done
