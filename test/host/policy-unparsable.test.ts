/**
 * A policy file that does not parse stops the agent before it listens:
 * exit 2, the field named on stderr, no socket made.
 */
import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { NETAGENT } from "../helpers/agent";
import { tempDir } from "./helpers";

describe("a policy that does not parse", () => {
  it("stops the agent with exit 2 naming the field, before it listens", () => {
    const d = tempDir("netagent-policy-bad-");
    try {
      const bad = d.join("bad.json");
      writeFileSync(bad, '{"netagentPolicy": 1, "routes": {"gateways": ["10.0.0.1/40"]}}');
      const r = spawnSync(
        NETAGENT,
        ["--listen", `unix://${d.join("a.sock")}`, "--state-dir", d.join("state"), "--policy", bad],
        { encoding: "utf8", timeout: 30_000 },
      );
      expect(r.status).toBe(2);
      expect(r.stderr).toContain("routes.gateways.0: is not a CIDR");
      expect(existsSync(d.join("a.sock"))).toBe(false);
    } finally {
      d.remove();
    }
  });
});
