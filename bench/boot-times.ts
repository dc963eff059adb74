/**
 * `bun bench/boot-times.ts ROUNDS DIR...`: the guest's three boot times for
 * each guest directory (dist/guest, or a copy of another build's), its
 * boot.json (image mode by default) on the VM runner's QEMU line (TCG
 * without KVM, 512 MiB, 1 vCPU), the directories' boots interleaved and
 * their order alternated each round:
 *   - kernel: the guest's uptime at "Freeing unused kernel image" (the
 *     kernel hands over to init), read from dmesg in the shell boot (the
 *     guest boots quiet, so the console does not show it; the time before
 *     the kernel's clock starts, firmware and loading, is not in it);
 *   - shell: QEMU start -> the debug shell's prompt with init.noagent
 *     (init's own work);
 *   - check: QEMU start -> the first answered grpc.Health/Check.
 * Beside each time, the CPU time QEMU had used by then (bench/qemu-cpu.ts:
 * on a loaded host the wall times grow with the wait for a core, QEMU's
 * CPU time much less). Prints every run with the host's 1-minute load,
 * then medians and the ratios check / shell (wall and CPU) per directory.
 */
import { loadavg } from "node:os";
import { SHELL_PROMPT } from "../rootfs/manifest";
import { loadBootSpec } from "../src/host/vm/boot-spec";
import { Vm } from "../src/host/vm/vm";
import { cpuMs } from "./qemu-cpu";

const HANDED_OVER = /^\[\s*(\d+\.\d+)\] Freeing unused kernel image/m;
const [roundsArg, ...dirs] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 3);
if (dirs.length === 0) dirs.push("dist/guest");
const json = process.env.BOOT_JSON ?? "boot.json";

async function boot(dir: string, agent: boolean) {
  const vm = await Vm.start({
    boot: loadBootSpec(`${dir}/${json}`),
    debugConsole: !agent,
    startAgent: agent,
  });
  try {
    if (agent) {
      const end = await vm.waitForAgent(120_000);
      return { kernel: NaN, end, cpu: cpuMs(vm.pid) };
    }
    await vm.console.waitFor(SHELL_PROMPT, 120_000);
    const end = vm.elapsed();
    const cpu = cpuMs(vm.pid);
    const dmesg = (await vm.console.run("dmesg", 60_000)).lines.join("\n");
    return { kernel: 1000 * Number(HANDED_OVER.exec(dmesg)?.[1]), end, cpu };
  } finally {
    await vm.stop();
  }
}

type Run = {
  kernel: number;
  shell: number;
  check: number;
  shellCpu: number;
  checkCpu: number;
  load: number;
};
const runs = new Map<string, Run[]>(dirs.map((d) => [d, []]));
for (let i = 0; i < rounds; i++) {
  const order = i % 2 === 0 ? dirs : [...dirs].reverse();
  for (const dir of order) {
    const load = loadavg()[0] ?? 0;
    const a = await boot(dir, true);
    const s = await boot(dir, false);
    const run = {
      kernel: s.kernel,
      shell: s.end,
      check: a.end,
      shellCpu: s.cpu,
      checkCpu: a.cpu,
      load,
    };
    runs.get(dir)?.push(run);
    console.log(
      `round ${i + 1} ${dir}: kernel ${Math.round(run.kernel)} ms, shell ${Math.round(run.shell)} ms, check ${Math.round(run.check)} ms, QEMU CPU shell ${run.shellCpu} ms check ${run.checkCpu} ms, load ${load.toFixed(1)}`,
    );
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
for (const [dir, rs] of runs) {
  const m = (k: keyof Run) => median(rs.map((r) => r[k]));
  console.log(
    `median of ${rs.length} ${dir}: kernel ${Math.round(m("kernel"))} ms, shell ${Math.round(m("shell"))} ms, check ${Math.round(m("check"))} ms, check/shell ${(m("check") / m("shell")).toFixed(2)}, QEMU CPU shell ${m("shellCpu")} ms check ${m("checkCpu")} ms check/shell ${(m("checkCpu") / m("shellCpu")).toFixed(2)}, load ${m("load").toFixed(1)}`,
  );
}
