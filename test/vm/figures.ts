/**
 * `bun test/vm/figures.ts [ROUNDS] [--arch x86_64|arm64] [--mode image|initramfs]`:
 * the guest image's figures, measured over ROUNDS (default 3) pairs of
 * boots of the same image (the arch's boot.json, or the mode's), alternating
 * which goes first: QEMU start to the first answered Check, next to QEMU
 * start to a shell prompt without the agent; the agent's respawn time, its
 * RSS and the guest's memory used (MemTotal - MemAvailable) after the PTP
 * scenario; image sizes. Prints medians and every run.
 */
import { readFileSync, statSync } from "node:fs";
import { loadavg } from "node:os";
import { SHELL_PROMPT } from "../../rootfs/manifest";
import { AgentService } from "../../src/gen/agent_pb";
import { IPFamily } from "../../src/gen/types_pb";
import { bootJsonPath, loadBootSpec } from "../../src/host/vm/boot-spec";
import { parseGuestArch } from "../../src/host/vm/guest-arch";
import { Vm } from "../../src/host/vm/vm";
import { ensureGuestImage, PTP_ROUTES } from "./image";

const MAC = "52:54:00:0a:f8:92";
const argv = process.argv.slice(2);
const flag = (name: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : undefined;
};
const arch = parseGuestArch(flag("--arch") ?? "x86_64");
const mode = flag("--mode") as "image" | "initramfs" | undefined;
const rounds = Number(argv[0] ?? 3);
const runs: Record<string, number>[] = [];
const guest = () => ({
  arch: arch.name,
  boot: loadBootSpec(bootJsonPath(mode, arch.guestDir)),
  mac: MAC,
  debugConsole: true,
});

async function withAgent(): Promise<Record<string, number>> {
  const vm = await Vm.start(guest());
  try {
    const prompt = vm.console.waitFor(SHELL_PROMPT, 120_000).then(() => vm.elapsed());
    const firstCheckMs = await vm.waitForAgent(120_000);
    const promptMs = await prompt;
    const client = await vm.connect();
    await vm.waitForCheck(client, 5000);
    const v4 = IPFamily.v4;
    await client.unary(
      AgentService.method.updateInterface,
      {
        interface: {
          name: "eth0",
          hwAddr: MAC,
          IPAddresses: [{ family: v4, address: "10.248.246.146", mask: "28" }],
        },
      },
      { timeoutMs: 20_000 },
    );
    await client.unary(
      AgentService.method.updateRoutes,
      {
        routes: {
          Routes: PTP_ROUTES,
        },
      },
      { timeoutMs: 20_000 },
    );
    const rss = (await vm.console.run("grep VmRSS /proc/$(pidof netagent)/status")).lines[0];
    const rssKiB = Number(/(\d+) kB/.exec(rss ?? "")?.[1]);
    const meminfo = (await vm.console.run("cat /proc/meminfo")).lines.join("\n");
    const kib = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(meminfo)?.[1]);
    const memUsedKiB = kib("MemTotal") - kib("MemAvailable");
    const pid = (await vm.console.run("pidof netagent")).lines[0];
    const t0 = performance.now();
    await vm.console.run(`kill -KILL ${pid}`);
    await vm.waitForCheck(client, 10_000, 250);
    const respawnMs = performance.now() - t0;
    client.close();
    return { firstCheckMs, promptMs, rssKiB, memUsedKiB, respawnMs };
  } finally {
    await vm.stop();
  }
}

async function withoutAgent(): Promise<number> {
  const vm = await Vm.start({ ...guest(), startAgent: false });
  try {
    await vm.console.waitFor(SHELL_PROMPT, 120_000);
    return vm.elapsed();
  } finally {
    await vm.stop();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

ensureGuestImage(arch.name);
console.log(`${arch.name}, ${mode ?? "boot.json's"} mode (${bootJsonPath(mode, arch.guestDir)})`);
for (let i = 0; i < rounds; i++) {
  const load = loadavg()[0] ?? 0;
  let a: Record<string, number>;
  let noAgentPromptMs: number;
  if (i % 2 === 0) {
    a = await withAgent();
    noAgentPromptMs = await withoutAgent();
  } else {
    noAgentPromptMs = await withoutAgent();
    a = await withAgent();
  }
  const run = { ...a, noAgentPromptMs, hostLoad1m: load };
  runs.push(run);
  console.log(
    `run ${i + 1}: ${Object.entries(run)
      .map(([k, v]) => `${k}=${Math.round(v * 10) / 10}`)
      .join(" ")}`,
  );
}
const keys = Object.keys(runs[0] ?? {});
console.log(
  `median of ${rounds}: ${keys.map((k) => `${k}=${Math.round(median(runs.map((r) => r[k] as number)))}`).join(" ")}`,
);
const manifest = readFileSync(`${arch.guestDir}/manifest.txt`, "utf8");
console.log(
  manifest
    .split("\n")
    .filter((l) => /^# (unpacked|compressed|agent|kernel|pvh|image mode|architecture)/.test(l))
    .join("\n"),
);
for (const f of ["initrd.img", "root.erofs", "boot-initrd.img"])
  console.log(`${f}: ${statSync(`${arch.guestDir}/${f}`).size} bytes`);
