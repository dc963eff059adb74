/**
 * Processes started through this module's runners, counted by program
 * (the basename of argv[0], e.g. `ip`, `iptables-restore`): how many were
 * started and how many run now. Read by the agent's metrics (GetMetrics).
 * Bounded: a handful of programs; past {@link MAX_PROGRAMS} names the rest
 * count as "other".
 */

const MAX_PROGRAMS = 32;

export interface ProgramCount {
  started: number;
  running: number;
}

const counts = new Map<string, ProgramCount>();

function programOf(argv0: string): string {
  const slash = argv0.lastIndexOf("/");
  const name = slash < 0 ? argv0 : argv0.slice(slash + 1);
  return counts.has(name) || counts.size < MAX_PROGRAMS ? name : "other";
}

/** Notes a start of `argv0`; the returned function notes its end (once). */
export function noteStarted(argv0: string): () => void {
  const name = programOf(argv0);
  let c = counts.get(name);
  if (c === undefined) {
    c = { started: 0, running: 0 };
    counts.set(name, c);
  }
  c.started++;
  c.running++;
  const count = c;
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    count.running--;
  };
}

/** The counts so far, by program. */
export function startedCounts(): ReadonlyMap<string, Readonly<ProgramCount>> {
  return counts;
}
