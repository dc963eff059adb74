/**
 * netagent.v1.Network's RouteGet and Read against dist/netagent in a fresh
 * netns, with a recording stand-in `ip` (--ip-bin) that runs the real one:
 * every bad lookup (an address that is none, a name too long or reading
 * as an option, a number out of its range, more than 1,000 lookups) is
 * INVALID_ARGUMENT naming the field and the value, and no `route get`
 * reaches iproute2; good lookups come back in order, refusals included,
 * as `ip route get` gives them when asked directly. Read answers the
 * listings and /proc/sys/net (some listings alone when asked, an unknown
 * name INVALID_ARGUMENT before anything runs); a state larger than one
 * answer is RESOURCE_EXHAUSTED saying so.
 */
import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { Network } from "../../src/gen/network_pb";
import { lookupTo, MAX_LOOKUPS } from "../../src/net/iproute/route-lookup";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import type { RunningAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";
import { run } from "../helpers/process";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";
import { startHardenedAgent } from "./agent";
import { recordingIp } from "./fake-ip";

let ns: Netns;
let dir: TempDir;
let agent: RunningAgent;
let client: AgentClient;
let recorder: ReturnType<typeof recordingIp>;

beforeAll(async () => {
  ns = await Netns.create("nt-lookup");
  await ns.veth("eth0", "peer0", { mac: "02:00:00:00:0e:22" });
  await ns.ip("addr", "add", "10.9.0.1/24", "dev", "eth0");
  await ns.ip("route", "add", "10.8.0.0/16", "via", "10.9.0.2", "tos", "0x04");
  await ns.ip("route", "add", "prohibit", "10.8.0.0/15");
  // Both ends' link-locals out of duplicate address detection (a second or two): the
  // tests compare reads made moments apart, which one leaving it in between would change.
  await waitFor(async () => !(await ns.ip("-j", "addr", "show")).includes('"tentative":true'), {
    what: `no address of ${ns.name} tentative`,
  });
  dir = tempDir("netagent-lookup-");
  recorder = recordingIp(dir);
  agent = await startHardenedAgent({
    netns: ns,
    args: ["--log-level", "warn"],
    ipBin: recorder.bin,
  });
  client = await AgentClient.connect(`unix://${agent.socket}`);
});

afterAll(async () => {
  client?.close();
  await agent?.stop();
  await ns?.remove();
  dir?.remove();
});

type Lookup = ReturnType<typeof lookupTo>;
const routeGet = (lookups: Lookup[]) =>
  client.unary(Network.method.routeGet, { lookups }, { timeoutMs: 60_000 });
const lookupsRun = () => recorder.calls().filter((c) => c.stdin.includes("route get")).length;

describe("RouteGet refuses bad lookups before anything runs", () => {
  const bad: [Partial<Lookup> & { to?: string }, RegExp][] = [
    [{ to: "10.0.0.300" }, /^lookups\[1\]\.to: "10\.0\.0\.300" is not an address/],
    [{ to: "-batch" }, /^lookups\[1\]\.to: "-batch" is not an address/],
    [
      { from: "10.0.0.1\nroute flush table main" },
      /^lookups\[1\]\.from: "10\.0\.0\.1\\nroute flush table main" is not an address/,
    ],
    [{ iif: "-batch" }, /^lookups\[1\]\.iif: "-batch" is not an interface name/],
    [{ oif: "eth0 mark 1" }, /^lookups\[1\]\.oif: "eth0 mark 1" is not an interface name/],
    [{ oif: "x".repeat(300) }, /^lookups\[1\]\.oif: "x+…" \(300 bytes\) is not an interface name/],
    [{ sport: 70000 }, /^lookups\[1\]\.sport: 70000 is out of range \(1-65535, or 0 for none\)/],
    [{ tos: 256 }, /^lookups\[1\]\.tos: 256 is out of range \(1-255/],
    [{ ipproto: 1000 }, /^lookups\[1\]\.ipproto: 1000 is out of range \(1-255/],
    [{ uid: 4294967295 }, /^lookups\[1\]\.uid: 4294967295 is out of range/],
  ];
  for (const [more, why] of bad) {
    it(`${JSON.stringify(more).slice(0, 60)}: INVALID_ARGUMENT`, async () => {
      const before = lookupsRun();
      const err = await routeGet([
        lookupTo("10.9.0.5"),
        lookupTo(more.to ?? "10.9.0.5", more),
      ]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TtrpcError);
      expect((err as TtrpcError).code).toBe(Code.INVALID_ARGUMENT);
      expect((err as TtrpcError).message).toMatch(why);
      expect(lookupsRun()).toBe(before);
    });
  }

  it(`${MAX_LOOKUPS} lookups are answered in one ip; one more is refused and none runs`, async () => {
    const before = lookupsRun();
    const ok = await routeGet(
      Array.from({ length: MAX_LOOKUPS }, (_, i) => lookupTo(`10.9.${i >> 8}.${i & 255}`)),
    );
    expect(ok.decisions).toHaveLength(MAX_LOOKUPS);
    expect(lookupsRun() - before).toBe(1);
    const ran = lookupsRun();
    const err = await routeGet(Array(MAX_LOOKUPS + 1).fill(lookupTo("10.9.0.5"))).catch(
      (e: unknown) => e,
    );
    expect((err as TtrpcError).code).toBe(Code.INVALID_ARGUMENT);
    expect((err as TtrpcError).message).toMatch(
      /^lookups: "1001 lookups" are more than 1000 in one call/,
    );
    expect(lookupsRun()).toBe(ran);
  });
});

describe("RouteGet answers as ip route get does", () => {
  it("in order, routes and refusals alike", async () => {
    const asked: Lookup[] = [
      lookupTo("10.8.1.1", { tos: 4 }),
      lookupTo("10.8.1.1"),
      lookupTo("10.9.0.7", { ipproto: 6, dport: 443, mark: 7, uid: 1000 }),
      lookupTo("192.0.2.1"),
      lookupTo("10.9.0.7", { from: "10.9.0.1", oif: "eth0" }),
    ];
    const { decisions } = await routeGet(asked);
    const direct = await Promise.all(
      [
        "10.8.1.1 tos 0x04",
        "10.8.1.1",
        "10.9.0.7 mark 0x7 ipproto 6 dport 443 uid 1000",
        "192.0.2.1",
        "10.9.0.7 from 10.9.0.1 oif eth0",
      ].map(async (w) => {
        const r = await run("ip", ["-n", ns.name, "-d", "-j", "route", "get", ...w.split(" ")]);
        return r.code === 0
          ? { route: JSON.stringify((JSON.parse(r.stdout) as unknown[])[0]), error: "" }
          : { route: "", error: r.stderr.replace(/^RTNETLINK answers: /, "").trim() };
      }),
    );
    expect(decisions.map((d) => ({ route: d.route, error: d.error }))).toEqual(direct);
    expect(decisions[1]?.error).toBe("Permission denied");
    expect(decisions[3]?.error).toBe("Network is unreachable");
    expect(JSON.parse(decisions[0]?.route as string)).toMatchObject({
      gateway: "10.9.0.2",
      tos: "0x04",
      dev: "eth0",
    });
  });
});

describe("Read", () => {
  it("answers every listing and the namespace's /proc/sys/net, its own and a fresh one's", async () => {
    const r = await client.unary(Network.method.read, {}, { timeoutMs: 60_000 });
    expect(r.listings.map((l) => l.name)).toEqual([
      "link",
      "address",
      "route4",
      "route6",
      "rule4",
      "rule6",
      "neighbour4",
      "neighbour6",
      "proxy4",
      "proxy6",
      "nexthop",
      "route-text4",
      "route-text6",
    ]);
    const route4 = JSON.parse(r.listings.find((l) => l.name === "route4")?.output as string) as {
      dst: string;
      tos?: string;
    }[];
    expect(route4).toContainEqual(expect.objectContaining({ dst: "10.8.0.0/16", tos: "0x04" }));
    const sysctls = new Map(r.sysctls.map((s) => [s.path, s.value]));
    const cat = await run("ip", [
      "netns",
      "exec",
      ns.name,
      "cat",
      "/proc/sys/net/ipv4/conf/eth0/rp_filter",
    ]);
    expect(sysctls.get("ipv4/conf/eth0/rp_filter")).toBe(cat.stdout.trim());
    expect(r.freshSysctls.some((s) => s.path.startsWith("ipv4/conf/eth0/"))).toBe(false);
    expect(r.freshSysctls.some((s) => s.path === "ipv4/conf/default/rp_filter")).toBe(true);
  });

  it("of some listings answers those alone, as the whole read reads them, and no sysctls", async () => {
    const whole = await client.unary(Network.method.read, {}, { timeoutMs: 60_000 });
    const before = recorder.calls().length;
    const r = await client.unary(
      Network.method.read,
      { listings: ["route-text4", "address", "address"] },
      { timeoutMs: 60_000 },
    );
    expect(r.listings.map((l) => l.name)).toEqual(["address", "route-text4"]);
    const of = (list: typeof r.listings, name: string) =>
      list.find((l) => l.name === name)?.output as string;
    expect(of(r.listings, "route-text4")).toBe(of(whole.listings, "route-text4"));
    // Each link's name, MAC and addresses (after a `link show` in the same batch, iproute2
    // prints a few link attributes more in an address listing: linkmode, inet6_addr_gen_mode).
    const addrs = (out: string) =>
      (JSON.parse(out) as Record<string, unknown>[]).map(({ ifname, address, addr_info }) => ({
        ifname,
        address,
        addr_info,
      }));
    expect(addrs(of(r.listings, "address"))).toEqual(addrs(of(whole.listings, "address")));
    expect(r.sysctls).toEqual([]);
    expect(r.freshSysctls).toEqual([]);
    // One ip run for each listing asked for, nothing else.
    expect(recorder.calls().length - before).toBe(2);
  });

  it("of an unknown listing is INVALID_ARGUMENT naming it, and nothing runs", async () => {
    const before = recorder.calls().length;
    const err = await client
      .unary(Network.method.read, { listings: ["address", "-batch"] }, { timeoutMs: 60_000 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TtrpcError);
    expect((err as TtrpcError).code).toBe(Code.INVALID_ARGUMENT);
    expect((err as TtrpcError).message).toMatch(
      /^listings\[1\]: "-batch" is not a listing \(link, address, /,
    );
    expect(recorder.calls().length).toBe(before);
  });

  it("a state larger than one answer is RESOURCE_EXHAUSTED, saying so", async () => {
    const big = await Netns.create("nt-bigread");
    try {
      await big.veth("eth0", "peer0");
      await big.ip("addr", "add", "10.9.0.1/24", "dev", "eth0");
      const lines = Array.from(
        { length: 30_000 },
        (_, i) =>
          `route add 10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32 via 10.9.0.2 table ${1000 + (i % 4)}`,
      );
      const file = dir.join("routes.batch");
      writeFileSync(file, `${lines.join("\n")}\n`);
      const r = await run("ip", ["-n", big.name, "-batch", file]);
      expect(r.code, r.stderr).toBe(0);
      const a = await big.startAgent(["--log-level", "error"]);
      const c = await AgentClient.connect(`unix://${a.socket}`);
      try {
        const err = await c
          .unary(Network.method.read, {}, { timeoutMs: 120_000 })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(TtrpcError);
        expect((err as TtrpcError).code).toBe(Code.RESOURCE_EXHAUSTED);
        expect((err as TtrpcError).message).toMatch(
          /^Read: the guest's state is \d+ bytes, more than one answer carries \(4193280\); largest: route4 \d+ bytes/,
        );
      } finally {
        c.close();
        await a.stop();
      }
    } finally {
      await big.remove();
    }
  }, 180_000);
});

describe("Read asked for route texts only with metrics", () => {
  it("leaves out a family's text where no route has metrics; a locked mtu brings its own", async () => {
    const names = (r: { listings: { name: string }[] }) => r.listings.map((l) => l.name);
    const before = recorder.calls().length;
    const lean = await client.unary(
      Network.method.read,
      { textOnlyWithMetrics: true },
      { timeoutMs: 60_000 },
    );
    expect(names(lean)).not.toContain("route-text4");
    expect(names(lean)).not.toContain("route-text6");
    expect(names(lean)).toContain("route4");
    // The two texts' ip runs (`ip -d -4|-6 route show table all`, no -j) are the ones saved.
    const textRuns = (from: number) =>
      recorder
        .calls()
        .slice(from)
        .filter((c) => c.argv.includes("route") && !c.argv.includes("-j")).length;
    expect(textRuns(before)).toBe(0);
    const whole = recorder.calls().length;
    await client.unary(Network.method.read, {}, { timeoutMs: 60_000 });
    expect(textRuns(whole)).toBe(2);

    await ns.ip("route", "add", "10.7.0.0/16", "via", "10.9.0.2", "mtu", "lock", "1400");
    try {
      const r = await client.unary(
        Network.method.read,
        { textOnlyWithMetrics: true },
        { timeoutMs: 60_000 },
      );
      expect(names(r)).toContain("route-text4");
      expect(names(r)).not.toContain("route-text6");
      const text = r.listings.find((l) => l.name === "route-text4")?.output ?? "";
      expect(text).toMatch(/^unicast 10\.7\.0\.0\/16 via 10\.9\.0\.2 .*mtu lock 1400/m);
    } finally {
      await ns.ip("route", "del", "10.7.0.0/16");
    }
  });
});
