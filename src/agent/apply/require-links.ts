/**
 * The links an Apply's request names must exist, before anything changes:
 * each desired interface by its MAC address (tun and tap devices aside:
 * the Apply makes them), and every device a route, a hop, a nexthop
 * object, a neighbour or a link's sysctl names under the name it will have
 * (but what best_effort leaves out). A missing one is NOT_FOUND, naming
 * the request's field.
 */
import type { DesiredState, FullState } from "../../net/model/full-state";
import type { LeftOutFields } from "../../net/plan/plan-culprit";
import { parseSysctlKey } from "../../net/sysctl/sysctl-keys";
import { isManagedLink } from "../../net/vocabulary/links";
import { Code, TtrpcError } from "../../ttrpc/codes";

/** Checks that every link the request names (but what `skip` leaves out) will exist under that name. */
export function requireLinks(
  before: Omit<FullState, "sysctls">,
  desired: DesiredState,
  skip: LeftOutFields,
  finalNames: Set<string>,
): void {
  for (const [i, l] of desired.links.entries()) {
    if (l.tuntap) continue;
    if (!before.links.some((x) => x.mac === l.mac)) {
      throw new TtrpcError(
        `Link not found (desired.interfaces[${i}].mac ${l.mac})`,
        Code.NOT_FOUND,
      );
    }
  }
  // The field's name is built only for a device that is missing (10,000 routes, every call).
  const need = (dev: string, field: () => string) => {
    if (dev === "" || finalNames.has(dev)) return;
    const f = field();
    if (!skip.has(f.slice(0, f.lastIndexOf("."))))
      throw new TtrpcError(`Link not found (${f} ${dev})`, Code.NOT_FOUND);
  };
  desired.routes.forEach((r, i) => {
    need(r.dev, () => `desired.routes[${i}].device`);
    r.hops?.forEach((h, k) => {
      if (!skip.has(`desired.routes[${i}]`))
        need(h.dev, () => `desired.routes[${i}].hops[${k}].device`);
    });
  });
  desired.nexthops.forEach((n, i) => {
    need(n.dev, () => `desired.nexthops[${i}].device`);
  });
  desired.neighbors.forEach((n, i) => {
    need(n.dev, () => `desired.neighbors[${i}].device`);
  });
  desired.sysctls.forEach((s, i) => {
    const k = parseSysctlKey(s.key);
    if (typeof k === "string" || k.iface === undefined) return;
    if (k.iface === "all" || k.iface === "default" || !isManagedLink(k.iface)) return;
    need(k.iface, () => `desired.sysctls[${i}].key`);
  });
}
