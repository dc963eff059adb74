/**
 * What the generator knows about the pod it is writing, so every command it
 * emits is one the kernel accepts in that state: which NICs have IPv6, which
 * gateways are on-link, which route keys and rule priorities are taken.
 * Commands a kernel may lack (nat routes, l3mdev, source-specific IPv6
 * routes) are still emitted; the builder records what it refused.
 */
import type { Prng } from "./prng";
import type { PodNic, Step } from "./recipe";

export interface Addr {
  family: 4 | 6;
  local: string;
  /** Usable as a route's src: a local address the kernel accepts there. */
  usableSrc: boolean;
}

export interface NicState extends PodNic {
  index: number;
  mtu: number;
  /** IPv6 exists on the link (an MTU below 1280 removes it). */
  ipv6: boolean;
  noarp: boolean;
  /** Left down (no link-local, no routes through it). */
  down?: boolean;
  /** Given no address at all. */
  bare?: boolean;
  group?: number;
  /** The IPv4 subnet as 10.A.B.0, its prefix length, and what is on-link. */
  v4net: { a: number; b: number; prefix: number };
  addrs: Addr[];
  /** Gateways the kernel can reach without onlink, per family. */
  gw4: string[];
  gw6: string[];
  /** IPv6 /64 prefixes of the link's addresses ("fdxx:...:yy"). */
  v6prefixes: string[];
}

export class GenState {
  readonly nics: NicState[] = [];
  readonly steps: Step[] = [];
  /** Route keys already taken (family|table|dst|from|tos|metric): a second add is EEXIST. */
  readonly routeKeys = new Set<string>();
  readonly rulePrefs = new Set<number>();
  readonly nexthops: { id: number; family: 4 | 6; group: boolean; blackhole: boolean }[] = [];
  readonly v6base: string;

  constructor(readonly rng: Prng) {
    // Canonical spelling (no leading zeros), as the kernel prints it back.
    const group = () => rng.int(0, 0xffff).toString(16);
    this.v6base = `fd${rng.hex(1)}:${group()}:${group()}`;
  }

  ip(tags: string[], ...args: string[]): void {
    this.steps.push({ tool: "ip", args, tags });
  }

  sysctl(tags: string[], key: string, value: string): void {
    this.steps.push({ tool: "sysctl", args: [`${key}=${value}`], tags });
  }

  settle(): void {
    this.steps.push({ tool: "settle", args: [], tags: [] });
  }

  /** NICs with a MAC and carrier, up: veths and taps (neighbours, nexthop objects). */
  veths(): NicState[] {
    return this.nics.filter((n) => (n.kind === "veth" || n.kind === "tap") && !n.down);
  }

  /** NICs that can carry a family's routes (up; IPv6: the link has IPv6 and an address). */
  withFamily(family: 4 | 6): NicState[] {
    return this.nics.filter(
      (n) =>
        !n.down &&
        (family === 4 ? n.addrs.some((a) => a.family === 4) : n.ipv6 && n.v6prefixes.length > 0),
    );
  }

  locals(family: 4 | 6): string[] {
    return this.nics.flatMap((n) =>
      n.addrs.filter((a) => a.family === family && a.usableSrc).map((a) => a.local),
    );
  }

  /** A fresh rule priority (unique per pod: both families draw from one set). */
  rulePref(): number {
    for (;;) {
      const p = this.rng.int(1, 300) * 100 + this.rng.int(0, 99);
      if (p < 32766 && !this.rulePrefs.has(p)) {
        this.rulePrefs.add(p);
        return p;
      }
    }
  }
}

/** 10.A.B.0/prefix, the NIC's subnet, as an address at `host` offset. */
export function v4addr(n: NicState, host: number): string {
  const base = ((10 << 24) | (n.v4net.a << 16) | (n.v4net.b << 8)) >>> 0;
  const mask = n.v4net.prefix === 0 ? 0 : (0xffffffff << (32 - n.v4net.prefix)) >>> 0;
  return intToV4(((base & mask) + host) >>> 0);
}

/** The subnet's broadcast address. */
export function v4broadcast(n: NicState): string {
  const size = 2 ** (32 - n.v4net.prefix);
  return v4addr(n, size - 1);
}

export function intToV4(x: number): string {
  return [x >>> 24, (x >>> 16) & 255, (x >>> 8) & 255, x & 255].join(".");
}

/** A gateway in the NIC's subnet, written with onlink where no prefix route reaches it. */
export function onlinkGateway(n: NicState, family: 4 | 6, host = 1): string {
  if (family === 6) return `${n.v6prefixes[0] ?? "fd00:0:0:1"}::${(0xf00 + host).toString(16)}`;
  const base = n.addrs.find((a) => a.family === 4)?.local ?? "10.0.0.2";
  const parts = base.split(".");
  return `${parts[0]}.${parts[1]}.${parts[2]}.${200 + host}`;
}

/** A random locally administered unicast MAC. */
export function macFrom(rng: Prng): string {
  const first = ((rng.int(0, 255) & 0xfc) | 0x02).toString(16).padStart(2, "0");
  return [first, ...Array.from({ length: 5 }, () => rng.hex(1))].join(":");
}
