/**
 * The events `sync --watch` emits and their two renderings: one line of
 * text (control characters escaped) or one JSON object per line (`--json`).
 */

import { escapeControls, terminalSafe } from "../print/safe-text";
import type { MirrorReport } from "../sync/iptables-mirror";
import { countChanges, type RequestChanges } from "./watch-report";

/** The packet filter part of a sync, in a few words. */
export function packetFilterSummary(rules: MirrorReport | { skipped: string }): string {
  if ("skipped" in rules) return rules.skipped;
  if (rules.unimplemented) return "NOT carried: the agent does not implement SetIPTables";
  return rules.families
    .map(
      (f) =>
        `${f.family === 6 ? "ip6tables" : "iptables"} ${f.skipped ?? `${f.sent} rule(s) sent`}`,
    )
    .join(", ");
}

/**
 * A complete comparison's outcome: its differences (none: equal), with
 * `superseded` when the pod changed after the sync read it and the
 * differences may be that change (the next sync sends it and compares
 * again); or why no comparison could be made.
 */
export type PodCheck = { differences: string[]; superseded?: true } | { unchecked: string };

/**
 * What a sync's check (none: a watch without one) says of the guest:
 * equal, superseded (the next sync is due), or different (differences, or
 * no comparison could be made).
 */
export function checkOutcome(v: PodCheck | undefined): "equal" | "superseded" | "different" {
  if (v === undefined) return "equal";
  if ("unchecked" in v) return "different";
  if (v.differences.length === 0) return "equal";
  return v.superseded ? "superseded" : "different";
}

/** A NIC that left the pod, and what was done to its guest twin. */
export interface RetiredNic {
  hwAddr: string;
  /** The guest's name for it ("" when the guest has no such NIC). */
  name: string;
  /** The guest still had the NIC. */
  found: boolean;
  /** Addresses removed from it. */
  flushed: string[];
  /** Set down too (possible through Apply; the Kata calls always set a link up). */
  down?: boolean;
}

export type WatchEvent =
  | { event: "start"; at: string; pod: string; addr: string; debounceMs: number }
  | {
      event: "resync";
      at: string;
      seq: number;
      ms: number;
      initial: boolean;
      /** Monitor events since the previous sync began, by kind. */
      trigger: Record<string, number>;
      reconnected: boolean;
      /** One Apply of the whole state, or the Kata calls. */
      via: "apply" | "kata";
      changes: RequestChanges;
      retired: RetiredNic[];
      /** What was sent. */
      interfaces: number;
      routes: number;
      neighbors: number;
      /** Interfaces that needed more than one UpdateInterface (hot-plug wait). */
      waited: { name: string; attempts: number }[];
      guestRoutes: number;
      /** What the packet filter part of the sync did. */
      packetFilter: string;
      /** Through Apply: what of the pod the guest did not get, with why (the mirror is incomplete). */
      notMirrored: string[];
      /** follow: the complete comparison after the sync (no differences: the guest equals the pod). */
      verified?: PodCheck;
    }
  | {
      /** follow: the guest compared with the pod before the first sync; equal, so nothing was sent. */
      event: "checked";
      at: string;
      seq: number;
      ms: number;
      equal: boolean;
      differences: string[];
    }
  | {
      event: "error";
      at: string;
      seq: number;
      ms: number;
      message: string;
      /** Retried with backoff (true) or left until the pod changes again. */
      retry: boolean;
      /** The guest's network policy refused the call (PERMISSION_DENIED): the rule it names. */
      policy?: string;
    }
  | { event: "warning"; at: string; message: string }
  | {
      event: "end";
      at: string;
      reason: "netns-deleted" | "signal";
      signal?: string;
      resyncs: number;
      unchanged: number;
      failures: number;
    };

/** One JSON object, one line (controls JSON leaves raw, such as C1 and bidi, as \\uXXXX: still JSON). */
export function renderJson(e: WatchEvent): string {
  return `${terminalSafe(JSON.stringify(e))}\n`;
}

const clock = (iso: string) => iso.slice(11, 23);
const ms = (x: number) => `${x < 10 ? x.toFixed(1) : x.toFixed(0)} ms`;

function list(items: string[], max = 4): string {
  const shown = items.slice(0, max).join(", ");
  return items.length > max ? `${shown} and ${items.length - max} more` : shown;
}

function describeChanges(c: RequestChanges): string[] {
  const out: string[] = [];
  if (c.interfacesAdded.length) out.push(`NIC appeared: ${list(c.interfacesAdded)}`);
  for (const x of c.interfacesChanged) out.push(x);
  if (c.routesAdded.length || c.routesRemoved.length) {
    const items = [...c.routesAdded.map((r) => `+${r}`), ...c.routesRemoved.map((r) => `-${r}`)];
    out.push(`routes +${c.routesAdded.length} -${c.routesRemoved.length} (${list(items, 3)})`);
  }
  if (c.neighborsAdded.length || c.neighborsRemoved.length) {
    out.push(`neighbours +${c.neighborsAdded.length} -${c.neighborsRemoved.length}`);
  }
  if (c.rules) out.push("packet filter rules changed");
  if (c.other) out.push("other synced state changed");
  return out;
}

function describeRetired(r: RetiredNic): string {
  if (!r.found) return `NIC ${r.hwAddr} left the pod; the guest has no such NIC any more`;
  const flushed = r.flushed.length ? `addresses flushed (${list(r.flushed)})` : "no addresses";
  const state = r.down
    ? "down (a VM cannot unplug its own PCI NIC)"
    : "up (a VM cannot unplug its own PCI NIC; Kata's UpdateInterface always sets the link up)";
  return `NIC ${r.name} ${r.hwAddr} left the pod: in the guest ${flushed}, its routes removed; the NIC stays, ${state}`;
}

/** One line of text for a terminal or a log. */
export function renderText(e: WatchEvent): string {
  const t = clock(e.at);
  let line: string;
  switch (e.event) {
    case "start":
      line = `${t} watching ${e.pod}, syncing into ${e.addr} (debounce ${e.debounceMs} ms)`;
      break;
    case "resync": {
      const head = e.initial
        ? `${t} sync ${e.seq} (initial, ${e.via === "apply" ? "Apply" : "Kata calls"}) in ${ms(e.ms)}`
        : `${t} resync ${e.seq} in ${ms(e.ms)} after ${triggerText(e.trigger, e.reconnected)}`;
      const parts = e.initial
        ? [`${e.interfaces} interface(s), ${e.routes} route(s), ${e.neighbors} neighbour(s) sent`]
        : describeChanges(e.changes);
      const quiet = !e.changes.other && !e.changes.rules && !e.retired.length;
      if (!e.initial && countChanges(e.changes) === 0 && quiet) {
        parts.push("resent unchanged state");
      }
      parts.push(...e.retired.map(describeRetired));
      for (const w of e.waited) parts.push(`waited for NIC ${w.name} (${w.attempts} attempts)`);
      if (e.reconnected) parts.push("reconnected to the agent, whole state resent");
      parts.push(`guest table ${e.guestRoutes} route(s)`);
      if (e.initial || e.changes.rules || e.packetFilter.startsWith("NOT")) {
        parts.push(`packet filter: ${e.packetFilter}`);
      }
      if (e.notMirrored.length > 0) parts.push(`not mirrored: ${e.notMirrored.join("; ")}`);
      if (e.verified) parts.push(verifiedText(e.verified));
      line = `${head}: ${parts.join("; ")}`;
      break;
    }
    case "checked":
      line = `${t} compared in ${ms(e.ms)}: ${e.equal ? "the guest already equals the pod, nothing sent" : `different (${list(e.differences)})`}`;
      break;
    case "error": {
      const what =
        e.policy !== undefined ? `refused by policy: ${e.policy} (${e.message})` : e.message;
      line = `${t} sync ${e.seq} failed after ${ms(e.ms)}: ${what}; ${e.retry ? "retrying with backoff" : "waiting for the next change in the pod"}`;
      break;
    }
    case "warning":
      line = `${t} warning: ${e.message}`;
      break;
    case "end":
      line =
        `${t} ${e.reason === "signal" ? `stopped by ${e.signal}` : "the pod's network namespace was deleted"}: ` +
        `${e.resyncs} sync(s), ${e.unchanged} change burst(s) with nothing to send, ${e.failures} failure(s)`;
      break;
  }
  // One line: every control character from the pod or the guest made visible.
  return `${escapeControls(line)}\n`;
}

function verifiedText(v: PodCheck): string {
  if ("unchecked" in v) return `not verified: ${v.unchecked}`;
  if (v.differences.length === 0) return "verified: the guest equals the pod (complete read)";
  if (v.superseded)
    return `not verified: the pod changed during the sync (found: ${list(v.differences)}); syncing again`;
  return `still different: ${list(v.differences)}`;
}

function triggerText(trigger: Record<string, number>, reconnected: boolean): string {
  const parts = Object.entries(trigger).map(([k, n]) => `${n} ${k}`);
  if (parts.length) return `${parts.join(", ")} event(s)`;
  return reconnected ? "a reconnect" : "a retry";
}
