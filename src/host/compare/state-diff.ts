/**
 * Pod vs guest over the whole netagent.v1 state: interfaces by MAC (name,
 * MTU, NOARP, up, addresses; link-local addresses the guest made itself are
 * not a difference), routes of every table with every attribute (protocol
 * included: a kernel route and a requested twin are different routes),
 * rules, permanent neighbours, and sysctls: the pod's non-default ones
 * against the guest's values, and the guest's that differ from this host's
 * fresh-namespace defaults where the pod has the default. Anything that
 * differs makes the verdict DIFFERENT.
 */
import type { Interface, State } from "../../gen/network_pb";
import { isLinkLocal6 } from "../../net/model/address";
import { normaliseSysctlValue } from "../../net/sysctl/sysctl-keys";
import { formatTable, TABLE_MAIN } from "../../net/vocabulary/routes";
import { escapeControls } from "../print/safe-text";
import {
  addressWords,
  linkWords,
  neighborWords,
  nexthopWords,
  routeWords,
  ruleWords,
  stateRouteView,
  stateRuleView,
} from "../print/words";
import type { Mark, Row } from "./kata-diff";

export interface StateComparison {
  equal: boolean;
  differences: number;
  sections: { title: string; rows: Row[] }[];
}

function describeLink(i: Interface): string {
  return linkWords({ name: i.name, mac: i.mac, mtu: i.mtu, noarp: i.noarp, up: i.up });
}

/** Rows of two multisets of lines: matched ones "=", the rest "<" or ">". */
function setRows(pod: readonly string[], guest: readonly string[]): Row[] {
  const left = [...guest];
  const rows: Row[] = [];
  for (const p of pod) {
    const i = left.indexOf(p);
    if (i >= 0) {
      left.splice(i, 1);
      rows.push({ mark: "=", pod: p, guest: p });
    } else rows.push({ mark: "<", pod: p, guest: "-" });
  }
  for (const g of left) rows.push({ mark: ">", pod: "-", guest: g });
  return rows;
}

function interfaceRows(pod: readonly Interface[], guest: readonly Interface[]): Row[] {
  const rows: Row[] = [];
  for (const p of pod) {
    // A tun or tap device is its name (a tun has no MAC); a NIC its MAC.
    const g = guest.find((x) =>
      p.tuntap ? x.tuntap !== undefined && x.name === p.name : x.mac === p.mac,
    );
    if (!g) {
      rows.push({ mark: "<", pod: describeLink(p), guest: "-" });
      continue;
    }
    const same = describeLink(p) === describeLink(g);
    rows.push({ mark: same ? "=" : "~", pod: describeLink(p), guest: describeLink(g) });
    const pa = p.addresses.map((a) => `  ${addressWords(a.address, a.prefix)}`).sort();
    const ga = g.addresses
      .map((a) => `  ${addressWords(a.address, a.prefix)}`)
      .filter((a) => pa.includes(a) || !isLinkLocal6(a.trim()))
      .sort();
    rows.push(...setRows(pa, ga));
  }
  return rows;
}

/**
 * Compares the pod's state (its non-default sysctls in `pod.sysctls`) with
 * the guest's Get answer. `defaults(key)` is this host's fresh-namespace
 * value, `comparable(key)` says whether a guest-only value counts.
 */
export function compareStates(
  pod: State,
  guest: State,
  defaults: (key: string) => string | undefined,
  comparable: (key: string) => boolean,
): StateComparison {
  const tables = [...new Set([...pod.routes, ...guest.routes].map((r) => r.table))].sort((a, b) =>
    a === TABLE_MAIN ? -1 : b === TABLE_MAIN ? 1 : a - b,
  );
  const sections: StateComparison["sections"] = [
    { title: "interfaces", rows: interfaceRows(pod.interfaces, guest.interfaces) },
  ];
  for (const t of tables) {
    const lines = (s: State) =>
      s.routes
        .filter((r) => r.table === t)
        .map((r) => routeWords(stateRouteView(r)))
        .sort();
    sections.push({
      title: `routes, table ${formatTable(t)}`,
      rows: setRows(lines(pod), lines(guest)),
    });
  }
  const rules = (s: State) =>
    [...s.rules]
      .sort((a, b) => a.family - b.family || a.priority - b.priority)
      .map((r) => ruleWords(stateRuleView(r)));
  sections.push({ title: "rules", rows: setRows(rules(pod), rules(guest)) });
  const neigh = (s: State) =>
    s.neighbors
      .map((n) =>
        neighborWords({
          ip: n.address,
          dev: n.device,
          lladdr: n.lladdr,
          router: n.router,
          attrs: n.attrs.map((a) => [a.name, a.value] as const),
        }),
      )
      .sort();
  sections.push({
    title: "neighbours (permanent)",
    rows: setRows(neigh(pod), neigh(guest)),
  });
  const nexthops = (s: State) => s.nexthops.map(nexthopWords).sort();
  sections.push({ title: "nexthop objects", rows: setRows(nexthops(pod), nexthops(guest)) });

  const guestSysctls = new Map(guest.sysctls.map((s) => [s.key, s.value]));
  const podKeys = new Set(pod.sysctls.map((s) => s.key));
  const podNames = new Set(pod.interfaces.map((i) => i.name));
  const sysRows: Row[] = [];
  for (const s of pod.sysctls) {
    const g = guestSysctls.get(s.key);
    const same = g !== undefined && normaliseSysctlValue(g) === normaliseSysctlValue(s.value);
    sysRows.push({
      mark: same ? "=" : g === undefined ? "<" : "~",
      pod: `${s.key} = ${s.value}`,
      guest: g === undefined ? "-" : `${s.key} = ${normaliseSysctlValue(g)}`,
    });
  }
  for (const [key, value] of guestSysctls) {
    if (podKeys.has(key) || !comparable(key)) continue;
    const iface = /^net\.ipv[46]\.(conf|neigh)\.(.+)\.[a-z0-9_]+$/.exec(key)?.[2];
    if (iface !== undefined && iface !== "all" && iface !== "default" && !podNames.has(iface))
      continue;
    const def = defaults(key);
    if (def === undefined || normaliseSysctlValue(def) === normaliseSysctlValue(value)) continue;
    sysRows.push({
      mark: "~",
      pod: `${key} = ${normaliseSysctlValue(def)}`,
      guest: `${key} = ${normaliseSysctlValue(value)}`,
    });
  }
  sections.push({ title: "sysctls (pod: those not at this host's defaults)", rows: sysRows });
  const differences = sections.flatMap((s) => s.rows).filter((r) => r.mark !== "=").length;
  return { equal: differences === 0, differences, sections };
}

/** The comparison as a two-column table with a verdict line. */
export function renderStateComparison(
  c: StateComparison,
  titles = { pod: "POD", guest: "GUEST" },
): string {
  // Every cell may hold the guest's words: escaped, one line each.
  const esc = (r: Row): Row => ({
    ...r,
    pod: escapeControls(r.pod),
    guest: escapeControls(r.guest),
  });
  c = { ...c, sections: c.sections.map((x) => ({ ...x, rows: x.rows.map(esc) })) };
  titles = { pod: escapeControls(titles.pod), guest: escapeControls(titles.guest) };
  const all = c.sections.flatMap((s) => s.rows);
  const width = Math.min(64, Math.max(titles.pod.length, 10, ...all.map((r) => r.pod.length)));
  const line = (mark: Mark | " ", l: string, r: string) =>
    `${mark}  ${l.padEnd(width)}  ${r}`.trimEnd();
  const out = [line(" ", titles.pod, titles.guest)];
  for (const s of c.sections) {
    if (s.rows.length === 0) continue;
    out.push(s.title);
    for (const r of s.rows) out.push(line(r.mark, r.pod, r.guest));
  }
  const count = (pred: (t: string) => boolean) =>
    c.sections
      .filter((s) => pred(s.title))
      .reduce(
        (n, s) => n + s.rows.filter((r) => r.mark !== ">" && !r.pod.startsWith(" ")).length,
        0,
      );
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const routeTables = c.sections.filter((s) => s.title.startsWith("routes")).length;
  out.push(
    c.equal
      ? `verdict: EQUAL (${plural(
          count((t) => t === "interfaces"),
          "interface",
        )}, ${plural(
          count((t) => t.startsWith("routes")),
          "route",
        )} in ${plural(routeTables, "table")}, ${plural(
          count((t) => t === "rules"),
          "ip rule",
        )}, ${plural(
          count((t) => t.startsWith("sysctls")),
          "sysctl",
        )})`
      : `verdict: DIFFERENT (${plural(c.differences, "difference")}; < pod only, > guest only, ~ changed)`,
  );
  return `${out.join("\n")}\n`;
}
