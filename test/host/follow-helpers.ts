/**
 * What the `follow` tests and bench share: the follower as a child process
 * (dist/netagentctl follow, run inside a namespace of the test's own so the
 * nsids it gives pod namespaces go into that namespace's table, never the
 * machine's), its JSON lines, its /sandboxes over a unix socket; the calls
 * an agent logged (test/helpers/agent.ts agentAt at log level debug), so
 * Apply calls are counted from the agent's own log, independently of the
 * follower.
 */
import { fileURLToPath } from "node:url";
import type { SandboxView } from "../../src/host/follow/sandbox";
import type { Netns } from "../helpers/netns";
import { type Child, onStdoutLines, start, waitForSocket } from "../helpers/process";
import { waitFor } from "../helpers/wait";
import { NETAGENTCTL } from "./helpers";

export class FollowerProc {
  readonly events: Record<string, unknown>[] = [];

  private constructor(
    readonly child: Child,
    readonly status: string,
  ) {
    onStdoutLines(child, (line) => this.events.push(JSON.parse(line)));
  }

  /** Starts `netagentctl --json follow` in `ns` over `roots`, status on the unix socket `status`. */
  static async start(
    ns: Netns,
    roots: string[],
    status: string,
    extra: string[] = [],
    /** Each call's deadline (a TCG guest on a loaded machine needs more than 10 s). */
    timeoutS = 10,
  ): Promise<FollowerProc> {
    const args = [
      "netns",
      "exec",
      ns.name,
      NETAGENTCTL,
      "--json",
      "--timeout",
      String(timeoutS),
      "follow",
    ];
    for (const r of roots) args.push("--kata-root", r);
    const f = new FollowerProc(
      start("ip", [...args, "--status-addr", `unix://${status}`, ...extra]),
      status,
    );
    await waitForSocket(f.child, status, 20_000);
    return f;
  }

  /** GET `path` on the status socket. */
  async get(path: string): Promise<Response> {
    return fetch(`http://follow${path}`, { unix: this.status });
  }

  async sandboxes(): Promise<SandboxView[]> {
    return (await (await this.get("/sandboxes")).json()) as SandboxView[];
  }

  /** Waits until sandbox `id` satisfies `pred`; answers its view. */
  async until(
    id: string,
    pred: (s: SandboxView) => boolean,
    what: string,
    timeoutMs = 30_000,
  ): Promise<SandboxView> {
    return waitFor(
      async () => {
        if (!this.child.running) throw new Error(`follow exited: ${this.child.stderr}`);
        const s = (await this.sandboxes()).find((x) => x.id === id);
        return s && pred(s) ? s : undefined;
      },
      {
        timeoutMs,
        what: `${id}: ${what} (${JSON.stringify(this.events.filter((e) => e.sandbox === id).slice(-3))})`,
      },
    );
  }

  /** The lines about sandbox `id`. */
  about(id: string): Record<string, unknown>[] {
    return this.events.filter((e) => e.sandbox === id);
  }
}

/** Calls of `method` the agent logged (its own count, not the follower's); `failed`: those it refused. */
export function callsLogged(agent: Child, method: string, failed = false): number {
  let n = 0;
  const msg = failed ? '"msg":"call failed"' : '"msg":"call"';
  for (const line of agent.stderr.split("\n")) {
    if (!line.includes(msg)) continue;
    try {
      const e = JSON.parse(line) as { msg?: string; method?: string };
      if (e.method === method) n++;
    } catch {}
  }
  return n;
}

/** The repository's bun, for small scripts run inside a namespace. */
export const BUN_BIN = fileURLToPath(new URL("../../node_modules/.bin/bun", import.meta.url));
