/**
 * Compiles the agent and the CLI into self-contained executables:
 * dist/netagent and dist/netagentctl. `--target bun-linux-x64-baseline`
 * builds for guests whose CPUs lack AVX2. `--arch arm64` builds the agent
 * alone for an arm64 guest, dist/netagent-arm64 (the CLI runs on the host):
 * Bun takes that runtime (bun-linux-aarch64, an npm package) from the npm
 * registry on first use and keeps it in its cache; the guest fetches nothing.
 */
import { $ } from "bun";
import { GUEST_ARCHES, parseGuestArch } from "../src/host/vm/guest-arch";

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? (args[i + 1] ?? "") : undefined;
};
let arch = GUEST_ARCHES.x86_64;
try {
  arch = parseGuestArch(flag("--arch") ?? "x86_64");
} catch (err) {
  console.error(`build: ${(err as Error).message}`);
  process.exit(2);
}
const target = flag("--target") ?? arch.bunTarget;
if (!target || !/^bun-linux-(x64|arm64)(-baseline|-modern)?(-musl)?$/.test(target)) {
  console.error(`build: invalid --target ${JSON.stringify(target)}`);
  process.exit(2);
}

/**
 * The agent's JavaScriptCore tier-up thresholds, scaled by 4 from its
 * start (--compile-jit-policy, as Bun.unsafe.setJITPolicy): the agent's
 * calls are few and small (a pod's sync runs each handler once or twice),
 * so compiling that code costs more CPU than it saves, on the JIT threads
 * beside the call on a guest's one or two vCPUs. Loops over thousands of
 * routes still reach the compilers within their first thousands of turns.
 * Measured against the same flags at 1 (load 0.5-1.4, 2 cores, interleaved):
 *   pod sync (bun bench/profile/pod-sync-ab.ts --pairs 25 --a-bin OLD --b-bin NEW): 0.85;
 *   UpdateRoutes 10,000, a fresh agent's first call and warm
 *     (bench/profile/compare-agents.ts --n 10000 --pairs 7 [--first-call]): 1.00 and 1.00;
 *   Go client at concurrency 16 (bench/profile/go-client-ab.ts --rounds 8): 1.04 calls/s,
 *     CPU per call 0.99;
 *   start to first Check 1.00, RssAnon 8.3 -> 7.6 MiB (bench/profile/compile-options.ts
 *     --only jit-policy-1,jit-policy-4,jit-policy-16 --rounds 15).
 * The price: code that runs hundreds of times tiers up later. Over 150
 * pairs of pod syncs (the same agent syncing 150 times) the median is 1.10
 * to 1.14; a pod's agent syncs a handful of times, and the Check path
 * (thousands of calls) is not slower (above). Switching back to 1 after
 * 100 calls gave 0.97 over 25 pairs and 1.05 over 150: not kept.
 * 16 gave 0.83 on the pod sync but 1.11 on the 10,000-route first call.
 * Under TCG the guest's init turns the JIT off (BUN_JSC_useJIT=0) and this changes nothing.
 */
const AGENT_JIT_POLICY = 4;

const agent = [
  "src/agent/main.ts",
  arch.agent,
  [`--compile-jit-policy=${AGENT_JIT_POLICY}`],
] as const;
/**
 * The CLI's, scaled by 4 as well: `follow` runs for the node's life, and
 * the code JavaScriptCore compiles (its optimizing tiers' output, their
 * profiling data) stays in its memory. Measured with `bun
 * bench/rows/follow.ts --sandboxes 40 --no-watch --quiet-s 5`, three
 * interleaved pairs against 1 (2 cores, nothing else running): the
 * follower tree 88.9-90.5 MiB PSS against 95.4-96.2 MiB (RssAnon 36-38
 * MiB against 42); all 40 equal after 11.5-12.5 s against 11.3-11.8 s;
 * one change median 109-125 ms against 106-119 ms; the burst in 20 pods
 * 1.53-1.89 s against 1.51-1.83 s. At 16: 87.1-87.6 MiB, start
 * 12.3-12.6 s (two runs, `--no-latency`): not taken.
 */
const CLI_JIT_POLICY = 4;

const cli = [
  "src/host/cli.ts",
  "dist/netagentctl",
  [`--compile-jit-policy=${CLI_JIT_POLICY}`],
] as const;
const entries = arch.name === "x86_64" ? [agent, cli] : [agent];

/**
 * The options, measured with bench/profile/compile-options.ts (Bun 1.4.5,
 * host, 11 rounds interleaved; exec -> first Check, RSS 0.5 s later):
 *   --bytecode: JavaScriptCore bytecode instead of source, so start-up
 *     skips parsing: without it start is 1.63x and RssAnon +1.1 MiB (under
 *     QEMU TCG the agent's start went from ~4 s to ~0.4 s).
 *   --minify: without it start is 1.31x (more source to load), same size.
 *   --sourcemap=none: a linked map changed neither start nor RSS, and the
 *     guest has nobody to read it.
 *   --no-compile-autoload-dotenv / --no-compile-autoload-bunfig: by default
 *     a compiled binary reads .env (into process.env) and bunfig.toml from
 *     its working directory; the agent's environment is init's `env -i`
 *     and nothing else, and the CLI should not change with the directory
 *     it is run from. Start within noise of the previous build.
 * Measured and left out: --target ...-baseline (same size, start within
 * noise: kept as npm run build:baseline for CPUs without AVX2),
 * --bytecode-depth=1 (1.07x), --no-optimize-bytecode (1.15x),
 * --compile-exec-argv=--smol (RssAnon -0.3 MiB for 1.46x start).
 */
const FLAGS = [
  "--compile",
  "--bytecode",
  "--minify",
  "--sourcemap=none",
  "--no-compile-autoload-dotenv",
  "--no-compile-autoload-bunfig",
];

for (const [entry, out, extra] of entries) {
  await $`bun build ${FLAGS} ${extra} --target=${target} ${entry} --outfile ${out}`.quiet();
  const size = Bun.file(out).size;
  console.log(`${out}  ${(size / 1048576).toFixed(1)} MiB  (${target})`);
}
