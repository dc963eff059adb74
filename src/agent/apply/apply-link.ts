/**
 * Applies one UpdateInterface to a link all or nothing: one `ip -batch`
 * (rename with a swap, MTU, NOARP, addresses, up); on any failure, a killed
 * ip or a cancelled call, the link and any link the swap touched are put
 * back as read before, then the error goes out.
 */

import { codeOfNetError } from "../../common/error-status";
import type { Logger } from "../../common/log";
import type { IpRunner } from "../../net/iproute/ip-runner";
import type { Link, NetState } from "../../net/model/model";
import { IpBatchError } from "../../net/parse/ip-results";
import { planLink, putLine } from "../../net/plan/plan-link";
import { batchLine } from "../../net/plan/render-batch";
import { Code, TtrpcError } from "../../ttrpc/codes";
import type { InterfaceSpec } from "../validate/validate-interface-neighbors";
import { settleIpv6 } from "./restore-ipv6";
import { noteRollback } from "./rollbacks";
import type { SerialQueue } from "./serial-queue";

/** How often the restore tries to read the state before giving up on it. */
const RESTORE_READS = 3;

/**
 * Reconciles `link` (found in `state`) to `spec` and returns it read back;
 * what puts it back goes to `journal` before the first change.
 * Throws the failed line's error (prefixed with the MAC) after restoring;
 * NOT_FOUND when the link vanished meanwhile.
 */
export async function applyLink(
  ip: IpRunner,
  log: Logger,
  spec: InterfaceSpec,
  state: Pick<NetState, "links">,
  link: Link,
  signal: AbortSignal,
  journal?: Pick<SerialQueue, "record">,
): Promise<Link> {
  const lines = planLink(state.links, link, { ...spec, up: true, exactAddresses: false });
  const holder = state.links.find((l) => l.name === spec.name && l.index !== link.index);
  let links = state.links;
  if (lines.length > 0) {
    journal?.record(() => ({
      kind: "link",
      links: state.links,
      index: link.index,
      ...(holder ? { holder: holder.index } : {}),
    }));
  }
  try {
    // The read-back rides in the same process as the change.
    if (lines.length > 0) links = await ip.batchThenLinks(lines, { signal });
  } catch (err) {
    const problem = await restoreLink(ip, log, state, link, holder);
    const tail = problem === undefined ? "" : ` (restore incomplete: ${problem})`;
    if (err instanceof IpBatchError) {
      throw new TtrpcError(`interface ${spec.mac}: ${err.message}${tail}`, codeOfNetError(err), {
        cause: err,
      });
    }
    throw err;
  }
  const now = links.find((l) => l.index === link.index);
  if (!now) {
    throw new TtrpcError(`Link not found (hwAddr ${spec.mac}): it vanished`, Code.NOT_FOUND);
  }
  log.info("interface updated", { hwAddr: spec.mac, name: now.name, operations: lines.length });
  return now;
}

/**
 * Puts `link` (and the others, `holder` the one a swap took down) back as
 * in `before` (also a start's restore after a crash, recover.ts). Never
 * throws: returns what went wrong.
 */
export async function restoreLink(
  ip: IpRunner,
  log: Logger,
  before: Pick<NetState, "links">,
  link: Link,
  holder: Link | undefined,
): Promise<string | undefined> {
  const what = `link ${link.name}`;
  let lines: string[];
  try {
    const now = await readWithRetries(ip);
    lines = planLinkRestore(before, link, now).concat(holderAddresses(holder, now));
    await ip.batch(lines, { force: true });
    // Complete only when the link's IPv6 state reads as before (restore-ipv6.ts).
    const unsettled = await settleIpv6(ip, link);
    if (unsettled) throw new Error(unsettled);
  } catch (err) {
    const problem = (err as Error).message;
    log.error("restore incomplete", { what, error: problem });
    noteRollback("link", false);
    return problem;
  }
  log.info("restored state after a failed change", { what, operations: lines.length });
  noteRollback("link", true);
  return undefined;
}

/**
 * A link's state cannot be reconstructed from the plan alone (a name swap
 * undone blindly could rename the wrong link), so the restore needs a read:
 * a failed read (a netlink dump interrupted by a change) is tried again.
 */
async function readWithRetries(ip: IpRunner): Promise<Pick<NetState, "links">> {
  for (let i = 1; ; i++) {
    try {
      return await ip.readLinks();
    } catch (err) {
      if (i >= RESTORE_READS) throw err;
      await new Promise((r) => setTimeout(r, 50 * i));
    }
  }
}

function planLinkRestore(
  before: Pick<NetState, "links">,
  link: Link,
  now: Pick<NetState, "links">,
): string[] {
  const lines: string[] = [];
  const current = now.links.find((l) => l.index === link.index);
  let others = now.links;
  if (current) {
    lines.push(
      ...planLink(now.links, current, {
        name: link.name,
        mtu: link.mtu,
        noarp: link.flags.includes("NOARP"),
        addresses: link.addresses,
        up: link.flags.includes("UP"),
        exactAddresses: true,
        exactAttrs: true,
        ...(link.attrs ? { attrs: link.attrs } : {}),
      }),
    );
    // Those lines swap names with whichever link holds our old name: the
    // others are judged by the names they will have then, not now.
    if (current.name !== link.name) {
      others = now.links.map((l) =>
        l.name === link.name && l.index !== link.index ? { ...l, name: current.name } : l,
      );
    }
  }
  return lines.concat(restoreOtherLinks(before.links, others, link.index));
}

/**
 * The IPv6 addresses the swap's down took from a holder that was up, put
 * back once it has its name again (the lines before see to that); link-local
 * ones aside, as planLink does: the kernel makes its own again.
 */
function holderAddresses(holder: Link | undefined, now: Pick<NetState, "links">): string[] {
  const cur = holder && now.links.find((l) => l.index === holder.index);
  if (!holder?.flags.includes("UP") || !cur) return [];
  const has = new Set(cur.addresses.map((a) => `${a.address}/${a.prefix}`));
  return holder.addresses
    .filter((a) => a.family === 6 && a.scope !== "link" && !has.has(`${a.address}/${a.prefix}`))
    .map((a) => putLine(a, holder.name));
}

/** Puts back the names and up state of links a half-done swap left renamed or down. */
function restoreOtherLinks(
  before: readonly Link[],
  now: readonly Link[],
  skipIndex: number,
): string[] {
  const lines: string[] = [];
  for (const old of before) {
    if (old.index === skipIndex) continue;
    const cur = now.find((l) => l.index === old.index);
    if (!cur) continue;
    const wasUp = old.flags.includes("UP");
    if (cur.name !== old.name) {
      lines.push(batchLine(["link", "set", "dev", cur.name, "down"]));
      lines.push(batchLine(["link", "set", "dev", cur.name, "name", old.name]));
      if (wasUp) lines.push(batchLine(["link", "set", "dev", old.name, "up"]));
    } else if (wasUp && !cur.flags.includes("UP")) {
      // The swap takes the holder down before renaming it.
      lines.push(batchLine(["link", "set", "dev", old.name, "up"]));
    }
  }
  return lines;
}
