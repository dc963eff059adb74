/**
 * IpRunner against a fake `ip` (test/fixtures/fake-ip/ip): batch failures
 * carry the failed line, iproute2's words and the table's code; reads take
 * one process each. No root, no netns.
 */
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { IpBatchError, IpRunner } from "../../src/net/ip-runner";
import {
  parseLinks,
  parseNeighbors,
  parseRoutes,
  splitJsonDocuments,
} from "../../src/net/parse-ip-json";
import { Code, TtrpcError } from "../../src/ttrpc/codes";

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
    await new IpRunner(ip.bin).batch([LINES[0] as string, LINES[1] as string]);
    expect(ip.calls()).toEqual([{ argv: "-batch -", stdin: `${LINES[0]}\\n${LINES[1]}` }]);
  });

  it("does not spawn for an empty plan", async () => {
    const ip = fakeIp();
    await new IpRunner(ip.bin).batch([]);
    expect(ip.calls()).toEqual([]);
  });

  it("names the failed line k (Command failed -:k) with iproute2's words and the table's code", async () => {
    const ip = fakeIp();
    const err = await rejection(new IpRunner(ip.bin).batch(LINES));
    expect(err).toBeInstanceOf(IpBatchError);
    expect(err).toBeInstanceOf(TtrpcError);
    const e = err as IpBatchError;
    expect(e.lineIndex).toBe(2);
    expect(e.line).toBe(LINES[2]);
    expect(e.ipMessage).toBe("Nexthop has invalid gateway");
    expect(e.code).toBe(Code.INVALID_ARGUMENT);
    expect(e.message).toBe(`ip ${LINES[2]}: Nexthop has invalid gateway`);
  });

  it.each([
    ["route add 10.99.0.0/16 dev eth0", Code.ALREADY_EXISTS, "File exists"],
    ["link set dev nope up", Code.NOT_FOUND, 'Cannot find device "nope"'],
  ])("maps %j to its code", async (bad, code, words) => {
    const ip = fakeIp();
    const err = (await rejection(
      new IpRunner(ip.bin).batch([LINES[0] as string, bad]),
    )) as IpBatchError;
    expect([err.lineIndex, err.line, err.ipMessage, err.code]).toEqual([1, bad, words, code]);
  });

  it("with force, runs every line and still reports the first failure", async () => {
    const ip = fakeIp();
    const lines = [LINES[2] as string, "link set dev nope up", LINES[0] as string];
    const err = (await rejection(
      new IpRunner(ip.bin).batch(lines, { force: true }),
    )) as IpBatchError;
    expect(ip.calls()[0]?.argv).toBe("-force -batch -");
    expect(err.lineIndex).toBe(0);
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.ipMessage).toBe('Nexthop has invalid gateway; Cannot find device "nope"');
  });

  it("prefixes -n NAME when it targets a named netns", async () => {
    const ip = fakeIp();
    await new IpRunner(ip.bin, "pod-ns").batch([LINES[0] as string]);
    expect(ip.calls()[0]?.argv).toBe("-n pod-ns -batch -");
  });

  it("is INTERNAL with the reason when the binary cannot be run", async () => {
    const err = (await rejection(
      new IpRunner("/nonexistent/netagent-no-ip").batch([LINES[0] as string]),
    )) as TtrpcError;
    expect(err).toBeInstanceOf(TtrpcError);
    expect(err.code).toBe(Code.INTERNAL);
    expect(err.message).toContain("cannot run /nonexistent/netagent-no-ip");
  });
});

describe("IpRunner reads", () => {
  it("readState: one -batch read of addresses, both families' routes and neighbours", async () => {
    const ip = fakeIp();
    const state = await new IpRunner(ip.bin).readState();
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
    const routes = await new IpRunner(ip.bin, "pod-ns").readRoutes();
    expect(ip.calls().map((c) => c.argv)).toEqual([
      "-n pod-ns -json -details route show table all",
    ]);
    expect(routes.map((r) => r.family)).toEqual([...Array(9).fill(4), ...Array(9).fill(6)]);
  });

  it("is INTERNAL 'unreadable output' when ip's JSON is cut short", async () => {
    const ip = fakeIp("ip-truncated");
    const err = (await rejection(new IpRunner(ip.bin).readRoutes())) as TtrpcError;
    expect(err.code).toBe(Code.INTERNAL);
    expect(err.message).toMatch(/route show table all: unreadable output$/);
  });
});
