/**
 * listenUnix puts its socket at the path without races: mode 0600 from the
 * start (bound in a private directory, linked into place), no symlink
 * followed, a stale socket replaced, a live one (something answers on it)
 * refused, anything else refused; nothing left behind. Real sockets in a
 * temp directory.
 */
import {
  linkSync,
  lstatSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { afterEach, expect, it } from "vitest";
import type { Listener } from "../../src/transport/channel";
import { listenUnix } from "../../src/transport/socket-listener";
import { SocketPathError } from "../../src/transport/unix-socket-path";
import { canConnect } from "../helpers/process";
import { type TempDir, tempDir } from "../helpers/tmp";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

function dir(): TempDir {
  const d = tempDir("netagent-unix-");
  cleanup.push(() => d.remove());
  return d;
}

/** A listener that answers every connection with "other" (another process's socket). */
async function otherServer(path: string): Promise<Server> {
  const server = createServer((c) => c.end("other"));
  await new Promise<void>((resolve) => server.listen(path, resolve));
  cleanup.push(() => server.close());
  return server;
}

async function listen(path: string): Promise<Listener> {
  const listener = await listenUnix(path, () => undefined);
  cleanup.push(() => listener.close());
  return listener;
}

async function refusal(p: Promise<unknown>): Promise<Error> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "expected a refusal").toBeInstanceOf(Error);
  return err as Error;
}

it("creates the socket with mode 0600 even under umask 0, and leaves nothing else", async () => {
  const d = dir();
  const old = process.umask(0);
  try {
    await listen(d.join("agent.sock"));
  } finally {
    process.umask(old);
  }
  const st = lstatSync(d.join("agent.sock"));
  expect(st.isSocket()).toBe(true);
  expect(st.mode & 0o777).toBe(0o600);
  expect(readdirSync(d.path)).toEqual(["agent.sock"]);
  expect(await canConnect(d.join("agent.sock"))).toBe(true);
});

it("refuses a socket another process answers on, and leaves it working", async () => {
  const d = dir();
  const path = d.join("agent.sock");
  await otherServer(path);
  const err = await refusal(listen(path));
  expect(err).toBeInstanceOf(SocketPathError);
  expect(err.message).toBe(
    `${path}: another process is listening on this socket (a running agent?); not replacing it`,
  );
  // Still the other server's socket.
  const { createConnection } = await import("node:net");
  const said = await new Promise<string>((resolve) => {
    let text = "";
    createConnection(path)
      .on("data", (b) => {
        text += b;
      })
      .on("close", () => resolve(text));
  });
  expect(said).toBe("other");
  expect(readdirSync(d.path)).toEqual(["agent.sock"]);
});

it("replaces a stale socket nobody listens on", async () => {
  const d = dir();
  const path = d.join("agent.sock");
  // A socket file without a listener: a second name of a socket since closed.
  const server = await otherServer(d.join("gone.sock"));
  linkSync(d.join("gone.sock"), path);
  await new Promise((resolve) => server.close(resolve));
  expect(await canConnect(path)).toBe(false);
  await listen(path);
  expect(await canConnect(path)).toBe(true);
});

it("refuses a symlink at the path and follows none", async () => {
  const d = dir();
  const target = d.join("target");
  writeFileSync(target, "keep");
  const path = d.join("agent.sock");
  symlinkSync(target, path);
  const err = await refusal(listen(path));
  expect(err.message).toBe(`${path} exists and is not a socket`);
  expect(readlinkSync(path)).toBe(target);
  expect(readFileSync(target, "utf8")).toBe("keep");
  expect(statSync(target).mode & 0o777).not.toBe(0o600);
  expect(readdirSync(d.path).sort()).toEqual(["agent.sock", "target"]);
});

it("refuses a regular file at the path", async () => {
  const d = dir();
  const path = d.join("agent.sock");
  writeFileSync(path, "data");
  const err = await refusal(listen(path));
  expect(err.message).toBe(`${path} exists and is not a socket`);
  expect(readFileSync(path, "utf8")).toBe("data");
});

it("fails cleanly when the directory does not exist", async () => {
  const d = dir();
  const err = await refusal(listen(d.join("missing/agent.sock")));
  expect((err as NodeJS.ErrnoException).code).toBe("ENOENT");
});
