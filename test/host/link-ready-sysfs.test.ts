/**
 * The agent's wait for a link it raised (src/net/iproute/link-ready.ts, as
 * src/agent/apply/raised-links.ts calls it) polls the link's operstate in
 * sysfs, not with an `ip` process per poll: run inside a namespace as the
 * agent runs in its own, a wait that found the link not yet ready makes
 * two `ip` reads in all (the first, and one once ready), and its answer
 * reads the link ready; checked with `ip -j` separately after.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { run } from "../helpers/process";
import { linkedPerTest } from "../helpers/veth-per-test";

const PROBE = fileURLToPath(new URL("./probes/link-ready-probe.ts", import.meta.url));

const linked = linkedPerTest();

describe("the agent's wait for a link it raised", () => {
  test("polls sysfs: two ip reads for a wait, and the link read ready", async () => {
    const guest = await linked("nlr", "gst0");
    // The kernel may see the carrier at once (nothing then to wait for): a few tries
    // until one of them waited, which is what is checked.
    let waited: { reads: number; operstate: string } | undefined;
    for (let i = 0; i < 5 && waited === undefined; i++) {
      const r = await run("ip", ["netns", "exec", guest.name, process.execPath, PROBE, "gst0"]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as { reads: number; operstate: string };
      if (out.reads > 1) waited = out;
    }
    expect(waited).toEqual({ reads: 2, operstate: "UP" });
    const [link] = await guest.json<{ operstate: string }[]>("link", "show", "gst0");
    expect(link?.operstate).toBe("UP");
  });
});
