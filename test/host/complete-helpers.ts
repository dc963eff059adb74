/**
 * What the complete-comparison tests share: a pod netns whose NIC's peer
 * lives in a host netns of its own, and a guest netns whose NIC (the pod's
 * MAC) has its peer outside the guest too, in a wire netns, as a VM's NIC
 * has its other end in the VMM: the guest holds nothing the pod does not
 * but what the list of legitimate differences names. Every namespace is
 * removed by `remove()`.
 */
import { afterEach, expect } from "vitest";
import type { CompleteRead } from "../../src/host/compare/complete-read";
import type { StartAgentOptions } from "../helpers/agent";
import { run } from "../helpers/process";
import { compareReads, type Difference } from "../podgen/compare";
import { readNetns } from "../podgen/read";
import { type CtlResult, ctl, Guest, Netns, randomMac } from "./helpers";

export class MirrorPair {
  private constructor(
    readonly host: Netns,
    readonly pod: Netns,
    readonly wire: Netns,
    readonly guest: Guest,
    readonly mac: string,
  ) {}

  /**
   * A pod with eth0 (a veth, up) and a guest with the same MAC on gst0,
   * agent running (`agent`: its flags or start options, as Guest.create).
   */
  static async create(
    agent: readonly string[] | Omit<StartAgentOptions, "netns"> = [],
  ): Promise<MirrorPair> {
    const made: { remove(): Promise<void> }[] = [];
    try {
      const host = await Netns.create("n22h");
      made.push(host);
      const pod = await Netns.create("n22p");
      made.push(pod);
      const wire = await Netns.create("n22w");
      made.push(wire);
      const mac = randomMac();
      await pod.veth("eth0", "vpod", { mac, peerNs: host });
      const guest = await Guest.create(undefined, "gst0", agent);
      made.push(guest);
      await guest.ns.veth("gst0", "p0", { mac, peerNs: wire });
      return new MirrorPair(host, pod, wire, guest, mac);
    } catch (err) {
      for (const m of made.reverse()) await m.remove().catch(() => {});
      throw err;
    }
  }

  ctl(...args: string[]): Promise<CtlResult> {
    return ctl(["--addr", this.guest.addr, ...args], undefined, 120_000);
  }

  sync(): Promise<CtlResult> {
    return this.ctl("sync", "--netns", this.pod.name);
  }

  diff(...extra: string[]): Promise<CtlResult> {
    return this.ctl(
      ...extra.filter((x) => x === "--json"),
      "diff",
      ...extra.filter((x) => x !== "--json"),
      "--netns",
      this.pod.name,
    );
  }

  /** The independent judge: test/podgen's complete reads of both namespaces, compared. */
  async judge(): Promise<Difference[]> {
    return compareReads(await readNetns(this.pod.name), await readNetns(this.guest.ns.name));
  }

  async remove(): Promise<void> {
    for (const r of [
      () => this.guest.remove(),
      () => this.wire.remove(),
      () => this.pod.remove(),
      () => this.host.remove(),
    ]) {
      await r().catch(() => {});
    }
  }
}

/**
 * For a test file, called at its top: `cleanups` run last first after each
 * test (failures ignored, so every one runs), and `pair()` makes a
 * MirrorPair removed among them.
 */
export function pairsPerTest(): {
  cleanups: (() => Promise<void>)[];
  pair(agent?: Parameters<typeof MirrorPair.create>[0]): Promise<MirrorPair>;
} {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });
  return {
    cleanups,
    async pair(agent) {
      const p = await MirrorPair.create(agent);
      cleanups.push(() => p.remove());
      return p;
    },
  };
}

/** diff --json's findings. */
export function notMirrored(
  r: CtlResult,
): { kind: string; what: string; field: string; pod: string; guest: string }[] {
  return (JSON.parse(r.stdout) as { notMirrored?: [] }).notMirrored ?? [];
}

export type { CompleteRead };

/**
 * A pod with a multipath default and a tos route, synced: 10.70.119.194/26 on eth0, a multipath default
 * (via .193 weight 1, via .195 weight 2), `100.64.0.0/12 via .193 tos
 * 0x04` and `prohibit 100.64.0.0/10` (the pod prohibits 100.64/12 but for
 * tos 0x04).
 */
export async function tosAndMultipathPod(): Promise<MirrorPair> {
  const m = await MirrorPair.create();
  try {
    const ip = (...a: string[]) => m.pod.ip(...a);
    await ip("addr", "add", "10.70.119.194/26", "dev", "eth0");
    await ip(
      "route",
      "add",
      "default",
      "nexthop",
      "via",
      "10.70.119.193",
      "weight",
      "1",
      "nexthop",
      "via",
      "10.70.119.195",
      "weight",
      "2",
    );
    await ip("route", "add", "100.64.0.0/12", "via", "10.70.119.193", "tos", "0x04");
    await ip("route", "add", "prohibit", "100.64.0.0/10");
    const s = await m.sync();
    if (s.code !== 0) throw new Error(`sync failed: ${s.stdout}${s.stderr}`);
    return m;
  } catch (err) {
    await m.remove();
    throw err;
  }
}

/** `ip -d -j route get` in one namespace, by the test itself: the route (without cache), or ip's refusal. */
export async function lookupDirect(ns: string, words: string[]): Promise<string> {
  const r = await run("ip", ["-n", ns, "-d", "-j", "route", "get", ...words]);
  if (r.code !== 0) return `refused: ${r.stderr.replace(/^RTNETLINK answers: /, "").trim()}`;
  const [route] = JSON.parse(r.stdout) as Record<string, unknown>[];
  const { cache: _, ...rest } = route ?? {};
  return JSON.stringify(rest);
}

/**
 * After a sync: what diff says is the truth. Its model comparison (every
 * row above the complete section) is all "=" as before, and its verdict is
 * the independent judge's (test/podgen's complete reads of both
 * namespaces): EQUAL, with `equal` as its verdict line, exactly when the
 * judge finds nothing; else DIFFERENT with a "not mirrored" row for each of
 * its findings (what sync does not carry yet, listed in SYNC_GAPS).
 */
export async function expectMirrorVerdict(
  r: CtlResult,
  pod: string,
  guest: string,
  equal: string | RegExp = /^verdict: EQUAL/m,
): Promise<void> {
  const text = r.stdout + r.stderr;
  const [model = "", complete = ""] = r.stdout.split(/^complete reads \(.*\)$/m);
  const differing = model.split("\n").filter((l) => /^[~<>] /.test(l));
  // The packet filter's own rows are part of the model's side.
  expect(differing, text).toEqual([]);
  const judged = compareReads(await readNetns(pod), await readNetns(guest));
  if (judged.length === 0) {
    expect(r.code, text).toBe(0);
    expect(r.stdout).toMatch(
      typeof equal === "string" ? new RegExp(`^${escapeRe(equal)}$`, "m") : equal,
    );
    return;
  }
  expect(r.code, `${text}\njudge: ${judged.map((d) => d.text).join("\n")}`).toBe(1);
  const rows = complete.split("\n").filter((l) => /^[~<>] +not mirrored: /.test(l));
  expect(rows.length, text).toBeGreaterThan(0);
  expect(r.stdout).toMatch(new RegExp(`^verdict: DIFFERENT \\(${rows.length} differences?;`, "m"));
  for (const kind of new Set(judged.map((d) => d.kind))) {
    expect(
      rows.some((l) => l.includes(`not mirrored: ${kind === "sysctl" ? "sysctl" : kind}`)),
      `${kind}\n${text}`,
    ).toBe(true);
  }
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * What sync does not carry yet of a CNI ptp pod: where no independent
 * complete read of the guest is at hand (a VM), diff's "not mirrored"
 * rows must be of these and no other. None since sync carries the veth's
 * txqlen (the CNI's veth has 0, a guest NIC 1000) and the address's
 * broadcast.
 */
export const SYNC_GAPS: readonly RegExp[] = [];

/** diff after a sync: the model all "=", the only "not mirrored" rows those of SYNC_GAPS, the verdict to match. */
export function expectOnlyGaps(r: CtlResult, equal: string | RegExp = /^verdict: EQUAL/m): void {
  const text = r.stdout + r.stderr;
  const [model = "", complete = ""] = r.stdout.split(/^complete reads \(.*\)$/m);
  expect(
    model.split("\n").filter((l) => /^[~<>] /.test(l)),
    text,
  ).toEqual([]);
  const rows = complete.split("\n").filter((l) => /^[~<>] /.test(l));
  for (const row of rows)
    expect(
      SYNC_GAPS.some((g) => g.test(row)),
      `${row}\n${text}`,
    ).toBe(true);
  if (rows.length === 0) {
    expect(r.code, text).toBe(0);
    expect(r.stdout).toMatch(
      typeof equal === "string" ? new RegExp(`^${escapeRe(equal)}$`, "m") : equal,
    );
  } else {
    expect(r.code, text).toBe(1);
    expect(r.stdout).toMatch(
      new RegExp(`^verdict: DIFFERENT \\(${rows.length} differences?;`, "m"),
    );
  }
}
