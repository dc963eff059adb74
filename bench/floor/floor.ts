/**
 * The runtime floor for the cold-start and idle-memory rows: a Bun-compiled
 * program that listens on a unix socket the way the agent does (node:net,
 * mode 0600) and answers every whole frame it receives with one fixed
 * grpc.Health/Check response (stream 1, SERVING). No protobuf, no logging.
 *
 *   bun build --compile --minify --sourcemap=none bench/floor/floor.ts --outfile dist/bench-floor
 *   dist/bench-floor --listen unix:///tmp/x.sock
 */
import { chmodSync, rmSync } from "node:fs";
import { createServer } from "node:net";

// Frame: length 4, stream 1, Response, flags 0; Response{payload: CheckResponse{status: 1}}.
const ANSWER = Uint8Array.from([0, 0, 0, 4, 0, 0, 0, 1, 2, 0, 0x12, 0x02, 0x08, 0x01]);

const i = process.argv.indexOf("--listen");
const address = i >= 0 ? process.argv[i + 1] : undefined;
if (!address?.startsWith("unix://")) {
  process.stderr.write("usage: bench-floor --listen unix:///path\n");
  process.exit(2);
}
const path = address.slice("unix://".length);
rmSync(path, { force: true });

const server = createServer((socket) => {
  let buffered = 0;
  let need = -1;
  let head: Buffer | undefined;
  socket.on("data", (chunk: Buffer) => {
    head = head ? Buffer.concat([head, chunk]) : chunk;
    buffered = head.length;
    if (need < 0 && buffered >= 10) need = 10 + head.readUInt32BE(0);
    if (need >= 0 && buffered >= need) {
      socket.write(ANSWER);
      head = head.subarray(need);
      need = -1;
    }
  });
  socket.on("error", () => {});
});
server.listen(path, () => chmodSync(path, 0o600));
process.on("SIGTERM", () => {
  server.close();
  process.exit(0);
});
