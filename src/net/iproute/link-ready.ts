/**
 * When a link is ready for IPv6. A link that comes up with carrier is seen
 * so by the kernel a moment later, from its link-watch work (within a
 * second, usually milliseconds): its operstate turns UP, and only then
 * does the kernel make the link's own link-local address and fe80::/64
 * route. A link down, or up without carrier, waits for its carrier, for
 * ever: such a link is not waited for.
 */
import { runIpRaw } from "./ip-raw";
import type { IpRunner } from "./ip-runner";
import { awaitingReady, type LinkRead } from "./link-readiness";

/** The longest wait for links to read ready (the link-watch work runs within a second). */
const LINK_READY_WAIT_MS = 1_000;
const POLL_MS = 5;

async function readLinks(ip: IpRunner): Promise<LinkRead[]> {
  const r = await runIpRaw(ip, ["-j", "addr", "show"]);
  if (r.code !== 0) throw new Error(`reading the links: ${r.stderr.trim()}`);
  const value: unknown = JSON.parse(r.stdout || "[]");
  return Array.isArray(value)
    ? value.filter((x): x is LinkRead => typeof x === "object" && x !== null)
    : [];
}

/**
 * Reads the links `which` picks (by name) until none awaits readiness, at
 * most LINK_READY_WAIT_MS; answers the last read of them.
 */
export async function waitLinksReady(
  ip: IpRunner,
  which: (name: string) => boolean = () => true,
): Promise<LinkRead[]> {
  const mine = async () => (await readLinks(ip)).filter((l) => which(String(l.ifname)));
  let links = await mine();
  const end = performance.now() + LINK_READY_WAIT_MS;
  while (links.some(awaitingReady) && performance.now() < end) {
    await Bun.sleep(POLL_MS);
    links = await mine();
  }
  return links;
}
