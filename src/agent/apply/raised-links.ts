/**
 * IPv6 addresses of a link the plan raises go on once the link is ready.
 *
 * A link that comes up (a renamed NIC is taken down and up) is "ready" for
 * IPv6 only when its carrier is seen, which the kernel notes a moment
 * after the `up`, from its link-watch work; only then does it make the
 * link's own link-local address (in duplicate address detection) and its
 * fe80::/64 route. An `addr replace <that link-local> nodad` put in the
 * same batch, right after the `up`, races with that work: put before it,
 * the address was seen to end up the kernel's own all the same (no nodad,
 * tentative for a second or two) and the link without its fe80::/64 route;
 * put after it, it stays tentative as long as the detection runs. Either
 * way the guest's link-local is unusable for seconds, or the route is
 * missing for good.
 *
 * So the link lines run first without the IPv6 address lines that follow
 * a link's `up`; the links raised that have carrier are waited for until
 * they read ready (operstate UP or UNKNOWN, at most LINK_READY_WAIT_MS);
 * their tentative IPv6 addresses (the kernel's new link-local) are deleted;
 * and the rest of the plan is made against a fresh read, which adds every
 * wanted IPv6 address with nodad: usable at once, with its prefix route,
 * and nothing left for the kernel to add after.
 */
import { runIpRaw } from "../../net/iproute/ip-raw";
import type { IpRunner } from "../../net/iproute/ip-runner";
import { batchLine } from "../../net/plan/render-batch";

/** The longest wait for raised links to read ready (the link-watch work runs within a second). */
export const LINK_READY_WAIT_MS = 1_000;
const POLL_MS = 5;

/** `link set dev NAME up` as the plan writes it: NAME's token, or undefined. */
function raisedBy(line: string): string | undefined {
  const t = line.split(" ");
  return t.length === 5 && t[0] === "link" && t[1] === "set" && t[2] === "dev" && t[4] === "up"
    ? t[3]
    : undefined;
}

/** `addr add|replace <IPv6> ... dev NAME ...`: NAME's token, or undefined. */
function ipv6AddressOn(line: string): string | undefined {
  const t = line.split(" ");
  if (t[0] !== "addr" || (t[1] !== "add" && t[1] !== "replace") || !t[2]?.includes(":"))
    return undefined;
  const at = t.indexOf("dev");
  return at > 0 ? t[at + 1] : undefined;
}

/**
 * The link lines without the IPv6 address lines that follow their link's
 * `up`, and the links raised (their names as the lines write them).
 */
export function deferIpv6(lines: readonly string[]): { first: string[]; raised: string[] } {
  const raised = new Set<string>();
  const first: string[] = [];
  let deferred = 0;
  for (const line of lines) {
    const up = raisedBy(line);
    if (up !== undefined) raised.add(up);
    const on = ipv6AddressOn(line);
    if (on !== undefined && raised.has(on)) {
      deferred++;
      continue;
    }
    first.push(line);
  }
  return { first, raised: deferred > 0 ? [...raised] : [] };
}

interface LinkRead {
  ifname?: unknown;
  operstate?: unknown;
  flags?: unknown;
  addr_info?: { local?: unknown; prefixlen?: unknown; tentative?: unknown; dadfailed?: unknown }[];
}

async function readLinks(ip: IpRunner): Promise<LinkRead[]> {
  const r = await runIpRaw(ip, ["-j", "addr", "show"]);
  if (r.code !== 0) throw new Error(`reading the links after raising them: ${r.stderr.trim()}`);
  const value: unknown = JSON.parse(r.stdout || "[]");
  return Array.isArray(value) ? (value as LinkRead[]) : [];
}

/** Up with carrier, and not yet seen ready by the kernel's link watch. */
const waiting = (l: LinkRead) => {
  const flags = Array.isArray(l.flags) ? l.flags : [];
  const carrier = flags.includes("UP") && flags.includes("LOWER_UP");
  return carrier && l.operstate !== "UP" && l.operstate !== "UNKNOWN";
};

/**
 * Waits (bounded) until the `raised` links with carrier read ready, then
 * deletes their tentative IPv6 addresses (not those whose detection
 * failed), for the plan made next to add them with nodad.
 */
export async function settleRaised(ip: IpRunner, raised: readonly string[]): Promise<void> {
  const names = new Set(raised.map((n) => n.replace(/^"(.*)"$/, "$1")));
  const mine = (links: LinkRead[]) => links.filter((l) => names.has(String(l.ifname)));
  let links = mine(await readLinks(ip));
  const end = performance.now() + LINK_READY_WAIT_MS;
  while (links.some(waiting) && performance.now() < end) {
    await Bun.sleep(POLL_MS);
    links = mine(await readLinks(ip));
  }
  const lines = links.flatMap((l) =>
    (l.addr_info ?? [])
      .filter((a) => a.tentative === true && a.dadfailed !== true && String(a.local).includes(":"))
      .map((a) =>
        batchLine([
          "addr",
          "del",
          `${String(a.local)}/${String(a.prefixlen)}`,
          "dev",
          String(l.ifname),
        ]),
      ),
  );
  if (lines.length > 0) await ip.batch(lines, { force: true });
}
