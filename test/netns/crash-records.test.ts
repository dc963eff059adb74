/**
 * What a starting agent does with the change record it finds:
 * a sound one is restored from before the first answer; a torn one, one of
 * another boot, one that does not parse, or one given up on is set aside
 * (renamed to rejected.rec) and nothing is changed; one of another network
 * namespace or of a writer still running is left alone; one whose restore
 * fails is set aside, the agent serves and says so, and the next start
 * does not try again. The network is read independently (`ip -json`).
 * Records are written here byte for byte in the agent's format.
 */
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ChangeRecord } from "../../src/agent/journal/change-record";
import { bootId, readProcStat } from "../../src/agent/journal/proc-stat";
import { encodeRecord } from "../../src/agent/journal/record-file";
import type { Route } from "../../src/net/model/model";
import { NETAGENT, type RunningAgent, startAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";
import { run } from "../helpers/process";

let ns: Netns;
let stateDir: string;
let agent: RunningAgent | undefined;

const route = (dst: string): Route => ({
  family: 4,
  dst,
  gateway: "10.0.0.1",
  dev: "eth0",
  scope: 0,
  metric: 0,
  onlink: false,
  mtu: 0,
  protocol: "boot",
  type: "unicast",
});
const kernelRoute: Route = {
  family: 4,
  dst: "10.0.0.0/16",
  dev: "eth0",
  prefsrc: "10.0.0.2",
  scope: 253,
  metric: 0,
  onlink: false,
  mtu: 0,
  protocol: "kernel",
  type: "unicast",
};

beforeEach(async () => {
  ns = await Netns.create("nt-rec");
  await ns.veth("eth0", "peer0", { mac: "02:00:00:00:0e:01" });
  await ns.ip("addr", "add", "10.0.0.2/16", "dev", "eth0");
  // The change cut short: 10.51/24 in place of the 10.50/24 the record holds.
  await ns.ip("route", "add", "10.51.0.0/24", "via", "10.0.0.1", "dev", "eth0");
  stateDir = mkdtempSync(join(tmpdir(), "netagent-rec-"));
});

afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  await ns.remove();
  rmSync(stateDir, { recursive: true, force: true });
});

/** The namespace's identity as the agent inside it reads it. */
function netnsOf(n: Netns): string {
  return execFileSync(
    "ip",
    ["netns", "exec", n.name, "stat", "-L", "-c", "%d:%i", "/proc/self/ns/net"],
    {
      encoding: "utf8",
    },
  ).trim();
}

/** A PID that has ended (a `true` that ran), with a start time no process has now. */
function deadOwner(): ChangeRecord["owner"] {
  const pid = Number(execFileSync("sh", ["-c", "true & echo $!"], { encoding: "utf8" }).trim());
  return { pid, start: 1, pgid: pid };
}

function record(over: Partial<ChangeRecord> = {}): ChangeRecord {
  return {
    bootId: bootId(),
    netns: netnsOf(ns),
    owner: deadOwner(),
    at: new Date().toISOString(),
    attempts: 0,
    change: { kind: "routes", routes: [kernelRoute, route("10.50.0.0/24")] },
    ...over,
  };
}

const recordPath = () => join(stateDir, "change.rec");
const rejectedPath = () => join(stateDir, "rejected.rec");

async function routes(): Promise<string[]> {
  const rows = await ns.json<{ dst: string }[]>("route", "show", "table", "main");
  return rows.map((r) => r.dst).sort();
}

async function start(): Promise<RunningAgent> {
  agent = await startAgent({ netns: ns, stateDir });
  return agent;
}

/** The agent's log lines (parsed), those with `msg` matching. */
function logLines(a: RunningAgent, msg: RegExp): Record<string, unknown>[] {
  return a.child.stderr
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((o) => msg.test(String(o.msg)));
}

describe("a change record found at start", () => {
  it("a sound one: the old state is back before the first answer, the record gone, the log says so", async () => {
    writeFileSync(recordPath(), encodeRecord(record()), { mode: 0o600 });
    const a = await start();
    // Answering Check means the restore is done: the table is the recorded one.
    expect(await routes()).toEqual(["10.0.0.0/16", "10.50.0.0/24"]);
    expect(existsSync(recordPath())).toBe(false);
    expect(logLines(a, /died in the middle of a change/)[0]).toMatchObject({
      change: "routes",
      attempt: 1,
    });
    expect(logLines(a, /^restored the state from before/)[0]).toMatchObject({
      change: "routes",
      routes: 2,
    });
  });

  it("an UpdateRoutes' record of only the routes it touched: their old values back, its own gone, the rest left alone", async () => {
    // The table holds a route the change never touched: it is in no record.
    await ns.ip("route", "add", "10.60.0.0/24", "via", "10.0.0.1", "dev", "eth0");
    const change = {
      kind: "routes-touched" as const,
      removed: [route("10.50.0.0/24")],
      // 10.51/24 went in before the kill, 10.52/24 did not.
      added: [route("10.51.0.0/24"), route("10.52.0.0/24")],
    };
    writeFileSync(recordPath(), encodeRecord(record({ change })), { mode: 0o600 });
    const a = await start();
    expect(await routes()).toEqual(["10.0.0.0/16", "10.50.0.0/24", "10.60.0.0/24"]);
    expect(existsSync(recordPath())).toBe(false);
    expect(logLines(a, /^restored the state from before/)[0]).toMatchObject({
      change: "routes-touched",
      removed: 1,
      added: 2,
    });
  });

  it.each([
    ["cut short by a byte", (b: Buffer) => b.subarray(0, b.length - 1), /torn: the header says/],
    ["cut inside the header", (b: Buffer) => b.subarray(0, 10), /no header line/],
    [
      "grown by a byte",
      (b: Buffer) => Buffer.concat([b, Buffer.from(" ")]),
      /torn: the header says/,
    ],
    [
      "a byte of the body changed",
      (b: Buffer) => {
        const c = Buffer.from(b);
        c[c.length - 5] = (c[c.length - 5] as number) ^ 0x01;
        return c;
      },
      /torn: checksum mismatch/,
    ],
    ["empty", () => Buffer.alloc(0), /no header line/],
  ])("a torn one (%s): set aside, nothing changed", async (_what, tear, reason) => {
    writeFileSync(recordPath(), tear(encodeRecord(record())), { mode: 0o600 });
    const a = await start();
    expect(await routes()).toEqual(["10.0.0.0/16", "10.51.0.0/24"]);
    expect(existsSync(recordPath())).toBe(false);
    expect(existsSync(rejectedPath())).toBe(true);
    expect(String(logLines(a, /set aside, not applied/)[0]?.reason)).toMatch(reason);
  });
});

describe("a change record found at start: cut short, of another boot, unreadable", () => {
  it("an AddARPNeighbors cut short before some new entries were added: what it did is undone, and the log says restored, not incomplete", async () => {
    const old = "02:00:00:00:0f:01";
    // Before: .10 permanent. The change (replace .10, add .11 and .12) was
    // cut short after its first two lines: .12 was never added.
    await ns.ip(
      "neigh",
      "add",
      "10.0.9.10",
      "lladdr",
      "02:00:00:00:0f:09",
      "dev",
      "eth0",
      "nud",
      "permanent",
    );
    await ns.ip(
      "neigh",
      "add",
      "10.0.9.11",
      "lladdr",
      "02:00:00:00:0f:0b",
      "dev",
      "eth0",
      "nud",
      "permanent",
    );
    const before = {
      family: 4 as const,
      ip: "10.0.9.10",
      dev: "eth0",
      lladdr: old,
      state: ["PERMANENT"],
      router: false,
    };
    const touched = ["10.0.9.10", "10.0.9.11", "10.0.9.12"].map((ip) => ({ ip, dev: "eth0" }));
    writeFileSync(
      recordPath(),
      encodeRecord(record({ change: { kind: "neighbours", touched, before: [before] } })),
      { mode: 0o600 },
    );
    const a = await start();
    const rows = await ns.json<{ dst: string; lladdr?: string; state?: string[] }[]>(
      "neigh",
      "show",
      "dev",
      "eth0",
    );
    expect(
      rows.filter((r) => r.dst.startsWith("10.0.9.")).map((r) => `${r.dst} ${r.lladdr} ${r.state}`),
    ).toEqual([`10.0.9.10 ${old} PERMANENT`]);
    expect(logLines(a, /incomplete/)).toEqual([]);
    expect(logLines(a, /^restored the state from before/)[0]).toMatchObject({
      change: "neighbours",
    });
    expect(existsSync(recordPath())).toBe(false);
    expect(existsSync(rejectedPath())).toBe(false);
  });

  it("one of another boot: set aside, nothing changed", async () => {
    writeFileSync(
      recordPath(),
      encodeRecord(record({ bootId: "00000000-0000-0000-0000-000000000000" })),
    );
    const a = await start();
    expect(await routes()).toEqual(["10.0.0.0/16", "10.51.0.0/24"]);
    expect(existsSync(rejectedPath())).toBe(true);
    expect(String(logLines(a, /set aside, not applied/)[0]?.reason)).toMatch(/of another boot/);
  });

  it.each([
    ["a body of another shape", () => ({ hello: 1 }), /unparsable: bootId/],
    [
      "an unknown kind",
      () => ({ ...record(), change: { kind: "firmware" } }),
      /unparsable: change.kind/,
    ],
    [
      "a route without its device",
      () => ({ ...record(), change: { kind: "routes", routes: [{ family: 4, dst: "x" }] } }),
      /unparsable: change.routes.0.dev/,
    ],
  ])("one that does not parse (%s): set aside, nothing changed", async (_what, body, reason) => {
    writeFileSync(recordPath(), encodeRecord(body()));
    const a = await start();
    expect(await routes()).toEqual(["10.0.0.0/16", "10.51.0.0/24"]);
    expect(existsSync(rejectedPath())).toBe(true);
    expect(String(logLines(a, /set aside, not applied/)[0]?.reason)).toMatch(reason);
  });
});

describe("a change record found at start: not JSON, another netns, a writer alive, a failed restore, too many starts", () => {
  it("a body that is not JSON, under a sound header: set aside", async () => {
    const good = encodeRecord(record()).toString("latin1");
    const body = "{not json";
    const header = good.slice(0, good.indexOf("\n")).split(" ");
    const crc = (Bun.hash.crc32(body) >>> 0).toString(16).padStart(8, "0");
    writeFileSync(recordPath(), `${header[0]} ${header[1]} ${body.length} ${crc}\n${body}`);
    const a = await start();
    expect(await routes()).toEqual(["10.0.0.0/16", "10.51.0.0/24"]);
    expect(String(logLines(a, /set aside, not applied/)[0]?.reason)).toMatch(/unreadable body/);
  });

  it("one of another network namespace: left alone, nothing changed", async () => {
    writeFileSync(recordPath(), encodeRecord(record({ netns: "4:1" })));
    const a = await start();
    expect(await routes()).toEqual(["10.0.0.0/16", "10.51.0.0/24"]);
    expect(existsSync(recordPath())).toBe(true);
    expect(String(logLines(a, /left alone/)[0]?.reason)).toMatch(/another network namespace/);
  });

  it("one whose writer still runs: left alone", async () => {
    const me = readProcStat("self");
    if (!me) throw new Error("no /proc/self/stat");
    writeFileSync(recordPath(), encodeRecord(record({ owner: { pid: me.pid, start: me.start } })));
    const a = await start();
    expect(await routes()).toEqual(["10.0.0.0/16", "10.51.0.0/24"]);
    expect(String(logLines(a, /left alone/)[0]?.reason)).toMatch(/still runs/);
  });

  it("one whose restore fails: set aside, the agent serves and says so, the next start does not try again", async () => {
    const bad = { ...route("10.52.0.0/24"), dev: "nosuch0" };
    writeFileSync(
      recordPath(),
      encodeRecord(
        record({ change: { kind: "routes", routes: [kernelRoute, route("10.50.0.0/24"), bad] } }),
      ),
    );
    const a = await start();
    // Restored as far as it goes (-force), then serving: it answered Check.
    expect(await routes()).toEqual(["10.0.0.0/16", "10.50.0.0/24"]);
    expect(logLines(a, /incomplete: serving anyway/)[0]).toMatchObject({
      level: "error",
      change: "routes",
    });
    expect(existsSync(recordPath())).toBe(false);
    expect(existsSync(rejectedPath())).toBe(true);
    await a.stop();
    const again = await start();
    expect(logLines(again, /record|restor/)).toEqual([]);
  });

  it("one cut short by as many starts as allowed: set aside, not tried again", async () => {
    writeFileSync(recordPath(), encodeRecord(record({ attempts: 3 })));
    const a = await start();
    expect(await routes()).toEqual(["10.0.0.0/16", "10.51.0.0/24"]);
    expect(existsSync(rejectedPath())).toBe(true);
    expect(logLines(a, /cut short too often/)[0]).toMatchObject({ level: "error", attempts: 3 });
  });
});

describe("the state directory", () => {
  it("is made root's alone (0700)", async () => {
    const dir = join(stateDir, "fresh");
    agent = await startAgent({ netns: ns, stateDir: dir });
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it("one others may read: the agent refuses to start (exit 2), naming it", async () => {
    const dir = join(stateDir, "open");
    mkdirSync(dir, { mode: 0o755 });
    const r = await run("ip", [
      "netns",
      "exec",
      ns.name,
      NETAGENT,
      "--listen",
      `unix://${join(stateDir, "s.sock")}`,
      "--state-dir",
      dir,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`state dir ${dir}: mode 755, others may read it`);
  });

  it("a record over the bound is never read: set aside", async () => {
    const size = 32 * 1024 * 1024 + 4096;
    writeFileSync(recordPath(), Buffer.alloc(size, 0x20));
    const a = await start();
    expect(String(logLines(a, /set aside, not applied/)[0]?.reason)).toMatch(
      /over the limit of 33554432/,
    );
    expect(readFileSync(rejectedPath()).length).toBe(size);
  });
});
