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

for (const [entry, out] of entries) {
  // --bytecode: JavaScriptCore bytecode instead of source, so start-up skips
  // parsing; under QEMU TCG that takes the agent's start from ~4 s to ~0.4 s.
  await $`bun build --compile --bytecode --minify --sourcemap=none --target=${target} ${entry} --outfile ${out}`.quiet();
  const size = Bun.file(out).size;
  console.log(`${out}  ${(size / 1048576).toFixed(1)} MiB  (${target})`);
}
