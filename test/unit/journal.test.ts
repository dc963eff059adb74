/**
 * The change journal's file: a record decodes whole or not at
 * all (every prefix and every single-byte change of a record is refused),
 * is written root-only and bounded (a change whose record is over the bound
 * is refused before anything is written), and the write queue records and
 * removes it around a task, complete or failed.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SerialQueue } from "../../src/agent/apply/serial-queue";
import { type Change, routesChange } from "../../src/agent/journal/change-record";
import { Journal } from "../../src/agent/journal/journal";
import { decodeRecord, encodeRecord } from "../../src/agent/journal/record-file";
import { createLogger } from "../../src/common/log";
import type { Route } from "../../src/net/model/model";
import { planRoutes } from "../../src/net/plan/routes/plan-routes";
import { Code, TtrpcError } from "../../src/ttrpc/codes";

const log = createLogger("error", () => {});
const change: Change = {
  kind: "iptables",
  family: 4,
  tables: ["filter"],
  snapshot: "*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n",
};

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "netagent-journal-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function open(maxBytes?: number): Journal {
  return Journal.open({
    dir: join(dir, "state"),
    log,
    owner: { pid: process.pid, start: 1 },
    bootId: "b",
    netns: "n",
    ...(maxBytes === undefined ? {} : { maxBytes }),
  });
}

describe("record-file", () => {
  const bytes = encodeRecord({ a: [1, 2, 3], text: "é ✓" });

  it("decodes what it encodes", () => {
    expect(decodeRecord(bytes)).toEqual({ ok: true, body: { a: [1, 2, 3], text: "é ✓" } });
  });

  it("writes what JSON.stringify writes, large arrays included (built in pieces)", () => {
    const big = {
      kind: "routes",
      none: undefined,
      routes: Array.from({ length: 2500 }, (_, i) => ({
        dst: `10.0.${i}/32`,
        gw: undefined,
        n: i,
      })),
      nested: { list: Array.from({ length: 1001 }, (_, i) => [i, "é"]) },
    };
    const text = Buffer.from(encodeRecord(big));
    const body = text.subarray(text.indexOf(0x0a) + 1).toString("utf8");
    expect(body).toBe(JSON.stringify(big));
    expect(decodeRecord(text)).toEqual({ ok: true, body: JSON.parse(JSON.stringify(big)) });
  });

  it("refuses every prefix of a record", () => {
    for (let n = 0; n < bytes.length; n++)
      expect(decodeRecord(bytes.subarray(0, n)).ok).toBe(false);
  });

  it("refuses every single-bit change of a record", () => {
    for (let i = 0; i < bytes.length; i++) {
      const c = Buffer.from(bytes);
      c[i] = (c[i] as number) ^ 0x04;
      expect(decodeRecord(c).ok, `byte ${i}`).toBe(false);
    }
  });
});

describe("Journal", () => {
  it("writes the record root-only in a 0700 directory, whole, and removes it", () => {
    const j = open();
    j.write(change);
    expect(statSync(join(dir, "state")).mode & 0o777).toBe(0o700);
    expect(statSync(j.recordPath).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, "state"))).toEqual(["change.rec"]);
    const found = j.find();
    // Written by this process, which still runs: another start must leave it alone.
    expect(found).toMatchObject({ kind: "record" });
    j.clear();
    expect(existsSync(j.recordPath)).toBe(false);
    expect(j.find()).toEqual({ kind: "none" });
  });

  it("writes a new record straight to its name: no temporary file, no rename", () => {
    const j = open();
    // A directory where the temporary file would go: a write through it fails.
    mkdirSync(join(dir, "state", "change.tmp"));
    j.write(change);
    expect(j.find()).toMatchObject({ kind: "record", record: { change } });
    j.clear();
  });

  it("replaces a record already there (a restart counting its attempt) through a rename, never in place", () => {
    const j = open();
    j.write(change);
    const first = statSync(j.recordPath).ino;
    const next: Change = { ...change, snapshot: "*filter\nCOMMIT\n" };
    j.write(next, 1);
    expect(statSync(j.recordPath).ino).not.toBe(first);
    expect(readdirSync(join(dir, "state"))).toEqual(["change.rec"]);
    expect(j.find()).toMatchObject({ kind: "record", record: { attempts: 1, change: next } });
  });

  it("sets aside, never applies, what a kill inside a record's write leaves (every cut)", () => {
    const j = open();
    j.write(change);
    const whole = readFileSync(j.recordPath);
    j.clear();
    for (let n = 0; n < whole.length; n++) {
      writeFileSync(j.recordPath, whole.subarray(0, n), { mode: 0o600 });
      const found = j.find();
      expect(found.kind, `cut at ${n} of ${whole.length}`).toBe("set-aside");
      expect(existsSync(j.recordPath)).toBe(false);
      expect(existsSync(j.rejectedPath)).toBe(true);
    }
  });

  it("refuses a change whose record is over the bound before writing anything", () => {
    const j = open(200);
    const big: Change = { ...change, snapshot: "x".repeat(300) };
    let err: unknown;
    try {
      j.write(big);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TtrpcError);
    expect((err as TtrpcError).code).toBe(Code.RESOURCE_EXHAUSTED);
    expect((err as Error).message).toMatch(/over the limit of 200/);
    expect(readdirSync(join(dir, "state"))).toEqual([]);
  });
});

describe("SerialQueue with a journal", () => {
  function recorder() {
    const events: string[] = [];
    return {
      events,
      journal: {
        write: (c: Change) => events.push(`write ${c.kind}`),
        clear: () => events.push("clear"),
      },
    };
  }

  it("removes the record when the task ends, complete or failed; a task that records nothing costs nothing", async () => {
    const { events, journal } = recorder();
    const q = new SerialQueue(8, journal);
    await q.run(async () => {
      q.record(() => change);
      events.push("change");
    });
    await q
      .run(async () => {
        q.record(() => change);
        throw new Error("failed and rolled back");
      })
      .catch(() => events.push("failed"));
    await q.run(async () => events.push("read only"));
    expect(events).toEqual([
      "write iptables",
      "change",
      "clear",
      "write iptables",
      "clear",
      "failed",
      "read only",
    ]);
  });

  it("without a journal, builds no record", async () => {
    const q = new SerialQueue();
    let built = false;
    await q.run(async () =>
      q.record(() => {
        built = true;
        return change;
      }),
    );
    expect(built).toBe(false);
  });
});

describe("an UpdateRoutes' record (routesChange)", () => {
  const route = (i: number, gateway = "10.0.0.1"): Route => ({
    family: 4,
    dst: `10.${(i >> 8) & 255}.${i & 255}.0/24`,
    gateway,
    dev: "eth0",
    scope: 0,
    metric: 0,
    onlink: false,
    mtu: 0,
    protocol: "boot",
    type: "unicast",
  });
  const table = Array.from({ length: 1000 }, (_, i) => route(i));

  it("holds only the routes the plan touches, whatever the table's size", () => {
    const desired = table.map((r, i) => (i < 3 ? route(i, "10.0.0.2") : r));
    const change = routesChange(table, planRoutes(table, desired, { keepLinkless: true }));
    expect(change.kind).toBe("routes-touched");
    if (change.kind !== "routes-touched") return;
    expect(change.removed.map((r) => r.gateway)).toEqual(["10.0.0.1", "10.0.0.1", "10.0.0.1"]);
    expect(change.added.map((r) => r.gateway)).toEqual(["10.0.0.2", "10.0.0.2", "10.0.0.2"]);
    expect(encodeRecord(change).length).toBeLessThan(2000);
  });

  it("holds the whole table when the plan touches more routes than the table has", () => {
    const desired = table.map((_, i) => route(i, "10.0.0.2"));
    const change = routesChange(table, planRoutes(table, desired, { keepLinkless: true }));
    expect(change).toEqual({ kind: "routes", routes: table });
  });
});
