/**
 * A link's restore is complete only when its IPv6 state reads as before:
 * every IPv6 address it had is there, usable (not tentative), with its
 * table local route. A restore that raises a link's IPv6 again (an MTU
 * back to 1280 or more, a link taken down and up) lets the kernel make the
 * link-local afresh, in duplicate address detection, and `addr replace ...
 * nodad` on an address whose detection has begun leaves it tentative for a
 * second or two: no source, no local route. Such an address is put again
 * (deleted, added with nodad: usable at once), and the state is read until
 * it is as before, at most IPV6_SETTLE_MS (the kernel adds the local route
 * from its work queue a moment after the address). Runs only on a restore.
 */
import { runIpRaw } from "../../net/iproute/ip-raw";
import type { IpRunner } from "../../net/iproute/ip-runner";
import type { Address, Link } from "../../net/model/model";
import { putLine } from "../../net/plan/plan-link";
import { batchLine } from "../../net/plan/render-batch";

/** The longest wait for a restored link's IPv6 state to read as before. */
const IPV6_SETTLE_MS = 1_000;
const POLL_MS = 5;

interface AddrInfo {
  local?: unknown;
  prefixlen?: unknown;
  tentative?: unknown;
  dadfailed?: unknown;
}

interface Ipv6Now {
  addrs: AddrInfo[];
  /** Destinations of the link's table local routes of type local. */
  locals: Set<string>;
}

async function readIpv6(ip: IpRunner, dev: string): Promise<Ipv6Now> {
  const a = await runIpRaw(ip, ["-j", "-6", "addr", "show", "dev", dev]);
  const r = await runIpRaw(ip, ["-j", "-6", "route", "show", "table", "local", "dev", dev]);
  if (a.code !== 0 || r.code !== 0)
    throw new Error(`reading ${dev}'s IPv6 state: ${a.stderr}${r.stderr}`);
  const [link] = JSON.parse(a.stdout || "[]") as { addr_info?: AddrInfo[] }[];
  const routes = JSON.parse(r.stdout || "[]") as { type?: string; dst?: string }[];
  const locals = new Set(routes.filter((x) => x.type === "local").map((x) => String(x.dst)));
  return { addrs: Array.isArray(link?.addr_info) ? link.addr_info : [], locals };
}

const find = (now: Ipv6Now, a: Address) =>
  now.addrs.find((x) => x.local === a.address && x.prefixlen === a.prefix);

/** What of `want` is not as before, one phrase each. */
function differences(want: readonly Address[], now: Ipv6Now): string[] {
  return want.flatMap((a) => {
    const x = find(now, a);
    const cidr = `${a.address}/${a.prefix}`;
    if (!x) return [`${cidr} missing`];
    if (x.tentative === true) return [`${cidr} tentative`];
    return now.locals.has(a.address) ? [] : [`${cidr} without its local route`];
  });
}

/**
 * Makes `link`'s IPv6 state read as before after its restore batch ran,
 * and answers what still differs (undefined: as before). A link that was
 * down, or had no IPv6 address, is as the batch left it.
 */
export async function settleIpv6(ip: IpRunner, link: Link): Promise<string | undefined> {
  const want = link.addresses.filter((a) => a.family === 6);
  if (want.length === 0 || !link.flags.includes("UP")) return undefined;
  const first = await readIpv6(ip, link.name);
  const again = want.filter((a) => {
    const x = find(first, a);
    return x?.tentative === true && x.dadfailed !== true;
  });
  if (again.length > 0) {
    const lines = again.flatMap((a) => [
      batchLine(["addr", "del", `${a.address}/${a.prefix}`, "dev", link.name]),
      putLine(a, link.name),
    ]);
    await ip.batch(lines, { force: true });
  }
  const end = performance.now() + IPV6_SETTLE_MS;
  for (;;) {
    const missing = differences(want, await readIpv6(ip, link.name));
    if (missing.length === 0) return undefined;
    if (performance.now() > end) return `IPv6 state not as before: ${missing.join(", ")}`;
    await Bun.sleep(POLL_MS);
  }
}
