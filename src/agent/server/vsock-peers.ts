/**
 * Which vsock peers the agent serves. Kata's agent serves any CID, so that
 * stays the default; `--vsock-allow-cid` narrows it (e.g. to 2, the host).
 * Every accepted vsock connection's peer CID is logged, allowed or not.
 */

import type { Logger } from "../../common/log";
import type { Acceptor } from "../../transport/channel";

/**
 * Parses `--vsock-allow-cid` values (each a CID or a comma list of them)
 * into a set; throws an Error naming the bad item.
 */
export function parseCidList(values: readonly string[]): Set<number> {
  const cids = new Set<number>();
  for (const value of values) {
    for (const item of value.split(",")) {
      const text = item.trim();
      if (!/^\d{1,10}$/.test(text) || Number(text) >= 0xffff_ffff) {
        throw new Error(
          `invalid CID ${JSON.stringify(item)} in ${JSON.stringify(value)} (expected 0..4294967294)`,
        );
      }
      cids.add(Number(text));
    }
  }
  return cids;
}

/**
 * True when a peer may be served: any peer without an allow list; with
 * one, only a peer whose CID is known and listed (an unknown CID fails closed).
 */
export function vsockPeerAllowed(
  cid: number | undefined,
  allow: ReadonlySet<number> | undefined,
): boolean {
  if (allow === undefined) return true;
  return cid !== undefined && allow.has(cid);
}

/**
 * Wraps the server's acceptor for a vsock listener: logs each peer's CID
 * and refuses (closes) those the allow list does not hold.
 */
export function guardVsockPeers(
  accept: Acceptor,
  allow: ReadonlySet<number> | undefined,
  log: Logger,
): Acceptor {
  const allowed = allow === undefined ? "any" : [...allow].sort((a, b) => a - b);
  return (channel) => {
    const cid = channel.peerCid ?? null;
    if (!vsockPeerAllowed(channel.peerCid, allow)) {
      log.warn("connection refused: vsock peer CID not allowed", {
        peer: channel.peer,
        cid,
        allowed,
      });
      return undefined;
    }
    log.info("vsock connection", { peer: channel.peer, cid });
    return accept(channel);
  };
}
