/**
 * Kill -9 in the middle of a change, the way bench/crash-kills.ts measures it: the
 * agent in a fresh namespace on the old state, a change sent, SIGKILL after
 * a random delay within the change's measured duration (to the agent alone,
 * or to its process group: the agent and its `ip` children), the agent
 * started again at once with the same flags (as the guest's init restarts
 * it), and once every process of the dead agent's group has gone the
 * network is read independently (crash-snapshot.ts): exactly the old state,
 * exactly the new one, or mixed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processesInGroup, readProcStat } from "../../src/agent/journal/proc-stat";
import { AgentClient } from "../../src/client/client";
import { type RunningAgent, startAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";
import { waitFor } from "../helpers/wait";
import type { CrashKind } from "./crash-kinds";
import { lineDiff, readNetwork } from "./crash-snapshot";

export type KillMode = "agent" | "group";
export type Verdict = "old" | "new" | "mixed";

export interface Calibration {
  old: string;
  new: string;
  /** Milliseconds from sending the change to its answer. */
  durationMs: number;
  prepared: unknown;
}

export interface KillOutcome {
  kind: string;
  mode: KillMode;
  delayMs: number;
  /** The answer came before the kill: not an interrupted change. */
  answered: boolean;
  verdict: Verdict;
  /** The restarted agent's log lines about the record, their `msg`. */
  recovery: string[];
  /** For a mixed state: what differs from the old state. */
  diff?: { gone: string[]; came: string[] };
  /** The first read was neither state and a second one differed from it: what the first one showed. */
  reread?: { first: { gone: string[]; came: string[] }; verdict: Verdict };
}

// not a wait: the kill's random moment within the change, and a gap before a second read, below
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * NETAGENT_CRASH_SETSID=1 starts the agent through setsid: for builds that
 * do not make their own process group (older ones), so that
 * a group kill still reaches their children.
 */
const launcher = process.env.NETAGENT_CRASH_SETSID === "1" ? ["setsid"] : [];
/** A loaded machine starts an agent slowly, and the restarted one restores first. */
const READY_MS = 60_000;

interface Stage {
  ns: Netns;
  stateDir: string;
  agent: RunningAgent;
}

async function stage(kind: CrashKind): Promise<Stage> {
  const ns = await Netns.create(`nk-${kind.name.slice(0, 4)}`);
  const stateDir = mkdtempSync(join(tmpdir(), "netagent-crash-"));
  try {
    await kind.setup(ns);
    const agent = await startAgent({ netns: ns, stateDir, launcher, readyTimeoutMs: READY_MS });
    return { ns, stateDir, agent };
  } catch (err) {
    await ns.remove();
    rmSync(stateDir, { recursive: true, force: true });
    throw err;
  }
}

async function unstage(s: Stage, agent = s.agent): Promise<void> {
  await agent.stop().catch(() => {});
  await s.ns.remove();
  rmSync(s.stateDir, { recursive: true, force: true });
}

/** The old and new states and how long the change takes, from one uninterrupted run. */
export async function calibrate(kind: CrashKind): Promise<Calibration> {
  const s = await stage(kind);
  try {
    const client = await AgentClient.connect(`unix://${s.agent.socket}`);
    try {
      const prepared = await kind.prepare?.(client);
      const old = await readNetwork(s.ns);
      const t0 = performance.now();
      await kind.change(client, prepared);
      const durationMs = performance.now() - t0;
      const now = await readNetwork(s.ns);
      if (now === old) throw new Error(`${kind.name}: the change changed nothing`);
      return { old, new: now, durationMs, prepared };
    } finally {
      client.close();
    }
  } finally {
    await unstage(s);
  }
}

/** One interrupted (or, when the answer was faster, uninterrupted) change. */
export async function killOnce(
  kind: CrashKind,
  cal: Calibration,
  mode: KillMode,
  delayMs: number,
): Promise<KillOutcome> {
  const s = await stage(kind);
  let second: RunningAgent | undefined;
  try {
    const pid = s.agent.child.pid;
    // The group kill reaches the agent's children only if it leads its own group (process-group.ts).
    if (readProcStat(pid)?.pgrp !== pid) {
      throw new Error(
        `agent ${pid} does not lead its process group (run without a controlling terminal)`,
      );
    }
    const client = await AgentClient.connect(`unix://${s.agent.socket}`);
    let answered = false;
    const call = kind.change(client, cal.prepared).then(
      () => {
        answered = true;
      },
      () => {},
    );
    // not a wait: the kill's random moment within the change's measured duration: the point of the test
    await sleep(delayMs);
    process.kill(mode === "group" ? -pid : pid, "SIGKILL");
    await s.agent.child.exited;
    await call;
    client.close();
    second = await startAgent({
      netns: s.ns,
      stateDir: s.stateDir,
      launcher,
      readyTimeoutMs: READY_MS,
    });
    // Read only once everything the dead agent left has gone (the restarted one waited for them).
    await waitFor(() => processesInGroup(pid).length === 0, {
      timeoutMs: 15_000,
      what: `the processes of agent ${pid}'s group to end`,
    });
    const judge = (text: string): Verdict =>
      text === cal.old ? "old" : text === cal.new ? "new" : "mixed";
    let now = await readNetwork(s.ns);
    let verdict = judge(now);
    // Nothing runs now that could change the network: a second read that
    // differs from the first says the first read was wrong, and is reported.
    let reread: KillOutcome["reread"];
    if (verdict === "mixed") {
      // not a wait: a gap between two reads while nothing runs: a second read that differs says the first was wrong
      await sleep(200);
      const again = await readNetwork(s.ns);
      if (again !== now) {
        reread = { first: lineDiff(cal.old, now), verdict: judge(again) };
        now = again;
        verdict = judge(again);
      }
    }
    return {
      kind: kind.name,
      mode,
      delayMs,
      answered,
      verdict,
      recovery: recoveryLines(second.child.stderr),
      ...(verdict === "mixed" ? { diff: lineDiff(cal.old, now) } : {}),
      ...(reread ? { reread } : {}),
    };
  } finally {
    // The killed agent's own directory (its socket) goes too, not only the restarted one's.
    await s.agent.stop().catch(() => {});
    await unstage(s, second);
  }
}

function recoveryLines(stderr: string): string[] {
  const out: string[] = [];
  for (const l of stderr.split("\n")) {
    if (!l.startsWith("{")) continue;
    try {
      const o = JSON.parse(l) as { msg?: string };
      if (o.msg && /record|restor|died|processes/.test(o.msg)) out.push(o.msg);
    } catch {}
  }
  return out;
}

export interface Tally {
  kind: string;
  mode: KillMode;
  old: number;
  new: number;
  mixed: number;
  /** Kills that came after the answer (not counted as interrupted). */
  late: number;
  /** Interrupted changes whose restart found a record and restored from it. */
  restored: number;
  /** Of those, restores the restarted agent itself called incomplete. */
  incomplete?: number;
  /** Reads that were neither state and not the same when read again (KillOutcome.reread). */
  rereads?: number;
}

/**
 * Kills until `count` changes were interrupted (the answer had not come),
 * each after a uniformly random delay in [0, duration).
 */
export async function killRun(
  kind: CrashKind,
  cal: Calibration,
  mode: KillMode,
  count: number,
  onOutcome?: (o: KillOutcome) => void,
): Promise<{ tally: Tally; mixed: KillOutcome[] }> {
  const tally: Tally = { kind: kind.name, mode, old: 0, new: 0, mixed: 0, late: 0, restored: 0 };
  const mixed: KillOutcome[] = [];
  for (let tries = 0; tally.old + tally.new + tally.mixed < count; tries++) {
    if (tries > count * 4) throw new Error(`${kind.name}: too many kills came after the answer`);
    const o = await killOnce(kind, cal, mode, Math.random() * cal.durationMs);
    onOutcome?.(o);
    if (o.answered) {
      tally.late++;
      continue;
    }
    tally[o.verdict]++;
    countRecovery(tally, o);
    if (o.reread) {
      tally.rereads = (tally.rereads ?? 0) + 1;
      console.log(
        `${kind.name} (${mode}): a read differed from the next one: ${JSON.stringify(o.reread)}`,
      );
    }
    if (o.verdict === "mixed") mixed.push(o);
  }
  return { tally, mixed };
}

/** Counts a restart's restore from a record: complete, or incomplete by its own account. */
export function countRecovery(tally: Tally, o: KillOutcome): void {
  if (o.recovery.some((m) => m.startsWith("restored the state"))) tally.restored++;
  if (o.recovery.some((m) => m.startsWith("restore after the last agent's death incomplete"))) {
    tally.incomplete = (tally.incomplete ?? 0) + 1;
  }
}

/** The kill table (bench/README.md): change, killed, exactly old, exactly new, mixed. */
export function renderTally(tallies: readonly Tally[], what: (kind: string) => string): string {
  const rows = [
    "| change | killed | exactly old | exactly new | mixed | (restored from a record) | (restores called incomplete) | (kills after the answer) | (reads redone) |",
    "|---|---|---|---|---|---|---|---|---|",
  ];
  for (const t of tallies) {
    const killed = t.mode === "agent" ? "the agent only" : "the agent and its `ip` children";
    rows.push(
      `| ${what(t.kind)} | ${killed} | ${t.old} | ${t.new} | ${t.mixed} | ${t.restored} | ${t.incomplete ?? 0} | ${t.late} | ${t.rereads ?? 0} |`,
    );
  }
  return rows.join("\n");
}
