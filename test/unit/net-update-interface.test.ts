/**
 * UpdateInterface through the real handler, planner and restore, with the
 * links played by a small model that runs the `ip -batch` link/addr lines
 * the way the kernel answers them (rename of an up link is EBUSY, a taken
 * name EEXIST, deleting an IPv4 primary drops its secondaries). Every line
 * of a plan is made to fail in turn: the links must end as they were.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { createNetworkService } from "../../src/agent/services/kata-network-service";
import { HOTPLUG_MAX_WAIT_MS } from "../../src/common/limits";
import { createLogger } from "../../src/common/log";
import { UpdateInterfaceRequestSchema } from "../../src/gen/agent_pb";
import type { InterfaceSchema } from "../../src/gen/types_pb";
import type { IpRunner } from "../../src/net/iproute/ip-runner";
import { networkText, parseIp } from "../../src/net/model/address";
import type { Address, Link, NetState } from "../../src/net/model/model";
import { classifyIpError, ipErrorText } from "../../src/net/parse/ip-errors";
import { IpBatchError } from "../../src/net/parse/ip-results";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import type { CallContext } from "../../src/ttrpc/service";
import { narrowReads } from "../helpers/fake-ip-reads";

type InterfaceInit = MessageInitShape<typeof InterfaceSchema>;

class Refused extends Error {}

const subnet = (a: Address) => {
  const ip = parseIp(a.address);
  return typeof ip === "string" ? a.address : `${networkText(ip.bytes, a.prefix)}/${a.prefix}`;
};

/** IpRunner's public surface over a model of links; `failAt` fails batch line i (first batch only). */
class LinkIp {
  readonly batches: { lines: string[]; force: boolean }[] = [];
  failAt: number | undefined;

  constructor(readonly links: Link[]) {}

  async readState(): Promise<NetState> {
    return { links: structuredClone(this.links), routes: [], neighbors: [] };
  }

  readonly narrow = narrowReads(() => this.readState());
  readLinks = () => this.narrow.readLinks();
  readLinksAndRoutes = () => this.narrow.readLinksAndRoutes();
  readLinksAndNeighbors = () => this.narrow.readLinksAndNeighbors();

  async readRoutes() {
    return [];
  }

  private dev(name: string): Link {
    const l = this.links.find((x) => x.name === name);
    if (!l) throw new Refused(`Cannot find device "${name}"`);
    return l;
  }

  private run(line: string): void {
    const t = line.split(" ");
    if (t[0] === "link" && t[1] === "set" && t[2] === "dev") {
      const l = this.dev(t[3] ?? "");
      const [what, arg] = [t[4], t[5] ?? ""];
      if (what === "up" && !l.flags.includes("UP")) l.flags = [...l.flags, "UP"];
      else if (what === "down") l.flags = l.flags.filter((f) => f !== "UP");
      else if (what === "name") {
        if (this.links.some((x) => x.name === arg))
          throw new Refused("RTNETLINK answers: File exists");
        if (l.flags.includes("UP")) throw new Refused("RTNETLINK answers: Device or resource busy");
        l.name = arg;
      } else if (what === "mtu") l.mtu = Number(arg);
      else if (what === "arp") {
        l.flags = l.flags.filter((f) => f !== "NOARP");
        if (arg === "off") l.flags.push("NOARP");
      } else if (what !== "up") throw new Error(`model: ${line}`);
      return;
    }
    if (t[0] === "addr") {
      const [address = "", prefix = ""] = (t[2] ?? "").split("/");
      const l = this.dev(t[4] ?? "");
      const at = l.addresses.findIndex((a) => a.address === address && a.prefix === Number(prefix));
      const a: Address = {
        family: address.includes(":") ? 6 : 4,
        address,
        prefix: Number(prefix),
        scope: address.startsWith("fe80:") ? "link" : "global",
      };
      if (t[1] === "add" || t[1] === "replace") {
        if (at >= 0) {
          if (t[1] === "add") throw new Refused("RTNETLINK answers: File exists");
          return;
        }
        l.addresses.push(a);
      } else if (t[1] === "del") {
        if (at < 0) throw new Refused("Error: ipv4: Address not found.");
        const [gone] = l.addresses.splice(at, 1);
        // A primary takes the secondaries of its subnet with it.
        if (gone?.family === 4) {
          const primary = !l.addresses
            .slice(0, at)
            .some((x) => x.family === 4 && subnet(x) === subnet(gone));
          if (primary) {
            l.addresses = l.addresses.filter(
              (x, i) => i < at || x.family !== 4 || subnet(x) !== subnet(gone),
            );
          }
        }
      } else throw new Error(`model: ${line}`);
      return;
    }
    throw new Error(`model: ${line}`);
  }

  /** The change and its read-back (one process in IpRunner). */
  async batchThenLinks(lines: readonly string[]): Promise<Link[]> {
    await this.batch(lines);
    return (await this.readState()).links;
  }

  async batch(lines: readonly string[], options: { force?: boolean } = {}): Promise<void> {
    if (lines.length === 0) return;
    const force = options.force === true;
    const first = this.batches.length === 0;
    this.batches.push({ lines: [...lines], force });
    let stderr = "";
    for (const [i, line] of lines.entries()) {
      try {
        if (first && i === this.failAt) throw new Refused("RTNETLINK answers: Network is down");
        this.run(line);
      } catch (err) {
        if (!(err instanceof Refused)) throw err;
        stderr += `${err.message}\nCommand failed -:${i + 1}\n`;
        if (!force) break;
      }
    }
    if (!stderr) return;
    const k = Number(/-:(\d+)/.exec(stderr)?.[1]) - 1;
    throw new IpBatchError(k, lines[k], ipErrorText(stderr), classifyIpError(stderr));
  }
}

const UP = ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"];
const a4 = (address: string, prefix: number): Address => ({
  family: 4,
  address,
  prefix,
  scope: "global",
});
const a6 = (address: string, prefix: number, scope = "global"): Address => ({
  family: 6,
  address,
  prefix,
  scope,
});

/** The guest: a hot-plugged eth9 (the pod's MAC) and an eth0 that holds the wanted name. */
function guest(holderUp = true): Link[] {
  return [
    {
      index: 1,
      name: "lo",
      mac: "00:00:00:00:00:00",
      mtu: 65536,
      flags: ["LOOPBACK", "UP", "LOWER_UP"],
      kind: "",
      addresses: [a4("127.0.0.1", 8)],
    },
    {
      index: 3,
      name: "eth0",
      mac: "02:00:00:00:00:03",
      mtu: 1500,
      flags: holderUp ? [...UP] : ["BROADCAST", "MULTICAST"],
      kind: "veth",
      addresses: [a4("192.168.1.5", 24)],
    },
    {
      index: 5,
      name: "eth9",
      mac: "02:aa:bb:cc:dd:01",
      mtu: 1500,
      flags: [...UP],
      kind: "veth",
      addresses: [a4("10.0.0.2", 24), a4("10.0.0.9", 24), a6("fe80::1", 64, "link")],
    },
  ];
}

const REQUEST: InterfaceInit = {
  hwAddr: "02:AA:BB:CC:DD:01",
  name: "eth0",
  mtu: 1450n,
  rawFlags: 0x80,
  IPAddresses: [
    { address: "10.0.0.9", mask: "24" },
    { address: "2001:db8::146", mask: "64" },
  ],
};

const ctx: CallContext = {
  signal: new AbortController().signal,
  deadline: undefined,
  metadata: new Map(),
};

function service(ip: LinkIp) {
  const svc = createNetworkService({
    ip: ip as unknown as IpRunner,
    log: createLogger("error", () => {}),
    hotplugTimeoutMs: 200,
    pollMs: 10,
  });
  return (i: InterfaceInit) => {
    const fn = svc.updateInterface;
    if (!fn) throw new Error("no updateInterface");
    return fn(create(UpdateInterfaceRequestSchema, { interface: i }), ctx);
  };
}

/** Links as `ip` shows them: flags as a set, addresses in order per family (IPv4's order is primary first). */
const snapshot = (links: readonly Link[]) =>
  links
    .map((l) => ({
      ...l,
      flags: [...l.flags].sort(),
      addresses: [...l.addresses].sort((x, y) => x.family - y.family).map(subnetless),
    }))
    .sort((x, y) => x.index - y.index);
const subnetless = (a: Address) => `${a.address}/${a.prefix} ${a.scope}`;

describe("UpdateInterface over a link model", () => {
  it.each([true, false])(
    "swaps names with a holder (up: %s), sets MTU, NOARP, addresses, up",
    async (holderUp) => {
      const ip = new LinkIp(guest(holderUp));
      const reply = await service(ip)(REQUEST);
      const me = ip.links.find((l) => l.index === 5);
      const holder = ip.links.find((l) => l.index === 3);
      expect(me?.name).toBe("eth0");
      expect(me?.mtu).toBe(1450);
      expect(me?.flags).toContain("UP");
      expect(me?.flags).toContain("NOARP");
      expect(me?.addresses.map(subnetless)).toEqual([
        "fe80::1/64 link",
        "10.0.0.9/24 global",
        "2001:db8::146/64 global",
      ]);
      expect(holder?.name).toBe("eth9");
      expect(holder?.flags.includes("UP")).toBe(holderUp);
      expect(reply.name).toBe("eth0");
      expect(reply.hwAddr).toBe("02:aa:bb:cc:dd:01");
    },
  );

  it("is NOT_FOUND 'Link not found' for a MAC that never appears", async () => {
    const ip = new LinkIp(guest());
    let err: unknown;
    try {
      await service(ip)({ ...REQUEST, hwAddr: "02:00:00:00:00:77" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TtrpcError);
    expect((err as TtrpcError).code).toBe(Code.NOT_FOUND);
    expect((err as TtrpcError).message).toBe("Link not found (hwAddr 02:00:00:00:00:77)");
    expect(ip.batches).toEqual([]);
  });

  it("gives up on an absent MAC at the hot-plug cap, even with a one-hour deadline", async () => {
    const ip = new LinkIp(guest());
    const svc = createNetworkService({
      ip: ip as unknown as IpRunner,
      log: createLogger("error", () => {}),
      hotplugTimeoutMs: 200,
      hotplugMaxWaitMs: 300,
      pollMs: 10,
    });
    const hour: CallContext = { ...ctx, deadline: performance.now() + 3_600_000 };
    const t0 = performance.now();
    const err = await Promise.resolve(
      svc.updateInterface?.(
        create(UpdateInterfaceRequestSchema, {
          interface: { ...REQUEST, hwAddr: "02:00:00:00:00:78" },
        }),
        hour,
      ),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as TtrpcError).message).toBe("Link not found (hwAddr 02:00:00:00:00:78)");
    // Well before the hour, not before the cap.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(250);
    expect(performance.now() - t0).toBeLessThan(30_000);
    expect(HOTPLUG_MAX_WAIT_MS).toBe(60_000);
  });

  it("re-addresses a subnet that has secondaries (deleting them after the primary was 'not found')", async () => {
    const links = guest();
    const me = links[2] as Link;
    me.addresses = [a4("10.0.0.2", 24), a4("10.0.0.9", 24), a4("10.0.0.10", 24)];
    const ip = new LinkIp(links);
    await service(ip)({ hwAddr: me.mac, IPAddresses: [{ address: "10.0.0.5", mask: "24" }] });
    expect(ip.links[2]?.addresses.map(subnetless)).toEqual(["10.0.0.5/24 global"]);
  });
});

describe("UpdateInterface over a link model: a failing line leaves every link as it was", () => {
  const secondaries = () => {
    const links = guest();
    (links[2] as Link).addresses = [a4("10.0.0.2", 24), a4("10.0.0.9", 24), a4("10.0.0.10", 24)];
    return links;
  };
  const RENUMBER: InterfaceInit = {
    hwAddr: "02:aa:bb:cc:dd:01",
    name: "eth0",
    IPAddresses: [
      { address: "10.0.0.9", mask: "24" },
      { address: "10.0.0.5", mask: "24" },
    ],
  };
  describe.each([
    ["swap with a holder that is up", () => guest(true), REQUEST],
    ["swap with a holder that is down", () => guest(false), REQUEST],
    ["renumbering a subnet with secondaries", secondaries, RENUMBER],
  ] as const)("%s", (_name, makeLinks, request) => {
    const lines = (async () => {
      const ip = new LinkIp(makeLinks());
      await service(ip)(request);
      return ip.batches[0]?.lines ?? [];
    })();

    it("leaves every link as it was when any line of the plan fails", async () => {
      const plan = await lines;
      expect(plan.length).toBeGreaterThan(5);
      for (let k = 0; k < plan.length; k++) {
        const ip = new LinkIp(makeLinks());
        const before = snapshot(ip.links);
        ip.failAt = k;
        let err: unknown;
        try {
          await service(ip)(request);
        } catch (e) {
          err = e;
        }
        expect(err, `line ${k} did not fail the call`).toBeInstanceOf(TtrpcError);
        expect((err as TtrpcError).message).toContain(plan[k]);
        expect(
          snapshot(ip.links),
          `failing line ${k}: ${plan[k]}\nrestore: ${ip.batches[1]?.lines.join("\n")}`,
        ).toEqual(before);
      }
    });
  });
});
