/**
 * A model Route for the planners' tests: an IPv4 main-table unicast route
 * through eth0 with the kernel's defaults (scope universe, metric 0,
 * protocol boot), `over` changing any field.
 */
import type { Route } from "../../src/net/model";

export const route = (over: Partial<Route> = {}): Route => ({
  family: 4,
  table: 254,
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
