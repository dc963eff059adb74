/**
 * The soak (test/soak, `npm run soak`) at a length the test command can
 * afford: 50,000 Check calls and 200 UpdateRoutes alternating between two
 * tables. No error, the final table exactly right.
 */
import { expect, it } from "vitest";
import { soak } from "../soak/soak";

it("50,000 Checks and 200 UpdateRoutes: no error, final table right", async () => {
  const r = await soak({ checks: 50_000, updates: 200 });
  console.log(`short soak: ${JSON.stringify(r)}`);
  expect(r.checks).toBe(50_000);
}, 110_000);
