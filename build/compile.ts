/**
 * Compiles the agent and the CLI into self-contained executables:
 * dist/netagent and dist/netagentctl. `--target bun-linux-x64-baseline`
 * builds for guests whose CPUs lack AVX2.
 */
import { $ } from "bun";

const args = process.argv.slice(2);
const ti = args.indexOf("--target");
const target = ti >= 0 ? args[ti + 1] : "bun-linux-x64";
if (!target || !/^bun-linux-(x64|arm64)(-baseline|-modern)?(-musl)?$/.test(target)) {
  console.error(`build: invalid --target ${JSON.stringify(target)}`);
  process.exit(2);
}

const entries = [
  ["src/agent/main.ts", "dist/netagent"],
  ["src/host/cli.ts", "dist/netagentctl"],
] as const;

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

for (const [entry, out] of entries) {
  await $`bun build ${FLAGS} --target=${target} ${entry} --outfile ${out}`.quiet();
  const size = Bun.file(out).size;
  console.log(`${out}  ${(size / 1048576).toFixed(1)} MiB  (${target})`);
}
