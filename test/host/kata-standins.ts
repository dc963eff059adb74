/**
 * Stand-ins for what a Kata node holds, laid out as the Kata shim lays it
 * out, for the `follow` tests and bench:
 * - a directory per sandbox under a root (0700), with `persist.json` (0600)
 *   in the Go runtime's field names (virtcontainers' persist API:
 *   SandboxState with `AgentState.URL` and `Network.{NetworkID, Endpoints,
 *   NetworkCreated}`), rewritten as the shim rewrites it: truncate, then
 *   write; or runtime-rs's `state.json` with `hypervisor.netns`;
 * - `shim-monitor.sock`: a real HTTP server on a unix socket answering
 *   `GET /agent-url` with the agent's address as plain text;
 * - a hybrid-vsock socket (as Firecracker and Cloud Hypervisor offer):
 *   `CONNECT 1024\n` is answered `OK <port>\n`, then bytes go both ways to
 *   the agent (here a unix socket in the guest netns).
 */
import { chmodSync, closeSync, ftruncateSync, mkdirSync, openSync, writeSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";

/** persist.json as the Go shim writes it (fields of persistapi.SandboxState we and Kata use). */
export function goPersist(o: { netns: string; agentUrl?: string; mac?: string }): unknown {
  return {
    CgroupPaths: {},
    Devices: [],
    State: "running",
    SandboxContainer: "",
    SandboxCgroupPath: "/kubepods/pod-x",
    OverheadCgroupPath: "",
    HypervisorState: { Pid: 4242, Type: "qemu" },
    AgentState: { URL: o.agentUrl ?? "" },
    Network: {
      NetworkID: o.netns,
      Endpoints: [
        {
          Veth: {
            NetPair: {
              ID: "uuid",
              Name: "br0_kata",
              TAPIface: { Name: "tap0_kata", HardAddr: "", Addrs: null },
              VirtIface: { Name: "eth0", HardAddr: o.mac ?? "", Addrs: null },
              NetInterworkingModel: 2,
            },
          },
          Type: "virtual",
        },
      ],
      NetworkCreated: true,
    },
    Config: {},
    PersistVersion: 2,
    GuestMemoryBlockSizeMB: 128,
    GuestMemoryHotplugProbe: false,
  };
}

/** Rewrites `path` in place as Kata's persist/fs does: open with O_TRUNC, then write. `cut` stops half way. */
export function rewriteInPlace(path: string, text: string, cut?: number): void {
  const fd = openSync(path, "w", 0o600);
  try {
    ftruncateSync(fd, 0);
    writeSync(fd, cut === undefined ? text : text.slice(0, cut));
  } finally {
    closeSync(fd);
  }
}

/** A sandbox directory `<root>/<id>` (0700). */
export function sandboxDir(root: string, id: string): string {
  const dir = join(root, id);
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o700);
  return dir;
}

/** A shim's monitor server on `<dir>/shim-monitor.sock`: `GET /agent-url` answers `url`. */
export function shimMonitor(dir: string, url: () => string): { stop(): void; calls: number } {
  const state = { calls: 0, stop: () => {} };
  const server = Bun.serve({
    unix: join(dir, "shim-monitor.sock"),
    fetch(req) {
      state.calls++;
      if (new URL(req.url).pathname !== "/agent-url") return new Response("404", { status: 404 });
      return new Response(url(), { headers: { "content-type": "text/plain" } });
    },
  });
  state.stop = () => server.stop(true);
  return state;
}

/** A hostile shim-monitor.sock: a raw socket server doing `behave` with each connection. */
export function hostileShim(dir: string, behave: (s: Socket) => void): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer((s) => {
      // The follower hangs up on a hostile answer by design (after 4 KiB, or 2 s): the
      // write it cuts short (EPIPE, ECONNRESET) is expected, not an error of the test.
      s.on("error", () => {});
      behave(s);
    });
    server.listen(join(dir, "shim-monitor.sock"), () => resolve(server));
  });
}

/**
 * A hybrid-vsock socket at `path` in front of the agent's unix socket
 * `agent`: reads the `CONNECT <port>\n` line, answers `OK <n>\n`, then
 * copies bytes both ways. Anything else is refused by closing.
 */
export function hybridVsock(path: string, agent: string): Promise<Server> {
  let next = 1073741824;
  return new Promise((resolve) => {
    const server = createServer((client) => {
      // A client gone before its CONNECT line (a follower killed) is no error of the test.
      client.on("error", () => {});
      let line = "";
      const onData = (chunk: Buffer) => {
        const text = chunk.toString("latin1");
        const nl = text.indexOf("\n");
        if (nl < 0) {
          line += text;
          if (line.length > 64) client.destroy();
          return;
        }
        line += text.slice(0, nl);
        client.off("data", onData);
        client.pause();
        if (!/^CONNECT \d+$/.test(line)) return client.destroy();
        const rest = chunk.subarray(Buffer.byteLength(text.slice(0, nl + 1), "latin1"));
        const up = connect(agent, () => {
          client.write(`OK ${next++}\n`);
          if (rest.length > 0) up.write(rest);
          client.pipe(up);
          up.pipe(client);
          client.resume();
        });
        up.on("error", () => client.destroy());
        client.on("error", () => up.destroy());
        up.on("close", () => client.destroy());
        client.on("close", () => up.destroy());
      };
      client.on("data", onData);
    });
    server.listen(path, () => resolve(server));
  });
}
