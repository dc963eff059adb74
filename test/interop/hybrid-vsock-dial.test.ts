/**
 * dial("hvsock://PATH:PORT") against a fake Firecracker / Cloud Hypervisor
 * hybrid-vsock muxer on a unix socket: `CONNECT <port>\n` must arrive in
 * one write, and bytes that follow `OK <n>\n` in the same segment are
 * ttRPC frames that must reach the client, not be eaten by the handshake.
 */
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { Health, HealthCheckResponse_ServingStatus } from "../../src/gen/health_pb";
import { dial } from "../../src/transport/dial";
import { Code } from "../../src/ttrpc/codes";
import { encodeFrame, FrameType } from "../../src/ttrpc/frame";
import { ServerConnection } from "../../src/ttrpc/server-connection";
import { ServiceRegistry } from "../../src/ttrpc/service";
import { encodeOkResponse } from "../../src/ttrpc/status";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

interface Muxer {
  path: string;
  /** The first chunk each connection delivered. */
  firstChunks: string[];
  server: Server;
}

let dir: TempDir | undefined;
let muxer: Muxer | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  if (muxer) await new Promise((r) => muxer?.server.close(r));
  muxer = undefined;
  dir?.remove();
  dir = undefined;
});

/** A fake muxer; `onConnect` gets the socket and the first chunk it read. */
async function startMuxer(onConnect: (socket: Socket, first: string) => void): Promise<Muxer> {
  dir = tempDir();
  const path = dir.join("vm.hvsock");
  const firstChunks: string[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.once("data", (chunk: Buffer) => {
      firstChunks.push(chunk.toString("latin1"));
      onConnect(socket, chunk.toString("latin1"));
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  muxer = { path, firstChunks, server };
  return muxer;
}

describe("hybrid vsock dial", () => {
  it("sends CONNECT <port> in one write and keeps the frame bytes that follow OK", async () => {
    const frame = encodeFrame(1, FrameType.Response, 0, encodeOkResponse(Uint8Array.of(8, 1)));
    const m = await startMuxer((socket, first) => {
      if (first === "CONNECT 1024\n") {
        socket.write(Buffer.concat([Buffer.from("OK 1073741824\n"), frame]));
      } else socket.destroy();
    });
    const socket = await dial(`hvsock://${m.path}:1024`);
    sockets.push(socket);
    expect(m.firstChunks).toEqual(["CONNECT 1024\n"]);
    const received: Buffer[] = [];
    socket.on("data", (c: Buffer) => received.push(c));
    const bytes = await waitFor(() => {
      const all = Buffer.concat(received);
      return all.length >= frame.length && all;
    });
    expect([...bytes]).toEqual([...frame]);
  });

  it("serves ttRPC calls over the connection after the handshake", async () => {
    const registry = new ServiceRegistry().register(Health, {
      check: () => ({ status: HealthCheckResponse_ServingStatus.SERVING }),
    });
    const m = await startMuxer((socket, first) => {
      if (first !== "CONNECT 5000\n") return socket.destroy();
      const conn = new ServerConnection({ registry, write: (f) => socket.write(f) });
      socket.on("data", (c: Buffer) => conn.receive(c));
      socket.write("OK 1073741825\n");
    });
    const client = await AgentClient.connect(`hvsock://${m.path}:5000`);
    try {
      const replies = await Promise.all(
        Array.from({ length: 10 }, () => client.unary(Health.method.check, {})),
      );
      expect(replies.map((r) => r.status)).toEqual(
        Array(10).fill(HealthCheckResponse_ServingStatus.SERVING),
      );
      expect(m.firstChunks).toEqual(["CONNECT 5000\n"]);
    } finally {
      client.close();
    }
  });

  it("fails UNAVAILABLE when the muxer closes without answering (no guest listener)", async () => {
    const m = await startMuxer((socket) => socket.end());
    await expect(dial(`hvsock://${m.path}:1024`, 5_000)).rejects.toMatchObject({
      code: Code.UNAVAILABLE,
      message: expect.stringContaining("CONNECT 1024"),
    });
  });

  it("fails UNAVAILABLE on an answer other than OK", async () => {
    const m = await startMuxer((socket) => socket.write("ERR no such port\n"));
    await expect(dial(`hvsock://${m.path}:1024`, 5_000)).rejects.toMatchObject({
      code: Code.UNAVAILABLE,
      message: expect.stringContaining("ERR no such port"),
    });
  });

  it("fails UNAVAILABLE when no answer comes before the timeout", async () => {
    const m = await startMuxer(() => {});
    await expect(dial(`hvsock://${m.path}:1024`, 100)).rejects.toMatchObject({
      code: Code.UNAVAILABLE,
      message: expect.stringContaining("no answer"),
    });
  });

  it("fails UNAVAILABLE when the unix socket does not exist", async () => {
    dir = tempDir();
    await expect(dial(`hvsock://${dir.join("missing")}:1024`, 1_000)).rejects.toMatchObject({
      code: Code.UNAVAILABLE,
    });
  });
});

describe("dial vsock://", () => {
  it("fails UNAVAILABLE naming the address and the errno when nothing answers at the CID", async () => {
    // CID 1 is the local loopback CID; no vsock listener runs here on port 1
    // (and a machine without vhost-vsock refuses or never answers).
    await expect(dial("vsock://1:1", 1_000)).rejects.toMatchObject({
      code: Code.UNAVAILABLE,
      message: expect.stringMatching(
        /^connect vsock:\/\/1:1: (ECONNRESET|ECONNREFUSED|ETIMEDOUT|ENODEV|EHOSTUNREACH|EAFNOSUPPORT)$/,
      ),
    });
  });
});
