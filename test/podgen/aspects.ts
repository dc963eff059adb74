/**
 * The vocabulary items a read object has ("route tos", "address broadcast",
 * "rule ipproto", ...), named as the generator tags its commands, so the
 * runner can say per item how many pods had it and how many lost it. Only
 * what is not the kernel's default for the kind counts as an item.
 */
import type { Normalised, Obj } from "./normalise";

/** Field names as the vocabulary says them. */
const FIELD_NAMES: Record<string, string> = {
  txqlen: "txqlen",
  ifalias: "alias",
  flow_from: "realms",
  flow_to: "realms",
  "flow.to": "realm",
  "flow.from": "realm",
  nexthops: "multipath",
  prefsrc: "src",
  uid_start: "uidrange",
  uid_end: "uidrange",
  sport_start: "sport",
  sport_end: "sport",
  dport_start: "dport",
  dport_end: "dport",
  src: "from",
  fwmask: "fwmark",
  srclen: "from",
  dst: "to",
  dstlen: "to",
  iif_detached: "iif absent device",
  oif_detached: "oif absent device",
  suppress_prefixlen: "suppress_prefixlength",
  valid_lft: "lifetimes",
  dynamic: "lifetimes",
  promiscuity: "flag PROMISC",
  allmulti: "flag ALLMULTI",
  preferred_lft: "lifetimes",
  gateway: "gateway",
};

/** ip's JSON names of route metrics that its command line spells otherwise. */
const METRIC_NAMES: Record<string, string> = { congestion: "congctl", ecn: "features" };

function name(kind: string, field: string): string {
  if (field.startsWith("metrics."))
    return `route ${METRIC_NAMES[field.slice(8)] ?? field.slice(8)}`;
  if (field.startsWith("nh_info.")) return "route nhid";
  if (field.startsWith("via.")) return "route via inet6";
  return `${kind} ${FIELD_NAMES[field] ?? field}`;
}

/** The items a whole object stands for (when it is on one side only). */
export function aspectsOf(o: Obj): string[] {
  const f = (k: string) => o.fields.get(k);
  const out = new Set<string>();
  if (o.kind === "route") {
    const proto = f("protocol");
    // The kernel's own routes (prefix, local, broadcast, multicast, link-local) are one item.
    if (proto === "kernel") return ["route (the kernel's)"];
    if (f("type") && f("type") !== "unicast") out.add(`route type ${f("type")}`);
    if (!["main", "local"].includes(f("table") ?? "")) out.add(`route table ${f("table")}`);
    for (const k of ["tos", "from", "nhid", "pref", "expires", "gateway"])
      if (f(k) && !(k === "pref" && f(k) === "medium")) out.add(`route ${k}`);
    if (f("nexthops") && !f("nhid")) out.add("route multipath");
    if (f("flow.to")) out.add("route realm");
    if (f("via.family")) out.add("route via inet6");
    if ((f("flags") ?? "").includes("onlink") || (f("nexthops") ?? "").includes("onlink"))
      out.add("route onlink");
    if (f("prefsrc") && proto !== "kernel") out.add("route src");
    for (const l of (f("locks") ?? "").split(",").filter(Boolean)) out.add(`route ${l} lock`);
    for (const k of o.fields.keys()) if (k.startsWith("metrics.")) out.add(name("route", k));
  } else if (o.kind === "address") {
    if (o.key.startsWith("lo|")) return ["address (lo)"];
    out.add(o.key.includes("|inet6|") ? "address inet6" : "address");
    for (const k of [
      "broadcast",
      "noprefixroute",
      "metric",
      "home",
      "mngtmpaddr",
      "nodad",
      "deprecated",
      "secondary",
    ])
      if (f(k)) out.add(`address ${k}`);
    if (o.what.includes(" peer ")) out.add("address peer");
    // A label is the link's name unless one was given ("eth0:1").
    if ((f("label") ?? "").includes(":")) out.add("address label");
    if (f("valid_lft") !== "forever") out.add("address lifetimes");
    if (f("preferred_lft") === "0") out.add("address preferred_lft 0");
    if (f("scope") && !["global", "link"].includes(f("scope") as string)) out.add("address scope");
    if (o.what.startsWith("address fe80:")) out.add("address user link-local");
  } else if (o.kind === "rule") {
    // The kernel's default rules are one item, whatever they hold.
    if (f("protocol") === "kernel") return ["rule (the kernel's)"];
    if (o.key.includes("family=inet6")) out.add("rule inet6");
    for (const k of o.fields.keys()) {
      if (
        ["priority", "family", "protocol", "table", "action", "target"].includes(k) ||
        (k === "src" && f(k) === "all")
      )
        continue;
      out.add(name("rule", k));
    }
    const action = f("action");
    if (action) out.add(`rule ${action}`);
    if (f("protocol") && !["kernel", "unspec"].includes(f("protocol") as string))
      out.add("rule protocol");
  } else if (o.kind === "neighbour") {
    out.add(o.key.startsWith("inet6") ? "neighbour inet6" : "neighbour");
    for (const k of ["proxy", "router", "extern_learn"]) if (f(k)) out.add(`neighbour ${k}`);
  } else if (o.kind === "nexthop") {
    out.add("nexthop object");
    if (f("group")) out.add("nexthop group");
    if (f("blackhole")) out.add("nexthop blackhole");
  } else if (o.kind === "link") {
    out.add(o.key.startsWith("name ") && o.key !== "lo" ? "link without MAC" : "link");
    if (!["1500", "65536"].includes(f("mtu") ?? "")) out.add("link mtu");
    if (f("txqlen") && f("txqlen") !== "1000") out.add("link txqlen");
    for (const flag of ["PROMISC", "ALLMULTI", "NOARP"])
      if ((f("flags") ?? "").split(",").includes(flag)) out.add(`link flag ${flag}`);
    if (f("group") && f("group") !== "default") out.add("link group");
    if (f("ifalias")) out.add("link alias");
    if ((f("ifname") ?? "").includes(".")) out.add("link dotted name");
  } else if (o.kind === "sysctl") {
    const m = /^ipv[46]\/(?:conf|neigh)\/([^/]+)\//.exec(o.key);
    const dev = m?.[1];
    out.add(
      !dev || dev === "all" || dev === "default"
        ? "sysctl netns"
        : dev.includes(".")
          ? "sysctl dotted nic"
          : "sysctl nic",
    );
  }
  return [...out];
}

/** The items one field difference concerns. */
export function fieldAspects(o: Obj, field: string, pod?: string, guest?: string): string[] {
  if (o.kind === "link" && field === "flags") {
    const a = new Set((pod ?? "").split(","));
    const b = new Set((guest ?? "").split(","));
    const changed = [...a, ...b].filter((x) => x && a.has(x) !== b.has(x));
    return changed.map((x) => `link flag ${x}`);
  }
  if (o.kind === "sysctl") return aspectsOf(o);
  if (o.kind === "address" && (field === "preferred_lft" || field === "valid_lft")) {
    return [pod === "0" || guest === "0" ? "address preferred_lft 0" : "address lifetimes"];
  }
  if (o.kind === "route" && field === "locks") {
    const a = new Set((pod ?? "").split(",").filter(Boolean));
    const b = new Set((guest ?? "").split(",").filter(Boolean));
    return [...a, ...b].filter((x) => a.has(x) !== b.has(x)).map((x) => `route ${x} lock`);
  }
  return [name(o.kind, field)];
}

/** Every item a pod's normalised read has: its objects', and "address order" where a link has several of a family. */
export function itemsOf(n: Normalised): string[] {
  const items = new Set(n.objects.flatMap(aspectsOf));
  if ([...n.addressOrder.values()].some((o) => o.keys.length > 1)) items.add("address order");
  return [...items];
}
