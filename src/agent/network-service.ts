/**
 * grpc.AgentService: thin handlers. Validate, then (serialised) read the
 * kernel state, plan, apply in one `ip -batch`, and read back. A failed apply
 * restores the state read before it, so a call changes all or nothing.
 */
import { create } from "@bufbuild/protobuf";
import { type AgentService, InterfacesSchema, RoutesSchema } from "../gen/agent_pb";
import { IpBatchError, type IpRunner } from "../net/ip-runner";
import { impliedKernelRoutes } from "../net/kernel-routes";
import { describeRoute, type Link, type NetState, type Route } from "../net/model";
import { planLink } from "../net/plan-link";
import { planNeighborRestore, renderNeighborReplace } from "../net/plan-neighbors";
import { planRoutes } from "../net/plan-routes";
import { batchLine, renderRouteOps } from "../net/render-batch";
import { ipv6Disabled } from "../net/sysctl";
import { Code, TtrpcError } from "../ttrpc/codes";
import type { CallContext, ServiceImpl } from "../ttrpc/service";
import type { Logger } from "./log";
import { linkToProto, routeToProto } from "./proto-map";
import { SerialQueue } from "./serial-queue";
import { validateInterface, validateNeighbors, validateRoutes } from "./validate";

export interface NetworkServiceOptions {
  ip: IpRunner;
  log: Logger;
  /** How long UpdateInterface waits for a missing link when the call has no deadline. */
  hotplugTimeoutMs: number;
  /** Poll interval while waiting for a link. */
  pollMs?: number;
  /** The write queue, when other services' changes must be serialised with these. */
  queue?: SerialQueue;
}

export function createNetworkService(
  options: NetworkServiceOptions,
): ServiceImpl<typeof AgentService> {
  const { ip, log } = options;
  const pollMs = options.pollMs ?? 50;
  const queue = options.queue ?? new SerialQueue();

  /** Best effort: the error is logged, the caller reports the original failure. */
  async function restore(what: string, lines: string[]): Promise<void> {
    try {
      await ip.batch(lines, { force: true });
      log.info("restored state after a failed change", { what, operations: lines.length });
    } catch (err) {
      log.error("restore incomplete", { what, error: (err as Error).message });
    }
  }

  /** Waits until a link with `mac` exists, until shortly before the call's deadline. */
  async function waitForLink(
    mac: string,
    ctx: CallContext,
  ): Promise<{ state: NetState; link: Link }> {
    const start = performance.now();
    const deadline = ctx.deadline ?? start + options.hotplugTimeoutMs;
    // Answer "Link not found" before the deadline so the runtime sees that
    // text (and retries), not DEADLINE_EXCEEDED.
    const giveUp = deadline - Math.min(500, (deadline - start) / 5);
    for (;;) {
      const readStart = performance.now();
      const state = await ip.readState();
      const link = state.links.find((l) => l.mac === mac);
      if (link) return { state, link };
      // Another poll must fit before giving up, reads as slow as this one.
      const nextDone = performance.now() + pollMs + (performance.now() - readStart);
      if (nextDone > giveUp || ctx.signal.aborted) {
        throw new TtrpcError(`Link not found (hwAddr ${mac})`, Code.NOT_FOUND);
      }
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }

  function requireDevices(state: NetState, devices: Iterable<[string, string]>): void {
    const names = new Set(state.links.map((l) => l.name));
    for (const [field, dev] of devices) {
      if (!names.has(dev)) throw new TtrpcError(`Link not found (${field} ${dev})`, Code.NOT_FOUND);
    }
  }

  return {
    async updateInterface(request, ctx) {
      const spec = validateInterface(request.interface);
      if (spec.addresses.some((a) => a.family === 6) && ipv6Disabled()) {
        // The Kata agent does the same (3.17): an IPv4-only guest would fail with EACCES.
        log.warn("IPv6 is disabled in the guest: IPv6 addresses skipped", { hwAddr: spec.mac });
        spec.addresses = spec.addresses.filter((a) => a.family === 4);
      }
      return queue.run(async () => {
        const { state, link } = await waitForLink(spec.mac, ctx);
        const lines = planLink(state.links, link, { ...spec, up: true, exactAddresses: false });
        try {
          await ip.batch(lines);
        } catch (err) {
          await restore(`link ${link.name}`, await planLinkRestore(state, link));
          throw err instanceof IpBatchError
            ? new TtrpcError(`interface ${spec.mac}: ${err.message}`, err.code)
            : err;
        }
        const after = await ip.readState();
        const now = after.links.find((l) => l.index === link.index);
        if (!now)
          throw new TtrpcError(`Link not found (hwAddr ${spec.mac}): it vanished`, Code.NOT_FOUND);
        log.info("interface updated", {
          hwAddr: spec.mac,
          name: now.name,
          operations: lines.length,
        });
        return linkToProto(now, spec.devicePath);
      }, ctx.signal);
    },

    async updateRoutes(request, ctx) {
      if (request.routes === undefined)
        throw new TtrpcError("routes: missing", Code.INVALID_ARGUMENT);
      const desired = validateRoutes(request.routes.Routes);
      return queue.run(async () => {
        const state = await ip.readState();
        requireDevices(
          state,
          desired.map((r, i) => [`routes[${i}].device`, r.dev]),
        );
        const ops = planRoutes(state.routes, desired, { kernel: impliedKernelRoutes(state.links) });
        const lines = renderRouteOps(ops);
        try {
          await ip.batch(lines);
        } catch (err) {
          const now = await ip.readRoutes();
          await restore(
            "routes",
            renderRouteOps(planRoutes(now, managed(state.routes), { exact: true })),
          );
          if (err instanceof IpBatchError && err.lineIndex !== undefined && ops[err.lineIndex]) {
            const op = ops[err.lineIndex] as (typeof ops)[number];
            const verb = op.op === "delete" ? "removing route" : "route";
            throw new TtrpcError(`${verb} ${describeRoute(op.route)}: ${err.ipMessage}`, err.code, {
              cause: err,
            });
          }
          throw err;
        }
        // Nothing applied: the table just read is the result; a second read
        // would double the cost of the common periodic no-change sync.
        const routes = lines.length === 0 ? state.routes : await ip.readRoutes();
        log.info("routes updated", { requested: desired.length, operations: ops.length });
        return create(RoutesSchema, { Routes: routes.map(routeToProto) });
      }, ctx.signal);
    },

    async listInterfaces() {
      const state = await ip.readState();
      return create(InterfacesSchema, { Interfaces: state.links.map((l) => linkToProto(l)) });
    },

    async listRoutes() {
      const routes = await ip.readRoutes();
      return create(RoutesSchema, { Routes: routes.map(routeToProto) });
    },

    async addARPNeighbors(request, ctx) {
      if (request.neighbors === undefined)
        throw new TtrpcError("neighbors: missing", Code.INVALID_ARGUMENT);
      const { specs, skipped } = validateNeighbors(request.neighbors.ARPNeighbors);
      if (skipped.length) log.info("multicast neighbours skipped", { skipped });
      return queue.run(async () => {
        const state = await ip.readState();
        requireDevices(
          state,
          specs.map((n, i) => [`neighbors[${i}].device`, n.dev]),
        );
        const lines = specs.map(renderNeighborReplace);
        try {
          await ip.batch(lines);
        } catch (err) {
          await restore("neighbours", planNeighborRestore(state.neighbors, specs));
          throw err;
        }
        return {};
      }, ctx.signal);
    },
  };

  async function planLinkRestore(before: NetState, link: Link): Promise<string[]> {
    const now = await ip.readState();
    const lines: string[] = [];
    const current = now.links.find((l) => l.index === link.index);
    let others = now.links;
    if (current) {
      lines.push(
        ...planLink(now.links, current, {
          name: link.name,
          mtu: link.mtu,
          noarp: link.flags.includes("NOARP"),
          addresses: link.addresses,
          up: link.flags.includes("UP"),
          exactAddresses: true,
        }),
      );
      // Those lines swap names with whichever link holds our old name: the
      // others are judged by the names they will have then, not now.
      if (current.name !== link.name) {
        others = now.links.map((l) =>
          l.name === link.name && l.index !== link.index ? { ...l, name: current.name } : l,
        );
      }
    }
    return lines.concat(restoreOtherLinks(before.links, others, link.index));
  }
}

function managed(routes: readonly Route[]): Route[] {
  return routes.filter((r) => r.dev !== "lo");
}

/** Puts back the names and up state of links a half-done swap left renamed or down. */
function restoreOtherLinks(
  before: readonly Link[],
  now: readonly Link[],
  skipIndex: number,
): string[] {
  const lines: string[] = [];
  for (const old of before) {
    if (old.index === skipIndex) continue;
    const cur = now.find((l) => l.index === old.index);
    if (!cur) continue;
    const wasUp = old.flags.includes("UP");
    if (cur.name !== old.name) {
      lines.push(batchLine(["link", "set", "dev", cur.name, "down"]));
      lines.push(batchLine(["link", "set", "dev", cur.name, "name", old.name]));
      if (wasUp) lines.push(batchLine(["link", "set", "dev", old.name, "up"]));
    } else if (wasUp && !cur.flags.includes("UP")) {
      // The swap takes the holder down before renaming it.
      lines.push(batchLine(["link", "set", "dev", old.name, "up"]));
    }
  }
  return lines;
}
