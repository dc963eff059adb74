/**
 * SetIPTables in process, with stand-in runners that record what runs and
 * when: it shares the agent's one write queue with the route changes (an
 * UpdateRoutes waits until the packet filter is done), a call cancelled
 * while its restore runs still gets the tables put back (the put-back runs
 * without the call's signal), and the order of the steps. The real tools
 * are exercised in test/netns/iptables.test.ts.
 */

import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { SerialQueue } from "../../src/agent/apply/serial-queue";
import { createIptablesService } from "../../src/agent/services/iptables-service";
import { createNetworkService } from "../../src/agent/services/kata-network-service";
import { createLogger } from "../../src/common/log";
import {
  GetIPTablesRequestSchema,
  SetIPTablesRequestSchema,
  UpdateRoutesRequestSchema,
} from "../../src/gen/agent_pb";
import type { IpRunner } from "../../src/net/iproute/ip-runner";
import type { IptablesRunner } from "../../src/net/iptables/iptables-runner";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import type { CallContext } from "../../src/ttrpc/service";
import { narrowReads } from "../helpers/fake-ip-reads";
import { waitFor } from "../helpers/wait";

const log = createLogger("error", () => {});
const ctxWith = (signal = new AbortController().signal): CallContext => ({
  signal,
  deadline: undefined,
  metadata: new Map(),
});

/** A held step: resolves when released. */
function gate() {
  let release!: () => void;
  const opened = new Promise<void>((r) => {
    release = r;
  });
  return { opened, release };
}

function fakes(events: string[], hold?: Promise<void>, failRestore = false) {
  const iptables = {
    maxBytes: 1 << 20,
    async save(_family: number, opts: { counters?: boolean } = {}) {
      events.push(`save${opts.counters ? " -c" : ""}`);
      return Buffer.from("*nat\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT -j RETURN\nCOMMIT\n");
    },
    async restore(
      _f: number,
      data: Uint8Array,
      opts: { test?: boolean; counters?: boolean; signal?: AbortSignal } = {},
    ) {
      const what = `restore${opts.test ? " --test" : ""}${opts.counters ? " -c" : ""}${opts.signal ? "" : " (no signal)"}`;
      events.push(`${what} start`);
      if (!opts.test && !opts.counters && hold) {
        await Promise.race([
          hold,
          new Promise((_, reject) =>
            opts.signal?.addEventListener("abort", () =>
              reject(new TtrpcError("killed", Code.CANCELLED)),
            ),
          ),
        ]);
      }
      events.push(`${what} end: ${Buffer.from(data).toString().split("\n")[0]}`);
      if (failRestore && !opts.test && !opts.counters)
        throw new TtrpcError("line 9: refused", Code.INVALID_ARGUMENT);
      return new Uint8Array();
    },
  } as unknown as IptablesRunner;
  const readState = async () => {
    events.push("ip readState");
    return { links: [], routes: [], neighbors: [] };
  };
  const ip = {
    readState,
    ...narrowReads(readState),
    async readRoutes() {
      events.push("ip readRoutes");
      return [];
    },
    async batch() {
      events.push("ip batch");
    },
  } as unknown as IpRunner;
  return { iptables, ip };
}

const setReq = create(SetIPTablesRequestSchema, {
  data: Buffer.from("*filter\n:INPUT DROP [0:0]\nCOMMIT\n*nat\nCOMMIT\n"),
});
const routesReq = create(UpdateRoutesRequestSchema, { routes: { Routes: [] } });

describe("SetIPTables in the agent", () => {
  it("Get/SetIPTables run no tool before the late modules are loaded, and fail with the wait", async () => {
    const events: string[] = [];
    const { iptables } = fakes(events);
    const loaded = gate();
    const filter = createIptablesService({
      iptables,
      log,
      queue: new SerialQueue(),
      modulesReady: () => loaded.opened,
    });
    const get = filter.getIPTables?.(create(GetIPTablesRequestSchema, {}), ctxWith());
    const set = filter.setIPTables?.(setReq, ctxWith());
    // not a wait: a stretch in which nothing may run while the modules load
    await new Promise((r) => setTimeout(r, 50));
    expect(events).toEqual([]);
    loaded.release();
    await Promise.all([get, set]);
    expect(events[0]).toBe("save");
    expect(events).toContain("restore start");

    const missing = new TtrpcError("netfilter modules still loading", Code.UNAVAILABLE);
    const late = createIptablesService({
      iptables,
      log,
      queue: new SerialQueue(),
      modulesReady: () => Promise.reject(missing),
    });
    events.length = 0;
    await expect(late.setIPTables?.(setReq, ctxWith())).rejects.toBe(missing);
    await expect(late.getIPTables?.(create(GetIPTablesRequestSchema, {}), ctxWith())).rejects.toBe(
      missing,
    );
    expect(events).toEqual([]);
  });

  it("shares the write queue: UpdateRoutes waits until the packet filter is set", async () => {
    const events: string[] = [];
    const held = gate();
    const { iptables, ip } = fakes(events, held.opened);
    const queue = new SerialQueue();
    const filter = createIptablesService({ iptables, log, queue });
    const network = createNetworkService({ ip, log, hotplugTimeoutMs: 100, queue });
    const set = filter.setIPTables?.(setReq, ctxWith());
    const routes = network.updateRoutes?.(routesReq, ctxWith());
    // not a wait: a stretch in which the network call must not run while the packet filter's change holds the queue
    await new Promise((r) => setTimeout(r, 50));
    expect(events).not.toContain("ip readState");
    held.release();
    await Promise.all([set, routes]);
    expect(events.slice(0, 6)).toEqual([
      "restore --test start",
      "restore --test end: *filter",
      "save -c",
      "restore start",
      "restore end: *filter",
      "ip readState",
    ]);
  });

  it("separate queues would not wait (the check above can fail)", async () => {
    const events: string[] = [];
    const held = gate();
    const { iptables, ip } = fakes(events, held.opened);
    const filter = createIptablesService({ iptables, log, queue: new SerialQueue() });
    const network = createNetworkService({ ip, log, hotplugTimeoutMs: 100 });
    const set = filter.setIPTables?.(setReq, ctxWith());
    const routes = network.updateRoutes?.(routesReq, ctxWith());
    await waitFor(() => events.includes("ip readState"), { what: "the network call under way" });
    held.release();
    await Promise.all([set, routes]);
  });

  it("a call cancelled during its restore still puts the named tables back, without the signal", async () => {
    const events: string[] = [];
    const held = gate();
    const { iptables } = fakes(events, held.opened);
    const filter = createIptablesService({ iptables, log, queue: new SerialQueue() });
    const abort = new AbortController();
    const set = filter.setIPTables?.(setReq, ctxWith(abort.signal));
    await waitFor(() => events.includes("restore start"), { what: "the restore under way" });
    abort.abort(new TtrpcError("peer gone", Code.CANCELLED));
    const err = await Promise.resolve(set).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as TtrpcError).code).toBe(Code.CANCELLED);
    // The put-back: the saved nat block, and filter (absent before) as *filter + COMMIT.
    expect(events.slice(-2)).toEqual([
      "restore -c (no signal) start",
      "restore -c (no signal) end: *filter",
    ]);
  });

  it("a refused restore: the tool's error, after the put-back", async () => {
    const events: string[] = [];
    const { iptables } = fakes(events, undefined, true);
    const filter = createIptablesService({ iptables, log, queue: new SerialQueue() });
    const err = await Promise.resolve(filter.setIPTables?.(setReq, ctxWith())).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as TtrpcError).code).toBe(Code.INVALID_ARGUMENT);
    expect(events.at(-1)).toBe("restore -c (no signal) end: *filter");
  });
});
