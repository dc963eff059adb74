/**
 * A read (read.ts) as flat objects with an identity, minus exactly what
 * ignore.ts lists. Links are known by MAC (by name when they have none: lo,
 * a tun); addresses by link, family, address and prefix; routes and rules
 * by their whole content, with a looser key (family+table+dst+from, family+
 * priority) that pairs what differs in a field; neighbours by family,
 * device, address; nexthop objects by id; sysctls by path.
 */
import {
  CARRIER_FLAGS,
  IGNORED,
  isKernelLinkLocal,
  isMulticast,
  type Kind,
  LEARNED_STATES,
} from "./ignore";
import type { Json, NetnsRead } from "./read";

export interface Obj {
  kind: Kind;
  key: string;
  loose: string;
  what: string;
  fields: Map<string, string>;
}

export interface Normalised {
  objects: Obj[];
  /** Per link and family, the address keys in the kernel's order. */
  addressOrder: Map<string, { what: string; keys: string[] }>;
}

const str = (v: unknown) => (v === null ? "true" : typeof v === "string" ? v : JSON.stringify(v));

/** Nested objects to dotted keys; arrays of scalars sorted (sets); arrays of objects in order. */
export function flatten(
  obj: Json,
  prefix = "",
  out = new Map<string, string>(),
): Map<string, string> {
  for (const [k, v] of Object.entries(obj)) {
    const name = prefix + k;
    if (Array.isArray(v)) {
      if (v.every((x) => typeof x !== "object" || x === null))
        out.set(name, v.map(str).sort().join(","));
      else if (v.length === 1 && k === "metrics") flatten(v[0] as Json, `${name}.`, out);
      else out.set(name, v.map((x) => render(x as Json)).join(" | "));
    } else if (v && typeof v === "object") flatten(v as Json, `${name}.`, out);
    else out.set(name, str(v));
  }
  return out;
}

function render(x: Json): string {
  return [...flatten(x)].map(([k, v]) => (v === "" ? k : `${k} ${v}`)).join(" ");
}

const canonical = (fields: Map<string, string>) =>
  [...fields]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join(";");

const without = (o: Json, drop: readonly string[]) =>
  Object.fromEntries(Object.entries(o).filter(([k]) => !drop.includes(k)));

/** `flags` (and each hop's) without the carrier's (IGNORED.linkCarrier, routeCarrier). */
function withoutCarrier(o: Json): Json {
  const out: Json = { ...o };
  if (Array.isArray(o.flags))
    out.flags = (o.flags as unknown[]).filter((f) => !CARRIER_FLAGS.has(String(f)));
  if (Array.isArray(o.nexthops))
    out.nexthops = (o.nexthops as Json[]).map((h) =>
      h && typeof h === "object" ? withoutCarrier(h) : h,
    );
  return out;
}

export function linkKey(l: Json): string {
  if (l.ifname === "lo") return "lo";
  const mac = typeof l.address === "string" ? l.address : "";
  return mac && mac !== "00:00:00:00:00:00" && l.link_type === "ether"
    ? `mac ${mac}`
    : `name ${l.ifname}`;
}

export function normalise(read: NetnsRead): Normalised {
  const objects: Obj[] = [];
  const addressOrder = new Map<string, { what: string; keys: string[] }>();
  const linkDrop = [
    ...IGNORED.linkIndex.fields,
    ...IGNORED.linkDevice.fields,
    ...IGNORED.linkQdisc.fields,
    ...IGNORED.linkCarrier.fields,
    "addr_info",
  ];
  for (const l of read.links) {
    const fields = flatten(without(withoutCarrier(l), linkDrop));
    objects.push({
      kind: "link",
      key: linkKey(l),
      loose: linkKey(l),
      what: `link ${l.ifname}`,
      fields,
    });
  }
  pushAddresses(read, objects, addressOrder);
  for (const r of read.routes) {
    if (r.table === "local" && r.type === "local" && isKernelLinkLocal(String(r.dst))) continue;
    const fields = flatten(without(withoutCarrier(r), ["expires"]));
    if (r.expires !== undefined) fields.set("expires", "finite");
    const from = r.from ? ` from ${r.from}` : "";
    const type = r.type && r.type !== "unicast" ? `${r.type} ` : "";
    objects.push({
      kind: "route",
      key: canonical(fields),
      loose: `${r.family}|${r.table}|${r.dst}|${r.from ?? ""}`,
      what: `route ${type}${r.dst}${from} table ${r.table} (${r.family})`,
      fields,
    });
  }
  for (const r of read.rules) {
    const fields = flatten(r);
    objects.push({
      kind: "rule",
      key: canonical(fields),
      loose: `${r.family}|${r.priority}`,
      what: `rule ${r.priority} (${r.family})`,
      fields,
    });
  }
  // A NOARP link resolves every neighbour as its own MAC (IGNORED.neighbourNoarpLink).
  const ownMac = new Map(
    read.links
      .filter((l) => ((l.flags ?? []) as string[]).includes("NOARP"))
      .map((l) => [String(l.ifname), String(l.address)]),
  );
  for (const n of read.neighbours) {
    const state = (n.state ?? []) as string[];
    if (state.some((s) => LEARNED_STATES.has(s))) continue;
    if (state.includes("NOARP") && isMulticast(String(n.dst))) continue;
    if (state.includes("NOARP") && ownMac.get(String(n.dev)) === n.lladdr) continue;
    const proxy = "proxy" in n ? "proxy " : "";
    const key = `${n.family}|${n.dev}|${proxy}${n.dst}`;
    objects.push({
      kind: "neighbour",
      key,
      loose: key,
      what: `neighbour ${proxy}${n.dst} dev ${n.dev}`,
      fields: flatten(n),
    });
  }
  for (const h of read.nexthops ?? []) {
    objects.push({
      kind: "nexthop",
      key: `id ${h.id}`,
      loose: `id ${h.id}`,
      what: `nexthop id ${h.id}`,
      fields: flatten(h),
    });
  }
  for (const [path, value] of read.sysctls) {
    objects.push({
      kind: "sysctl",
      key: path,
      loose: path,
      what: `sysctl net/${path}`,
      fields: new Map([["value", value]]),
    });
  }
  return { objects, addressOrder };
}

/**
 * The addresses of every link but the kernel's link-locals, as objects,
 * and per link and family their keys in the kernel's order.
 */
function pushAddresses(
  read: NetnsRead,
  objects: Obj[],
  addressOrder: Normalised["addressOrder"],
): void {
  for (const l of read.addresses) {
    const lk = linkKey(l);
    for (const a of (l.addr_info ?? []) as Json[]) {
      if (a.family === "inet6" && isKernelLinkLocal(String(a.local), Number(a.prefixlen))) continue;
      const peer = a.address ? ` peer ${a.address}` : "";
      const spec = `${a.local}/${a.prefixlen}${peer}`;
      const key = `${lk}|${a.family}|${spec}`;
      const fields = flatten(
        without(a, [
          "family",
          "local",
          "prefixlen",
          "address",
          "tentative",
          "valid_life_time",
          "preferred_life_time",
        ]),
      );
      fields.set("valid_lft", lifetime(a.valid_life_time));
      fields.set("preferred_lft", lifetime(a.preferred_life_time));
      objects.push({
        kind: "address",
        key,
        loose: `${lk}|${a.family}|${a.local}`,
        what: `address ${spec} on ${l.ifname}`,
        fields,
      });
      const ok = `${lk}|${a.family}`;
      const order = addressOrder.get(ok) ?? {
        what: `addresses (${a.family}) of ${l.ifname}`,
        keys: [],
      };
      order.keys.push(key);
      addressOrder.set(ok, order);
    }
  }
}

/** 4294967295 is "forever" (INFINITY_LIFE_TIME); 0 means deprecated; anything else counts down. */
function lifetime(v: unknown): string {
  if (v === 4294967295 || v === undefined) return "forever";
  return v === 0 ? "0" : "finite";
}
