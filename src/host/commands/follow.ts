/**
 * `follow`: every Kata sandbox on this node kept equal to its pod, by one
 * process (src/host/follow/). Lines go to stdout as they happen; SIGINT or
 * SIGTERM give calls in flight {@link STOP_GRACE_MS}, cancel the rest and
 * exit 0 within {@link STOP_DEADLINE_MS}.
 */

import { followMetrics } from "../follow/follow-metrics";
import { followWriter } from "../follow/follow-output";
import { DEFAULT_ROOTS, Follower } from "../follow/follower";
import { parseStatusAddr, type StatusServer, serveStatus } from "../follow/status-server";
import { type Command, parseFlags, UsageError } from "./common";

const STOP_GRACE_MS = 4000;
const STOP_DEADLINE_MS = 4800;

const HELP = `usage: netagentctl follow [--kata-root DIR]... [--status-addr ADDR] [--json]
                          [--monitor all-nsid|per-netns] [--timeout S]

Finds every Kata sandbox on this node and keeps its guest's network equal
to its pod's, each exactly as \`sync --watch\` does (one Apply of the whole
state, the packet filter, retries and resyncs), all in this one process.

  --kata-root DIR   a directory holding one directory per sandbox; repeatable
                    (default ${DEFAULT_ROOTS.join(" and ")}); watched, not polled;
                    a root missing at start is waited for
  --status-addr A   HTTP status on HOST:PORT (HOST default 127.0.0.1) or
                    unix:///path: GET /sandboxes, /metrics, /healthz
  --monitor M       how pod changes are noticed: all-nsid (default: one
                    \`ip monitor all-nsid\` for the node; each pod netns named
                    under /run/netns gets an nsid in this namespace's table)
                    or per-netns (an \`ip monitor\` per pod)
  --json            one JSON object per line
  --timeout S       each call's deadline (global option, before follow)

Per sandbox: the agent's address from its shim-monitor.sock (GET /agent-url)
or persist.json AgentState.URL; the pod's netns from persist.json
Network.NetworkID or runtime-rs's state.json hypervisor.netns. Before the
first sync the guest is compared with the pod completely and nothing is sent
when they are equal; after each sync the same comparison decides "equal".
States: waiting, syncing, equal, failed (with the reason). A refusal by the
guest's policy: failed ("refused by policy: ..."), retried at the pod's next
change. Exit 0 on SIGINT/SIGTERM.
`;

/** The values of every `--kata-root` (as `--kata-root DIR` or `--kata-root=DIR`), and the rest. */
function takeRoots(args: readonly string[]): { roots: string[]; rest: string[] } {
  const roots: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === "--kata-root") {
      const v = args[++i];
      if (v === undefined || v === "") throw new UsageError("--kata-root needs a value");
      roots.push(v);
    } else if (a.startsWith("--kata-root=")) roots.push(a.slice("--kata-root=".length));
    else rest.push(a);
  }
  for (const r of roots) {
    if (!r.startsWith("/") || r.includes("\0")) {
      throw new UsageError(`--kata-root ${JSON.stringify(r)}: expected an absolute path`);
    }
  }
  return { roots, rest };
}

export const follow: Command = {
  name: "follow",
  summary: "keep every Kata sandbox's guest on this node equal to its pod (one process)",
  help: HELP,
  async run(args, ctx) {
    const { roots, rest } = takeRoots(args);
    const flags = parseFlags(rest, { "--status-addr": "value", "--monitor": "value" });
    const monitor = flags["--monitor"] ?? "all-nsid";
    if (monitor !== "all-nsid" && monitor !== "per-netns") {
      throw new UsageError(`--monitor: ${JSON.stringify(monitor)} is not all-nsid or per-netns`);
    }
    let status: ReturnType<typeof parseStatusAddr> | undefined;
    if (typeof flags["--status-addr"] === "string") {
      try {
        status = parseStatusAddr(flags["--status-addr"]);
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
    }
    const out = followWriter(ctx.json, (text) => Bun.write(Bun.stdout, text));
    let follower: Follower | undefined;
    const metrics = followMetrics({
      states: () => follower?.list().map((s) => s.state) ?? [],
      children: () => follower?.childPids().length ?? 0,
    });
    follower = new Follower({
      roots: roots.length > 0 ? roots : DEFAULT_ROOTS,
      timeoutMs: ctx.timeoutMs,
      monitor,
      emit: out.emit,
      observe: metrics,
    });
    const f = follower;
    let server: StatusServer | undefined;
    const stopped = new Promise<string>((resolve) => {
      process.once("SIGINT", () => resolve("SIGINT"));
      process.once("SIGTERM", () => resolve("SIGTERM"));
    });
    await f.start();
    if (status) server = serveStatus(status, { list: () => f.list(), registry: metrics.registry });
    const at = () => new Date().toISOString();
    out.emit({
      event: "follow",
      at: at(),
      detail: `following ${(roots.length > 0 ? roots : DEFAULT_ROOTS).join(", ")}${server ? `; status on ${server.url}` : ""}`,
    });
    const signal = await stopped;
    // Whatever happens below, the process is gone before the deadline.
    setTimeout(() => process.exit(0), STOP_DEADLINE_MS).unref();
    server?.stop();
    await f.stop(STOP_GRACE_MS);
    out.emit({ event: "follow", at: at(), detail: `stopped by ${signal}` });
    await out.drain();
    return 0;
  },
};
