/**
 * Route lookups to ask both sides: `ip route get ADDR [from SRC] [iif IF]
 * [oif IF] [mark M] [ipproto P] [sport P] [dport P] [uid U] [tos T]`, with
 * values drawn from what the pod's own read mentions (route destinations,
 * addresses, gateways, rule selectors: inside, at the edges and just outside
 * their ranges). Pure: the pod's read and a seed give the same probes.
 */
import { expandV6 } from "./ignore";
import { Prng } from "./prng";
import type { Json, NetnsRead } from "./read";

export interface Probe {
  args: string[];
}

interface Pools {
  dst: Record<4 | 6, string[]>;
  from: Record<4 | 6, string[]>;
  links: string[];
  marks: string[];
  protos: string[];
  ports: number[];
  uids: number[];
  tos: string[];
}

export function makeProbes(pod: NetnsRead, seed: number, count: number): Probe[] {
  const rng = new Prng((seed ^ 0x5bd1e995) >>> 0);
  const pools = poolsOf(pod, rng);
  const out: Probe[] = [];
  for (let i = 0; i < count; i++) {
    const family = pools.dst[6].length && rng.chance(0.35) ? 6 : 4;
    const args = ["route", "get", rng.pick(pools.dst[family])];
    const opt = (p: number, word: string, list: readonly (string | number)[]) => {
      if (list.length && rng.chance(p)) args.push(word, String(rng.pick(list)));
    };
    opt(0.4, "from", pools.from[family]);
    // iif needs a source; without one the answer is the kernel's complaint, compared as such.
    if (rng.chance(0.12)) args.push("iif", rng.pick(pools.links));
    else opt(0.1, "oif", pools.links);
    opt(0.2, "mark", pools.marks);
    if (rng.chance(0.25)) {
      args.push("ipproto", rng.pick(pools.protos));
      opt(0.6, "dport", pools.ports);
      opt(0.4, "sport", pools.ports);
    }
    opt(0.15, "uid", pools.uids);
    if (family === 4) opt(0.2, "tos", pools.tos);
    out.push({ args });
  }
  return out;
}

function poolsOf(pod: NetnsRead, rng: Prng): Pools {
  const p: Pools = {
    dst: { 4: ["8.8.8.8", "192.0.2.1"], 6: [] },
    from: { 4: [], 6: [] },
    links: ["lo"],
    marks: [],
    protos: ["tcp", "udp"],
    ports: [0, 80, 443, 65535],
    uids: [0, 1000, 65534],
    tos: [],
  };
  const fam = (a: string): 4 | 6 => (a.includes(":") ? 6 : 4);
  for (const l of pod.addresses) {
    if (l.ifname !== "lo") p.links.push(String(l.ifname));
    for (const a of (l.addr_info ?? []) as Json[]) {
      const local = String(a.local);
      p.dst[fam(local)].push(local, addressIn(`${local}/${a.prefixlen}`, rng));
      p.from[fam(local)].push(local);
    }
  }
  if (p.dst[6].length) p.dst[6].push("2001:db8::1", "2606:4700::1111");
  for (const r of pod.routes) {
    const dst = String(r.dst);
    if (dst !== "default") p.dst[fam(dst)].push(addressIn(dst, rng), addressIn(dst, rng));
    if (typeof r.gateway === "string") p.dst[fam(r.gateway)].push(r.gateway);
    if (typeof r.from === "string") p.from[6].push(addressIn(r.from, rng));
    if (typeof r.tos === "string") p.tos.push(tosValue(r.tos));
  }
  for (const r of pod.rules) {
    for (const [a, len, pool] of [
      [r.src, r.srclen, p.from],
      [r.dst, r.dstlen, p.dst],
    ] as const) {
      if (typeof a === "string" && a !== "all")
        pool[fam(a)].push(addressIn(`${a}/${len ?? (fam(a) === 4 ? 32 : 128)}`, rng));
    }
    if (typeof r.fwmark === "string") {
      const m = Number.parseInt(r.fwmark, 16);
      p.marks.push(String(m), String(m | 0x100), String(m + 1));
    }
    if (typeof r.ipproto === "string") p.protos.push(r.ipproto);
    for (const k of ["sport", "dport"]) {
      if (typeof r[k] === "number") p.ports.push(r[k] as number, (r[k] as number) + 1);
      const lo = r[`${k}_start`];
      const hi = r[`${k}_end`];
      if (typeof lo === "number" && typeof hi === "number")
        p.ports.push(lo - 1, lo, (lo + hi) >> 1, hi, hi + 1);
    }
    if (typeof r.uid_start === "number" && typeof r.uid_end === "number") {
      p.uids.push(r.uid_start - 1, r.uid_start, r.uid_end, r.uid_end + 1);
    }
    if (typeof r.tos === "string") p.tos.push(tosValue(r.tos));
    for (const k of ["iif", "oif"]) if (typeof r[k] === "string") p.links.push(r[k] as string);
  }
  p.ports = p.ports.filter((x) => x >= 0 && x <= 65535);
  p.uids = p.uids.filter((x) => x >= 0);
  return p;
}

/** iproute2 prints DSCP names for some values (CS1); `route get` takes the number. */
const DSCP: Record<string, number> = {
  CS1: 8,
  CS2: 16,
  CS3: 24,
  CS4: 32,
  CS5: 40,
  CS6: 48,
  CS7: 56,
  EF: 46,
};
function tosValue(t: string): string {
  const named = DSCP[t];
  return named === undefined ? t : `0x${(named << 2).toString(16)}`;
}

/** A random address inside PREFIX (an address without /len is itself). */
export function addressIn(prefix: string, rng: Prng): string {
  const [addr, lenText] = prefix.split("/") as [string, string | undefined];
  if (addr.includes(":")) {
    const groups = expandV6(addr);
    if (!groups) return addr;
    const len = lenText === undefined ? 128 : Number(lenText);
    const out = groups.map((g, i) => {
      const fixed = Math.max(0, Math.min(16, len - i * 16));
      const mask = fixed === 0 ? 0 : (0xffff << (16 - fixed)) & 0xffff;
      return (g & mask) | (rng.int(0, 0xffff) & ~mask & 0xffff);
    });
    return out.map((g) => g.toString(16)).join(":");
  }
  const parts = addr.split(".").map(Number);
  const base =
    (((parts[0] ?? 0) << 24) |
      ((parts[1] ?? 0) << 16) |
      ((parts[2] ?? 0) << 8) |
      (parts[3] ?? 0)) >>>
    0;
  const len = lenText === undefined ? 32 : Number(lenText);
  const size = 2 ** (32 - len);
  const x =
    ((base & (len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0)) + rng.int(0, size - 1)) >>> 0;
  return [x >>> 24, (x >>> 16) & 255, (x >>> 8) & 255, x & 255].join(".");
}
