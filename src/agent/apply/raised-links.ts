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
 * they read ready (link-ready.ts: operstate UP, at most a second);
 * their tentative IPv6 addresses (the kernel's new link-local) are deleted;
 * and the rest of the plan is made against a fresh read, which adds every
 * wanted IPv6 address with nodad: usable at once, with its prefix route,
 * and nothing left for the kernel to add after.
 */
import type { IpRunner } from "../../net/iproute/ip-runner";
import { waitLinksReady } from "../../net/iproute/link-ready";
import { batchLine } from "../../net/plan/render-batch";

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

/**
 * Waits (bounded) until the `raised` links with carrier read ready, then
 * deletes their tentative IPv6 addresses (not those whose detection
 * failed), for the plan made next to add them with nodad. A stable-privacy
 * one stays: the kernel made it from the link's stable_secret, written
 * before (apply-kernel-steps.ts), as the pod's kernel made the pod's, and
 * an address put back in its place would lack that flag; it is usable
 * once its detection ends (a second).
 */
export async function settleRaised(ip: IpRunner, raised: readonly string[]): Promise<void> {
  const names = new Set(raised.map((n) => n.replace(/^"(.*)"$/, "$1")));
  // The agent runs in the namespace it configures: its sysfs is that namespace's.
  const links = await waitLinksReady(ip, (name) => names.has(name), { sysfs: true });
  const lines = links.flatMap((l) =>
    (Array.isArray(l.addr_info) ? l.addr_info : [])
      .filter(
        (a) =>
          a.tentative === true &&
          a.dadfailed !== true &&
          a["stable-privacy"] !== true &&
          String(a.local).includes(":"),
      )
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
