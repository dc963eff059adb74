/**
 * The follower's status over HTTP (Bun.serve): `GET /sandboxes` (a JSON
 * array, one object per sandbox: id, netns, addr, state, lastSync,
 * lastError, syncs), `GET /metrics` (Prometheus text), `GET /healthz`
 * ("ok"). Anything else: 404, or 405 for another method. It listens on
 * `HOST:PORT` (`:PORT` or `PORT` alone: 127.0.0.1) or `unix:///path`.
 */
import { lstatSync, unlinkSync } from "node:fs";
import type { Registry } from "prom-client";
import type { SandboxView } from "./sandbox";

export type StatusAddress = { unix: string } | { hostname: string; port: number };

/** Pure: `--status-addr` to where to listen; throws an Error naming the value. */
export function parseStatusAddr(value: string): StatusAddress {
  const bad = (why: string) => new Error(`--status-addr ${JSON.stringify(value)}: ${why}`);
  if (value.startsWith("unix://")) {
    const path = value.slice("unix://".length);
    if (!path.startsWith("/") || path.includes("\0")) throw bad("expected unix:///absolute/path");
    return { unix: path };
  }
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):?(\d{1,5})$/.exec(value);
  if (!m) throw bad("expected HOST:PORT, :PORT or unix:///path");
  const port = Number(m[3]);
  if (port < 1 || port > 65535) throw bad("port out of range");
  const hostname = m[1] ?? (m[2] || "127.0.0.1");
  return { hostname, port };
}

export interface StatusServer {
  /** Where it listens, as a URL (http://HOST:PORT or unix:///path). */
  url: string;
  stop(): void;
}

export function serveStatus(
  addr: StatusAddress,
  source: { list(): SandboxView[]; registry: Registry },
): StatusServer {
  const fetch = async (req: Request): Promise<Response> => {
    const path = new URL(req.url).pathname;
    if (!["/sandboxes", "/metrics", "/healthz"].includes(path)) {
      return new Response("not found\n", { status: 404 });
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      return new Response("method not allowed\n", { status: 405, headers: { allow: "GET" } });
    }
    if (path === "/healthz") return new Response("ok\n");
    if (path === "/sandboxes") return Response.json(source.list());
    const text = await source.registry.metrics();
    return new Response(text, { headers: { "content-type": source.registry.contentType } });
  };
  if ("unix" in addr) {
    removeSocket(addr.unix); // left by an earlier run
    const server = Bun.serve({ unix: addr.unix, fetch });
    return {
      url: `unix://${addr.unix}`,
      stop() {
        server.stop(true);
        removeSocket(addr.unix);
      },
    };
  }
  const server = Bun.serve({ hostname: addr.hostname, port: addr.port, fetch });
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  return { url: `http://${host}:${server.port}`, stop: () => server.stop(true) };
}

/** Removes `path` if it is a socket (never another kind of file). */
function removeSocket(path: string): void {
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
  } catch {}
}
