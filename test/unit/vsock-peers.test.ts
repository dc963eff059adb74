/**
 * vsock peers by CID: the allow-list decision (pure), parsing
 * --vsock-allow-cid, the acceptor guard that logs every peer's CID, and the
 * accept path from a listening fd to the channel's peerCid. Nothing can
 * connect to AF_VSOCK on this machine (no vhost-vsock, no loopback), so the
 * accept path runs on a unix socket listening fd, with the CID lookup given.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";
import { fstatSync } from "node:fs";
import { createConnection } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, parseArgs } from "../../src/agent/config/config";
import {
  guardVsockPeers,
  parseCidList,
  vsockPeerAllowed,
} from "../../src/agent/server/vsock-peers";
import { createLogger } from "../../src/common/log";
import type { ByteChannel, ChannelSink } from "../../src/transport/channel";
import { listenFd } from "../../src/transport/socket-listener";
import { vsockListenFd, vsockPeerCid } from "../../src/transport/vsock";
import { tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

describe("vsockPeerAllowed", () => {
  it.each([
    [2, undefined, true],
    [undefined, undefined, true],
    [2, new Set([2]), true],
    [3, new Set([2]), false],
    [3, new Set([2, 3]), true],
    // A CID that could not be read is refused when a list is set.
    [undefined, new Set([2]), false],
  ])("cid %j, allow %j → %j", (cid, allow, want) => {
    expect(vsockPeerAllowed(cid, allow)).toBe(want);
  });
});

describe("--vsock-allow-cid", () => {
  it("collects repeated flags and comma lists", () => {
    expect([...parseCidList(["2", "3,4", " 5 ,2"])].sort()).toEqual([2, 3, 4, 5]);
    const parsed = parseArgs([
      "--listen",
      "vsock://-1:1024",
      "--vsock-allow-cid",
      "2",
      "--vsock-allow-cid=3,4",
    ]);
    expect(parsed.kind === "run" && [...(parsed.config.vsockAllowCids ?? [])]).toEqual([2, 3, 4]);
  });

  it("defaults to any peer", () => {
    const parsed = parseArgs([]);
    expect(parsed.kind === "run" && parsed.config.vsockAllowCids).toBeUndefined();
  });

  it.each([
    [["--vsock-allow-cid", "host"], /--vsock-allow-cid: invalid CID "host" in "host"/],
    [["--vsock-allow-cid", "2,,3"], /invalid CID "" in "2,,3"/],
    [["--vsock-allow-cid", "-1"], /invalid CID "-1"/],
    [["--vsock-allow-cid", "4294967295"], /invalid CID "4294967295"/],
    [["--vsock-allow-cid"], /--vsock-allow-cid needs a value/],
    [
      ["--listen", "unix:///a", "--vsock-allow-cid", "2"],
      /--vsock-allow-cid: only for a vsock:\/\/ address, not unix:\/\/\/a/,
    ],
  ])("refuses %j", (argv, why) => {
    expect(() => parseArgs(argv)).toThrow(ConfigError);
    expect(() => parseArgs(argv)).toThrow(why);
  });
});

function memoryLog() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger("debug", (line) => lines.push(JSON.parse(line)));
  return { log, lines };
}

const SINK: ChannelSink = { receive: () => {}, closed: () => {} };

function channel(peerCid?: number): ByteChannel {
  return {
    peer: "vsock://-1:1024#1",
    write: () => {},
    close: () => {},
    ...(peerCid === undefined ? {} : { peerCid }),
  };
}

describe("guardVsockPeers", () => {
  it("logs the peer's CID and hands it on when allowed (any by default)", () => {
    const { log, lines } = memoryLog();
    const seen: ByteChannel[] = [];
    const accept = guardVsockPeers(
      (c) => {
        seen.push(c);
        return SINK;
      },
      undefined,
      log,
    );
    expect(accept(channel(3))).toBe(SINK);
    expect(seen).toHaveLength(1);
    expect(lines).toMatchObject([{ level: "info", msg: "vsock connection", cid: 3 }]);
  });

  it("refuses a CID not in the list, without reaching the server, and says so", () => {
    const { log, lines } = memoryLog();
    const seen: ByteChannel[] = [];
    const accept = guardVsockPeers(
      (c) => {
        seen.push(c);
        return SINK;
      },
      new Set([2]),
      log,
    );
    expect(accept(channel(3))).toBeUndefined();
    expect(accept(channel())).toBeUndefined();
    expect(accept(channel(2))).toBe(SINK);
    expect(seen.map((c) => c.peerCid)).toEqual([2]);
    expect(lines).toMatchObject([
      {
        level: "warn",
        msg: "connection refused: vsock peer CID not allowed",
        cid: 3,
        allowed: [2],
      },
      { level: "warn", cid: null },
      { level: "info", msg: "vsock connection", cid: 2 },
    ]);
  });
});

describe("vsockPeerCid", () => {
  it("is undefined for a vsock socket that is not connected", () => {
    const fd = vsockListenFd(0x7fff_0000 + (process.pid % 0xffff));
    try {
      expect(vsockPeerCid(fd)).toBeUndefined();
    } finally {
      libc().close(fd);
    }
  });
});

let lib: ReturnType<typeof openLibc> | undefined;
function openLibc() {
  return dlopen("libc.so.6", {
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    bind: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    listen: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
  }).symbols;
}
function libc() {
  lib ??= openLibc();
  return lib;
}

/** A listening AF_UNIX socket fd at `path`, made the way vsock.ts makes its vsock fd. */
function unixListenFd(path: string): number {
  const c = libc();
  const fd = c.socket(1, 1, 0);
  const addr = new Uint8Array(110);
  new DataView(addr.buffer).setUint16(0, 1, true);
  addr.set(new TextEncoder().encode(path), 2);
  if (fd < 0 || c.bind(fd, ptr(addr), addr.length) < 0 || c.listen(fd, 16) < 0) {
    throw new Error(`cannot listen on ${path}`);
  }
  return fd;
}

describe("the accept path from a listening fd", () => {
  it("looks up each accepted connection's peer CID and gives it to the guard", async () => {
    const dir = tempDir("netagent-vsock-");
    cleanup.push(() => dir.remove());
    const path = dir.join("s");
    const { log, lines } = memoryLog();
    const fds: number[] = [];
    // CID 7 for the first connection, 2 for the second.
    const cids = [7, 2];
    const served: (number | undefined)[] = [];
    const accept = guardVsockPeers(
      (c) => {
        served.push(c.peerCid);
        return SINK;
      },
      new Set([2]),
      log,
    );
    const listener = await listenFd(unixListenFd(path), accept, "vsock://-1:1024", (fd) => {
      fds.push(fd);
      // The real lookup on this fd: a unix socket has no vsock peer.
      expect(vsockPeerCid(fd)).toBeUndefined();
      expect(fstatSync(fd).isSocket()).toBe(true);
      return cids.shift();
    });
    cleanup.push(() => listener.close());
    // The first peer (CID 7) is hung up on by the agent's side.
    await new Promise<void>((resolve) => {
      const s = createConnection(path);
      s.on("error", () => resolve());
      s.on("end", () => {
        s.destroy();
        resolve();
      });
    });
    const second = createConnection(path);
    cleanup.push(() => second.destroy());
    await waitFor(() => served.length === 1, { what: "the second connection to be served" });
    expect(served).toEqual([2]);
    expect(fds).toHaveLength(2);
    expect(lines.map((l) => [l.msg, l.cid])).toEqual([
      ["connection refused: vsock peer CID not allowed", 7],
      ["vsock connection", 2],
    ]);
  });
});
