/**
 * Agent addresses: `vsock://CID:PORT` (CID -1 = any), `unix:///path`,
 * `serial:///dev/vportNpM` or `serial://NAME`, and on the host side
 * `hvsock://PATH:PORT` (hybrid vsock). Pure parsing, no I/O.
 */

export type AgentAddress =
  | { kind: "vsock"; cid: number; port: number }
  | { kind: "unix"; path: string }
  | { kind: "serial"; path: string }
  | { kind: "serial-name"; name: string }
  | { kind: "hvsock"; path: string; port: number };

/** VMADDR_CID_ANY, what `-1` stands for. */
export const VMADDR_CID_ANY = 0xffff_ffff;

export const DEFAULT_ADDRESS = "vsock://-1:1024";

/** Parses an address; throws an Error naming the value when it is malformed. */
export function parseAddress(text: string): AgentAddress {
  const bad = (why: string) => new Error(`invalid address ${JSON.stringify(text)}: ${why}`);
  const match = /^([a-z]+):\/\/(.*)$/.exec(text);
  if (!match) throw bad("expected SCHEME://...");
  const [, scheme, rest = ""] = match;
  switch (scheme) {
    case "vsock": {
      const m = /^(-1|\d{1,10}):(\d{1,10})$/.exec(rest);
      if (!m) throw bad("expected vsock://CID:PORT");
      const cid = m[1] === "-1" ? VMADDR_CID_ANY : Number(m[1]);
      const port = Number(m[2]);
      if (cid > VMADDR_CID_ANY) throw bad("CID out of range");
      if (port > 0xffff_ffff) throw bad("port out of range");
      return { kind: "vsock", cid, port };
    }
    case "unix":
      if (!rest.startsWith("/") || rest.length < 2) throw bad("expected unix:///absolute/path");
      if (rest.includes("\0")) throw bad("NUL in path");
      return { kind: "unix", path: rest };
    case "serial":
      if (rest.startsWith("/")) {
        if (rest.includes("\0")) throw bad("NUL in path");
        return { kind: "serial", path: rest };
      }
      if (!/^[A-Za-z0-9._-]+$/.test(rest))
        throw bad("expected serial:///dev/PATH or serial://NAME");
      return { kind: "serial-name", name: rest };
    case "hvsock": {
      const m = /^(\/.+):(\d{1,10})$/.exec(rest);
      if (!m) throw bad("expected hvsock:///path/to/uds:PORT");
      const port = Number(m[2]);
      if (port > 0xffff_ffff) throw bad("port out of range");
      return { kind: "hvsock", path: m[1] as string, port };
    }
    default:
      throw bad(`unknown scheme ${scheme}`);
  }
}

/** The address written back out (CID any as -1). */
export function formatAddress(address: AgentAddress): string {
  switch (address.kind) {
    case "vsock":
      return `vsock://${address.cid === VMADDR_CID_ANY ? -1 : address.cid}:${address.port}`;
    case "unix":
      return `unix://${address.path}`;
    case "serial":
      return `serial://${address.path}`;
    case "serial-name":
      return `serial://${address.name}`;
    case "hvsock":
      return `hvsock://${address.path}:${address.port}`;
  }
}
