/**
 * Route tables read independently of the agent (`ip -n NS -json`), reduced
 * to what must match between a pod and its guest.
 */
import type { Netns } from "../helpers/netns";

interface IpRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  prefsrc?: string;
  scope?: string;
  metric?: number;
  protocol?: string;
  flags?: string[];
  metrics?: { mtu?: number }[];
}

/** One line per main-table route (both families, lo left out), sorted. */
export async function routeTable(
  ns: Netns,
  opts: { withProtocol?: boolean } = {},
): Promise<string[]> {
  const v4 = await ns.json<IpRoute[]>("route", "show", "table", "main");
  const v6 = await ns.json<IpRoute[]>("-6", "route", "show", "table", "main");
  return [...v4.map((r) => ["4", r] as const), ...v6.map((r) => ["6", r] as const)]
    .filter(([, r]) => r.dev !== "lo")
    .map(([fam, r]) =>
      [
        `v${fam}`,
        r.dst,
        r.gateway ? `via ${r.gateway}` : "",
        r.dev ? `dev ${r.dev}` : "",
        r.prefsrc ? `src ${r.prefsrc}` : "",
        `scope ${r.scope ?? "global"}`,
        `metric ${r.metric ?? 0}`,
        r.flags?.includes("onlink") ? "onlink" : "",
        r.metrics?.[0]?.mtu ? `mtu ${r.metrics[0].mtu}` : "",
        opts.withProtocol ? `proto ${r.protocol ?? "boot"}` : "",
      ]
        .filter(Boolean)
        .join(" "),
    )
    .sort();
}
