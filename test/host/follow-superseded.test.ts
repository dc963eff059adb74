/**
 * `follow` when the pod changes while the sync before the change is being
 * checked. The check after a sync reads both sides again after a pause
 * before its differences count (a link's carrier lags a change); a
 * difference that a change made after the sync read the pod can explain
 * is not waited on: that sync ends as superseded, the sandbox stays
 * `syncing` (not `failed`, no failure counted) and the next sync starts at
 * once.
 *
 * To make the timing certain, the guest's agent runs a stand-in `ip` that
 * holds every batch line naming 198.18.7.0/24 for HOLD_MS before passing it
 * to iproute2: the pod's route is deleted while the guest's Apply of it is
 * held, so the check after that Apply finds the guest with a route the pod
 * no longer has.
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { VERIFY_PAUSE_MS } from "../../src/host/sync/sync-verify";
import { renderText, type WatchEvent } from "../../src/host/watch/watch-output";
import { FollowerProc } from "./follow-helpers";
import { Guest, Netns, PtpPod, tempDir, waitFor } from "./helpers";
import { goPersist, sandboxDir } from "./kata-standins";
import { guestEqualsPod } from "./watch-helpers";

const HOLD_MS = 600;
const ROUTE = "198.18.7.0/24";

const tmp = tempDir("netagent-follow-superseded-");
const root = tmp.join("run/vc/sbs");
const held = tmp.join("held");
let followNs: Netns;
let pod: PtpPod;
let guest: Guest;
let mac: string;
let f: FollowerProc;

/** An `ip` that holds each input line naming ROUTE (and says so in `held`), then runs iproute2's. */
function holdingIp(): string {
  const real = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].find((p) => existsSync(p));
  if (real === undefined) throw new Error("iproute2's ip not found");
  const path = tmp.join("holding-ip");
  writeFileSync(
    path,
    [
      "#!/bin/sh",
      "while IFS= read -r line; do",
      // not a wait: the stand-in's hold itself, the delay the test is about
      `  case "$line" in *"${ROUTE}"*) : > '${held}'; sleep ${HOLD_MS / 1000};; esac`,
      `  printf '%s\\n' "$line"`,
      `done | exec ${real} "$@"`,
      "",
    ].join("\n"),
  );
  chmodSync(path, 0o755);
  return path;
}

beforeAll(async () => {
  mkdirSync(root, { recursive: true });
  followNs = await Netns.create("nh6f");
  pod = await PtpPod.create("10.248.251.0/28");
  mac = await pod.mac();
  guest = await Guest.create(mac, "gst0", ["--ip-bin", holdingIp()]);
  writeFileSync(
    join(sandboxDir(root, "sbx-s"), "persist.json"),
    JSON.stringify(
      goPersist({
        netns: `/var/run/netns/${pod.pod.name}`,
        agentUrl: `unix://${guest.agent.socket}`,
        mac,
      }),
    ),
    { mode: 0o600 },
  );
  f = await FollowerProc.start(followNs, [root], tmp.join("status.sock"));
});

afterAll(async () => {
  await f?.child.kill();
  await guest?.remove();
  await pod?.remove().catch(() => {});
  await followNs?.remove();
  tmp.remove();
});

const resyncs = () => f.events.filter((e) => e.sandbox === "sbx-s" && e.event === "resync");

describe("follow: a pod change during the check after a sync", () => {
  it("ends that sync as superseded and syncs again at once", async () => {
    await f.until("sbx-s", (x) => x.state === "equal", "equal");
    const before = resyncs().length;
    await pod.pod.ip("route", "add", ROUTE, "dev", "eth0");
    // The follower read the pod and its Apply of the route is held in the guest's ip.
    await waitFor(() => existsSync(held), { what: "the guest's ip holding the route" });
    await pod.pod.ip("route", "del", ROUTE, "dev", "eth0");
    await waitFor(() => resyncs().length >= before + 2, { what: "two more syncs" });
    await f.until("sbx-s", (x) => x.state === "equal", "equal");
    expect(await guestEqualsPod(pod.pod, guest.ns, [mac])).toBe(true);

    const [added, removed] = resyncs().slice(before) as {
      ms: number;
      changes: { routesAdded: string[]; routesRemoved: string[] };
      verified: { differences: string[]; superseded?: boolean };
    }[];
    expect(added?.changes.routesAdded.join()).toContain(ROUTE);
    // What the check found is said, as found after a later change in the pod.
    expect(added?.verified.superseded).toBe(true);
    expect(added?.verified.differences.join()).toContain(ROUTE);
    expect(renderText(added as unknown as WatchEvent)).toMatch(
      /not verified: the pod changed during the sync \(found: .*198\.18\.7\.0\/24.*\); syncing again/,
    );
    // No pause before reading again: the held Apply and one comparison, not
    // the held Apply and VERIFY_PAUSE_MS and more comparisons.
    expect(added?.ms).toBeLessThan(HOLD_MS + VERIFY_PAUSE_MS);
    expect(removed?.changes.routesRemoved.join()).toContain(ROUTE);
    expect(removed?.verified).toEqual({ differences: [] });
    // Superseded is not a failure (a label set appears at its first count).
    const metrics = await (await f.get("/metrics")).text();
    expect(metrics).toMatch(/^netagent_follow_syncs_total\{sandbox="sbx-s"\} [1-9]/m);
    expect(metrics).not.toMatch(/^netagent_follow_failures_total\{sandbox="sbx-s"\}/m);
  });
});
