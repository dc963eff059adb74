/**
 * diff cannot lie: a pod with a route `... tos 0x04`
 * and a multipath default route, synced into a guest. Before the complete
 * comparison, diff said EQUAL here while the guest had lost both (traffic
 * the pod prohibits left through the guest's NIC); now diff's verdict is
 * what an independent complete read of both namespaces says (test/podgen's
 * reader and comparator, which share no code with netagentctl), and every
 * route or multipath difference it finds is a "not mirrored" row. With
 * --probes, every lookup diff reports as disagreeing disagrees when asked
 * of both namespaces directly (test/host/route-get.test.ts shows one side
 * by side).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lookupDirect, type MirrorPair, notMirrored, tosAndMultipathPod } from "./complete-helpers";

let m: MirrorPair;

beforeAll(async () => {
  m = await tosAndMultipathPod();
});

afterAll(async () => {
  await m?.remove();
});

const lookup = lookupDirect;

describe("diff on a pod with a tos route and a multipath default", () => {
  it("says DIFFERENT exactly when an independent complete read differs, and names the routes", async () => {
    const judged = await m.judge();
    const routeDiffs = judged.filter((d) => d.kind === "route");
    const d = await m.diff();
    const j = await m.diff("--json");
    expect(d.code, d.stdout + d.stderr).toBe(judged.length === 0 ? 0 : 1);
    expect(j.code).toBe(d.code);
    const rows = notMirrored(j);
    if (judged.some((x) => x.what.includes("100.64.0.0/12") && x.field !== "guest only")) {
      expect(d.stdout).toMatch(/^[~<] +not mirrored: route 100\.64\.0\.0\/12 tos 0x04 table main/m);
      expect(rows.some((r) => r.what === "route 100.64.0.0/12 tos 0x04 table main")).toBe(true);
    }
    if (judged.some((x) => x.what.startsWith("route default") && x.text.includes("nexthops"))) {
      expect(d.stdout).toMatch(
        /^~ +not mirrored: route default table main: nexthops gateway 10\.70\.119\.193 dev eth0 weight 1 \| gateway 10\.70\.119\.195 dev eth0 weight 2/m,
      );
    }
    // Every route the judge finds different, diff names too.
    for (const x of routeDiffs) {
      const dst = /route (?:\S+ )?(\S+)/.exec(x.what)?.[1] as string;
      expect(
        rows.some((r) => r.kind === "route" && r.what.includes(dst)),
        `${x.text}\n${d.stdout}`,
      ).toBe(true);
    }
    if (d.code === 1) expect(d.stdout).toMatch(/^verdict: DIFFERENT/m);
    else expect(d.stdout).toMatch(/^verdict: EQUAL/m);
  });

  it("--probes: every lookup it reports disagrees when asked of both namespaces directly", async () => {
    const r = await m.diff("--json", "--probes", "200");
    const probes = (
      JSON.parse(r.stdout) as { probes: { asked: number; disagreements: { lookup: string }[] } }
    ).probes;
    expect(probes.asked).toBeGreaterThan(20);
    expect(probes.asked).toBeLessThanOrEqual(200);
    for (const p of probes.disagreements) {
      const words = p.lookup.replace(/^route get /, "").split(" ");
      expect(await lookup(m.pod.name, words), p.lookup).not.toBe(
        await lookup(m.guest.ns.name, words),
      );
    }
    // The pod prohibits 100.64.1.1 without tos 0x04: a guest that lost the tos sends it out.
    const tosLost =
      (await lookup(m.pod.name, ["100.64.0.1"])) !==
      (await lookup(m.guest.ns.name, ["100.64.0.1"]));
    expect(probes.disagreements.some((p) => p.lookup === "route get 100.64.0.1")).toBe(tosLost);
    expect(r.code).toBe(probes.disagreements.length > 0 || notMirrored(r).length > 0 ? 1 : 0);
    const text = await m.diff("--probes", "200");
    expect(text.stdout).toMatch(
      new RegExp(
        `^route lookups \\(${probes.asked} drawn from the pod's routes and rules; ${probes.asked - probes.disagreements.length} agree\\)$`,
        "m",
      ),
    );
    if (tosLost) {
      expect(text.stdout).toMatch(
        /^~ +route get 100\.64\.0\.1: refused: Permission denied +via 10\.70\.119\.193 dev eth0 src 10\.70\.119\.194 table main$/m,
      );
    }
  });
});
