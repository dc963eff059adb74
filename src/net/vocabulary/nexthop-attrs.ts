/**
 * The attributes of a nexthop object beyond its typed fields (model.ts
 * Nexthop): `fdb`, and a group's type with the resilient group's
 * arguments. iproute2 takes those arguments right after `type resilient`,
 * so that row writes them all and theirs write nothing.
 */
import { type Attr, type AttrSpec, attrTable, jsonUint, oneOf, uint } from "./attrs";

type Json = Record<string, unknown>;

function resilient(name: string, max: number, unset: string): AttrSpec {
  return {
    name,
    read: (json) => {
      const a = json.resilient_args;
      return a && typeof a === "object" ? jsonUint((a as Json)[name]) : undefined;
    },
    words: () => [],
    grammar: uint(name === "buckets" ? 1 : 0, max),
    unset,
  };
}

const attrValue = (list: readonly Attr[], name: string) => list.find(([n]) => n === name)?.[1];

export const NEXTHOP_ATTRS = attrTable([
  resilient("buckets", 65535, "128"),
  {
    name: "fdb",
    read: (json) => ("fdb" in json ? "on" : undefined),
    words: () => ["fdb"],
    grammar: oneOf(["on"]),
  },
  resilient("idle_timer", 4_294_967, "120"),
  {
    name: "type",
    read: (json) => (typeof json.type === "string" ? json.type : undefined),
    words: (v, list) => {
      const out = ["type", v];
      for (const n of ["buckets", "idle_timer", "unbalanced_timer"]) {
        const x = attrValue(list, n);
        if (x !== undefined) out.push(n, x);
      }
      return out;
    },
    grammar: oneOf(["mpath", "resilient"]),
    unset: "mpath",
  },
  resilient("unbalanced_timer", 4_294_967, "0"),
]);

/** The attributes only a group has. */
export const GROUP_ONLY_ATTRS = new Set(["buckets", "idle_timer", "type", "unbalanced_timer"]);
