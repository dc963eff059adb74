/**
 * The whole network of a namespace, read independently of the agent and
 * normalised into one text: links (name, MAC, MTU, UP and NOARP), their
 * addresses, the routes of every table of both families, the rules of both
 * families, permanent neighbours, rp_filter of every link, and the
 * iptables/ip6tables rules. Left out, because the kernel moves them by
 * itself: timers, DAD state, the IPv6 link-local addresses and routes every
 * up makes, table local's kernel routes (they follow the addresses), the
 * carrier flags.
 */
import type { Netns } from "../helpers/netns";
import { run } from "../helpers/process";

type Obj = Record<string, unknown>;

const MOVING = new Set(["expires", "used", "valid_life_time", "preferred_life_time", "pref"]);
const line = (o: unknown) => JSON.stringify(o, (k, v) => (MOVING.has(k) ? undefined : v));

async function exec(ns: Netns, argv: string[]): Promise<string> {
  const r = await run("ip", ["netns", "exec", ns.name, ...argv]);
  if (r.code !== 0) throw new Error(`${argv.join(" ")} in ${ns.name}: ${r.stderr}`);
  return r.stdout;
}

function kernelMade(r: Obj): boolean {
  const dst = String(r.dst ?? "");
  if (r.table === "local" && r.protocol === "kernel") return true;
  return dst === "fe80::/64" || dst.startsWith("ff00::") || dst === "multicast ff00::/8";
}

/** One text that is equal for two reads exactly when the network is the same. */
export async function readNetwork(ns: Netns): Promise<string> {
  const [links, addrs, r4, r6, rules4, rules6, neigh, rp, ipt4, ipt6] = await Promise.all([
    ns.json<Obj[]>("link", "show"),
    ns.json<Obj[]>("addr", "show"),
    ns.json<Obj[]>("route", "show", "table", "all"),
    ns.json<Obj[]>("-6", "route", "show", "table", "all"),
    ns.json<Obj[]>("rule", "show"),
    ns.json<Obj[]>("-6", "rule", "show"),
    ns.json<Obj[]>("neigh", "show", "nud", "permanent"),
    exec(ns, ["sh", "-c", "grep -H . /proc/sys/net/ipv4/conf/*/rp_filter"]),
    exec(ns, ["iptables-save"]),
    exec(ns, ["ip6tables-save"]),
  ]);
  const out: string[] = [];
  for (const l of links) {
    const flags = ((l.flags as string[]) ?? []).filter((f) => f === "UP" || f === "NOARP");
    out.push(`link ${l.ifname} ${l.address} mtu ${l.mtu} ${flags.join(",")}`);
  }
  for (const a of addrs) {
    const infos = ((a.addr_info as Obj[]) ?? [])
      .filter((i) => !(i.family === "inet6" && i.scope === "link"))
      .map((i) => `${i.local}/${i.prefixlen}${i.noprefixroute ? " noprefixroute" : ""}`)
      .sort();
    out.push(`addr ${a.ifname} ${infos.join(" ")}`);
  }
  const routes = [...r4.map((r) => ["v4", r] as const), ...r6.map((r) => ["v6", r] as const)]
    .filter(([, r]) => !kernelMade(r))
    .map(([f, r]) => `route ${f} ${line(r)}`)
    .sort();
  out.push(...routes);
  out.push(...rules4.map((r) => `rule v4 ${line(r)}`).sort());
  out.push(...rules6.map((r) => `rule v6 ${line(r)}`).sort());
  out.push(...neigh.map((n) => `neigh ${line(n)}`).sort());
  out.push(...rp.split("\n").filter(Boolean).sort());
  const rulesText = (t: string) => t.split("\n").filter((l) => l && !l.startsWith("#"));
  out.push(...rulesText(ipt4).map((l) => `ipt4 ${l}`));
  out.push(...rulesText(ipt6).map((l) => `ipt6 ${l}`));
  return out.join("\n");
}

/** The lines of `a` missing from `b` and the other way round, for a report of a mixed state. */
export function lineDiff(a: string, b: string, max = 6): { gone: string[]; came: string[] } {
  const as = new Set(a.split("\n"));
  const bs = new Set(b.split("\n"));
  return {
    gone: [...as].filter((l) => !bs.has(l)).slice(0, max),
    came: [...bs].filter((l) => !as.has(l)).slice(0, max),
  };
}
