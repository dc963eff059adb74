/**
 * Builds the client library that package.json exports as `netagent/client`:
 * dist/client/index.js (ESM for Node 20+ and Bun; the package's own
 * dependencies stay imports, resolved in the user's node_modules; vsock's
 * bun:ffi part is a chunk loaded only for a vsock address) and its
 * declarations under dist/client/types (tsc, tsconfig.client.json), the
 * generated message types among them: a user needs no `buf generate`.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { $ } from "bun";
import pkg from "../package.json" with { type: "json" };

const OUT = "dist/client";
rmSync(OUT, { recursive: true, force: true });
const built = await Bun.build({
  entrypoints: ["src/client/index.ts"],
  outdir: OUT,
  target: "node",
  format: "esm",
  splitting: true,
  external: [...Object.keys(pkg.dependencies), "bun:ffi"],
});
if (!built.success) {
  for (const log of built.logs) console.error(log);
  process.exit(1);
}
await $`npx tsc -p tsconfig.client.json`;
// tsc keeps the sources' extensionless specifiers; Node's ESM resolution
// (a user's `moduleResolution: nodenext`) needs the `.js` a file will have.
const TYPES = join(OUT, "types");
for (const file of readdirSync(TYPES, { recursive: true, encoding: "utf8" })) {
  if (!file.endsWith(".d.ts")) continue;
  const path = join(TYPES, file);
  const text = readFileSync(path, "utf8").replace(
    /((?:from|import)\s*\(?\s*")(\.{1,2}\/[^"]+?)(?<!\.js)(")/g,
    "$1$2.js$3",
  );
  writeFileSync(path, text);
}
for (const o of built.outputs)
  console.log(`${o.path.slice(process.cwd().length + 1)}  ${o.size} B`);
console.log(`${OUT}/types  (declarations, tsconfig.client.json)`);
