/**
 * dist/netagent for the hardening tests: any log level, an optional
 * environment (NETAGENT_IP_BIN for a stand-in `ip`) and an optional netns
 * (`ip netns exec`, which execs the agent, so the PID held is the agent's).
 * Ready once its socket accepts and it has passed its start-up (--version
 * would not be enough: the signal handlers are set after listening).
 */
import type { RunningAgent } from "../helpers/agent";
import { NETAGENT, requireAgentBinary } from "../helpers/agent";
import type { Netns } from "../helpers/netns";
import { start, waitForSocket } from "../helpers/process";
import { tempDir } from "../helpers/tmp";

export interface AgentOptions {
  args?: readonly string[];
  env?: Record<string, string>;
  netns?: Netns;
}

export async function startHardenedAgent(opts: AgentOptions = {}): Promise<RunningAgent> {
  requireAgentBinary();
  const dir = tempDir("netagent-hard-");
  const socket = dir.join("agent.sock");
  const argv = [NETAGENT, "--listen", `unix://${socket}`, ...(opts.args ?? [])];
  const [file, ...args] = opts.netns ? ["ip", "netns", "exec", opts.netns.name, ...argv] : argv;
  const child = start(file as string, args, { ...process.env, ...opts.env });
  try {
    await waitForSocket(child, socket);
  } catch (err) {
    await child.kill();
    dir.remove();
    throw err;
  }
  return {
    child,
    socket,
    dir,
    async stop() {
      try {
        await child.stop("SIGTERM");
      } finally {
        await child.kill();
        dir.remove();
      }
    },
  };
}
