/**
 * `netagentctl sync --watch` on a /proc/PID/ns/net path ends with exit 0
 * when the process holding the namespace ends; and the usage it refuses
 * (a CNI result, --dry-run, --debounce alone or out of range: exit 2,
 * nothing sent). Following a pod: sync-watch.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { Child } from "../helpers/process";
import { ctl, Guest, Netns, randomMac, tempDir, waitFor } from "./helpers";
import { Watcher } from "./watch-helpers";

describe("sync --watch on a /proc/PID/ns/net path", () => {
  it("ends with exit 0 when the process holding the namespace ends", async () => {
    const pod = await Netns.create("nwp");
    const guest = await Guest.create();
    let holder: Child | undefined;
    try {
      const { start } = await import("../helpers/process");
      // not a wait: the process holding the pod's namespace, ended by the test
      holder = start("ip", ["netns", "exec", pod.name, "sleep", "600"]);
      await waitFor(() => holder?.running && holder.pid, { what: "the holder" });
      const w = await Watcher.start(guest.addr, `/proc/${holder.pid}/ns/net`);
      expect(w.resyncs()[0]?.initial).toBe(true);
      await holder.kill();
      const exit = await w.child.exited;
      await w.child.drained();
      expect(exit.code, w.child.stderr).toBe(0);
      expect(w.events.at(-1)).toMatchObject({ event: "end", reason: "netns-deleted" });
    } finally {
      await holder?.kill();
      await guest.remove();
      await pod.remove();
    }
  });
});

describe("sync --watch refuses what it cannot follow (exit 2, nothing sent)", () => {
  it("a CNI result, --dry-run, --debounce alone or out of range", async () => {
    const dir = tempDir("netagent-watch-usage-");
    try {
      const file = dir.join("r.json");
      await Bun.write(
        file,
        JSON.stringify({
          cniVersion: "1.0.0",
          interfaces: [{ name: "eth0", mac: randomMac(), sandbox: "/run/netns/pod" }],
          ips: [{ interface: 0, address: "10.77.0.2/24", gateway: "10.77.0.1" }],
        }),
      );
      const ns = await Netns.create("nwu");
      try {
        const cases: [string[], RegExp][] = [
          [["--cni-result", file, "--watch"], /--watch needs --netns/],
          [["--netns", ns.name, "--watch", "--dry-run"], /do not go together/],
          [["--netns", ns.name, "--debounce", "50"], /--debounce needs --watch/],
          [["--netns", ns.name, "--watch", "--debounce", "-1"], /--debounce: "-1"/],
        ];
        for (const [args, message] of cases) {
          const r = await ctl(["--addr", "unix:///nonexistent.sock", "sync", ...args]);
          expect(r.code, r.stderr).toBe(2);
          expect(r.stderr).toMatch(message);
        }
      } finally {
        await ns.remove();
      }
    } finally {
      dir.remove();
    }
  });
});
