/**
 * The follower's Prometheus metrics, with prom-client (its own registry,
 * no default collectors: those sample the event loop on timers, and an
 * idle follower should not wake).
 *
 * - netagent_follow_sandboxes{state}: sandboxes by state, read at scrape.
 * - netagent_follow_syncs_total{sandbox}, netagent_follow_failures_total{sandbox}:
 *   syncs sent and failures, per sandbox (the labels go with the sandbox).
 * - netagent_follow_change_to_equal_seconds: a change noticed in a pod to
 *   its guest found equal by a complete comparison.
 * - netagent_follow_resident_memory_bytes, netagent_follow_cpu_seconds_total:
 *   this process's own RSS and CPU; netagent_follow_children: processes it
 *   started that run now (their memory is in the bench, not here).
 */
import { readFileSync } from "node:fs";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { checkOutcome } from "../watch/watch-output";
import type { FollowEvent, SandboxState } from "./follow-output";
import { SANDBOX_STATES } from "./follow-output";

export interface FollowMetrics {
  registry: Registry;
  event(e: FollowEvent): void;
  changeToEqual(ms: number): void;
  dropped(id: string): void;
}

function ownRssBytes(): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) * 1024 : process.memoryUsage().rss;
}

export function followMetrics(source: {
  states(): SandboxState[];
  children(): number;
}): FollowMetrics {
  const registry = new Registry();
  const registers = [registry];
  new Gauge({
    name: "netagent_follow_sandboxes",
    help: "Sandboxes followed, by state.",
    labelNames: ["state"],
    registers,
    collect() {
      const counts = new Map<SandboxState, number>(SANDBOX_STATES.map((s) => [s, 0]));
      for (const s of source.states()) counts.set(s, (counts.get(s) ?? 0) + 1);
      for (const [state, n] of counts) this.set({ state }, n);
    },
  });
  const syncs = new Counter({
    name: "netagent_follow_syncs_total",
    help: "Syncs sent to a sandbox's guest.",
    labelNames: ["sandbox"],
    registers,
  });
  const failures = new Counter({
    name: "netagent_follow_failures_total",
    help: "Failed syncs (or guests still different after one) of a sandbox.",
    labelNames: ["sandbox"],
    registers,
  });
  const latency = new Histogram({
    name: "netagent_follow_change_to_equal_seconds",
    help: "From a change noticed in a pod to its guest found equal by a complete comparison.",
    buckets: [0.05, 0.1, 0.15, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers,
  });
  new Gauge({
    name: "netagent_follow_resident_memory_bytes",
    help: "Resident memory of the follower process itself.",
    registers,
    collect() {
      this.set(ownRssBytes());
    },
  });
  new Counter({
    name: "netagent_follow_cpu_seconds_total",
    help: "CPU time (user and system) of the follower process itself.",
    registers,
    collect() {
      const u = process.cpuUsage();
      this.reset();
      this.inc((u.user + u.system) / 1e6);
    },
  });
  new Gauge({
    name: "netagent_follow_children",
    help: "Processes the follower started that are running (change monitors).",
    registers,
    collect() {
      this.set(source.children());
    },
  });
  return {
    registry,
    event(e) {
      if (e.event === "resync") syncs.inc({ sandbox: e.sandbox });
      const stillDifferent =
        e.event === "resync" &&
        e.verified !== undefined &&
        checkOutcome(e.verified) === "different";
      if (e.event === "error" || stillDifferent) failures.inc({ sandbox: e.sandbox });
    },
    changeToEqual: (ms) => latency.observe(ms / 1000),
    dropped(id) {
      syncs.remove({ sandbox: id });
      failures.remove({ sandbox: id });
    },
  };
}
