/**
 * The upstream of front mode: the agent behind netagent, `unix:///path` or
 * `vsock://CID:PORT`. Pure parsing, no I/O.
 */
import {
  type AgentAddress,
  formatAddress,
  parseAddress,
  VMADDR_CID_ANY,
} from "../transport/address";

export interface UpstreamAddress {
  address: Extract<AgentAddress, { kind: "unix" } | { kind: "vsock" }>;
  /** As written back (formatAddress): what errors and logs name. */
  text: string;
}

/** Parses an upstream; throws an Error naming the value when it cannot be dialled. */
export function parseUpstream(text: string): UpstreamAddress {
  const address = parseAddress(text);
  if (address.kind === "vsock") {
    if (address.cid === VMADDR_CID_ANY) {
      throw new Error(
        `invalid upstream ${JSON.stringify(text)}: CID -1 (any) cannot be dialled; ` +
          "the agent behind in the same guest is CID 1 (vsock loopback)",
      );
    }
    return { address, text: formatAddress(address) };
  }
  if (address.kind === "unix") return { address, text: formatAddress(address) };
  throw new Error(
    `invalid upstream ${JSON.stringify(text)}: expected unix:///path or vsock://CID:PORT`,
  );
}

/**
 * True when dialling `upstream` would reach `listen` itself: the same unix
 * path, or the same vsock port where netagent listens on that CID or on any
 * (a guest's own vsock connections to CID 1 arrive at a CID-any listener).
 */
export function upstreamIsListen(upstream: UpstreamAddress, listen: AgentAddress): boolean {
  const u = upstream.address;
  if (u.kind === "unix") return listen.kind === "unix" && listen.path === u.path;
  return (
    listen.kind === "vsock" &&
    listen.port === u.port &&
    (listen.cid === VMADDR_CID_ANY || listen.cid === u.cid)
  );
}
