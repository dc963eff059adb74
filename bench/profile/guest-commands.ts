/**
 * `bun bench/profile/guest-commands.ts GUEST ROUNDS CMD...`: boots GUEST
 * (a guest directory; its boot.json, or BOOT_JSON) once per round with
 * init.noagent and the debug shell, on the VM runner's QEMU line (TCG
 * without KVM), and times each command in the guest, by the guest's
 * /proc/uptime (10 ms steps) and by the CPU time QEMU spent meanwhile
 * (/proc/PID/stat utime+stime, 10 ms steps: on a loaded host the guest's
 * clock runs on while QEMU waits for a core, its CPU time does not), twice
 * in a row: "first" is the command's
 * first run in that boot (QEMU has translated none of its code yet, as
 * for the agent at boot), "again" the second. The commands' order is
 * alternated each round. WARMUP=CMD runs CMD once first in each boot
 * (untimed), so the code every command shares (libc, the kernel's exec
 * and fault paths) is translated before the first timed one. Prints every time with the host's 1-minute load,
 * then medians per command. Used to compare executables put into an image
 * (the agent's own start under TCG: bench/README.md, issue 25).
 */
import { loadavg } from "node:os";
import { SHELL_PROMPT } from "../../rootfs/manifest";
import { loadBootSpec } from "../../src/host/boot-spec";
import { Vm } from "../../src/host/vm";
import { cpuMs } from "../qemu-cpu";

const [guest, roundsArg, ...commands] = process.argv.slice(2);
if (!guest || commands.length === 0) {
  console.error("usage: bun bench/profile/guest-commands.ts GUEST ROUNDS CMD...");
  process.exit(2);
}
const rounds = Number(roundsArg ?? 3);
const json = process.env.BOOT_JSON ?? "boot.json";

type Time = { wall: number; cpu: number };

/** Runs `command` in the guest: its duration by the guest's clock and QEMU's CPU meanwhile. */
async function timed(vm: Vm, command: string): Promise<Time> {
  const script = `read a _ </proc/uptime; ${command} >/dev/null 2>&1; s=$?; read b _ </proc/uptime; echo "@T $a $b $s"`;
  const cpu0 = cpuMs(vm.pid);
  const { lines } = await vm.console.run(script, 300_000);
  const cpu = cpuMs(vm.pid) - cpu0;
  const m = lines.map((l) => /@T (\d+\.\d+) (\d+\.\d+) (\d+)/.exec(l)).find((x) => x !== null);
  if (!m) throw new Error(`${command}: no time in ${lines.join("\n")}`);
  if (m[3] !== "0") throw new Error(`${command}: exit ${m[3]}`);
  return { wall: Math.round(1000 * (Number(m[2]) - Number(m[1]))), cpu };
}

function show(t: Time): string {
  return `${t.wall} ms (QEMU CPU ${t.cpu} ms)`;
}

type Times = { first: Time[]; again: Time[] };
const times = new Map<string, Times>(commands.map((c) => [c, { first: [], again: [] }]));
for (let i = 0; i < rounds; i++) {
  const order = i % 2 === 0 ? commands : [...commands].reverse();
  const vm = await Vm.start({
    boot: loadBootSpec(`${guest}/${json}`),
    debugConsole: true,
    startAgent: false,
  });
  try {
    await vm.console.waitFor(SHELL_PROMPT, 120_000);
    if (process.env.WARMUP) await timed(vm, process.env.WARMUP);
    for (const command of order) {
      const load = loadavg()[0] ?? 0;
      const first = await timed(vm, command);
      const again = await timed(vm, command);
      times.get(command)?.first.push(first);
      times.get(command)?.again.push(again);
      console.log(
        `round ${i + 1} ${command}: first ${show(first)}, again ${show(again)}, load ${load.toFixed(1)}`,
      );
    }
  } finally {
    await vm.stop();
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const medianTime = (ts: Time[]) => ({
  wall: median(ts.map((t) => t.wall)),
  cpu: median(ts.map((t) => t.cpu)),
});
for (const [command, t] of times) {
  console.log(
    `median of ${t.first.length} ${command}: first ${show(medianTime(t.first))}, again ${show(medianTime(t.again))}`,
  );
}
