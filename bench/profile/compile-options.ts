/**
 * Which `bun build --compile` options change the agent's size, start time
 * and memory: builds src/agent/main.ts once per variant into
 * dist/compile-variants/, then starts every variant round-robin (the order
 * rotating each round, so drift hits all alike): exec -> first answered
 * Check over a unix socket, then RSS split (RssAnon / RssFile) after
 * `--settle-ms`. Prints one line per variant: size, median start, median
 * RSS, and the median per-round ratio of start to the first variant's.
 *
 *   bun bench/profile/compile-options.ts [--rounds 11] [--settle-ms 500] [--only a,b] [--nojit]
 *                                        [--order FILE]
 *
 * --order FILE adds a variant built with --bytecode-order=FILE (an order
 * file a run of the agent wrote with BUN_BYTECODE_ORDER_OUT=FILE).
 * --nojit runs with BUN_JSC_useJIT=0, as the guest's init does under TCG.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../../test/helpers/tmp";
import { BUN, ROOT, statusKiB, untilCheck } from "../lib/proc";
import { median } from "../lib/stats";

const argv = process.argv.slice(2);
const opt = (k: string, d: string) => {
  const i = argv.indexOf(k);
  return i >= 0 ? (argv[i + 1] ?? d) : d;
};
const rounds = Number(opt("--rounds", "11"));
const settleMs = Number(opt("--settle-ms", "500"));
const only = argv.includes("--only") ? opt("--only", "").split(",") : undefined;
const env = argv.includes("--nojit") ? { ...process.env, BUN_JSC_useJIT: "0" } : process.env;

const BASE = ["--compile", "--sourcemap=none", "--target=bun-linux-x64"];
/** The variants, the first being the reference (build/compile.ts's choice). */
const VARIANTS: [string, string[]][] = [
  [
    "chosen",
    [
      ...BASE,
      "--bytecode",
      "--minify",
      "--no-compile-autoload-dotenv",
      "--no-compile-autoload-bunfig",
    ],
  ],
  ["previous", [...BASE, "--bytecode", "--minify"]],
  ["no-bytecode", [...BASE, "--minify"]],
  ["no-minify", [...BASE, "--bytecode"]],
  ["plain", [...BASE]],
  [
    "sourcemap-linked",
    [
      ...BASE.filter((f) => !f.startsWith("--sourcemap")),
      "--bytecode",
      "--minify",
      "--sourcemap=linked",
    ],
  ],
  [
    "baseline-cpu",
    [
      ...BASE.filter((f) => !f.startsWith("--target")),
      "--target=bun-linux-x64-baseline",
      "--bytecode",
      "--minify",
    ],
  ],
  ["bytecode-depth-1", [...BASE, "--bytecode", "--minify", "--bytecode-depth=1"]],
  ["no-optimize-bytecode", [...BASE, "--bytecode", "--minify", "--no-optimize-bytecode"]],
  ["smol", [...BASE, "--bytecode", "--minify", "--compile-exec-argv=--smol"]],
];
// The chosen flags with JavaScriptCore's tier-up thresholds scaled (Bun.unsafe.setJITPolicy).
for (const scale of [1, 4, 16]) {
  const [, chosenFlags] = VARIANTS[0] as [string, string[]];
  VARIANTS.push([`jit-policy-${scale}`, [...chosenFlags, `--compile-jit-policy=${scale}`]]);
}
if (argv.includes("--order")) {
  const [, chosenFlags] = VARIANTS[0] as [string, string[]];
  VARIANTS.push(["bytecode-order", [...chosenFlags, `--bytecode-order=${opt("--order", "")}`]]);
}

const outDir = join(ROOT, "dist/compile-variants");
mkdirSync(outDir, { recursive: true });
const chosen = VARIANTS.filter(
  ([name]) => only === undefined || name === "chosen" || only.includes(name),
);
const built: { name: string; path: string; size: number; buildS: number }[] = [];
for (const [name, flags] of chosen) {
  const path = join(outDir, name);
  const t0 = performance.now();
  const r = spawnSync(BUN, ["build", ...flags, "src/agent/main.ts", "--outfile", path], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (r.status !== 0) {
    console.log(`${name}: build failed: ${r.stderr.trim().split("\n").slice(-2).join(" ")}`);
    continue;
  }
  built.push({ name, path, size: statSync(path).size, buildS: (performance.now() - t0) / 1000 });
  process.stderr.write(`built ${name}\n`);
}

const dir = tempDir("netagent-compile-");
interface Run {
  ms: number;
  anon: number;
  file: number;
}
async function once(bin: string, sock: string): Promise<Run> {
  const t0 = performance.now();
  const p = spawn(bin, ["--listen", `unix://${sock}`], { stdio: "ignore", env });
  try {
    await untilCheck(sock, () => p.exitCode === null && p.signalCode === null);
    const ms = performance.now() - t0;
    await Bun.sleep(settleMs);
    const pid = p.pid as number;
    return { ms, anon: statusKiB(pid, "RssAnon"), file: statusKiB(pid, "RssFile") };
  } finally {
    const exited = new Promise((r) => p.once("exit", r));
    if (p.pid !== undefined && p.exitCode === null) process.kill(p.pid, "SIGKILL");
    await exited;
  }
}

try {
  const runs = new Map<string, Run[]>(built.map((b) => [b.name, []]));
  for (const b of built) await once(b.path, dir.join(`warm-${b.name}.sock`)); // page cache
  for (let i = 0; i < rounds; i++) {
    const order = built.map((_, j) => built[(i + j) % built.length] as (typeof built)[number]);
    for (const b of order)
      runs.get(b.name)?.push(await once(b.path, dir.join(`${b.name}-${i}.sock`)));
  }
  const ref = runs.get(built[0]?.name ?? "") ?? [];
  console.log(
    `${rounds} rounds, settle ${settleMs} ms${env.BUN_JSC_useJIT === "0" ? ", BUN_JSC_useJIT=0" : ""}`,
  );
  console.log(
    "| variant | size MiB | build s | start ms (median) | start / chosen (median per round) | RssAnon MiB | RssFile MiB |",
  );
  console.log("|---|---|---|---|---|---|---|");
  for (const b of built) {
    const r = runs.get(b.name) ?? [];
    const ratio = median(r.map((x, i) => x.ms / (ref[i]?.ms ?? Number.NaN)));
    console.log(
      `| ${b.name} | ${(b.size / 1048576).toFixed(1)} | ${b.buildS.toFixed(1)} | ${median(r.map((x) => x.ms)).toFixed(1)} | ${ratio.toFixed(2)} | ${(median(r.map((x) => x.anon)) / 1024).toFixed(1)} | ${(median(r.map((x) => x.file)) / 1024).toFixed(1)} |`,
    );
  }
} finally {
  dir.remove();
}
