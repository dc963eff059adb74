/**
 * IpRunner against a fake `ip` (test/fixtures/fake-ip/ip): batch failures
 * carry the failed line, iproute2's words and the table's code; reads take
 * one process each. No root, no netns.
 */
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { codeOfNetError } from "../../src/common/error-status";
import { DEFAULT_IP_LIMITS } from "../../src/net/iproute/ip-one-shot";
import { IpRunner } from "../../src/net/iproute/ip-runner";
import { outputDir } from "../../src/net/iproute/ip-stdout-file";
import { NetError } from "../../src/net/model/net-error";
import { IpBatchError } from "../../src/net/parse/ip-results";
import { splitJsonDocuments } from "../../src/net/parse/json-documents";
import { parseLinks, parseNeighbors, parseRoutes } from "../../src/net/parse/parse-ip-json";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { pidAlive } from "../helpers/process";
import { waitFor } from "../helpers/wait";

const FAKE = fileURLToPath(new URL("../fixtures/fake-ip/ip", import.meta.url));
const dirs: string[] = [];

/** The fake under `name` in a fresh temp dir; calls() reads what it was run with. */
function fakeIp(name = "ip") {
  const dir = mkdtempSync(join(tmpdir(), "netagent-fake-ip-"));
  dirs.push(dir);
  const bin = join(dir, name);
  symlinkSync(FAKE, bin);
  const calls = () => {
    let text = "";
    try {
      text = readFileSync(join(dir, "calls.log"), "utf8");
    } catch {
      return [];
    }
    return text
      .trimEnd()
      .split("\n")
      .map((l) => {
        const [argv = "", stdin = ""] = l.split("\t");
        return { argv, stdin };
      })
      .sort((a, b) => a.argv.localeCompare(b.argv));
  };
  return { bin, calls };
}

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/ip/${name}`, import.meta.url), "utf8");

const LINES = [
  "route replace 10.0.0.1/32 dev eth0 scope 253 metric 0 table main",
  "route replace 0.0.0.0/0 via 10.0.0.1 dev eth0 scope 0 metric 0 table main",
  "route replace 10.8.0.0/16 via 192.0.2.9 dev eth0 scope 0 metric 0 table main",
  "route replace 10.9.0.0/16 via 10.0.0.1 dev eth0 scope 0 metric 0 table main",
];

describe("IpRunner.batch", () => {
  it("sends every line through one `ip -batch -`", async () => {
    const ip = fakeIp();
    await new IpRunner({ binary: ip.bin }).batch([LINES[0] as string, LINES[1] as string]);
    expect(ip.calls()).toEqual([{ argv: "-batch -", stdin: `${LINES[0]}\\n${LINES[1]}` }]);
  });

  it("does not spawn for an empty plan", async () => {
    const ip = fakeIp();
    await new IpRunner({ binary: ip.bin }).batch([]);
    expect(ip.calls()).toEqual([]);
  });

  it("names the failed line k (Command failed -:k) with iproute2's words and the table's code", async () => {
    const ip = fakeIp();
    const err = await rejection(new IpRunner({ binary: ip.bin }).batch(LINES));
    expect(err).toBeInstanceOf(IpBatchError);
    expect(err).toBeInstanceOf(NetError);
    const e = err as IpBatchError;
    expect(e.lineIndex).toBe(2);
    expect(e.line).toBe(LINES[2]);
    expect(e.ipMessage).toBe("Nexthop has invalid gateway");
    expect([e.kind, codeOfNetError(e)]).toEqual(["invalid", Code.INVALID_ARGUMENT]);
    expect(e.message).toBe(`ip ${LINES[2]}: Nexthop has invalid gateway`);
  });

  it.each([
    ["route add 10.99.0.0/16 dev eth0", "exists", Code.ALREADY_EXISTS, "File exists"],
    ["link set dev nope up", "not-found", Code.NOT_FOUND, 'Cannot find device "nope"'],
  ])("maps %j to its kind and code", async (bad, kind, code, words) => {
    const ip = fakeIp();
    const err = (await rejection(
      new IpRunner({ binary: ip.bin }).batch([LINES[0] as string, bad]),
    )) as IpBatchError;
    expect([err.lineIndex, err.line, err.ipMessage, err.kind]).toEqual([1, bad, words, kind]);
    expect(codeOfNetError(err)).toBe(code);
  });

  it("with force, runs every line and still reports the first failure", async () => {
    const ip = fakeIp();
    const lines = [LINES[2] as string, "link set dev nope up", LINES[0] as string];
    const err = (await rejection(
      new IpRunner({ binary: ip.bin }).batch(lines, { force: true }),
    )) as IpBatchError;
    expect(ip.calls()[0]?.argv).toBe("-force -batch -");
    expect(err.lineIndex).toBe(0);
    expect([err.kind, codeOfNetError(err)]).toEqual(["invalid", Code.INVALID_ARGUMENT]);
    expect(err.ipMessage).toBe('Nexthop has invalid gateway; Cannot find device "nope"');
  });

  it("prefixes -n NAME when it targets a named netns", async () => {
    const ip = fakeIp();
    await new IpRunner({ binary: ip.bin, netns: "pod-ns" }).batch([LINES[0] as string]);
    expect(ip.calls()[0]?.argv).toBe("-n pod-ns -batch -");
  });

  it("is INTERNAL with the reason when the binary cannot be run", async () => {
    const err = (await rejection(
      new IpRunner({ binary: "/nonexistent/netagent-no-ip" }).batch([LINES[0] as string]),
    )) as NetError;
    expect(err).toBeInstanceOf(NetError);
    expect([err.kind, codeOfNetError(err)]).toEqual(["internal", Code.INTERNAL]);
    expect(err.message).toContain("cannot run /nonexistent/netagent-no-ip");
  });
});

describe("IpRunner reads", () => {
  it("readState: one -batch read of addresses, both families' routes and neighbours", async () => {
    const ip = fakeIp();
    const state = await new IpRunner({ binary: ip.bin }).readState();
    expect(ip.calls()).toEqual([
      {
        argv: "-json -details -batch -",
        stdin: "addr show\\nroute show table all\\nneigh show",
      },
    ]);
    const one = (name: string) => splitJsonDocuments(fixture(name))[0];
    expect(state.links).toEqual(parseLinks(one("addr-show.out")));
    // The same routes as the per-family listings; the local table left out.
    expect(state.routes).toEqual([
      ...parseRoutes(one("route-show-main.out"), 4),
      ...parseRoutes(one("route6-show-main.out"), 6),
    ]);
    expect(state.neighbors).toEqual(parseNeighbors(one("neigh-show.out")));
    expect(state.routes.filter((r) => r.family === 6)).toHaveLength(9);
  });

  it("readRoutes: the main table of both families, in one process", async () => {
    const ip = fakeIp();
    const routes = await new IpRunner({ binary: ip.bin, netns: "pod-ns" }).readRoutes();
    expect(ip.calls().map((c) => c.argv)).toEqual(["-n pod-ns -json route show table all"]);
    expect(routes.map((r) => r.family)).toEqual([...Array(9).fill(4), ...Array(9).fill(6)]);
  });

  it("is INTERNAL 'unreadable output' when ip's JSON is cut short", async () => {
    const ip = fakeIp("ip-truncated");
    const err = (await rejection(new IpRunner({ binary: ip.bin }).readRoutes())) as NetError;
    expect([err.kind, codeOfNetError(err)]).toEqual(["internal", Code.INTERNAL]);
    expect(err.message).toMatch(/route show table all: unreadable output$/);
  });
});

/** No process of that PID (undefined: none was ever written). */
const gone = (pid: number | undefined) => pid === undefined || (pid > 0 && !pidAlive(pid));

/** An ip that writes its PID to `pid` and then never finishes (a wedged iproute2). */
function wedgedIp() {
  const dir = mkdtempSync(join(tmpdir(), "netagent-wedged-ip-"));
  dirs.push(dir);
  const bin = join(dir, "ip");
  const pidFile = join(dir, "pid");
  // The PID file appears whole (written aside, then renamed): a file seen empty, the
  // stand-in killed between its creation and the write, read as PID 0, and kill(0, 0)
  // found "alive" the test's own process group (seen at load ~27).
  // not a wait: a stand-in for a wedged ip, killed by the runner
  const script = `#!/bin/sh\necho $$ > '${pidFile}.new' && mv '${pidFile}.new' '${pidFile}'\nexec sleep 600\n`;
  writeFileSync(bin, script);
  chmodSync(bin, 0o755);
  return {
    bin,
    /** The stand-in's PID (it was killed before it wrote one: nothing of it can be alive). */
    pid: () => (existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8")) : undefined),
    started: () => existsSync(pidFile),
  };
}

describe("IpRunner: a wedged ip", () => {
  it("is killed (SIGKILL, reaped) when its run outlasts the timeout, and says so", async () => {
    const ip = wedgedIp();
    const runner = new IpRunner({ binary: ip.bin, limits: { timeoutMs: 300, perLineMs: 0 } });
    const t0 = performance.now();
    const err = (await rejection(runner.batch([LINES[0] as string]))) as NetError;
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(err).toBeInstanceOf(IpBatchError);
    expect([err.kind, codeOfNetError(err)]).toEqual(["unavailable", Code.UNAVAILABLE]);
    expect(err.message).toMatch(/killed \(SIGKILL\) after 300 ms without finishing/);
    // Reaped: no zombie left, the PID is gone.
    expect(gone(ip.pid())).toBe(true);
  });

  it("a read is bounded the same way", async () => {
    const ip = wedgedIp();
    const runner = new IpRunner({ binary: ip.bin, limits: { timeoutMs: 300, perLineMs: 0 } });
    const err = (await rejection(runner.readRoutes())) as NetError;
    expect([err.kind, codeOfNetError(err)]).toEqual(["unavailable", Code.UNAVAILABLE]);
    expect(err.message).toMatch(/^ip route show table all: killed \(SIGKILL\) after 300 ms/);
    expect(gone(ip.pid())).toBe(true);
  });

  it("the timeout grows with the batch: base + perLine × lines", () => {
    const runner = new IpRunner({ binary: "ip", limits: { timeoutMs: 1000, perLineMs: 2 } });
    expect(runner.timeoutFor(0)).toBe(1000);
    expect(runner.timeoutFor(60_000)).toBe(121_000);
    expect(DEFAULT_IP_LIMITS).toEqual({ timeoutMs: 60_000, perLineMs: 1 });
  });

  it("is killed when the call's signal aborts; the error carries the abort's code", async () => {
    const ip = wedgedIp();
    const runner = new IpRunner({ binary: ip.bin });
    const controller = new AbortController();
    const run = rejection(runner.batch([LINES[0] as string], { signal: controller.signal }));
    await waitFor(() => ip.started(), { what: "the wedged ip to start" });
    controller.abort(new TtrpcError("deadline exceeded", Code.DEADLINE_EXCEEDED));
    const err = (await run) as NetError;
    expect(err).toBeInstanceOf(IpBatchError);
    expect([err.kind, codeOfNetError(err)]).toEqual(["aborted", Code.DEADLINE_EXCEEDED]);
    expect(err.message).toMatch(/killed \(SIGKILL\): call cancelled \(deadline exceeded\)/);
    expect(gone(ip.pid())).toBe(true);
  });

  it("leaves no output file behind (read, failed batch, killed run), in a directory only it can enter", async () => {
    await new IpRunner({ binary: fakeIp().bin }).readRoutes();
    await rejection(
      new IpRunner({ binary: fakeIp().bin }).batch(["route replace 10.99.0.0/16 dev nope"]),
    );
    const wedged = new IpRunner({
      binary: wedgedIp().bin,
      limits: { timeoutMs: 200, perLineMs: 0 },
    });
    await rejection(wedged.readRoutes());
    const dir = outputDir() as string;
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("spawns nothing when the signal has already aborted", async () => {
    const ip = fakeIp();
    const controller = new AbortController();
    controller.abort(new TtrpcError("agent shutting down", Code.UNAVAILABLE));
    const err = (await rejection(
      new IpRunner({ binary: ip.bin }).batch([LINES[0] as string], { signal: controller.signal }),
    )) as NetError;
    expect([err.kind, codeOfNetError(err)]).toEqual(["aborted", Code.UNAVAILABLE]);
    expect(ip.calls()).toEqual([]);
  });
});
