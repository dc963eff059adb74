/**
 * `bun test/vm/figures.ts [ROUNDS]`: the guest image's figures, measured
 * over ROUNDS (default 3) pairs of boots of the same image, alternating
 * which goes first: QEMU start to the first answered Check, next to QEMU
 * start to a shell prompt without the agent; the agent's respawn time and
 * its RSS after the PTP scenario; image sizes. Prints medians and every run.
 */
import { readFileSync, statSync } from "node:fs";
import { loadavg } from "node:os";
import { SHELL_PROMPT } from "../../rootfs/manifest";
import { AgentService } from "../../src/gen/agent_pb";
import { IPFamily } from "../../src/gen/types_pb";
import { Vm } from "../../src/host/vm";
import { ensureGuestImage, PTP_ROUTES } from "./image";

const MAC = "52:54:00:0a:f8:92";
const rounds = Number(process.argv[2] ?? 3);
const runs: Record<string, number>[] = [];

async function withAgent(): Promise<Record<string, number>> {
  const vm = await Vm.start({ mac: MAC, debugConsole: true });
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
    const pid = (await vm.console.run("pidof netagent")).lines[0];
    const t0 = performance.now();
    await vm.console.run(`kill -KILL ${pid}`);
    await vm.waitForCheck(client, 10_000, 250);
    const respawnMs = performance.now() - t0;
    client.close();
    return { firstCheckMs, promptMs, rssKiB, respawnMs };
  } finally {
    await vm.stop();
  }
}

async function withoutAgent(): Promise<number> {
  const vm = await Vm.start({ mac: MAC, debugConsole: true, startAgent: false });
  try {
    await vm.console.waitFor(SHELL_PROMPT, 120_000);
    return vm.elapsed();
  } finally {
    await vm.stop();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

ensureGuestImage();
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
const manifest = readFileSync("dist/guest/manifest.txt", "utf8");
console.log(
  manifest
    .split("\n")
    .filter((l) => /^# (unpacked|compressed|agent|kernel|pvh)/.test(l))
    .join("\n"),
);
console.log(`initrd.img: ${statSync("dist/guest/initrd.img").size} bytes`);
