/**
 * The common route of an Apply request, validated without the general
 * path's temporary strings and arrays: a large state is thousands of
 * unicast IPv4 routes through a few links and gateways (a table read by
 * Get). plainRoute answers the model route only when every check of
 * routeFromWire (validate-state-routes.ts) passes on its plain reading;
 * anything else (another type, paths, a nexthop object, attributes, tos,
 * a value that is not canonical or not valid) is left to routeFromWire,
 * which builds the same route or the error naming field and value.
 * test/unit/validate-state-routes-oracle.test.ts holds both to an oracle
 * (test/unit/oracle/validate-state-routes-v1.ts), route for route and
 * error for error.
 */
import type { Route as WireRoute } from "../../gen/network_pb";
import { ipv4NetworkPrefix, parseIp } from "../../net/model/address";
import type { Route } from "../../net/model/model";
import { isManagedLink } from "../../net/vocabulary/links";
import { DEFAULT_PROTOCOL, isRouteProtocol, TABLE_MAIN } from "../../net/vocabulary/routes";
import { ROUTE_TYPES } from "../../wire/state-map";
import { validateName } from "./validate-fields";

const UNICAST = ROUTE_TYPES.unicast;

/**
 * What one request's routes showed valid, by value: a table names a
 * handful of links, gateways and protocols thousands of times. One per
 * request (nothing is kept between calls).
 */
export class PlainChecks {
  private readonly names = new Set<string>();
  private readonly protocols = new Set<string>();
  private lastGateway = "";
  /** The route's gateway for lastGateway: its canonical text, or undefined (all zeros). */
  private lastGatewayText: string | undefined;
  private lastGatewayOk = false;

  name(dev: string): boolean {
    if (this.names.has(dev)) return true;
    try {
      // The same check as routeFromWire's; its error (field left empty) is not used.
      validateName("", dev);
    } catch {
      return false;
    }
    this.names.add(dev);
    return true;
  }

  protocol(p: string): boolean {
    if (this.protocols.has(p)) return true;
    if (!isRouteProtocol(p)) return false;
    this.protocols.add(p);
    return true;
  }

  /**
   * Whether `value` is a gateway an IPv4 route takes (any family, not
   * loopback, multicast or broadcast); then `gatewayText` is what the
   * route keeps.
   */
  gateway(value: string): boolean {
    if (value === this.lastGateway && this.lastGatewayOk) return true;
    const gw = parseIp(value);
    if (typeof gw === "string") return false;
    const b0 = gw.bytes[0] as number;
    if (gw.family === 4 ? b0 === 127 || b0 >= 224 : gw.text === "::1" || b0 === 0xff) return false;
    this.lastGateway = value;
    this.lastGatewayText = gw.bytes.some((b) => b !== 0) ? gw.text : undefined;
    this.lastGatewayOk = true;
    return true;
  }

  get gatewayText(): string | undefined {
    return this.lastGatewayText;
  }
}

/**
 * The model route of a plain unicast IPv4 route (canonical destination,
 * through a link, no paths, object, attributes, tos or source prefix),
 * exactly as routeFromWire builds it (the same keys in the same order);
 * undefined for any other route, valid or not.
 */
export function plainRoute(r: WireRoute, checks: PlainChecks): Route | undefined {
  if (r.type !== UNICAST || r.hops.length !== 0 || r.nhid !== 0 || r.attrs.length !== 0)
    return undefined;
  if (r.tos !== 0 || r.from !== "" || r.device === "") return undefined;
  if (r.family !== 0 && r.family !== 4) return undefined;
  if (r.scope > 255 || (r.mtu !== 0 && (r.mtu < 68 || r.mtu > 65535))) return undefined;
  // A canonical IPv4 network, its length without leading zeros: its own answer.
  const dest = r.dest;
  const p = ipv4NetworkPrefix(dest);
  if (p < 0 || dest.charCodeAt(dest.length - String(p).length - 1) !== 0x2f) return undefined;
  if (!isManagedLink(r.device) || !checks.name(r.device)) return undefined;
  let gateway: string | undefined;
  if (r.gateway !== "") {
    if (!checks.gateway(r.gateway)) return undefined;
    gateway = checks.gatewayText;
  }
  let prefsrc: string | undefined;
  if (r.source !== "") {
    const s = parseIp(r.source);
    if (typeof s === "string" || s.family !== 4) return undefined;
    prefsrc = s.text;
  }
  const protocol = r.protocol === "" ? DEFAULT_PROTOCOL : r.protocol;
  if (!checks.protocol(protocol)) return undefined;
  const table = r.table === 0 ? TABLE_MAIN : r.table;
  const { device: dev, scope, metric, onlink, mtu } = r;
  // Object literals of four fixed shapes, the keys in routeFromWire's order.
  const type = "unicast";
  if (gateway !== undefined) {
    return prefsrc !== undefined
      ? {
          family: 4,
          table,
          dst: dest,
          gateway,
          dev,
          prefsrc,
          scope,
          metric,
          onlink,
          mtu,
          protocol,
          type,
        }
      : { family: 4, table, dst: dest, gateway, dev, scope, metric, onlink, mtu, protocol, type };
  }
  return prefsrc !== undefined
    ? { family: 4, table, dst: dest, dev, prefsrc, scope, metric, onlink, mtu, protocol, type }
    : { family: 4, table, dst: dest, dev, scope, metric, onlink, mtu, protocol, type };
}
