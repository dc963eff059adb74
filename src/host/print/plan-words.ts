/**
 * An Apply plan (the `ip -batch` lines and sysctl writes the agent answers)
 * in words a runtime engineer reads at a glance, grouped by what it touches,
 * in the order the agent runs it: each route, rule and neighbour read back
 * from its batch words into a view and said as words.ts says it everywhere.
 * Pure.
 */
import { parseScope, parseTable, protocolName, scopeName } from "../../net/vocabulary/routes";
import { escapeControls } from "./safe-text";
import { neighborWords, type RouteView, type RuleView, routeWords, ruleWords } from "./words";

function after(t: readonly string[], word: string): string | undefined {
  const i = t.indexOf(word);
  return i >= 0 ? t[i + 1] : undefined;
}

/** A count or id from a plan line, or undefined when the word is not one. */
const num = (w: string | undefined) =>
  w !== undefined && /^\d{1,10}$/.test(w) ? Number(w) : undefined;

/** A scope from a plan line (a number or iproute2's name), or undefined when the word is neither. */
function scopeOf(w: string | undefined): number | undefined {
  if (w === undefined || num(w) !== undefined) return num(w);
  const id = parseScope(w);
  return scopeName(id) === w || w === "universe" ? id : undefined;
}

/** The words of a batch route (after its verb) as a view, and the table it is in. */
function routeOf(t: readonly string[]): { table: string; view: RouteView } {
  let i = 0;
  // A route type is a word; a destination never is (render-batch writes a CIDR).
  const type = /^[a-z]+$/.test(t[0] ?? "") && t[0] !== "default" ? t[i++] : undefined;
  const dst = t[i++] ?? "";
  const view: RouteView = { family: dst.includes(":") ? 6 : 4, dst, ...(type ? { type } : {}) };
  const extra: string[] = [];
  let table = "main";
  for (; i < t.length; i++) {
    const w = t[i] as string;
    const v = t[i + 1];
    const known = v !== undefined;
    // A multipath route's paths (render-batch writes them last): shown as they are.
    if (w === "nexthop") {
      extra.push(...t.slice(i));
      break;
    }
    if (w === "onlink") view.onlink = true;
    else if (w === "via" && known) view.gateway = v;
    else if (w === "dev" && known) view.dev = v;
    else if (w === "src" && known) view.prefsrc = v;
    else if (w === "proto" && known) view.protocol = protocolName(v);
    else if (w === "table" && known) table = v;
    else if (w === "scope" && scopeOf(v) !== undefined) view.scope = scopeOf(v);
    else if (w === "metric" && num(v) !== undefined) view.metric = num(v);
    else if (w === "mtu" && num(v) !== undefined) view.mtu = num(v);
    else {
      extra.push(w);
      continue;
    }
    if (w !== "onlink") i++;
  }
  if (extra.length) view.extra = extra;
  return { table, view };
}

const RULE_ACTIONS = new Set(["blackhole", "unreachable", "prohibit"]);

/** The words of a batch rule (after its verb) as a view; unknown words kept, in order. */
function ruleOf(t: readonly string[], v6: boolean): RuleView {
  const r: RuleView = { family: v6 ? 6 : 4, priority: 0, not: false, action: "", table: 0 };
  const extra: string[] = [];
  for (let i = 0; i < t.length; i++) {
    const w = t[i] as string;
    const v = t[i + 1];
    const mark = /^(0x[0-9a-f]+)\/(0x[0-9a-f]+)$/i.exec(v ?? "");
    const table = v === undefined ? undefined : parseTable(v);
    if (w === "not") r.not = true;
    else if (RULE_ACTIONS.has(w)) r.action = w;
    else if (w === "priority" && num(v) !== undefined) r.priority = num(v) as number;
    else if (w === "from" && v !== undefined) r.src = v;
    else if (w === "to" && v !== undefined) r.dst = v;
    else if (w === "iif" && v !== undefined) r.iif = v;
    else if (w === "oif" && v !== undefined) r.oif = v;
    else if (w === "fwmark" && mark) r.fwmark = { mark: Number(mark[1]), mask: Number(mark[2]) };
    else if (w === "lookup" && table !== undefined) {
      r.action = "lookup";
      r.table = table;
    } else if (w === "protocol" && v !== undefined) {
      // Shown by name, as the rule's read shows it (the plan writes the number).
      extra.push(w, protocolName(v));
      i++;
      continue;
    } else {
      extra.push(w);
      continue;
    }
    if (w !== "not" && !RULE_ACTIONS.has(w)) i++;
  }
  if ((r.src ?? r.dst ?? "").includes(":")) r.family = 6;
  return extra.length ? { ...r, extra } : r;
}

/** The words of a batch neighbour line (after its verb); unknown words kept, in order. */
function neighborOf(words: readonly string[]): string {
  const proxy = words[0] === "proxy";
  const t = proxy ? words.slice(1) : words;
  const n = {
    ip: t[0] ?? "",
    dev: "",
    lladdr: "",
    router: false,
    ...(proxy ? { attrs: [["proxy", "on"] as const] } : {}),
  };
  const extra: string[] = [];
  for (let i = 1; i < t.length; i++) {
    const w = t[i] as string;
    const v = t[i + 1];
    if (w === "router") n.router = true;
    else if (w === "dev" && v !== undefined) n.dev = v;
    else if (w === "lladdr" && v !== undefined) n.lladdr = v;
    else {
      extra.push(w);
      continue;
    }
    if (w !== "router") i++;
  }
  return [neighborWords(n), ...extra].join(" ");
}

/** One plan line in words, with the heading it belongs under. */
export function describePlanLine(line: string): { group: string; text: string } {
  if (line.startsWith("sysctl ")) {
    const [key, ...v] = line.slice(7).split("=");
    return { group: "sysctls", text: `set ${key} = ${v.join("=")}` };
  }
  const v6 = line.startsWith("-6 ");
  const t = (v6 ? line.slice(3) : line).split(" ");
  const [obj, verb, ...rest] = t;
  if (obj === "link") {
    const dev = after(rest, "dev") as string;
    if (rest.includes("name"))
      return { group: "interfaces", text: `rename ${dev} to ${after(rest, "name")}` };
    if (rest.includes("mtu"))
      return { group: "interfaces", text: `set ${dev} MTU ${after(rest, "mtu")}` };
    if (rest.includes("arp"))
      return { group: "interfaces", text: `${dev}: ARP ${after(rest, "arp")}` };
    if (rest.at(-1) === "down") return { group: "interfaces", text: `take ${dev} down` };
    if (rest.at(-1) === "up") return { group: "interfaces", text: `bring ${dev} up` };
  }
  if (obj === "addr") {
    const dev = after(rest, "dev");
    const what = verb === "del" ? "remove" : verb === "replace" ? "put back" : "add";
    return {
      group: "interfaces",
      text: `${what} address ${rest[0]} ${verb === "del" ? "from" : "on"} ${dev}`,
    };
  }
  if (obj === "route") {
    const { table, view } = routeOf(rest);
    const what =
      verb === "del" ? "remove" : verb === "append" ? "add (beside a twin)" : "add or replace";
    const own = verb === "del" && view.protocol === "kernel" ? "  (the kernel's prefix route)" : "";
    return { group: `routes, table ${table}`, text: `${what} ${routeWords(view)}${own}` };
  }
  if (obj === "rule") {
    const rule = ruleWords(ruleOf(rest, v6));
    return { group: "rules", text: `${verb === "del" ? "remove" : "add"} rule ${rule}` };
  }
  if (obj === "neigh") {
    const what = verb === "del" ? "remove" : "set";
    return { group: "neighbours", text: `${what} ${neighborOf(rest)}` };
  }
  return { group: "other", text: line };
}

/** The whole plan, grouped; "nothing to do" when it is empty. */
export function renderPlan(lines: readonly string[]): string {
  if (lines.length === 0) return "nothing to do: the guest already matches\n";
  const groups = new Map<string, string[]>();
  for (const l of lines) {
    const { group, text } = describePlanLine(l);
    const list = groups.get(group);
    if (list) list.push(text);
    else groups.set(group, [text]);
  }
  const out: string[] = [];
  for (const [group, texts] of groups) {
    out.push(`${group}:`);
    // The plan names the guest's links: escaped, one line each.
    for (const t of texts) out.push(`  ${escapeControls(t)}`);
  }
  out.push(
    `${lines.length} operation${lines.length === 1 ? "" : "s"} (one ip -batch, then the sysctl writes)`,
  );
  return `${out.join("\n")}\n`;
}
