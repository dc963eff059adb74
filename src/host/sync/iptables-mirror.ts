/**
 * The pod's packet filter for sync and diff: read inside the pod's
 * namespace (iptables-pod.ts), sent with SetIPTables (counters left out),
 * compared with what GetIPTables reports, normalised (no counters, no
 * comments with dates, tables in name order).
 */

import type { AgentClient, CallOptions } from "../../client/client";
import { AgentService } from "../../gen/agent_pb";
import type { IpFamily } from "../../net/iptables/iptables-runner";
import { hasRules, normaliseRules, splitTables } from "../../net/iptables/iptables-text";
import { Code, TtrpcError } from "../../ttrpc/codes";
import type { Rules } from "../pod/iptables-pod";

const FAMILIES: readonly IpFamily[] = [4, 6];

const latin1 = (data: Uint8Array) => Buffer.from(data).toString("latin1");

/** The guest's rules through GetIPTables; undefined when the agent does not implement it. */
export async function readGuestRules(
  client: AgentClient,
  call: CallOptions,
): Promise<Rules | undefined> {
  try {
    const out = {} as Rules;
    for (const f of FAMILIES) {
      const reply = await client.unary(AgentService.method.getIPTables, { isIpv6: f === 6 }, call);
      out[f] = latin1(reply.data);
    }
    return out;
  } catch (err) {
    if (err instanceof TtrpcError && err.code === Code.UNIMPLEMENTED) return undefined;
    throw err;
  }
}

/**
 * The SetIPTables input that makes the guest's tables of one family the
 * pod's: every pod table with counters zeroed and comments dropped, then an
 * empty `*table` + `COMMIT` for each table only the guest has (iptables-nft
 * deletes it). Undefined when neither side has any rule: nothing to send.
 */
export function mirrorInput(pod: string, guest: string): string | undefined {
  if (!hasRules(pod) && !hasRules(guest)) return undefined;
  const podTables = splitTables(pod);
  const blocks = [...podTables.values()].map((b) =>
    b
      .split("\n")
      .map((l) => l.replace(/^(:\S+ \S+) \[\d+:\d+\]$/, "$1 [0:0]").replace(/^\[\d+:\d+\]\s+/, ""))
      .join("\n"),
  );
  for (const t of splitTables(guest).keys()) if (!podTables.has(t)) blocks.push(`*${t}\nCOMMIT\n`);
  return blocks.join("");
}

export interface MirrorReport {
  /** Per family: rules sent ("-A" lines), or why nothing was sent. */
  families: { family: IpFamily; sent: number; tables: string[]; skipped?: string }[];
  /** The agent answered UNIMPLEMENTED: nothing could be carried. */
  unimplemented: boolean;
}

/** Whether two saves of one family hold the same tables, chains and rules (counters aside), as compareRules counts them. */
function sameRules(pod: string, guest: string): boolean {
  const a = normaliseRules(pod);
  const b = normaliseRules(guest);
  return a.length === b.length && a.every((l, i) => l === b[i]);
}

/** Makes the guest's packet filter the pod's (both families), one SetIPTables per family that differs. */
export async function mirrorRules(
  client: AgentClient,
  pod: Rules,
  call: CallOptions,
): Promise<MirrorReport> {
  const guest = await readGuestRules(client, call);
  if (guest === undefined) {
    return {
      unimplemented: true,
      families: FAMILIES.map((family) => ({
        family,
        sent: 0,
        tables: [],
        skipped: "UNIMPLEMENTED",
      })),
    };
  }
  const families: MirrorReport["families"] = [];
  for (const family of FAMILIES) {
    const input = mirrorInput(pod[family], guest[family]);
    if (input === undefined) {
      families.push({ family, sent: 0, tables: [], skipped: "no rules on either side" });
      continue;
    }
    // What the comparison after a sync counts equal needs no restore (and
    // keeps the guest's counters): a sync a route or a link caused sends
    // no rules.
    if (sameRules(pod[family], guest[family])) {
      families.push({ family, sent: 0, tables: [], skipped: "the guest has them already" });
      continue;
    }
    await client.unary(
      AgentService.method.setIPTables,
      { isIpv6: family === 6, data: Buffer.from(input, "latin1") },
      call,
    );
    families.push({
      family,
      sent: normaliseRules(input).filter((l) => l.startsWith("-A")).length,
      tables: [...splitTables(input).keys()],
    });
  }
  return { unimplemented: false, families };
}

/** One line of a rules comparison: "=" both, "<" pod only, ">" guest only. */
interface RuleRow {
  mark: "=" | "<" | ">";
  family: IpFamily;
  line: string;
}

export interface RulesComparison {
  equal: boolean;
  differences: number;
  /** Rules ("-A" lines) on the pod's side, both families. */
  rules: number;
  rows: RuleRow[];
  /** Set when the guest's rules could not be read (the agent lacks GetIPTables). */
  unread?: string;
}

/** Compares normalised rule sets line by line, in order (a longest common subsequence). */
export function compareRules(pod: Rules, guest: Rules | undefined): RulesComparison {
  const rows: RuleRow[] = [];
  let rules = 0;
  for (const family of FAMILIES) {
    const a = normaliseRules(pod[family]);
    rules += a.filter((l) => l.startsWith("-A")).length;
    if (guest === undefined) continue;
    for (const [mark, line] of lineDiff(a, normaliseRules(guest[family]))) {
      rows.push({ mark, family, line });
    }
  }
  if (guest === undefined) {
    const any = FAMILIES.some((f) => hasRules(pod[f]));
    return {
      equal: !any,
      differences: any ? 1 : 0,
      rules,
      rows,
      unread: "the agent does not implement GetIPTables",
    };
  }
  const differences = rows.filter((r) => r.mark !== "=").length;
  return { equal: differences === 0, differences, rules, rows };
}

/** A line diff by longest common subsequence; inputs past 4,000 lines compare as sets. */
function lineDiff(a: readonly string[], b: readonly string[]): ["=" | "<" | ">", string][] {
  if (a.length * b.length > 16_000_000) {
    const inB = new Set(b);
    const inA = new Set(a);
    return [
      ...a.map((l) => [inB.has(l) ? "=" : "<", l] as ["=" | "<", string]),
      ...b.filter((l) => !inA.has(l)).map((l) => [">", l] as [">", string]),
    ];
  }
  const n = a.length;
  const m = b.length;
  const len = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      const row = len[i] as Uint32Array;
      row[j] =
        a[i] === b[j]
          ? ((len[i + 1] as Uint32Array)[j + 1] as number) + 1
          : Math.max((len[i + 1] as Uint32Array)[j] as number, row[j + 1] as number);
    }
  }
  const out: ["=" | "<" | ">", string][] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      out.push(["=", a[i++] as string]);
      j++;
    } else if (
      j < m &&
      (i >= n ||
        ((len[i] as Uint32Array)[j + 1] as number) >= ((len[i + 1] as Uint32Array)[j] as number))
    ) {
      out.push([">", b[j++] as string]);
    } else {
      out.push(["<", a[i++] as string]);
    }
  }
  return out;
}
