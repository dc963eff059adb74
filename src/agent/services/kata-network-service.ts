/**
 * grpc.AgentService: thin handlers. Validate, then (serialised) read the
 * kernel state, plan, apply in one `ip -batch`, and read back. A failed apply
 * restores the state read before it, so a call changes all or nothing.
 */
import { create } from "@bufbuild/protobuf";
import { HOTPLUG_MAX_WAIT_MS } from "../../common/limits";
import type { Logger } from "../../common/log";
import { type AgentService, InterfacesSchema, RoutesSchema } from "../../gen/agent_pb";
import type { IpRunner } from "../../net/iproute/ip-runner";
import type { Link, Route } from "../../net/model/model";
import { impliedKernelRoutes } from "../../net/plan/kernel-routes";
import { renderNeighborReplace } from "../../net/plan/plan-neighbors";
import { planRoutes } from "../../net/plan/routes/plan-routes";
import { ipv6Disabled } from "../../net/sysctl/sysctl";
import { Code, TtrpcError } from "../../ttrpc/codes";
import type { CallContext, ServiceImpl } from "../../ttrpc/service";
import { linkToProto, routeToProto } from "../../wire/kata-map";
import { applyLink } from "../apply/apply-link";
import { applyRoutePlan } from "../apply/apply-routes";
import { restoreNeighbours } from "../apply/restore-neighbors";
import { SerialQueue } from "../apply/serial-queue";
import { neighboursChange, routesChange } from "../journal/change-record";
import { askInterface, askNeighbours, askRoutes } from "../policy/ask";
import type { PolicyGate } from "../policy/gate";
import { validateInterface, validateNeighbors } from "../validate/validate-interface-neighbors";
import { validateRoutes } from "../validate/validate-routes";
import { VALIDATE_WHILE_READING, validateWhileReading } from "../validate/validate-while-reading";
import { NoChangeMemo } from "./routes-memo";
import { interfaceAsAsked } from "./withheld";

export interface NetworkServiceOptions {
  ip: IpRunner;
  log: Logger;
  /** How long UpdateInterface waits for a missing link when the call has no deadline. */
  hotplugTimeoutMs: number;
  /** The longest UpdateInterface waits for a missing link, whatever the deadline ({@link HOTPLUG_MAX_WAIT_MS}). */
  hotplugMaxWaitMs?: number;
  /** Poll interval while waiting for a link. */
  pollMs?: number;
  /** The write queue, when other services' changes must be serialised with these. */
  queue?: SerialQueue;
  /** The guest's network policy (none: every valid call goes ahead). */
  gate?: PolicyGate;
}

/** When to stop waiting for a hot-plugged link: shortly before the deadline, within the cap. */
function hotplugGiveUp(options: NetworkServiceOptions, ctx: CallContext): number {
  const start = performance.now();
  const cap = start + (options.hotplugMaxWaitMs ?? HOTPLUG_MAX_WAIT_MS);
  const deadline = Math.min(ctx.deadline ?? start + options.hotplugTimeoutMs, cap);
  // Answer "Link not found" before the deadline so the runtime sees that
  // text (and retries), not DEADLINE_EXCEEDED.
  return ctx.deadline !== undefined && ctx.deadline <= cap
    ? deadline - Math.min(500, (deadline - start) / 5)
    : deadline;
}

/**
 * Waits until a link with `mac` exists, until `giveUp`, reading every
 * `pollMs`. Runs outside the write queue (reads only): a NIC that is slow
 * to appear holds up no other network change.
 */
async function waitForLink(
  options: NetworkServiceOptions,
  mac: string,
  ctx: CallContext,
  giveUp: number,
): Promise<void> {
  const { ip, log } = options;
  const pollMs = options.pollMs ?? 50;
  // Info: a call held up by a NIC not there yet is what a stuck pod shows first.
  log.info("waiting for a hot-plugged link", { hwAddr: mac });
  for (;;) {
    const readStart = performance.now();
    const state = await ip.readLinks({ signal: ctx.signal });
    if (state.links.some((l) => l.mac === mac)) return;
    // Another poll must fit before giving up, reads as slow as this one.
    const nextDone = performance.now() + pollMs + (performance.now() - readStart);
    if (nextDone > giveUp || ctx.signal.aborted) {
      throw new TtrpcError(`Link not found (hwAddr ${mac})`, Code.NOT_FOUND);
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** NOT_FOUND naming `what[i].device` for the first item whose device is not a link. */
function requireDevices(
  state: { links: readonly Pick<Link, "name">[] },
  what: string,
  items: readonly { dev: string }[],
): void {
  const names = new Set(state.links.map((l) => l.name));
  // The field's name is built only for the error (10,000 routes, every call).
  const i = items.findIndex((item) => !names.has(item.dev));
  if (i === -1) return;
  const dev = (items[i] as { dev: string }).dev;
  throw new TtrpcError(`Link not found (${what}[${i}].device ${dev})`, Code.NOT_FOUND);
}

/** A Routes answer (UpdateRoutes': the table read back or, with reads refused, the routes asked for: withheld.ts). */
const routesAnswer = (routes: readonly Route[]) =>
  create(RoutesSchema, { Routes: routes.map(routeToProto) });

/** grpc.AgentService's network methods on `options.ip`, serialised on `options.queue`. */
export function createNetworkService(
  options: NetworkServiceOptions,
): ServiceImpl<typeof AgentService> {
  const { ip, log, gate } = options;
  const queue = options.queue ?? new SerialQueue();
  const memo = new NoChangeMemo();
  // Reads refused: a change answers what it was asked, not what it read (withheld.ts).
  const withheld = gate !== undefined && !gate.readsAllowed;

  return {
    async updateInterface(request, ctx) {
      const spec = validateInterface(request.interface);
      if (spec.addresses.some((a) => a.family === 6) && ipv6Disabled()) {
        // The Kata agent does the same (3.17): an IPv4-only guest would fail with EACCES.
        log.warn("IPv6 is disabled in the guest: IPv6 addresses skipped", { hwAddr: spec.mac });
        spec.addresses = spec.addresses.filter((a) => a.family === 4);
      }
      // A NIC the policy does not name is refused before any wait for it.
      gate?.precheck(askInterface(spec));
      const giveUp = hotplugGiveUp(options, ctx);
      for (;;) {
        // The link is looked for inside the queue (one read when it is
        // there); when it is not, the wait happens outside, then again.
        const done = await queue.run(async () => {
          const state = await ip.readLinks({ signal: ctx.signal });
          const link = state.links.find((l) => l.mac === spec.mac);
          if (!link) return undefined;
          gate?.admit(askInterface(spec, link), state, "state");
          const now = await applyLink(ip, log, spec, state, link, ctx.signal, queue);
          return withheld ? interfaceAsAsked(spec) : linkToProto(now, spec.devicePath);
        }, ctx.signal);
        if (done) return done;
        await waitForLink(options, spec.mac, ctx, giveUp);
      }
    },

    async updateRoutes(request, ctx) {
      if (request.routes === undefined)
        throw new TtrpcError("routes: missing", Code.INVALID_ARGUMENT);
      const wire = request.routes.Routes;
      // A large request is validated while ip reads the table (validate-while-reading.ts).
      // A repeat of the last call that changed nothing is known by its bytes (routes-memo.ts).
      const kept = memo.desiredFor(ctx.payload);
      const early =
        kept ?? (wire.length < VALIDATE_WHILE_READING ? validateRoutes(wire) : undefined);
      return queue.run(async () => {
        const { reading, valid: desired } = validateWhileReading(
          ctx.signal,
          (signal) => ip.readLinksAndRoutes({ signal }),
          () => early ?? validateRoutes(wire),
        );
        const state = await reading;
        const requested = desired.length;
        const updated = (operations: number, repeat = false) =>
          log.info("routes updated", { requested, operations, ...(repeat ? { repeat } : {}) });
        const again = memo.answerFor(desired, state.routes);
        if (again) {
          // Said in the log: the answer is the kept one (routes-memo.ts).
          updated(0, true);
          return again;
        }
        requireDevices(state, "routes", desired);
        const ops = planRoutes(state.routes, desired, {
          kernel: impliedKernelRoutes(state.links),
          keepLinkless: true,
        });
        gate?.admit(askRoutes(desired, ops.length > 0), state);
        // Nothing to apply: the table just read is the result (one process
        // for the common periodic no-change sync); else the batch reads back.
        if (ops.length === 0) {
          updated(0);
          const answer = routesAnswer(withheld ? desired : state.routes);
          return memo.keep(ctx.payload, desired, state.routes, answer);
        }
        memo.forget();
        queue.record(() => routesChange(state.routes, ops));
        const routes = await applyRoutePlan(ip, log, state.routes, ops, ctx.signal);
        updated(ops.length);
        return routesAnswer(withheld ? desired : routes);
      }, ctx.signal);
    },

    async listInterfaces(_request, ctx) {
      const state = await ip.readLinks({ signal: ctx.signal });
      return create(InterfacesSchema, { Interfaces: state.links.map((l) => linkToProto(l)) });
    },

    async listRoutes(_request, ctx) {
      return routesAnswer(await ip.readRoutes({ signal: ctx.signal }));
    },

    async addARPNeighbors(request, ctx) {
      if (request.neighbors === undefined)
        throw new TtrpcError("neighbors: missing", Code.INVALID_ARGUMENT);
      const { specs, skipped } = validateNeighbors(request.neighbors.ARPNeighbors);
      if (skipped.length) log.info("multicast neighbours skipped", { skipped });
      return queue.run(async () => {
        const state = await ip.readLinksAndNeighbors({ signal: ctx.signal });
        requireDevices(state, "neighbors", specs);
        gate?.admit(askNeighbours(specs, state.neighbors), state);
        const lines = specs.map(renderNeighborReplace);
        queue.record(() => neighboursChange(state.neighbors, specs));
        try {
          await ip.batch(lines, { signal: ctx.signal });
        } catch (err) {
          const problem = await restoreNeighbours(ip, log, state.neighbors, specs);
          if (problem === undefined) {
            log.info("restored state after a failed change", {
              what: "neighbours",
              entries: specs.length,
            });
          } else log.error("restore incomplete", { what: "neighbours", error: problem });
          throw err;
        }
        return {};
      }, ctx.signal);
    },
  };
}
