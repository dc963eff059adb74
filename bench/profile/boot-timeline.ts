/**
 * `bun bench/profile/boot-timeline.ts GUEST ROUNDS`: boots GUEST (its
 * boot.json, or BOOT_JSON) with the agent, ROUNDS times, and prints when
 * each console line that init or the agent writes appeared, by QEMU start
 * and by QEMU's CPU time then (bench/qemu-cpu.ts), up to the first
 * answered Check: where the boot's CPU goes between init's start of the
 * agent, its "listening" and the answer.
 */
import { loadavg } from "node:os";
import { loadBootSpec } from "../../src/host/vm/boot-spec";
import { Vm } from "../../src/host/vm/vm";
import { cpuMs } from "../qemu-cpu";

const [guest, roundsArg] = process.argv.slice(2);
if (!guest) {
  console.error("usage: bun bench/profile/boot-timeline.ts GUEST ROUNDS");
  process.exit(2);
}
const json = process.env.BOOT_JSON ?? "boot.json";
for (let i = 0; i < Number(roundsArg ?? 1); i++) {
  const marks: string[] = [];
  let pending = "";
  let vm: Vm | undefined;
  const t0 = performance.now();
  vm = await Vm.start({
    boot: loadBootSpec(`${guest}/${json}`),
    onConsole: (chunk) => {
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        const cpu = vm ? cpuMs(vm.pid) : NaN;
        const t = Math.round(performance.now() - t0);
        marks.push(`${t} ms (QEMU CPU ${cpu} ms) ${line.trim().slice(0, 100)}`);
      }
    },
  });
  try {
    const end = await vm.waitForAgent(120_000);
    marks.push(`${Math.round(end)} ms (QEMU CPU ${cpuMs(vm.pid)} ms) first Check answered`);
  } finally {
    await vm.stop();
  }
  console.log(`round ${i + 1}, load ${(loadavg()[0] ?? 0).toFixed(1)}:`);
  for (const m of marks) console.log(`  ${m}`);
}
