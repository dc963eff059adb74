/**
 * The compiled agent, dist/netagent (built by `npm run build`), as a
 * process: serving on a unix socket, refusing bad configuration with exit
 * 2, binding vsock, and stopping on SIGTERM. Every process is started here
 * and stopped by its PID.
 */
import { closeSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { vsockListenFd } from "../../src/transport/vsock";
import { Code } from "../../src/ttrpc/codes";
import { encodeFrame, FrameType } from "../../src/ttrpc/frame";
import { answersCheck, requireAgentBinary, startAgent } from "../helpers/agent";
import { pbEncodeRequest } from "../helpers/envelope-pbjs";
import { goClient, goPrograms } from "../helpers/go";
import { type Child, canConnect, run, start } from "../helpers/process";
import { tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

const started: Child[] = [];
afterEach(async () => {
  for (const c of started.splice(0)) await c.kill();
});

function startRaw(args: string[]): Child {
  const child = start(requireAgentBinary(), args);
  started.push(child);
  return child;
}

/** Waits for the agent's "listening" log line (vsock cannot be connected to here). */
async function waitListening(child: Child): Promise<"listening" | "exited"> {
  return waitFor(
    () => (!child.running ? "exited" : child.stderr.includes('"msg":"listening"') && "listening"),
    { what: `${child.command} to log "listening"` },
  );
}

describe("dist/netagent on a unix socket", () => {
  it("answers Check from containerd's Go client, with a 0600 socket", async () => {
    goPrograms();
    const agent = await startAgent();
    try {
      const [step] = await goClient(agent.socket, [{ method: "Check" }]);
      expect(step?.results).toEqual([{ code: 0, message: "", payload: "0801" }]);
      const { statSync } = await import("node:fs");
      expect(statSync(agent.socket).mode & 0o777).toBe(0o600);
      // Logs are JSON lines on stderr.
      const first = JSON.parse(agent.child.stderr.split("\n")[0] as string);
      expect(first).toMatchObject({ level: "info", msg: "listening", version: pkg.version });
    } finally {
      await agent.stop();
    }
    expect(agent.child.exit).toEqual({ code: 0, signal: null });
  });

  it("replaces a stale socket file left by an earlier run", async () => {
    const first = await startAgent();
    await first.child.stop("SIGKILL");
    const second = startRaw(["--listen", `unix://${first.socket}`]);
    await waitFor(() => second.running && canConnect(first.socket), { what: "the second agent" });
    await second.stop();
    first.dir.remove();
  });

  it("refuses, exit 2, a socket another running agent answers on, which keeps serving", async () => {
    const first = await startAgent(["--log-level", "warn"]);
    try {
      const second = await run(requireAgentBinary(), ["--listen", `unix://${first.socket}`]);
      expect(second.code).toBe(2);
      expect(second.stderr).toContain(
        `cannot listen on unix://${first.socket}: ${first.socket}: another process is listening on this socket (a running agent?); not replacing it`,
      );
      expect(await answersCheck(first.socket)).toBe(true);
    } finally {
      await first.stop();
    }
  });

  it("prints its version and help, exit 0", async () => {
    const version = await run(requireAgentBinary(), ["--version"]);
    expect(version).toMatchObject({ code: 0, stdout: `netagent ${pkg.version}\n` });
    const help = await run(requireAgentBinary(), ["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: netagent/);
  });
});

/** Opens a raw connection; `check()` sends one Check and resolves with the answer frame. */
async function rawConnection(path: string) {
  const { connect } = await import("node:net");
  const socket = connect(path);
  let buffered = Buffer.alloc(0);
  let closed = false;
  socket.on("error", () => {});
  socket.on("data", (d: Buffer) => {
    buffered = Buffer.concat([buffered, d]);
  });
  socket.on("close", () => {
    closed = true;
  });
  await new Promise((resolve) => socket.once("connect", resolve));
  let nextId = 1;
  return {
    socket,
    isClosed: () => closed,
    async check(): Promise<Buffer> {
      const id = nextId;
      nextId += 2;
      socket.write(
        encodeFrame(
          id,
          FrameType.Request,
          0,
          pbEncodeRequest({ service: "grpc.Health", method: "Check" }),
        ),
      );
      return waitFor(() => {
        if (buffered.length < 10 || buffered.length < 10 + buffered.readUInt32BE(0))
          return closed ? Buffer.alloc(0) : undefined;
        const frame = buffered.subarray(0, 10 + buffered.readUInt32BE(0));
        buffered = buffered.subarray(frame.length);
        return frame;
      });
    },
  };
}

describe("dist/netagent connection limit", () => {
  it("closes connections over --max-connections and takes new ones when a slot frees", async () => {
    const agent = await startAgent(["--max-connections", "2", "--log-level", "warn"]);
    try {
      // A connection that is served; while the agent has not yet noticed an
      // earlier one close (startAgent's own probe), a new one can be refused.
      const served = () =>
        waitFor(async () => {
          const c = await rawConnection(agent.socket);
          const answer = await c.check();
          if (answer.length > 0) return { c, answer };
          c.socket.destroy();
          return undefined;
        });
      const one = await served();
      const two = await served();
      // Both served: the answer is stream 1, a Response, 0a 00 12 02 08 01.
      for (const { answer } of [one, two]) {
        expect([...answer]).toEqual([0, 0, 0, 6, 0, 0, 0, 1, 2, 0, 0x0a, 0, 0x12, 2, 8, 1]);
      }
      // Both slots are taken by one and two now: a third is closed at once.
      const three = await rawConnection(agent.socket);
      await waitFor(() => three.isClosed(), { what: "the third connection to be closed" });
      expect(agent.child.stderr).toContain("connection refused: limit reached");
      one.c.socket.destroy();
      const four = await served();
      expect([...(await four.c.check())].slice(4, 9)).toEqual([0, 0, 0, 3, 2]);
      two.c.socket.destroy();
      four.c.socket.destroy();
    } finally {
      await agent.stop();
    }
  });
});

describe("dist/netagent and a peer that does not read", () => {
  it("stops reading its requests instead of queueing answers, and serves others", async () => {
    goPrograms();
    const agent = await startAgent(["--log-level", "warn"]);
    try {
      const { connect } = await import("node:net");
      const rssKiB = () =>
        Number(
          /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${agent.child.pid}/status`, "utf8"))?.[1],
        );
      const before = rssKiB();
      const peer = connect(agent.socket);
      await new Promise((resolve) => peer.once("connect", resolve));
      peer.pause();
      const n = 200_000;
      const request = pbEncodeRequest({ service: "grpc.Health", method: "Check" });
      const frames = Buffer.concat(
        Array.from({ length: n }, (_, i) => encodeFrame(2 * i + 1, FrameType.Request, 0, request)),
      );
      peer.write(frames);
      // Meanwhile another connection is served, and gives the agent time to
      // read whatever it is going to read from the peer.
      const [step] = await goClient(agent.socket, [{ method: "Check", n: 5_000, c: 4 }], {
        summary: true,
      });
      expect(step?.codes).toEqual({ "0": 5_000 });
      // Then wait until the agent takes no more of the peer's bytes (our send
      // buffer stays put for 200 ms), or has taken them all.
      let last = -1;
      let same = 0;
      await waitFor(
        () => {
          const pending = peer.writableLength;
          same = pending === last ? same + 1 : 0;
          last = pending;
          return pending === 0 || same >= 20;
        },
        { timeoutMs: 30_000, what: "the agent to stop reading" },
      );
      expect(peer.writableLength).toBeGreaterThan(0);
      // Queued answers cost the agent ~1.3 KiB each without back-pressure
      // (100,000 -> +127 MiB); with it, what was read before the pause.
      expect(rssKiB() - before).toBeLessThan(96 * 1024);
      // Once the peer reads, every request is answered.
      let received = 0;
      peer.on("data", (d: Buffer) => {
        received += d.length;
      });
      peer.resume();
      const answerLength = 10 + 6; // header + 0a 00 12 02 08 01
      await waitFor(() => received >= n * answerLength, {
        timeoutMs: 30_000,
        what: `${n} answers`,
      });
      expect(received).toBe(n * answerLength);
      peer.destroy();
    } finally {
      await agent.stop();
    }
  });
});

describe("dist/netagent refuses bad configuration with exit 2", () => {
  const dir = tempDir();
  it.each([
    [
      ["--listen", "tcp://127.0.0.1:1"],
      /netagent: --listen: invalid address "tcp:\/\/127\.0\.0\.1:1": unknown scheme tcp/,
    ],
    [["--listen", "vsock://x:1024"], /netagent: --listen: invalid address "vsock:\/\/x:1024"/],
    [["--listen", "unix://relative"], /expected unix:\/\/\/absolute\/path/],
    [["--listen", "hvsock:///a:1"], /host-side address/],
    [["--listen"], /--listen needs a value/],
    [["--log-level", "loud"], /--log-level: invalid value "loud"/],
    [["--bogus"], /unknown argument "--bogus"/],
    [
      ["--listen", `unix://${dir.join("no/such/dir/a.sock")}`],
      /netagent: cannot listen on unix:\/\//,
    ],
    [["--listen", "serial:///dev/netagent-no-such-port"], /netagent: cannot listen on serial:\/\//],
    [
      ["--listen", "serial://no.such.port.name"],
      /netagent: cannot listen on serial:\/\/no\.such\.port\.name/,
    ],
  ])("%j", async (args, message) => {
    const r = await run(requireAgentBinary(), args, 20_000);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});

describe("dist/netagent on vsock", () => {
  it("binds vsock://-1:PORT: a second bind fails with EADDRINUSE until it exits", async () => {
    let port = 0;
    let agent: Child | undefined;
    // A port someone else holds would fail our first bind too: try a few.
    for (let attempt = 0; attempt < 5 && agent === undefined; attempt++) {
      port = 20_000 + Math.floor(Math.random() * 40_000);
      const child = startRaw(["--listen", `vsock://-1:${port}`]);
      if ((await waitListening(child)) === "listening") agent = child;
      else expect(child.stderr).toMatch(/EADDRINUSE/);
    }
    if (agent === undefined) throw new Error("no free vsock port found");
    expect(agent.stderr).toContain(`"address":"vsock://-1:${port}"`);

    // From this process, through the agent's own FFI binding.
    expect(() => vsockListenFd(port)).toThrow(expect.objectContaining({ code: "EADDRINUSE" }));
    // And as a second agent, which refuses to start.
    const second = await run(requireAgentBinary(), ["--listen", `vsock://-1:${port}`], 20_000);
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/cannot listen on vsock:\/\/-1:\d+: vsock bind: EADDRINUSE/);

    expect(await agent.stop("SIGTERM")).toEqual({ code: 0, signal: null });
    const fd = vsockListenFd(port);
    closeSync(fd);
  });

  it("takes --vsock-allow-cid and says which peers it serves", async () => {
    let agent: Child | undefined;
    for (let attempt = 0; attempt < 5 && agent === undefined; attempt++) {
      const port = 20_000 + Math.floor(Math.random() * 40_000);
      const child = startRaw([
        "--listen",
        `vsock://-1:${port}`,
        "--vsock-allow-cid",
        "2",
        "--vsock-allow-cid=3",
      ]);
      if ((await waitListening(child)) === "listening") agent = child;
    }
    if (agent === undefined) throw new Error("no free vsock port found");
    expect(agent.stderr).toContain('"vsockAllowCids":[2,3]');
    expect(await agent.stop("SIGTERM")).toEqual({ code: 0, signal: null });
  });
});

describe("dist/netagent and SIGTERM", () => {
  it("exits 0 at once although a client keeps an idle connection open", async () => {
    const agent = await startAgent();
    const { connect } = await import("node:net");
    const socket = connect(agent.socket);
    await new Promise((resolve) => socket.once("connect", resolve));
    const closed = new Promise((resolve) => socket.once("close", resolve));
    await waitFor(() => agent.child.stderr.length > 0);
    const t0 = performance.now();
    expect(await agent.child.stop("SIGTERM", 3_000)).toEqual({ code: 0, signal: null });
    expect(performance.now() - t0).toBeLessThan(3_000);
    await closed;
    agent.dir.remove();
  });

  it("stops the same way on SIGINT", async () => {
    const agent = await startAgent();
    expect(await agent.child.stop("SIGINT", 3_000)).toEqual({ code: 0, signal: null });
    expect(agent.child.stderr).toMatch(/"msg":"shutting down","signal":"SIGINT"/);
    agent.dir.remove();
  });

  it("answers every call it took while stopping under load, then exits 0", async () => {
    goPrograms();
    // At debug level the agent logs each call: that is how we see it busy.
    const agent = await startAgent(["--log-level", "debug"]);
    // 16 callers on one connection, long enough to be mid-flight at SIGTERM.
    const load = goClient(agent.socket, [{ method: "Check", n: 200_000, c: 16 }]);
    // Call lines are rate-limited (burst 50, then 10/s): waiting for many
    // more than the burst can outlast the load itself.
    await waitFor(() => agent.child.stderr.split('"msg":"call"').length > 20, {
      what: "20 calls served",
    });
    const t0 = performance.now();
    process.kill(agent.child.pid, "SIGTERM");
    const exit = await agent.child.exited;
    await agent.child.drained();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(performance.now() - t0).toBeLessThan(6_000);
    const [step] = await load;
    // Each call either got its answer (SERVING) or failed because the
    // connection closed; none got a wrong or partial answer.
    const bad = (step?.results ?? []).filter(
      (r) => !(r.code === 0 && r.payload === "0801") && !/closed/.test(r.message),
    );
    expect(bad.slice(0, 5)).toEqual([]);
    expect(step?.codes["0"] ?? 0).toBeGreaterThan(0);
    expect(agent.child.stderr).toMatch(/"msg":"stopped","clean":true/);
    agent.dir.remove();
  });
});

describe("dist/netagent error answers match the table end to end", () => {
  it("answers UNIMPLEMENTED for grpc.AgentService methods not served", async () => {
    goPrograms();
    const agent = await startAgent();
    try {
      const [step] = await goClient(agent.socket, [
        { service: "grpc.AgentService", method: "CreateContainer" },
      ]);
      expect(step?.results?.[0]).toEqual({
        code: Code.UNIMPLEMENTED,
        message: "method CreateContainer",
        payload: "",
      });
    } finally {
      await agent.stop();
    }
  });
});
