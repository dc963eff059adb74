/**
 * Pod vs guest: what a sync should have made the guest (the pod's requests)
 * against what the agent reports (ListInterfaces, ListRoutes), and a
 * side-by-side table of it. The comparison covers what the Kata protocol
 * can carry:
 * - interfaces by MAC: name, MTU (when the pod gives one), NOARP, addresses;
 *   IPv6 link-local addresses the guest made itself are not a difference;
 * - routes without metric or protocol (the protocol has neither); the
 *   guest's kernel prefix routes (which ListRoutes cannot mark) are left out
 *   unless the pod asked for the same route;
 * - neighbours are not compared: the agent API cannot list them.
 */
import type { Interface, Route as ProtoRoute } from "../../gen/types_pb";
import { IPFamily } from "../../gen/types_pb";
import { type Family, isLinkLocal6, parseIp } from "../../net/model/address";
import type { Link, Route } from "../../net/model/model";
import { impliedKernelRoutes } from "../../net/plan/kernel-routes";
import { flagNames, IFF, isManagedLink } from "../../net/vocabulary/links";
import { canonicalDst } from "../../net/vocabulary/routes";
import { escapeControls } from "../print/safe-text";
import { addressWords, kataRouteView, linkWords, routeWords } from "../print/words";

/** "=" same, "~" both sides differ, "<" pod only, ">" guest only. */
export type Mark = "=" | "~" | "<" | ">";

export interface Row {
  mark: Mark;
  pod: string;
  guest: string;
}

export interface Comparison {
  equal: boolean;
  differences: number;
  interfaces: Row[];
  routes: Row[];
}

interface NormRoute {
  /** Pairs a pod route with a guest route for "~" rows. */
  slot: string;
  identity: string;
  text: string;
}

function canonIp(text: string): string {
  const p = parseIp(text);
  return typeof p === "string" ? text : p.text;
}

function canonDst(dest: string, family: Family): string {
  return canonicalDst(dest, family) ?? dest;
}

function normRoute(r: ProtoRoute): NormRoute {
  const view = kataRouteView(r);
  const { family, onlink } = view;
  const dst = canonDst(r.dest, family);
  const gateway = r.gateway ? canonIp(r.gateway) : "";
  const source = r.source ? canonIp(r.source.split("/")[0] as string) : "";
  return {
    slot: `${family} ${dst} ${r.device}`,
    identity: [family, dst, gateway, r.device, source, r.scope, onlink, r.mtu].join(" "),
    text: routeWords({ ...view, dst, gateway, prefsrc: source }),
  };
}

/** A guest Interface as a model Link, for working out its kernel routes. */
function linkOf(i: Interface): Link {
  const flags = flagNames(i.rawFlags);
  return {
    index: 0,
    name: i.name,
    mac: i.hwAddr.toLowerCase(),
    mtu: Number(i.mtu),
    flags,
    kind: i.type,
    addresses: i.IPAddresses.map((a) => ({
      family: a.family === IPFamily.v6 || a.address.includes(":") ? 6 : 4,
      address: a.address,
      prefix: Number(a.mask),
      scope: a.address.toLowerCase().startsWith("fe80:") ? "link" : "global",
    })),
  };
}

function kernelRouteIdentity(r: Route): string {
  return [r.family, r.dst, "", r.dev, r.prefsrc ?? "", r.scope, false, 0].join(" ");
}

function addrSet(i: Interface): string[] {
  return i.IPAddresses.map((a) => addressWords(canonIp(a.address), a.mask)).sort();
}

function describeLink(i: Interface): string {
  const noarp = (i.rawFlags & IFF.NOARP) !== 0;
  return linkWords({ name: i.name, mac: i.hwAddr.toLowerCase(), mtu: i.mtu, noarp });
}

function compareInterfaces(pod: readonly Interface[], guest: readonly Interface[]): Row[] {
  const rows: Row[] = [];
  for (const p of pod) {
    const mac = p.hwAddr.toLowerCase();
    const g = guest.find((x) => x.hwAddr.toLowerCase() === mac);
    if (!g) {
      rows.push({ mark: "<", pod: describeLink(p), guest: "-" });
      for (const a of addrSet(p)) rows.push({ mark: "<", pod: `  ${a}`, guest: "" });
      continue;
    }
    const same =
      p.name === g.name &&
      (p.mtu === 0n || p.mtu === g.mtu) &&
      (p.rawFlags & IFF.NOARP) === (g.rawFlags & IFF.NOARP);
    const shown = p.mtu === 0n ? { ...g, mtu: 0n } : g;
    rows.push({ mark: same ? "=" : "~", pod: describeLink(p), guest: describeLink(shown) });
    const pa = addrSet(p);
    const ga = addrSet(g).filter((a) => pa.includes(a) || !isLinkLocal6(a));
    for (const a of [...new Set([...pa, ...ga])].sort()) {
      const inPod = pa.includes(a);
      const inGuest = ga.includes(a);
      rows.push({
        mark: inPod && inGuest ? "=" : inPod ? "<" : ">",
        pod: inPod ? `  ${a}` : "",
        guest: inGuest ? `  ${a}` : "",
      });
    }
  }
  return rows;
}

function compareRoutes(
  pod: readonly ProtoRoute[],
  guestRoutes: readonly ProtoRoute[],
  guestIfaces: readonly Interface[],
): Row[] {
  const want = pod.map(normRoute);
  const wanted = new Set(want.map((r) => r.identity));
  const kernel = new Set(impliedKernelRoutes(guestIfaces.map(linkOf)).map(kernelRouteIdentity));
  const have = guestRoutes
    .filter((r) => isManagedLink(r.device) && r.device !== "")
    .map(normRoute)
    .filter((r) => wanted.has(r.identity) || !kernel.has(r.identity));
  const rows: Row[] = [];
  const left = [...have];
  const take = (pred: (g: NormRoute) => boolean) => {
    const i = left.findIndex(pred);
    return i < 0 ? undefined : left.splice(i, 1)[0];
  };
  const pending: NormRoute[] = [];
  for (const w of want) {
    const g = take((x) => x.identity === w.identity);
    if (g) rows.push({ mark: "=", pod: w.text, guest: g.text });
    else pending.push(w);
  }
  for (const w of pending) {
    const g = take((x) => x.slot === w.slot);
    rows.push(
      g ? { mark: "~", pod: w.text, guest: g.text } : { mark: "<", pod: w.text, guest: "-" },
    );
  }
  for (const g of left) rows.push({ mark: ">", pod: "-", guest: g.text });
  return rows;
}

/** Compares the pod's requests with the guest's answers to ListInterfaces and ListRoutes. */
export function compareNetworks(
  pod: { interfaces: readonly Interface[]; routes: readonly ProtoRoute[] },
  guest: { interfaces: readonly Interface[]; routes: readonly ProtoRoute[] },
): Comparison {
  const interfaces = compareInterfaces(pod.interfaces, guest.interfaces);
  const routes = compareRoutes(pod.routes, guest.routes, guest.interfaces);
  const differences = [...interfaces, ...routes].filter((r) => r.mark !== "=").length;
  return { equal: differences === 0, differences, interfaces, routes };
}

/** The comparison as a two-column table with a verdict line. */
export function renderComparison(c: Comparison, titles = { pod: "POD", guest: "GUEST" }): string {
  // Every cell may hold the guest's words: escaped, one line each.
  const esc = (r: Row): Row => ({
    ...r,
    pod: escapeControls(r.pod),
    guest: escapeControls(r.guest),
  });
  c = { ...c, interfaces: c.interfaces.map(esc), routes: c.routes.map(esc) };
  titles = { pod: escapeControls(titles.pod), guest: escapeControls(titles.guest) };
  const all = [...c.interfaces, ...c.routes];
  const width = Math.min(64, Math.max(titles.pod.length, 10, ...all.map((r) => r.pod.length)));
  const line = (mark: string, l: string, r: string) =>
    `${mark}  ${l.padEnd(width)}  ${r}`.trimEnd();
  const out = [line(" ", titles.pod, titles.guest)];
  out.push("interfaces");
  for (const r of c.interfaces) out.push(line(r.mark, r.pod, r.guest));
  out.push("routes");
  for (const r of c.routes) out.push(line(r.mark, r.pod, r.guest));
  const routes = c.routes.filter((r) => r.mark !== ">").length;
  const ifaces = c.interfaces.filter((r) => !r.pod.startsWith(" ") && r.pod !== "").length;
  out.push(
    c.equal
      ? `verdict: EQUAL (${ifaces} interface${ifaces === 1 ? "" : "s"}, ${routes} route${routes === 1 ? "" : "s"})`
      : `verdict: DIFFERENT (${c.differences} difference${c.differences === 1 ? "" : "s"}; < pod only, > guest only, ~ changed)`,
  );
  return `${out.join("\n")}\n`;
}
