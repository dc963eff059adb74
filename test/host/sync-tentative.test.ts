/**
 * After `sync` returns, the guest can use every address the pod can use:
 * fresh pod/guest pairs whose pod routes IPv6 through a link-local gateway
 * (fe80::1), each synced and then at once compared with `diff --json
 * --probes 1000`. The guest's NIC is renamed by the sync (gst0 to eth0),
 * which takes it down: the kernel drops its IPv6 addresses and makes its
 * link-local again when it comes up, tentative until duplicate address
 * detection ends. sync says `verified` only once no guest address is
 * tentative where the pod's is not, and an independent `ip -j addr` of the
 * guest right after sync returns finds none; every lookup then agrees.
 */
import { afterEach, describe, expect, it } from "vitest";
import { run } from "../helpers/process";
import { MirrorPair } from "./complete-helpers";
import { waitFor } from "./helpers";

interface AddrLink {
  ifname: string;
  addr_info?: { local: string; prefixlen: number; tentative?: boolean }[];
}

const made: MirrorPair[] = [];

afterEach(async () => {
  for (const m of made.splice(0)) await m.remove();
});

/** The tentative addresses of `ns`'s links, read by the test itself. */
async function tentative(m: MirrorPair, side: "pod" | "guest"): Promise<string[]> {
  const ns = side === "pod" ? m.pod : m.guest.ns;
  const links = await ns.json<AddrLink[]>("addr", "show");
  return links.flatMap((l) =>
    (l.addr_info ?? [])
      .filter((a) => a.tentative === true)
      .map((a) => `${a.local}/${a.prefixlen} on ${l.ifname}`),
  );
}

/** A pod with IPv4 and a global IPv6 address, IPv6 routes through fe80::1, its own addresses settled. */
async function linkLocalGatewayPod(): Promise<MirrorPair> {
  const m = await MirrorPair.create();
  made.push(m);
  const ip = (...a: string[]) => m.pod.ip(...a);
  await ip("addr", "add", "10.70.119.194/26", "dev", "eth0");
  await ip("addr", "add", "2001:db8:70::194/64", "dev", "eth0");
  await ip("route", "add", "default", "via", "10.70.119.193");
  await ip("-6", "route", "add", "default", "via", "fe80::1", "dev", "eth0");
  await ip("-6", "route", "add", "2001:db8:100::/48", "via", "fe80::1", "dev", "eth0");
  await ip("-6", "route", "add", "fd00:64::/64", "via", "fe80::1", "dev", "eth0", "metric", "7");
  await waitFor(async () => (await tentative(m, "pod")).length === 0, {
    what: "the pod's addresses to leave duplicate address detection",
  });
  return m;
}

describe("sync, then at once diff --probes 1000, on pods with IPv6 link-local gateways", () => {
  it("five fresh pairs: verified, no guest address tentative, every lookup agrees", async () => {
    for (let pair = 1; pair <= 5; pair++) {
      const m = await linkLocalGatewayPod();
      const s = await m.sync();
      const stillTentative = await tentative(m, "guest");
      const d = await m.diff("--json", "--probes", "1000");
      const text = `pair ${pair}\n${s.stdout}${s.stderr}\n${d.stdout}${d.stderr}`;
      expect(s.code, text).toBe(0);
      expect(s.stdout, text).toMatch(/^ {2}verified: /m);
      expect(stillTentative, text).toEqual([]);
      const probes = (JSON.parse(d.stdout) as { probes: { asked: number; disagreements: [] } })
        .probes;
      expect(probes.asked, text).toBeGreaterThan(20);
      expect(probes.disagreements, text).toEqual([]);
      expect(d.code, text).toBe(0);
      await m.remove();
      made.splice(made.indexOf(m), 1);
    }
  }, 300_000);
});

/** Sets `key` to `value` on both sides: no difference, but both kernels act on it. */
async function sysctlBoth(m: MirrorPair, key: string, value: string): Promise<void> {
  for (const ns of [m.pod.name, m.guest.ns.name]) {
    const r = await run("ip", ["netns", "exec", ns, "sysctl", "-qw", `${key}=${value}`]);
    expect(r.code, r.stderr).toBe(0);
  }
}

/** The guest's 2001:db8:70::194/64 added again without nodad: tentative until its detection ends. */
async function readdGuestAddress(m: MirrorPair): Promise<void> {
  await m.guest.ns.ip("addr", "del", "2001:db8:70::194/64", "dev", "eth0");
  await m.guest.ns.ip("addr", "add", "2001:db8:70::194/64", "dev", "eth0");
}

describe("diff, with a guest address tentative where the pod's is usable", () => {
  it("waits at most 3 s, then names it still tentative (DIFFERENT); once usable: EQUAL", async () => {
    const m = await linkLocalGatewayPod();
    const s = await m.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    // Detection sends its one probe within a second and waits retrans_time for an answer:
    // at 8 s, the address is tentative for 8 to 9 s, well past diff's 3 s.
    await sysctlBoth(m, "net.ipv6.neigh.eth0.retrans_time_ms", "8000");
    await readdGuestAddress(m);
    expect(await tentative(m, "guest")).toEqual(["2001:db8:70::194/64 on eth0"]);
    const [j, d] = await Promise.all([m.diff("--json"), m.diff()]);
    const usable = (JSON.parse(j.stdout) as { usable: { waitedMs: number; still: unknown[] } })
      .usable;
    expect(j.code, j.stdout).toBe(1);
    expect(usable.still).toEqual([
      { link: "eth0", address: "2001:db8:70::194/64", dadFailed: false },
    ]);
    expect(usable.waitedMs).toBeGreaterThanOrEqual(3000);
    expect(d.code, d.stdout).toBe(1);
    expect(d.stdout).toMatch(
      /^waited 3\.\d s for the guest's 2001:db8:70::194\/64 on eth0 to leave duplicate address detection; still tentative: 2001:db8:70::194\/64 on eth0$/m,
    );
    expect(d.stdout).toMatch(
      /^~ +still tentative: 2001:db8:70::194\/64 on eth0 \(the pod's is usable\) +tentative$/m,
    );
    // Its table local route comes only once the detection ends: a difference of its own.
    expect(d.stdout).toMatch(/^< +not mirrored: route local 2001:db8:70::194 \(v6\) table local /m);
    expect(d.stdout).toMatch(/^verdict: DIFFERENT \(2 differences;/m);
    await waitFor(async () => (await tentative(m, "guest")).length === 0, {
      timeoutMs: 20_000,
      what: "the guest's address to leave duplicate address detection",
    });
    const e = await m.diff();
    expect(e.code, e.stdout).toBe(0);
    expect(e.stdout).toMatch(/^verdict: EQUAL/m);
    // At the usual 1 s: diff straight after the address comes back waits for it, and agrees.
    await sysctlBoth(m, "net.ipv6.neigh.eth0.retrans_time_ms", "1000");
    await readdGuestAddress(m);
    const f = await m.diff("--probes", "200");
    expect(f.code, f.stdout).toBe(0);
    expect(f.stdout).toMatch(/^verdict: EQUAL/m);
    expect(f.stdout).not.toMatch(/still tentative/);
    expect(f.stdout).toMatch(
      /^route lookups \(\d+ drawn from the pod's routes and rules; (\d+) agree\)$/m,
    );
    expect(await tentative(m, "guest")).toEqual([]);
  }, 120_000);
});
