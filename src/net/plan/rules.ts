/**
 * Policy routing rules (`ip rule`): the model, the parser of `ip -json rule`,
 * the planner and the renderer. Pure.
 *
 * The planner makes an exact set: afterwards the guest has the desired rules
 * plus the kernel's default rules (unless the request is exact, or a desired
 * rule takes a default rule's priority and family). New rules are added
 * before stale ones are deleted, so no packet meets a window with neither.
 *
 * iproute2 (6.1) takes a rule's family from the command line only: without
 * `-6` it sends an IPv4 rule, IPv6 prefix and all, which the kernel refuses
 * ("Invalid source address"). A batch cannot switch family per line, so
 * every IPv6 rule is rendered for a separate `ip -6 -batch` (its line
 * starts with {@link IPV6_BATCH}).
 */
import { type Family, maxPrefix, networkText, parseIp } from "../model/address";
import { type Attr, attrsText, attrWords, readAttrs } from "../vocabulary/attrs";
import {
  formatTable,
  parseTable,
  protocolWord,
  TABLE_DEFAULT,
  TABLE_LOCAL,
  TABLE_MAIN,
} from "../vocabulary/routes";
import {
  RULE_ACTION_ATTRS,
  RULE_ATTR_KEYS,
  RULE_ATTRS,
  RULE_JSON_KEYS,
} from "../vocabulary/rule-attrs";
import { batchLine } from "./render-batch";

type RuleAction = "lookup" | "blackhole" | "unreachable" | "prohibit";

export interface Rule {
  family: Family;
  priority: number;
  /** `not`: the selectors are inverted. */
  not: boolean;
  /** Canonical CIDRs; absent = all. */
  src?: string;
  dst?: string;
  iif?: string;
  oif?: string;
  /** fwmark with its mask (0xffffffff when the rule gave none). */
  fwmark?: { mark: number; mask: number };
  action: RuleAction;
  /** The table looked up; 0 when the action is not lookup, or an attribute is the action (goto, nop, l3mdev). */
  table: number;
  /** Everything else, canonical: vocabulary/rule-attrs.ts. */
  attrs?: Attr[];
  /** What `ip` showed that this model does not carry (read only): such a rule is never equal to a desired one. */
  other?: string[];
}

const KERNEL: Attr[] = [["protocol", "kernel"]];

/** The rules a fresh namespace has: IPv4 local/main/default, IPv6 local/main (made by the kernel). */
export const DEFAULT_RULES: readonly Rule[] = [
  { family: 4, priority: 0, not: false, action: "lookup", table: TABLE_LOCAL, attrs: KERNEL },
  { family: 4, priority: 32766, not: false, action: "lookup", table: TABLE_MAIN, attrs: KERNEL },
  { family: 4, priority: 32767, not: false, action: "lookup", table: TABLE_DEFAULT, attrs: KERNEL },
  { family: 6, priority: 0, not: false, action: "lookup", table: TABLE_LOCAL, attrs: KERNEL },
  { family: 6, priority: 32766, not: false, action: "lookup", table: TABLE_MAIN, attrs: KERNEL },
];

/** Marks a line for `ip -6 -batch -` instead of the family-less batch. */
export const IPV6_BATCH = "-6 ";

/** Every attribute that makes two rules the same rule. */
export function ruleIdentity(r: Rule): string {
  const mark = r.fwmark ? `${r.fwmark.mark}/${r.fwmark.mask}` : "";
  return `${r.family} ${r.priority} ${r.not} ${r.src ?? ""} ${r.dst ?? ""} ${r.iif ?? ""} ${r.oif ?? ""} ${mark} ${r.action} ${r.table} ${attrsText(r.attrs)} ${(r.other ?? []).join(",")}`;
}

type Json = Record<string, unknown>;

function prefix(addr: unknown, len: unknown, family: Family): string | undefined {
  if (typeof addr !== "string" || addr === "all") return undefined;
  const ip = parseIp(addr);
  if (typeof ip === "string") return undefined;
  const bits = typeof len === "number" ? len : maxPrefix(family);
  return `${networkText(ip.bytes, bits)}/${bits}`;
}

/** Rules of one family from `ip [-6] -json rule show`. Malformed entries are skipped. */
export function parseRules(doc: unknown, family: Family): Rule[] {
  const out: Rule[] = [];
  if (!Array.isArray(doc)) return out;
  for (const raw of doc) {
    if (!raw || typeof raw !== "object") continue;
    const r = raw as Json;
    if (typeof r.priority !== "number") continue;
    const other = Object.keys(r)
      .filter((k) => !RULE_JSON_KEYS.has(k))
      .map((k) => `${k}=${JSON.stringify(r[k])}`);
    // A value the table cannot carry (a name from the host's own files) is
    // not carried: without it the rule would match more than it does.
    const attrs = readAttrs(RULE_ATTRS, r).filter(([n, v]) => {
      if (RULE_ATTRS.get(n)?.grammar.test(v)) return true;
      other.push(`${n}=${v}`);
      return false;
    });
    for (const [name, keys] of Object.entries(RULE_ATTR_KEYS)) {
      const present = keys.filter((k) => k in r);
      if (present.length > 0 && RULE_ATTRS.get(name)?.read(r) === undefined)
        other.push(...present.map((k) => `${k}=${JSON.stringify(r[k])}`));
    }
    const action = typeof r.action === "string" ? r.action : "lookup";
    if (!["lookup", "blackhole", "unreachable", "prohibit"].includes(action)) {
      other.push(`action=${action}`);
    }
    const table = typeof r.table === "string" ? parseTable(r.table) : undefined;
    if (r.table !== undefined && table === undefined) other.push(`table=${String(r.table)}`);
    const src = prefix(r.src, r.srclen, family);
    const dst = prefix(r.dst, r.dstlen, family);
    const rule: Rule = {
      family,
      priority: r.priority,
      not: "not" in r,
      ...(src ? { src } : {}),
      ...(dst ? { dst } : {}),
      ...(typeof r.iif === "string" ? { iif: r.iif } : {}),
      ...(typeof r.oif === "string" ? { oif: r.oif } : {}),
      action:
        action === "lookup" || other.some((o) => o.startsWith("action="))
          ? "lookup"
          : (action as RuleAction),
      table: action === "lookup" ? (table ?? 0) : 0,
      ...(attrs.length ? { attrs } : {}),
      ...(other.length ? { other } : {}),
    };
    if (typeof r.fwmark === "string") {
      const mask = typeof r.fwmask === "string" ? Number(r.fwmask) : 0xffffffff;
      rule.fwmark = { mark: Number(r.fwmark), mask };
    }
    out.push(rule);
  }
  return out;
}

/** A rule's selectors after its source, in `ip rule`'s words: `to`, `iif`, `oif`, `fwmark` (hex). */
export function selectorWords(r: Pick<Rule, "dst" | "iif" | "oif" | "fwmark">): string[] {
  const t: string[] = [];
  if (r.dst) t.push("to", r.dst);
  if (r.iif) t.push("iif", r.iif);
  if (r.oif) t.push("oif", r.oif);
  if (r.fwmark) t.push("fwmark", `0x${r.fwmark.mark.toString(16)}/0x${r.fwmark.mask.toString(16)}`);
  return t;
}

/** The rule as `ip rule` arguments after `add`/`del` (selectors, then the action). */
function ruleArgs(r: Rule): (string | number)[] {
  const t: (string | number)[] = ["priority", r.priority];
  if (r.not) t.push("not");
  if (r.src) t.push("from", r.src);
  t.push(...selectorWords(r));
  const actionAttr = r.attrs?.some(([n]) => RULE_ACTION_ATTRS.includes(n));
  // The protocol by number, as a route's (protocolWord says why).
  const attrs = r.attrs?.map(([n, v]): Attr => [n, n === "protocol" ? protocolWord(v) : v]);
  t.push(...attrWords(RULE_ATTRS, attrs));
  if (actionAttr) return t;
  if (r.action === "lookup") t.push("lookup", formatTable(r.table));
  else t.push(r.action);
  return t;
}

/** `rule add|del ...` as a batch line; IPv6 rules are marked for `ip -6`. */
export function renderRule(verb: "add" | "del", r: Rule): string {
  const line = batchLine(["rule", verb, ...ruleArgs(r)]);
  return r.family === 6 ? `${IPV6_BATCH}${line}` : line;
}

export interface RulePlanOptions {
  /** The desired list is the whole set: default rules not listed are deleted. */
  exact?: boolean;
}

export type RuleOp = { op: "add"; rule: Rule } | { op: "del"; rule: Rule };

/** The operations that turn `current` into `desired` (see the module comment). */
export function planRules(
  current: readonly Rule[],
  desired: readonly Rule[],
  options: RulePlanOptions = {},
): RuleOp[] {
  const taken = new Set(desired.map((r) => `${r.family} ${r.priority}`));
  const defaults = options.exact
    ? []
    : DEFAULT_RULES.filter((d) => !taken.has(`${d.family} ${d.priority}`));
  const target = [...desired, ...defaults];
  // Each rule's identity built once.
  const targetIdList = target.map(ruleIdentity);
  const currentIdList = current.map(ruleIdentity);
  const targetIds = new Set(targetIdList);
  const currentIds = new Set(currentIdList);
  const ops: RuleOp[] = [];
  const added = new Set<string>();
  target.forEach((r, i) => {
    const id = targetIdList[i] as string;
    if (currentIds.has(id) || added.has(id)) return;
    added.add(id);
    ops.push({ op: "add", rule: r });
  });
  current.forEach((r, i) => {
    if (!targetIds.has(currentIdList[i] as string)) ops.push({ op: "del", rule: r });
  });
  return ops;
}

export function renderRuleOps(ops: readonly RuleOp[]): string[] {
  return ops.map((o) => renderRule(o.op, o.rule));
}

/** An IPv4 rule no other plan line makes, and inert (`nop`: the lookup goes on to the next rule). */
const INERT_RULE = ["priority", 32765, "nop"];

/**
 * The lines that set IPv4's local and main tables apart before any route
 * line: an inert rule added and deleted at once, when the desired state has
 * an IPv4 rule of its own and the guest none. Until a namespace's first IPv4
 * rule the kernel keeps the two tables as one (and never joins them again),
 * and it checks an onlink gateway's type in the local table: there a `local`
 * route of main, a local default, makes the gateway local ("Nexthop has
 * invalid gateway"). A pod with rules of its own got its routes with the
 * tables apart; its rules themselves cannot go first (an `unreachable` rule
 * before main fails the other gateways' checks, which look the gateway up).
 */
export function splitTablesLines(current: readonly Rule[], desired: readonly Rule[]): string[] {
  const defaults = new Set(DEFAULT_RULES.map(ruleIdentity));
  const own = (rules: readonly Rule[]) =>
    rules.some((r) => r.family === 4 && !defaults.has(ruleIdentity(r)));
  if (!own(desired) || own(current)) return [];
  return [batchLine(["rule", "add", ...INERT_RULE]), batchLine(["rule", "del", ...INERT_RULE])];
}
