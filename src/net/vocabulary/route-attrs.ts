/**
 * The attributes of a route beyond its typed fields (model.ts): the
 * metrics `ip route` knows (RTAX_*), their locks, and pref, realms,
 * expires. One row each: how `ip -d -j route` shows it, the words that
 * write it back, its grammar. `mtu` is a typed field of its own (the Kata
 * protocol carries it); its lock is in `lock` with the others.
 */
import {
  type Attr,
  type AttrSpec,
  attrTable,
  jsonUint,
  millis,
  oneOf,
  pattern,
  uint,
} from "./attrs";

type Json = Record<string, unknown>;

/** The metrics `ip route` takes `lock` for (iproute2's `rto_min` always sets its own). */
const LOCKABLE = [
  "advmss",
  "congctl",
  "cwnd",
  "hoplimit",
  "initcwnd",
  "initrwnd",
  "mtu",
  "reordering",
  "rtt",
  "rttvar",
  "ssthresh",
  "window",
] as const;

const LOCKABLE_SET: ReadonlySet<string> = new Set(LOCKABLE);

const U32 = 0xffffffff;

/** `ip -j` prints the metrics as one object in a list. */
function metrics(json: Json): Json | undefined {
  const m = json.metrics;
  if (!Array.isArray(m)) return undefined;
  for (const x of m) if (x && typeof x === "object") return x as Json;
  return undefined;
}

/** The names `lock` lists, from the list (absent: none). */
export function lockedNames(list: readonly Attr[]): string[] {
  const lock = list.find(([n]) => n === "lock");
  return lock ? lock[1].split(",") : [];
}

/** A metric row: read from `metrics[0][key]`, written `NAME [lock] VALUE`. */
function metric(
  name: string,
  grammar: AttrSpec["grammar"],
  opts: { key?: string; read?: (v: unknown) => string | undefined; unset?: string } = {},
): AttrSpec {
  const key = opts.key ?? name;
  const read = opts.read ?? jsonUint;
  return {
    name,
    read: (json) => {
      const m = metrics(json);
      return m && key in m ? read(m[key]) : undefined;
    },
    words: (value, list) =>
      LOCKABLE_SET.has(name) && lockedNames(list).includes(name)
        ? [name, "lock", value]
        : [name, value],
    grammar,
    unset: opts.unset ?? "0",
  };
}

const ms = (v: unknown) => {
  const n = jsonUint(v);
  return n === undefined ? undefined : `${n}ms`;
};

/** Realm ids, 0-255 each, as iproute2 takes them (`realms [FROM/]TO`). */
const REALM = "(0|[1-9]\\d{0,2})";

function realms(json: Json): string | undefined {
  const flow = json.flow;
  if (!flow || typeof flow !== "object") return undefined;
  const { from, to } = flow as Json;
  const f = from === undefined ? "0" : jsonUint(from);
  const t = to === undefined ? "0" : jsonUint(to);
  // A realm iproute2 printed by a name from the host's rt_realms is not carried.
  if (f === undefined || t === undefined) return undefined;
  return f === "0" ? t : `${f}/${t}`;
}

export const ROUTE_ATTRS = attrTable([
  metric("advmss", uint(0, U32)),
  metric(
    "congctl",
    pattern(/^[A-Za-z0-9_]{1,15}$/, "a congestion control name (1-15 letters, digits, '_')"),
    {
      key: "congestion",
      read: (v) => (typeof v === "string" ? v : undefined),
      unset: "",
    },
  ),
  metric("cwnd", uint(0, U32)),
  {
    name: "expires",
    read: (json) => jsonUint(json.expires),
    words: (v) => ["expires", v],
    grammar: uint(1, 0x7fffffff),
    volatile: true,
    family: 6,
  },
  metric("fastopen_no_cookie", uint(0, 1)),
  // Only ECN can be written (`features ecn`); other bits are read as not carried.
  metric("features", oneOf(["ecn"]), { key: "ecn", read: (v) => (v === null ? "ecn" : undefined) }),
  metric("hoplimit", uint(0, 255)),
  metric("initcwnd", uint(0, U32)),
  metric("initrwnd", uint(0, U32)),
  {
    name: "lock",
    // `ip -j` leaves locks out; the reader adds them as `locks` from the text dump.
    read: (json) => {
      const l = json.locks;
      if (!Array.isArray(l)) return undefined;
      const names = l.filter((x): x is string => typeof x === "string" && LOCKABLE_SET.has(x));
      return names.length ? [...new Set(names)].sort().join(",") : undefined;
    },
    // Written inside each metric it names (`mtu lock 1400`).
    words: () => [],
    grammar: {
      test: (v) => {
        const names = v.split(",");
        return names.every(
          (n, i) => LOCKABLE_SET.has(n) && (i === 0 || (names[i - 1] as string) < n),
        );
      },
      expected: `a sorted comma list of ${LOCKABLE.join(", ")}`,
    },
    unset: "",
  },
  {
    name: "pref",
    read: (json) => (typeof json.pref === "string" ? json.pref : undefined),
    words: (v) => ["pref", v],
    grammar: oneOf(["low", "medium", "high"]),
    unset: "medium",
    family: 6,
  },
  metric("quickack", uint(0, U32)),
  {
    name: "realms",
    read: realms,
    words: (v) => ["realms", v],
    grammar: pattern(new RegExp(`^(${REALM}/)?${REALM}$`), "a realm or FROM/TO (0-255 each)"),
    unset: "0",
    family: 4,
  },
  metric("reordering", uint(0, U32)),
  metric("rto_min", millis(U32), { read: ms, unset: "0ms" }),
  metric("rtt", millis(Math.floor(U32 / 8)), { read: ms, unset: "0ms" }),
  metric("rttvar", millis(Math.floor(U32 / 4)), { read: ms, unset: "0ms" }),
  metric("ssthresh", uint(0, U32)),
  metric("window", uint(0, U32)),
]);

/**
 * The keys of an `ip -d -j route` object that the model carries (typed or
 * as attributes) or that legitimately differ by themselves; any other key
 * is something the route has that is not carried.
 */
export const ROUTE_JSON_KEYS = new Set([
  "type",
  "dst",
  "tos",
  "from",
  "gateway",
  "via",
  "dev",
  "table",
  "protocol",
  "scope",
  "metric",
  "prefsrc",
  "flags",
  "metrics",
  "nexthops",
  "nhid",
  "nh_info",
  "flow",
  "pref",
  "expires",
  "locks",
]);

/** The keys of a metrics object that ROUTE_ATTRS (or the typed mtu) reads. */
export const METRIC_JSON_KEYS = new Set([
  "mtu",
  "advmss",
  "congestion",
  "cwnd",
  "fastopen_no_cookie",
  "ecn",
  "hoplimit",
  "initcwnd",
  "initrwnd",
  "quickack",
  "reordering",
  "rto_min",
  "rtt",
  "rttvar",
  "ssthresh",
  "window",
]);

/** The metric words of a text route line that iproute2 marks `NAME lock VALUE`, sorted. */
export function locksOfLine(line: string): string[] {
  const words = line.split(/\s+/);
  const out = new Set<string>();
  for (let i = 0; i + 1 < words.length; i++) {
    if (words[i + 1] === "lock" && LOCKABLE_SET.has(words[i] as string))
      out.add(words[i] as string);
  }
  return [...out].sort();
}
