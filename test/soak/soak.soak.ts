/**
 * `npm run soak`: 1,000,000 Check calls and 10,000 UpdateRoutes alternating
 * between two tables against dist/netagent in a netns. No error, the final
 * table exactly right, and the RSS slope over the second half ~0.
 */
import { mkdirSync } from "node:fs";
import { expect, it } from "vitest";
import { soak } from "./soak";

it("1,000,000 Checks and 10,000 UpdateRoutes: no error, final table right, RSS flat", async () => {
  mkdirSync("dist", { recursive: true });
  const r = await soak({ checks: 1_000_000, updates: 10_000, samplesFile: "dist/soak-rss.json" });
  console.log(`soak: ${JSON.stringify(r)}`);
  // Flat: under 1 MiB a minute of growth once warmed up (a leak of one
  // object a call would be far above: ~2,000 calls a second).
  expect(Math.abs(r.slopeKiBPerMin)).toBeLessThan(1024);
});
