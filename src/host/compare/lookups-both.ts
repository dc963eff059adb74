/**
 * The same routing lookups in the pod (this host's `ip` in its namespace)
 * and in the guest (netagent.v1.Network RouteGet). The guest's answers are
 * untrusted: one decision per lookup, each a JSON object within bounds or
 * a refusal of bounded length, else an error naming the lookup.
 */

import type { AgentClient } from "../../client/client";
import { Network } from "../../gen/network_pb";
import type { Decision } from "../../net/iproute/ip-lookups";
import { runLookups } from "../../net/iproute/ip-lookups";
import { IpRunner } from "../../net/iproute/ip-runner";
import { type LookupSpec, MAX_LOOKUPS } from "../../net/iproute/route-lookup";
import { parseObject, ReadError } from "./complete-read";
import { lookupText } from "./lookup-compare";

/** Characters of a refusal the guest may send ("Network is unreachable" is 22). */
const MAX_REFUSAL = 512;

export function podDecisions(netns: string, lookups: readonly LookupSpec[]): Promise<Decision[]> {
  return runLookups(new IpRunner({ netns }), lookups);
}

export async function guestDecisions(
  client: AgentClient,
  lookups: readonly LookupSpec[],
  timeoutMs: number,
): Promise<Decision[]> {
  const out: Decision[] = [];
  for (let i = 0; i < lookups.length; i += MAX_LOOKUPS) {
    const part = lookups.slice(i, i + MAX_LOOKUPS);
    const r = await client.unary(Network.method.routeGet, { lookups: part }, { timeoutMs });
    if (r.decisions.length !== part.length) {
      throw new ReadError(
        `the guest answered ${r.decisions.length} decisions for ${part.length} lookups`,
      );
    }
    r.decisions.forEach((d, j) => {
      const what = `the guest's answer to ${lookupText(part[j] as LookupSpec)}`;
      if (d.route === "") {
        if (d.error === "" || d.error.length > MAX_REFUSAL)
          throw new ReadError(`${what} is neither a route nor a refusal`);
        out.push({ error: d.error });
      } else out.push({ route: parseObject(what, d.route) });
    });
  }
  return out;
}
