import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Namespace and VM tests spawn real processes; two cores are all there is.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
