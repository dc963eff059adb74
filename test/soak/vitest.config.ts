/**
 * `npm run soak`: the long runs under test/soak (*.soak.ts, so the
 * test command (test/run.sh), which takes test/**\/*.test.ts, never picks them up).
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    root: fileURLToPath(new URL("../..", import.meta.url)),
    include: ["test/soak/**/*.soak.ts"],
    testTimeout: 3 * 60 * 60_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    maxWorkers: 1,
  },
});
