/**
 * An Apply plan (the `ip -batch` lines and sysctl writes the agent answers)
 * in words a runtime engineer reads at a glance, grouped by what it touches,
 * in the order the agent runs it. Pure.
 */
import { escapeControls } from "./safe-text";

function after(t: readonly string[], word: string): string | undefined {
  const i = t.indexOf(word);
  return i >= 0 ? t[i + 1] : undefined;
}

function routeWords(t: readonly string[]): { table: string; text: string } {
  const table = after(t, "table") ?? "main";
  const keep: string[] = [];
  for (let i = 0; i < t.length; i++) {
    const w = t[i] as string;
    if (w === "table") {
      i++;
      continue;
    }
    // Attributes at their defaults say nothing.
    if (
      (w === "scope" && t[i + 1] === "0") ||
      (w === "metric" && t[i + 1] === "0") ||
      (w === "proto" && t[i + 1] === "boot")
    ) {
      i++;
      continue;
    }
    if (w === "scope") {
      keep.push(
        "scope",
        { "253": "link", "254": "host" }[t[i + 1] as string] ?? (t[i + 1] as string),
      );
      i++;
      continue;
    }
    keep.push(w);
  }
  const text = keep
    .join(" ")
    .replace(/^(0\.0\.0\.0\/0|::\/0)\b/, (m) => (m === "::/0" ? "default (v6)" : "default"));
  return { table, text };
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
    const { table, text } = routeWords(rest);
    const what =
      verb === "del" ? "remove" : verb === "append" ? "add (beside a twin)" : "add or replace";
    const own =
      verb === "del" && after(rest, "proto") === "kernel" ? "  (the kernel's prefix route)" : "";
    return { group: `routes, table ${table}`, text: `${what} ${text}${own}` };
  }
  if (obj === "rule") {
    const prio = after(rest, "priority");
    const sel = rest.slice(2).join(" ");
    const from = sel.includes("from") ? "" : "from all ";
    return {
      group: "rules",
      text: `${verb === "del" ? "remove" : "add"} rule ${prio}: ${v6 ? "(v6) " : ""}${from}${sel}`,
    };
  }
  if (obj === "neigh") {
    return { group: "neighbours", text: `${verb === "del" ? "remove" : "set"} ${rest.join(" ")}` };
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
