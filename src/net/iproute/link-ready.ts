/**
 * When a link is ready for IPv6. A link that comes up with carrier is seen
 * so by the kernel a moment later, from its link-watch work (within a
 * second, usually milliseconds): its operstate turns UP, and only then
 * does the kernel make the link's own link-local address and fe80::/64
 * route. A link down, or up without carrier, waits for its carrier, for
 * ever: such a link is not waited for.
 */
import { readFileSync } from "node:fs";
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
 * Each link's operstate from sysfs, by name, when sysfs shows this
 * process's own namespace: its entry for every link has the ifindex and
 * MAC the `ip` read gave. Undefined otherwise (a process that entered a
 * namespace without mounting its sysfs sees another namespace's links
 * there), and the caller reads with `ip` instead.
 */
function sysfsOperstates(links: readonly LinkRead[]): (() => string[]) | undefined {
  const dir = (l: LinkRead) => `${SYS_CLASS_NET}/${String(l.ifname)}`;
  const read = (path: string) => readFileSync(path, "utf8").trim();
  try {
    for (const l of links) {
      if (typeof l.ifname !== "string" || l.ifname.includes("/")) return undefined;
      if (read(`${dir(l)}/ifindex`) !== String(l.ifindex)) return undefined;
      if (read(`${dir(l)}/address`) !== String(l.address)) return undefined;
    }
  } catch {
    return undefined;
  }
  return () => links.map((l) => read(`${dir(l)}/operstate`));
}

const SYS_CLASS_NET = "/sys/class/net";

/**
 * Reads the links `which` picks (by name) until none awaits readiness, at
 * most LINK_READY_WAIT_MS; answers the last read of them. With `sysfs`
 * (the agent, in its own namespace), the waiting polls each awaited
 * link's operstate file, a read with no process (an `ip` process per poll
 * was about 25 processes for one link-watch second), and `ip` reads the
 * links once more when they are ready.
 */
export async function waitLinksReady(
  ip: IpRunner,
  which: (name: string) => boolean = () => true,
  opts: { sysfs?: boolean } = {},
): Promise<LinkRead[]> {
  const mine = async () => (await readLinks(ip)).filter((l) => which(String(l.ifname)));
  let links = await mine();
  const end = performance.now() + LINK_READY_WAIT_MS;
  const awaited = links.filter(awaitingReady);
  const states = awaited.length > 0 && opts.sysfs ? sysfsOperstates(awaited) : undefined;
  if (states !== undefined) {
    // sysfs spells operstate in lower case ("up", "unknown").
    const ready = () => {
      try {
        return states().every((s) => s === "up" || s === "unknown");
      } catch {
        return true; // a link gone: the read below says what is there
      }
    };
    while (!ready() && performance.now() < end) await Bun.sleep(POLL_MS);
    return mine();
  }
  while (links.some(awaitingReady) && performance.now() < end) {
    await Bun.sleep(POLL_MS);
    links = await mine();
  }
  return links;
}
