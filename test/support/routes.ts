/**
 * A model Route for the planners' and renderers' tests: an IPv4 unicast
 * route through eth0 with the kernel's defaults (main table, as no `table`
 * means; scope universe, metric 0, protocol boot), `over` changing any field.
 */
import type { Route } from "../../src/net/model/model";

export const route = (over: Partial<Route> = {}): Route => ({
  family: 4,
  dst: "0.0.0.0/0",
  dev: "eth0",
  scope: 0,
  metric: 0,
  onlink: false,
  mtu: 0,
  protocol: "boot",
  type: "unicast",
  ...over,
});
