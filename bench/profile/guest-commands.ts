/**
 * `bun bench/profile/guest-commands.ts GUEST ROUNDS CMD...`: boots GUEST
 * (a guest directory; its boot.json, or BOOT_JSON) once per round with
 * init.noagent and the debug shell, on the VM runner's QEMU line (TCG
 * without KVM), and runs each command twice in a row: "first" is its
 * first run in that boot (QEMU has translated none of its code yet, as
 * for the agent at boot), "again" the second. Each run is timed by the
 * guest's /proc/uptime and by QEMU's CPU time meanwhile (bench/qemu-cpu.ts;
 * both in 10 ms steps), with the minor faults it took (the shell's
 * cminflt). The order of the commands is alternated each round.
 * WARMUP=CMD runs CMD once first in each boot (untimed), so the code every
 * command shares (libc, the kernel's exec and fault paths) is translated
 * before the first timed one. Prints every run with the host's 1-minute
 * load, then medians per command. Executables get into an image with
 * `bun rootfs/build.ts --extra FILE,...` (at /opt/NAME).
 */
import { loadavg } from "node:os";
import { SHELL_PROMPT } from "../../rootfs/manifest";
import { loadBootSpec } from "../../src/host/vm/boot-spec";
import { Vm } from "../../src/host/vm/vm";
import { cpuMs } from "../qemu-cpu";

const [guest, roundsArg, ...commands] = process.argv.slice(2);
if (!guest || commands.length === 0) {
  console.error("usage: bun bench/profile/guest-commands.ts GUEST ROUNDS CMD...");
  process.exit(2);
}
const rounds = Number(roundsArg ?? 3);
const json = process.env.BOOT_JSON ?? "boot.json";

type Time = { wall: number; cpu: number; faults: number };

/** Runs `command` in the guest: its duration by the guest's clock and QEMU's CPU meanwhile. */
async function timed(vm: Vm, command: string): Promise<Time> {
  // cminflt of the shell: the minor faults of the children it has waited for.
  const faults = "$(awk '{print $11}' /proc/$$/stat)";
  const script = `f=${faults}; read a _ </proc/uptime; ${command} >/dev/null 2>&1; s=$?; read b _ </proc/uptime; echo "@T $a $b $s $f ${faults}"`;
  const cpu0 = cpuMs(vm.pid);
  const { lines } = await vm.console.run(script, 300_000);
  const cpu = cpuMs(vm.pid) - cpu0;
  const m = lines
    .map((l) => /@T (\d+\.\d+) (\d+\.\d+) (\d+) (\d+) (\d+)/.exec(l))
    .find((x) => x !== null);
  if (!m) throw new Error(`${command}: no time in ${lines.join("\n")}`);
  if (m[3] !== "0") throw new Error(`${command}: exit ${m[3]}`);
  const wall = Math.round(1000 * (Number(m[2]) - Number(m[1])));
  return { wall, cpu, faults: Number(m[5]) - Number(m[4]) };
}

function show(t: Time): string {
  return `${t.wall} ms (QEMU CPU ${t.cpu} ms, ${t.faults} minor faults)`;
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
  faults: median(ts.map((t) => t.faults)),
});
for (const [command, t] of times) {
  console.log(
    `median of ${t.first.length} ${command}: first ${show(medianTime(t.first))}, again ${show(medianTime(t.again))}`,
  );
}
