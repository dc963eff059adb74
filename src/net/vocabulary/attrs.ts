/**
 * Attribute lists: what an object carries beyond the typed fields that
 * identify it. An object's attributes are
 * canonical `[name, value]` pairs, sorted by name, each name a row of its
 * kind's table (route-attrs.ts, ...). A row says how `ip -d -j` shows the
 * attribute, how it is written back as `ip` words, the value's grammar and
 * bound, and the value that means "not set" (left out of the list). So an
 * attribute the kernel grows later is one row, and a list validated against
 * its table can only ever render as known words with checked values.
 */

/** One attribute: its table's name and its canonical value text. */
export type Attr = readonly [name: string, value: string];

type Json = Record<string, unknown>;

/** A value grammar: a test and the words an error says when it fails. */
export interface Grammar {
  test(value: string): boolean;
  /** Completes "is not ...": e.g. "a number 1-4294967295". */
  expected: string;
}

export interface AttrSpec {
  /** The name in the list (iproute2's word for it). */
  name: string;
  /** The canonical value from an object of `ip -d -j` output, when it has one. */
  read(json: Json): string | undefined;
  /**
   * The `ip` words that set it (each one token; render-batch.ts checks them
   * again), given the whole list (a metric's `lock` is another attribute).
   */
  words(value: string, list: readonly Attr[]): string[];
  grammar: Grammar;
  /** The value that means "not set": an attribute at it is left out of the list. */
  unset?: string;
  /**
   * Counts down by itself (a remaining lifetime): compared as present or
   * not, never by value, so a plan does not rewrite it every time.
   */
  volatile?: boolean;
  /** Only objects of this family have it (the kernel keeps it for that family alone). */
  family?: 4 | 6;
}

export type AttrTable = ReadonlyMap<string, AttrSpec>;

export function attrTable(specs: readonly AttrSpec[]): AttrTable {
  return new Map(specs.map((s) => [s.name, s]));
}

/** Decimal digits, no sign or leading zero, in [min, max]. */
export function uint(min: number, max: number): Grammar {
  return {
    test: (v) => /^(0|[1-9]\d{0,9})$/.test(v) && Number(v) >= min && Number(v) <= max,
    expected: `a number ${min}-${max}`,
  };
}

/** A number of milliseconds written `Nms`. */
export function millis(max: number): Grammar {
  const n = uint(0, max);
  return {
    test: (v) => v.endsWith("ms") && n.test(v.slice(0, -2)),
    expected: `a time in milliseconds (0ms-${max}ms)`,
  };
}

export function oneOf(names: readonly string[]): Grammar {
  const set = new Set(names);
  return { test: (v) => set.has(v), expected: `one of ${names.join(", ")}` };
}

export function pattern(re: RegExp, expected: string): Grammar {
  return { test: (v) => re.test(v), expected };
}

/** A flag: `ip -j` prints it as a key with a null value, `ip` takes its name alone. */
export function flagAttr(name: string): AttrSpec {
  return {
    name,
    read: (json) => (name in json ? "on" : undefined),
    words: () => [name],
    grammar: oneOf(["on"]),
  };
}

/** An unsigned number from `ip -j` (a number, or digits as text) as canonical text. */
export function jsonUint(v: unknown): string | undefined {
  if (typeof v === "number" && Number.isInteger(v) && v >= 0) return String(v);
  if (typeof v === "string" && /^(0|[1-9]\d{0,9})$/.test(v)) return v;
  return undefined;
}

/**
 * The attributes of `json` by `table`, sorted by name, unset values left
 * out. Keys of `json` the table does not read are not looked at here.
 */
export function readAttrs(table: AttrTable, json: Json): Attr[] {
  const out: Attr[] = [];
  for (const spec of table.values()) {
    const v = spec.read(json);
    if (v !== undefined && v !== spec.unset) out.push([spec.name, v]);
  }
  return out.sort(byName);
}

const byName = (a: Attr, b: Attr) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/**
 * Why a list is not a valid attribute list of `table` ("" when it is), as
 * the end of a sentence naming the attribute: names in the table, each
 * once, values of their grammar and at most `maxBytes` long. The list's
 * own length is the caller's bound.
 */
export function attrProblem(
  table: AttrTable,
  name: string,
  value: string,
  maxBytes: number,
): string {
  const spec = table.get(name);
  if (spec === undefined)
    return `is not an attribute of its kind (${[...table.keys()].join(", ")})`;
  if (Buffer.byteLength(value) > maxBytes) return `value is longer than ${maxBytes} bytes`;
  if (!spec.grammar.test(value))
    return `value ${JSON.stringify(value)} is not ${spec.grammar.expected}`;
  return "";
}

/** A list in canonical form: sorted by name, unset values left out (names and values already valid). */
export function canonicalAttrs(table: AttrTable, attrs: readonly Attr[]): Attr[] {
  return attrs.filter(([n, v]) => table.get(n)?.unset !== v).sort(byName);
}

/** Whether two canonical lists are the same for a plan: volatile values compare as present. */
export function sameAttrs(
  table: AttrTable,
  a: readonly Attr[] | undefined,
  b: readonly Attr[] | undefined,
): boolean {
  if (a === b) return true;
  const x = a ?? [];
  const y = b ?? [];
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    const p = x[i] as Attr;
    const q = y[i] as Attr;
    if (p[0] !== q[0]) return false;
    if (p[1] !== q[1] && table.get(p[0])?.volatile !== true) return false;
  }
  return true;
}

/** The list as text for identities and messages: `name=value` joined by spaces. */
export function attrsText(attrs: readonly Attr[] | undefined): string {
  return attrs?.length ? attrs.map(([n, v]) => `${n}=${v}`).join(" ") : "";
}

/** The `ip` words of a list, in list order. */
export function attrWords(table: AttrTable, attrs: readonly Attr[] | undefined): string[] {
  const out: string[] = [];
  for (const [n, v] of attrs ?? []) {
    const spec = table.get(n);
    if (spec) out.push(...spec.words(v, attrs ?? []));
  }
  return out;
}
