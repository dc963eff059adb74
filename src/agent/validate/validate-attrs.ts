/**
 * Attribute lists of a netagent.v1 Apply request (routes, nexthop objects, rules, addresses, links,
 * neighbours): every name must be a row of its kind's table
 * (src/net/vocabulary/*-attrs.ts), each value of its grammar and bound,
 * each name once, before anything changes. INVALID_ARGUMENT names the
 * attribute's field and the value, e.g.
 * `desired.rules[3].attrs[1]: "dport" value "x" is not a port or range ...`.
 */
import type { Attr as WireAttr } from "../../gen/network_pb";
import type { Family } from "../../net/model/address";
import { type Attr, type AttrTable, attrProblem, canonicalAttrs } from "../../net/vocabulary/attrs";
import { invalid } from "./validate-fields";

/** Bounds of the attribute lists of every kind (docs/limits.md). */
export const ATTR_LIMITS = {
  /** Attributes of one route, nexthop object, rule, address, link or neighbour. */
  attrsPerObject: 32,
  /** Bytes of one attribute value (a link's alias may take the kernel's 255). */
  attrValueBytes: 256,
} as const;

/** A wire attribute list as the canonical model list (sorted, unset values left out); undefined when empty. */
export function attrsFromWire(
  f: string,
  list: readonly WireAttr[],
  table: AttrTable,
  family?: Family,
): Attr[] | undefined {
  if (list.length > ATTR_LIMITS.attrsPerObject)
    throw invalid(
      `${f}.attrs`,
      list.length,
      `entries: at most ${ATTR_LIMITS.attrsPerObject} are accepted`,
    );
  const seen = new Set<string>();
  const out: Attr[] = list.map((a, i) => {
    const af = `${f}.attrs[${i}]`;
    const problem = attrProblem(table, a.name, a.value, ATTR_LIMITS.attrValueBytes);
    if (problem) throw invalid(af, a.name, problem);
    if (seen.has(a.name)) throw invalid(af, a.name, "is listed twice");
    seen.add(a.name);
    const only = table.get(a.name)?.family;
    if (only !== undefined && family !== undefined && only !== family)
      throw invalid(af, a.name, `is for IPv${only} only`);
    return [a.name, a.value];
  });
  const canonical = canonicalAttrs(table, out);
  return canonical.length ? canonical : undefined;
}
