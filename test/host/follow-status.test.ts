/**
 * follow's status server on TCP (HOST:PORT, inside a namespace of the
 * test's own, reached from there), its answers to other paths and methods,
 * and its text lines; with both roots missing at start (waited for, not an
 * error). Sandboxes themselves: follow.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Child, run, start } from "../helpers/process";
import { BUN_BIN } from "./follow-helpers";
import { NETAGENTCTL, Netns, tempDir, waitFor } from "./helpers";

describe("follow --status-addr HOST:PORT", () => {
  const tmp = tempDir("netagent-follow-status-");
  let ns: Netns;
  let f: Child;

  /** An HTTP request made inside the namespace: status code and body. */
  const inside = async (method: string, path: string) => {
    const script = `const r = await fetch("http://127.0.0.1:19464${path}", { method: "${method}" }); console.log(r.status + " " + (await r.text()).slice(0, 2000));`;
    const r = await run("ip", ["netns", "exec", ns.name, BUN_BIN, "-e", script]);
    return r.stdout.trim();
  };

  beforeAll(async () => {
    ns = await Netns.create("nh5f");
    f = start("ip", [
      "netns",
      "exec",
      ns.name,
      NETAGENTCTL,
      "follow",
      "--kata-root",
      tmp.join("a/sbs"),
      "--kata-root",
      tmp.join("b"),
      "--status-addr",
      "127.0.0.1:19464",
    ]);
    await waitFor(() => f.stdout.includes("status on http://127.0.0.1:19464"), {
      what: "follow's first line",
    });
  });
  afterAll(async () => {
    await f?.kill();
    await ns?.remove();
    tmp.remove();
  });

  it("answers /healthz, /sandboxes (empty: both roots missing) and /metrics", async () => {
    expect(await inside("GET", "/healthz")).toBe("200 ok");
    expect(await inside("GET", "/sandboxes")).toBe("200 []");
    expect(await inside("GET", "/metrics")).toMatch(
      /netagent_follow_sandboxes\{state="waiting"\} 0/,
    );
    expect(await inside("GET", "/nothing")).toMatch(/^404/);
    expect(await inside("POST", "/sandboxes")).toMatch(/^405/);
  });

  it("text lines: follow's own, then SIGTERM: exit 0", async () => {
    expect(f.stdout).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} follow: following .*a\/sbs, .*\/b; status on http:\/\/127\.0\.0\.1:19464$/m,
    );
    const exit = await f.stop("SIGTERM");
    expect(exit.code).toBe(0);
    expect(f.stdout).toMatch(/follow: stopped by SIGTERM$/m);
  });

  it("refuses a bad --status-addr or --kata-root (exit 2)", async () => {
    for (const args of [
      ["--status-addr", "127.0.0.1:99999"],
      ["--status-addr", "unix://rel"],
      ["--kata-root", "rel/dir"],
      ["--monitor", "poll"],
    ]) {
      const r = await run(NETAGENTCTL, ["follow", ...args]);
      expect(r.code, args.join(" ")).toBe(2);
    }
  });
});
