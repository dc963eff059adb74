/**
 * Drives an agent with a pod's requests in the Kata runtime's order
 * (docs/kata-runtime.md): Health.Check; one UpdateInterface per
 * interface, sequentially, each retried only on "Link not found"; one
 * UpdateRoutes with every route; AddARPNeighbors when there are any
 * (UNIMPLEMENTED from an older agent is tolerated).
 */

import type { AgentClient } from "../../client/client";
import { AgentService } from "../../gen/agent_pb";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/health_pb";
import type { Interface, Route } from "../../gen/types_pb";
import { Code, TtrpcError } from "../../ttrpc/codes";
import type { SyncRequests } from "../pod/pod-requests";
import { type Progress, quietProgress } from "../print/progress";
import { isLinkNotFound, KATA_RETRY, type RetryHooks, type RetryPolicy, retry } from "./retry";

export interface SyncOptions {
  /** Per-call deadline, sent as timeout_nano. */
  timeoutMs: number;
  retry?: RetryPolicy;
  progress?: Progress;
  /** For tests: the retry's clock and dice. */
  hooks?: Pick<RetryHooks, "sleep" | "random">;
}

export interface SyncReport {
  interfaces: { hwAddr: string; name: string; attempts: number; guest: Interface }[];
  /** The guest's main table as UpdateRoutes returned it. */
  routes: Route[];
  neighbors: { sent: number; unimplemented: boolean };
}

/**
 * Sends `requests` through `client`. Throws the first failure (a TtrpcError
 * with the agent's code); what was applied before it stays applied, as with
 * the runtime.
 */
export async function syncAgent(
  client: AgentClient,
  requests: SyncRequests,
  options: SyncOptions,
): Promise<SyncReport> {
  const progress = options.progress ?? quietProgress;
  const call = { timeoutMs: options.timeoutMs };

  progress.update("Health.Check");
  const health = await client.unary(Health.method.check, {}, call);
  if (health.status !== HealthCheckResponse_ServingStatus.SERVING) {
    const status = HealthCheckResponse_ServingStatus[health.status] ?? String(health.status);
    throw new TtrpcError(`agent health is ${status}, not SERVING`, Code.UNAVAILABLE);
  }

  const interfaces: SyncReport["interfaces"] = [];
  for (const iface of requests.interfaces) {
    const what = `${iface.name} (${iface.hwAddr})`;
    progress.update(`UpdateInterface ${what}`);
    const { value, attempts } = await retry(
      () => client.unary(AgentService.method.updateInterface, { interface: iface }, call),
      isLinkNotFound,
      options.retry ?? KATA_RETRY,
      {
        ...options.hooks,
        onRetry: (attempt, _err, ms) =>
          progress.update(
            `waiting for link ${what}: attempt ${attempt} said Link not found, retry in ${ms} ms`,
          ),
      },
    );
    interfaces.push({ hwAddr: iface.hwAddr, name: value.name, attempts, guest: value });
  }

  progress.update(`UpdateRoutes (${requests.routes.length} routes)`);
  const routes = await client.unary(
    AgentService.method.updateRoutes,
    { routes: { Routes: requests.routes } },
    call,
  );

  let unimplemented = false;
  if (requests.neighbors.length > 0) {
    progress.update(`AddARPNeighbors (${requests.neighbors.length})`);
    try {
      await client.unary(
        AgentService.method.addARPNeighbors,
        { neighbors: { ARPNeighbors: requests.neighbors } },
        call,
      );
    } catch (err) {
      if (!(err instanceof TtrpcError && err.code === Code.UNIMPLEMENTED)) throw err;
      unimplemented = true;
    }
  }
  progress.clear();
  return {
    interfaces,
    routes: routes.Routes,
    neighbors: { sent: requests.neighbors.length, unimplemented },
  };
}
